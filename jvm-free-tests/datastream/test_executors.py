"""The dispatch point (``datastream/executors.py``): an environment names its executor, executors register there,
and what only Spark can run is refused up front on the local engine."""

from __future__ import annotations

import pytest

from pyspark_flinkish.common import JobExecutionResult, Types, WatermarkStrategy
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.core.errors import UnsupportedFeatureError
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors import DeltaSink
from pyspark_flinkish.datastream.connectors.kafka import KafkaSource
from pyspark_flinkish.datastream.executors import LOCAL, SPARK, SPARK_ONLY, executor_entry
from pyspark_flinkish.local import run_local
from pyspark_flinkish.spark import SparkStreamExecutionEnvironment


def test_both_executors_are_registered_by_importing_the_package() -> None:
    assert executor_entry(LOCAL) is run_local
    # the Spark entry imports the environment when called (``spark/__init__.py``: a Python worker needs none of it)
    env = executor_entry(SPARK)(None, clock=ManualClock(0), state_partitions=2)
    assert type(env) is SparkStreamExecutionEnvironment and env.executor == SPARK
    with pytest.raises(UnsupportedFeatureError, match="no 'flink' executor is registered"):
        executor_entry("flink")


def test_an_environment_names_its_executor_and_runs_on_it() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    assert env.executor == LOCAL and SparkStreamExecutionEnvironment.executor == SPARK
    out = env.from_collection([1, 2, 3]).map(lambda v: v * 10).execute_and_collect()
    assert sorted(out) == [10, 20, 30]
    result = env.last_result
    assert isinstance(result, JobExecutionResult) and result.batches >= 1


SPARK_ENV = "needs the Spark environment .*get_execution_environment\\(spark"


@pytest.mark.parametrize(
    ("build", "needs"),
    [
        (lambda s: s.foreach_batch(lambda df, batch_id: None), "foreach_batch " + SPARK_ENV + "\\).*add_sink"),
        (lambda s: s.to_dataframe(), "to_dataframe\\(\\) " + SPARK_ENV + ", backend='apply_in_pandas_with_state'\\)"),
        (lambda s: s.sink_to(DeltaSink.for_path("/t")), "DeltaSink\\(/t\\) " + SPARK_ENV + "\\).*no Delta writer"),
    ],
    ids=["foreach_batch", "to_dataframe", "DeltaSink"],
)
def test_what_only_spark_runs_is_refused_on_the_local_engine(build, needs) -> None:  # type: ignore[no-untyped-def]
    env = StreamExecutionEnvironment.get_execution_environment()
    stream = env.from_collection([1], type_info=Types.LONG())
    with pytest.raises(UnsupportedFeatureError, match=needs):
        build(stream)


@pytest.mark.parametrize(
    ("build", "needs"),
    [
        (lambda env: env.from_kafka("orders", "localhost:9092"), "from_kafka\\('orders'\\) " + SPARK_ENV + "\\).*MicroBatchSource"),
        (
            lambda env: env.from_source(KafkaSource.builder().set_bootstrap_servers("b:9092").set_topics("t").build(), WatermarkStrategy.no_watermarks()),
            "KafkaSource " + SPARK_ENV + "\\).*MicroBatchSource",
        ),
        (lambda env: env.from_dataframe(object(), timestamp_column="ts"), "from_dataframe " + SPARK_ENV + "\\).*from_collection"),
        (lambda env: env.from_delta("/t", "ts"), "from_delta\\('/t'\\) " + SPARK_ENV + "\\).*no Delta reader"),
    ],
    ids=["from_kafka", "KafkaSource", "from_dataframe", "from_delta"],
)
def test_spark_only_sources_are_refused_on_the_local_engine_naming_the_spark_environment(build, needs) -> None:  # type: ignore[no-untyped-def]
    """Not an AttributeError: every Spark-only source of the Spark environment exists on the local one and refuses
    with the dispatch point's error (``executors.require_spark``)."""
    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(UnsupportedFeatureError, match=needs):
        build(env)


def test_every_spark_only_method_of_the_spark_environment_is_refused_on_the_local_one() -> None:
    """The Spark environment's own public methods: each one the local environment lacks would be an AttributeError."""
    local = set(dir(StreamExecutionEnvironment))
    spark_only = {n for n in vars(SparkStreamExecutionEnvironment) if not n.startswith("_")} - {"executor"}
    assert spark_only - local == set()
    for name in ("from_kafka", "from_dataframe", "from_delta", "foreach_batch", "to_dataframe()", "KafkaSource", "DeltaSink"):
        assert name in SPARK_ONLY
