"""Both executors compile a plan into the same graph: the same nodes in the same order with the same uids, and the
same edges (``datastream.plan.consumers``): the JVM-free engine's ``LocalExecutor`` (``local/executor.py``) and the
foreachBatch executor's ``ExecPlan`` (``spark/plan.py``), over a pipeline with every kind of edge: a stream read twice
(``a.union(a)``), side outputs, a two-input operator's two inputs, a keyed level after it, several sinks. JVM-free."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Dict, List, Tuple

import pytest

from pyspark_flinkish.common import Watermark, WatermarkGenerator, WatermarkStrategy
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.core.errors import UserFunctionError
from pyspark_flinkish.core.javamath import LONG_MIN
from pyspark_flinkish.core.records import StreamRecord
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.compiled_graph import CompiledNode, compile_graph
from pyspark_flinkish.datastream.functions import KeyedCoProcessFunction, KeyedProcessFunction, ProcessFunction
from pyspark_flinkish.datastream.plan import consumers, topological
from pyspark_flinkish.local.executor import LocalExecutor
from pyspark_flinkish.spark.chain import ChainRunner
from pyspark_flinkish.spark.plan import ExecPlan
from pyspark_flinkish.spark.rows import loads

LATE = OutputTag("late")
ODD = OutputTag("odd")


class Split(ProcessFunction):  # type: ignore[type-arg]
    def process_element(self, value: Any, ctx: Any) -> Any:
        yield value
        if value[1] % 2:
            yield ODD, value


class Pair(KeyedCoProcessFunction):  # type: ignore[type-arg]
    def process_element1(self, value: Any, ctx: Any) -> Any:
        yield ("a", value)

    def process_element2(self, value: Any, ctx: Any) -> Any:
        yield ("b", value)
        yield LATE, value


def _sinks() -> List[Any]:
    env = StreamExecutionEnvironment(clock=ManualClock(0))  # the plan is the same whichever engine runs it
    none = WatermarkStrategy.no_watermarks()
    a = env.from_source(MicroBatchSource([MicroBatch([("x", 1), ("y", 2)])]), none, "a")
    b = env.from_source(MicroBatchSource([MicroBatch([("x", 3)])]), none, "b")
    split = a.union(a).process(Split())
    paired = split.connect(b.union(split.get_side_output(ODD))).key_by(lambda e: e[0], lambda e: e[0]).process(Pair())
    paired.key_by(lambda e: e[0]).reduce(lambda x, y: x).add_sink(lambda v: None)
    paired.get_side_output(LATE).union(split.get_side_output(ODD)).add_sink(lambda v: None)
    return env._sinks


def _compiled(node: CompiledNode) -> Dict[str, Any]:
    """The compiled node's fields, a valve as its kind and state (valves have no equality)."""
    values = {f.name: getattr(node, f.name) for f in fields(CompiledNode)}
    valve = node.make_valve()
    values["valve"] = (type(valve).__name__, valve.to_dict())
    return values


def test_the_local_engine_and_the_spark_plan_compile_the_same_graph() -> None:
    sinks = _sinks()
    order = topological(sinks)
    local = LocalExecutor(sinks, ManualClock(0))
    plan = ExecPlan(sinks)
    local_nodes = [local.nodes[t.id] for t in local.order]
    position = {id(n): i for i, n in enumerate(local_nodes)}
    assert [t.id for t in local.order] == [t.id for t in plan.transformations] == [t.id for t in order]
    assert [n.uid for n in local_nodes] == [n.uid for n in plan.nodes]
    edges = consumers(order)
    for i, (mine, node, expected) in enumerate(zip(local_nodes, plan.nodes, edges)):
        assert [(position[id(c)], ch) for c, ch in mine.main] == expected.main, order[i].name
        assert {tag: [(position[id(c)], ch) for c, ch in cs] for tag, cs in mine.side.items()} == expected.side
        assert node.main == [c for c, _ in expected.main], order[i].name
        assert node.side == {tag: [c for c, _ in cs] for tag, cs in expected.side.items()}
        assert [node.channel_of(p) for p in range(len(node.main))] == [ch for _, ch in expected.main]
    # both are the one compiled graph (``datastream/compiled_graph.py``): the Spark node extends the compiled node
    # the local engine instantiates, field for field (a valve by its kind and state)
    assert [_compiled(n.compiled) for n in local_nodes] == [_compiled(n) for n in plan.nodes]
    assert [_compiled(n) for n in compile_graph(sinks)] == [_compiled(n) for n in plan.nodes]
    assert all(isinstance(n, CompiledNode) for n in plan.nodes)
    # each local node's valve is a fresh one of the compiled node's kind, its own
    for mine in local_nodes:
        assert type(mine.valve) is type(mine.compiled.make_valve()) and mine.valve is not mine.compiled.valve
    assert {type(n.valve).__name__ for n in local_nodes} == {"StatusWatermarkValve", "TwoInputWatermarkValve"}
    # the pipeline has what it is meant to cover: a stream read twice, both inputs of a two-input operator, side outputs
    union = next(i for i, t in enumerate(order) if t.kind == "union" and t.inputs[0] is t.inputs[1])
    assert [e for e in edges[order.index(order[union].inputs[0])].main if e[0] == union] == [(union, 0), (union, 1)]
    two_input = next(i for i, n in enumerate(plan.nodes) if n.two_input)
    assert sorted(ch for e in edges for c, ch in e.main if c == two_input) == [0, 1]
    assert {tag.tag_id for e in edges for tag in e.side} == {"late", "odd"}
    assert len([n for n in plan.nodes if n.kind == "sink"]) == 2


