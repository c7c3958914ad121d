"""The Spark chain runner numbers what a stateless operator emits below the input record's processing order,
whatever the operator's declared output type.

An operator with a declared type (``map(f, output_type=Types.ROW_NAMED(...))``, from_kafka's ROW-typed router of
malformed records) hands its records on through a ``DeclaredOutput`` (``core/declared_output.py``). The runner
must number them in the output it opened the operator with, not in ``operator.output``: numbering there
(attributes set on the wrapper) left every emitted record at ``[n]`` per Spark task instead of
``[1, <source order>, n]``, so a key's records from two route tasks were interleaved by their position in their
task — and late firings of session windows held other elements than Flink's (the Kafka -> Delta end-to-end test).
"""

from __future__ import annotations

from typing import Any, List

import pytest

from pyspark_flinkish.common import Types
from pyspark_flinkish.common.types import Row
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.core.declared_output import DeclaredOutput
from pyspark_flinkish.core.records import OutputTag, StreamRecord
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.spark.chain import ChainRunner
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment
from pyspark_flinkish.spark.plan import ExecPlan
from pyspark_flinkish.spark.rows import loads

EVENT = Types.ROW_NAMED(["k", "v"], [Types.STRING(), Types.LONG()])


class Emit(KeyedProcessFunction):  # type: ignore[type-arg]
    def process_element(self, value: Any, ctx: Any) -> Any:
        yield value


def _plan(declare: Any, operator: str) -> ExecPlan:
    env = SparkStreamExecutionEnvironment(None, clock=ManualClock(0), state_partitions=2, future_horizon_ms=None)
    ds = env.from_micro_batches([[]])
    if operator == "map":
        ds = ds.map(lambda e: e, output_type=declare)
    else:
        ds = ds.flat_map(lambda e: [e, e], output_type=declare)
    ds.key_by(lambda e: e[0]).process(Emit()).add_sink(lambda v: None)
    return ExecPlan(env._sinks)


@pytest.mark.parametrize("operator", ["map", "flat_map"])
@pytest.mark.parametrize("declare", [None, EVENT, Types.TUPLE([Types.STRING(), Types.LONG()])], ids=["none", "row", "tuple"])
def test_records_leaving_a_stateless_operator_keep_the_input_records_order(declare: Any, operator: str) -> None:
    plan = _plan(declare, operator)
    source = plan.sources[0]
    keyed = plan.keyed_at(plan.levels[0])[0]
    runner = ChainRunner(plan, {}, 0, 2)
    for offset in (7, 3, 9):  # a route task's records, each with its source order [1, partition, offset]
        runner.forward(source, StreamRecord(("a", offset), offset), [1, 0, offset])
    rows = [r for r in runner.rows if r["dest"] == keyed]
    per_input = 1 if operator == "map" else 2
    want: List[List[int]] = [[1, 0, o, n] for o in (7, 3, 9) for n in range(1, per_input + 1)]
    assert [r["ord"] for r in rows] == want
    values = [loads(r["value"]) for r in rows]
    if declare is EVENT:  # handed on as the declared type, as Flink's serializers do
        assert all(isinstance(v, Row) and v.k == "a" for v in values)
    else:
        assert all(type(v) is tuple for v in values)


class _Recorder:
    def __init__(self) -> None:
        self.main: List[Any] = []
        self.side: List[Any] = []
        self.marks: List[Any] = []

    def collect(self, record: StreamRecord) -> None:
        self.main.append(record.value)

    def collect_side(self, tag: OutputTag, record: StreamRecord) -> None:
        self.side.append((tag.tag_id, record.value))

    def emit_watermark(self, watermark: int) -> None:
        self.marks.append(watermark)

    def emit_idle(self, idle: bool) -> None:
        self.marks.append(idle)


def test_declared_output_converts_records_and_side_outputs_by_their_types_and_is_only_an_output() -> None:
    inner = _Recorder()
    out = DeclaredOutput(inner, EVENT)
    out.collect(StreamRecord(("a", 1), 5))
    out.collect_side(OutputTag("typed", EVENT), StreamRecord({"k": "b", "v": 2}, 5))
    out.collect_side(OutputTag("untyped"), StreamRecord({"k": "c"}, 5))
    out.emit_watermark(9)
    out.emit_idle(True)
    assert inner.main == [Row(k="a", v=1)]
    assert inner.side == [("typed", Row(k="b", v=2)), ("untyped", {"k": "c"})]
    assert inner.marks == [9, True]
    # nothing of the executor's output shows through the wrapper (its bookkeeping must be reached directly)
    inner.base = [1]  # type: ignore[attr-defined]
    assert not hasattr(out, "base")
    # no declared type: records go to the executor's output untouched; side outputs still by their tag's type
    plain = DeclaredOutput(inner)
    plain.collect(StreamRecord(["x"], 1))
    plain.collect_side(OutputTag("typed", EVENT), StreamRecord(("d", 4), 1))
    assert inner.main[-1] == ["x"] and inner.side[-1] == ("typed", Row(k="d", v=4))
