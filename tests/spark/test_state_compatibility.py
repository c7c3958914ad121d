"""A restart on a checkpoint whose state an incompatible operator wrote fails at ``execute()``, before the query
starts, with a ``StateError`` naming the operator and what changed; compatible changes start. The first run's
signatures are recorded by the foreachBatch driver when it is created (no query needs to run for that); the
signatures themselves are tested in ``jvm-free-tests/spark/test_state_signatures.py``, a real restart of a running
query in ``tests/spark/test_spark_columnar.py``."""

from __future__ import annotations

from typing import Any, Dict

import pytest

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.core.errors import StateError
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import AggregateFunction, KeyedProcessFunction
from pyspark_flinkish.datastream.state import ListStateDescriptor, ValueStateDescriptor
from pyspark_flinkish.datastream.window import CountTrigger, TumblingEventTimeWindows
from pyspark_flinkish.spark.driver import ForeachBatchDriver

pytestmark = pytest.mark.spark


class Avg(AggregateFunction):  # type: ignore[type-arg]
    def __init__(self, pair: bool = True) -> None:
        self.pair = pair

    def create_accumulator(self):  # type: ignore[no-untyped-def]
        return (0, 0) if self.pair else [0, 0]

    def add(self, value, acc):  # type: ignore[no-untyped-def]
        return type(acc)((acc[0] + 1, acc[1] + value[1]))

    def get_result(self, acc):  # type: ignore[no-untyped-def]
        return acc[1] / acc[0]

    def merge(self, a, b):  # type: ignore[no-untyped-def]
        return type(a)((a[0] + b[0], a[1] + b[1]))


class Seen(KeyedProcessFunction):  # type: ignore[type-arg]
    def __init__(self, as_list: bool = False, label: str = "seen") -> None:
        self.as_list, self.label = as_list, label

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        if self.as_list:
            self.seen = runtime_context.get_list_state(ListStateDescriptor("seen", Types.LONG()))
        else:
            self.seen = runtime_context.get_state(ValueStateDescriptor("seen", Types.LONG()))

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        yield self.label, value


def _env(spark: Any, size_ms: int = 10, trigger: Any = None, pair: bool = True, as_list: bool = False,
         key_type: Any = None, label: str = "seen", scale: int = 1) -> Any:  # fmt: skip
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
    events = env.from_source(MicroBatchSource([MicroBatch([("a", 1)])]), strategy, "events").uid("events")
    events = events.map(lambda e: (e[0], e[1] * scale)).uid("scale")
    window = events.key_by(lambda e: e[0], key_type=key_type or Types.STRING()).window(
        TumblingEventTimeWindows.of(Duration.of_millis(size_ms))
    )
    if trigger is not None:
        window = window.trigger(trigger)
    window.aggregate(Avg(pair)).uid("averages").add_sink(lambda _: None)
    events.key_by(lambda e: e[0]).process(Seen(as_list, label)).uid("seen").add_sink(lambda _: None)
    return env


@pytest.mark.parametrize(
    ("change", "what"),
    [
        ({"size_ms": 20}, r"operator 'averages': \[window:TumblingEventTimeWindows\(10, 0\).*\] -> \[window:TumblingEventTimeWindows\(20, 0\)"),
        ({"trigger": CountTrigger.of(2)}, r"operator 'averages': .*EventTimeTrigger\(\).* -> .*CountTrigger\.of\(2\)"),
        ({"pair": False}, r"operator 'averages': accumulator tuple -> list"),
        ({"key_type": Types.LONG()}, r"operator 'averages': key STRING -> LONG"),
        ({"as_list": True}, r"operator 'seen': state \[seen:value:LONG\] -> \[seen:list:LONG\]"),
    ],
)
def test_an_incompatible_operator_is_refused_at_start(spark: Any, tmp_path: Any, change: Dict[str, Any], what: str) -> None:
    checkpoint = str(tmp_path / "ck")
    first = _env(spark)
    ForeachBatchDriver(first, list(first._sinks), checkpoint, None)  # what a first execute() records
    changed = _env(spark, **change)
    with pytest.raises(StateError, match=what) as info:
        changed.execute("changed", checkpoint_location=checkpoint)
    assert "never reset silently" in str(info.value) and checkpoint in str(info.value)
    assert not spark.streams.active or all(q.name is None or not q.name.startswith("changed") for q in spark.streams.active)


def test_changed_function_code_and_a_new_operator_start(spark: Any, tmp_path: Any) -> None:
    checkpoint = str(tmp_path / "ck")
    first = _env(spark)
    ForeachBatchDriver(first, list(first._sinks), checkpoint, None)
    changed = _env(spark, label="seen-v2", scale=1000)  # other function bodies, the same state
    changed.from_source(MicroBatchSource([MicroBatch([("b", 2)])]), WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda e, _: e[1]), "more").key_by(lambda e: e[0]).process(Seen()).uid("new-op").add_sink(lambda _: None)  # fmt: skip
    driver = ForeachBatchDriver(changed, list(changed._sinks), checkpoint, None)
    assert {"averages", "seen", "new-op"} <= set(driver._meta()["operators"])