# ------------------------------------------------------------------------------------------------- one dispatch
# The same compiled graph run by both runners (``local/graph_runner.py``'s ``GraphRunner`` in the JVM-free engine,
# ``spark/chain.py``'s ``ChainRunner`` in a route task): every keyed operator and sink receives the same records in
# the same order (on Spark as rows in ``ord`` order), with the same mid-batch watermarks of a custom generator before
# them, and a user error names the same node.


class EveryElement(WatermarkGenerator):
    """A per-element generator: a watermark right after each element (Flink's punctuated form)."""

    def on_event(self, event: Any, event_timestamp: int, output: Any) -> None:
        output.emit_watermark(Watermark(event_timestamp - 1))

    def on_periodic_emit(self, output: Any) -> None:
        return None


class Seen(KeyedProcessFunction):  # type: ignore[type-arg]
    """Records each element with the watermark it arrived at (the local engine's keyed operator)."""

    def __init__(self, seen: List[Any]) -> None:
        self.seen = seen

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.seen.append((value, ctx.timer_service().current_watermark()))
        return iter(())


def _dispatch_job(seen: List[Any], sunk: Dict[str, List[Any]], fail_on: Any = None) -> Tuple[List[Any], List[Any]]:
    """A job with every kind of node a route task runs: a custom generator in ``assign_timestamps_and_watermarks``,
    map, a side output, a union of a stream with itself, a keyed operator and sinks; ``fail_on`` makes the map raise."""
    elements = [("x", 5), ("y", 8), ("x", 13), ("z", 21)]
    env = StreamExecutionEnvironment(clock=ManualClock(0))
    source = env.from_source(MicroBatchSource([MicroBatch(elements)]), WatermarkStrategy.no_watermarks(), "src")
    strategy = WatermarkStrategy.for_generator(EveryElement).with_timestamp_assigner(lambda e, _: e[1])

    def bump(e: Any) -> Any:
        if e == fail_on:
            msg = "bad element"
            raise ValueError(msg)
        return (e[0], e[1] + 1)

    stamped = source.assign_timestamps_and_watermarks(strategy).map(bump).name("bump")
    split = stamped.process(Split()).name("split")
    split.key_by(lambda e: e[0]).process(Seen(seen)).name("seen").add_sink(sunk.setdefault("keyed", []).append)
    split.get_side_output(ODD).union(split.get_side_output(ODD)).add_sink(sunk.setdefault("odd", []).append)
    split.add_sink(sunk.setdefault("main", []).append)
    return env._sinks, elements


def _on_spark(fail_on: Any = None) -> Tuple[ExecPlan, ChainRunner]:
    sinks, elements = _dispatch_job([], {}, fail_on)
    plan = ExecPlan(sinks)
    runner = ChainRunner(plan, {}, 0, 1)
    for n, element in enumerate(elements):
        runner.forward(plan.sources[0], StreamRecord(element, None), [1, 0, n])
    return plan, runner


def test_both_runners_dispatch_the_same_records_and_watermarks_to_each_node() -> None:
    seen: List[Any] = []
    sunk: Dict[str, List[Any]] = {}
    sinks, _ = _dispatch_job(seen, sunk)
    LocalExecutor(sinks, ManualClock(0)).run("local")
    plan, runner = _on_spark()
    rows = sorted(runner.rows, key=lambda r: r["ord"])  # Flink's order on Spark
    keyed = next(n.index for n in plan.nodes if n.keyed)
    on_spark: List[Any] = []
    watermark = LONG_MIN  # the keyed operator's, from the ``wm`` rows before each record
    for r in rows:
        if r["dest"] == keyed and r["kind"] == "wm":
            watermark = max(watermark, r["ts"])
        elif r["dest"] == keyed:
            on_spark.append((loads(r["value"]), watermark))
    assert on_spark == seen and len(seen) == 4
    assert seen[1] == (("y", 9), 4)  # after the first element's watermark (5 - 1)
    by_sink = [[loads(r["value"]) for r in rows if r["dest"] == n.index] for n in plan.nodes if n.kind == "sink"]
    assert sorted(map(repr, by_sink)) == sorted(map(repr, sunk.values()))  # each sink's records, in their order
    assert sunk["odd"] == [("y", 9), ("y", 9)]  # the union of the odd side output with itself: each twice
    assert len(sunk["main"]) == 4 and sunk["keyed"] == []


def test_both_runners_name_the_same_node_for_a_user_error() -> None:
    sinks, _ = _dispatch_job([], {}, fail_on=("y", 8))
    with pytest.raises(UserFunctionError) as local:
        LocalExecutor(sinks, ManualClock(0)).run("local")
    with pytest.raises(UserFunctionError) as spark:
        _on_spark(fail_on=("y", 8))
    assert local.value.operator == spark.value.operator == "bump"
    assert local.value.uid == spark.value.uid and local.value.uid is not None
    assert str(local.value) == str(spark.value)
