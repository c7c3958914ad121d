"""Which pipelines the columnar path takes (``spark/columnar.py``'s ``detect``), decided without a JVM: a plain
DataFrame source with a timestamp column into one tumbling/sliding ``ColumnAggregate`` window over key columns."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, List, Optional

import pytest

from pyspark_flinkish.common import Duration, WatermarkStrategy
from pyspark_flinkish.datastream.aggregates import ColumnAggregate, Count, Sum
from pyspark_flinkish.datastream.window import EventTimeSessionWindows, TumblingEventTimeWindows
from pyspark_flinkish.spark import columnar
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment
from pyspark_flinkish.spark.plan import ExecPlan


def _field(name: str, spark_type: str) -> Any:
    return SimpleNamespace(name=name, dataType=type(spark_type, (), {})())


class _FakeFrame:
    """What ``detect`` reads of a streaming DataFrame: its columns and their Spark types."""

    isStreaming = True  # noqa: N815 (Spark's name)
    columns = ("k", "v", "ts", "seq")
    schema = SimpleNamespace(fields=[_field("k", "StringType"), _field("v", "LongType"), _field("ts", "LongType"), _field("seq", "LongType")])


def _detect(assigner: Any, kafka_like: bool = False, aggregate: Optional[Any] = None) -> Any:
    env = SparkStreamExecutionEnvironment(spark=None, state_partitions=2)
    stream = env.from_dataframe(
        _FakeFrame(), WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5)), timestamp_column="ts",
        order_columns=["seq"],
    )
    if kafka_like:  # elements made by a connector's own conversion
        stream._t.source.element = lambda row: row
    out: List[Any] = []
    stream.key_by(lambda r: r.k).window(assigner).aggregate(aggregate or ColumnAggregate(Count(), Sum("v"))).add_sink(out.append)
    plan = ExecPlan(list(env._sinks))
    return columnar.detect(plan, plan.transformations)


def test_a_tumbling_column_aggregate_over_a_dataframe_source_is_columnar() -> None:
    cw = _detect(TumblingEventTimeWindows.of(Duration.of_millis(20)))
    assert cw is not None
    assert (cw.key_columns, cw.parts, cw.size, cw.timestamp_column) == (["k"], [("count", None), ("sum", "v")], 20, "ts")


@pytest.mark.parametrize(
    ("assigner", "kafka_like"),
    [(EventTimeSessionWindows.with_gap(Duration.of_millis(20)), False), (TumblingEventTimeWindows.of(Duration.of_millis(20)), True)],
    ids=["session window", "connector elements"],
)
def test_other_shapes_take_the_general_path(assigner: Any, kafka_like: bool) -> None:
    assert _detect(assigner, kafka_like) is None
