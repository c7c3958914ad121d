"""The dispatch point (``datastream/executors.py``): an environment names its executor, executors register there,
and what only Spark can run is refused up front on the local engine."""

from __future__ import annotations

import pytest

from pyspark_flinkish.common import JobExecutionResult, Types
from pyspark_flinkish.core.errors import UnsupportedFeatureError
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors import DeltaSink
from pyspark_flinkish.datastream.executors import LOCAL, SPARK, executor_entry
from pyspark_flinkish.local import run_local
from pyspark_flinkish.spark import SparkStreamExecutionEnvironment


def test_both_executors_are_registered_by_importing_the_package() -> None:
    assert executor_entry(LOCAL) is run_local
    assert executor_entry(SPARK) is SparkStreamExecutionEnvironment
    with pytest.raises(UnsupportedFeatureError, match="no 'flink' executor is registered"):
        executor_entry("flink")


def test_an_environment_names_its_executor_and_runs_on_it() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    assert env.executor == LOCAL and SparkStreamExecutionEnvironment.executor == SPARK
    out = env.from_collection([1, 2, 3]).map(lambda v: v * 10).execute_and_collect()
    assert sorted(out) == [10, 20, 30]
    result = env.last_result
    assert isinstance(result, JobExecutionResult) and result.batches >= 1


@pytest.mark.parametrize(
    ("build", "needs"),
    [
        (lambda s: s.foreach_batch(lambda df, batch_id: None), "foreach_batch needs a Spark environment"),
        (lambda s: s.to_dataframe(), "to_dataframe\\(\\) needs a Spark environment"),
        (lambda s: s.sink_to(DeltaSink.for_path("/t")), "DeltaSink\\(/t\\) writes through Spark"),
    ],
    ids=["foreach_batch", "to_dataframe", "DeltaSink"],
)
def test_what_only_spark_runs_is_refused_on_the_local_engine(build, needs) -> None:  # type: ignore[no-untyped-def]
    env = StreamExecutionEnvironment.get_execution_environment()
    stream = env.from_collection([1], type_info=Types.LONG())
    with pytest.raises(UnsupportedFeatureError, match=needs):
        build(stream)
