"""A static (batch) DataFrame given to ``from_dataframe`` is refused when the source is built, naming the
alternatives, instead of failing at ``execute()`` with Spark's ``WRITE_STREAM_NOT_ALLOWED``."""

from __future__ import annotations

import pytest

from pyspark_flinkish.core.errors import UnsupportedFeatureError
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment


class _Frame:
    """What ``from_dataframe`` reads of a DataFrame before the job starts."""

    columns = ("k", "ts")

    def __init__(self, streaming: bool) -> None:
        self.isStreaming = streaming


@pytest.mark.parametrize("backend", ["foreach_batch", "apply_in_pandas_with_state"])
def test_a_static_dataframe_is_refused_when_the_source_is_built(backend: str) -> None:
    env = SparkStreamExecutionEnvironment(spark=None, state_partitions=2, backend=backend)
    with pytest.raises(UnsupportedFeatureError, match=r"streaming DataFrame.*spark\.readStream.*from_delta.*from_kafka"):
        env.from_dataframe(_Frame(streaming=False), timestamp_column="ts")
    assert env.from_dataframe(_Frame(streaming=True), timestamp_column="ts") is not None
