"""A static (batch) DataFrame given to ``from_dataframe`` in STREAMING mode is refused when the source is built,
naming the alternatives, instead of failing at ``execute()`` with Spark's ``WRITE_STREAM_NOT_ALLOWED``; in BATCH
(or AUTOMATIC) mode it is bounded input, read by the executors: the driver keeps the DataFrame, never its rows."""

from __future__ import annotations

import pytest

from pyspark_flinkish.core.errors import UnsupportedFeatureError
from pyspark_flinkish.datastream import RuntimeExecutionMode
from pyspark_flinkish.datastream.sources import MicroBatchSource
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment


class _Frame:
    """What ``from_dataframe`` reads of a DataFrame before the job starts."""

    columns = ("k", "ts")

    def __init__(self, streaming: bool) -> None:
        self.isStreaming = streaming

    def collect(self) -> list:  # type: ignore[type-arg]
        msg = "a bounded DataFrame's rows are read by the executors, never collected on the driver"
        raise AssertionError(msg)


@pytest.mark.parametrize("backend", ["foreach_batch", "apply_in_pandas_with_state"])
def test_a_static_dataframe_is_refused_when_the_source_is_built(backend: str) -> None:
    env = SparkStreamExecutionEnvironment(spark=None, state_partitions=2, backend=backend)
    with pytest.raises(UnsupportedFeatureError, match=r"streaming DataFrame.*STREAMING mode.*BATCH.*spark\.readStream.*from_delta"):
        env.from_dataframe(_Frame(streaming=False), timestamp_column="ts")
    assert env.from_dataframe(_Frame(streaming=True), timestamp_column="ts") is not None


@pytest.mark.parametrize("mode", [RuntimeExecutionMode.BATCH, RuntimeExecutionMode.AUTOMATIC])
def test_a_static_dataframe_is_bounded_input_in_batch_mode(mode: RuntimeExecutionMode) -> None:
    env = SparkStreamExecutionEnvironment(spark=None, state_partitions=2)
    env.set_runtime_mode(mode)
    frame = _Frame(streaming=False)
    stream = env.from_dataframe(frame, timestamp_column="ts", source_name="static")
    source = stream._t.source
    assert isinstance(source, MicroBatchSource) and source.end_of_input and source.executors_read
    assert [b.elements for b in source.batches] == [[]]  # the driver's micro-batch holds no element
    assert source.df is frame
    assert stream._t.watermark_strategy.extract_timestamp({"k": "a", "ts": 5}, None) == 5


@pytest.mark.parametrize(
    ("option", "value"), [("partition_column", "k"), ("order_columns", ["ts"]), ("partitions", ["0", "1"])]
)
def test_a_static_dataframe_refuses_the_streaming_sources_options_by_name(option: str, value: object) -> None:
    """Source partitions and an order by columns are a streaming DataFrame's: a bounded one is one split in the
    DataFrame's order, so the options are refused, not ignored."""
    env = SparkStreamExecutionEnvironment(spark=None, state_partitions=2)
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    with pytest.raises(UnsupportedFeatureError, match=rf"{option} apply to a streaming DataFrame.*orderBy.*readStream"):
        env.from_dataframe(_Frame(streaming=False), timestamp_column="ts", **{option: value})  # type: ignore[arg-type]


def test_to_dataframe_refuses_batch_mode() -> None:
    env = SparkStreamExecutionEnvironment(spark=None, state_partitions=2, backend="apply_in_pandas_with_state")
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    with pytest.raises(UnsupportedFeatureError, match="STREAMING mode only"):
        env.from_collection([("a", 1)]).key_by(lambda e: e[0]).reduce(lambda a, b: a).to_dataframe()


def test_the_apply_in_pandas_with_state_executor_refuses_a_bounded_dataframe_by_name() -> None:
    """That executor replays its sources' records from the driver; a bounded DataFrame's rows are read by the
    executors of the foreachBatch executor only, so it is refused, naming the way, not collected."""
    from pyspark_flinkish.spark.stateful import replay_files

    env = SparkStreamExecutionEnvironment(spark=None, state_partitions=2)
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    stream = env.from_dataframe(_Frame(streaming=False), timestamp_column="ts", source_name="static")
    with pytest.raises(UnsupportedFeatureError, match=r"^static: .*a static DataFrame and from_delta\(path, bounded=True\).*use the default executor"):
        replay_files(stream._t)
