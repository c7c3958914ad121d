"""Both executors compile a plan into the same graph: the same nodes in the same order with the same uids, and the
same edges (``datastream.plan.consumers``): the JVM-free engine's ``LocalExecutor`` (``local/executor.py``) and the
foreachBatch executor's ``ExecPlan`` (``spark/plan.py``), over a pipeline with every kind of edge: a stream read twice
(``a.union(a)``), side outputs, a two-input operator's two inputs, a keyed level after it, several sinks. JVM-free."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Dict, List

from pyspark_flinkish.common import WatermarkStrategy
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.compiled_graph import CompiledNode, compile_graph
from pyspark_flinkish.datastream.functions import KeyedCoProcessFunction, ProcessFunction
from pyspark_flinkish.datastream.plan import consumers, topological
from pyspark_flinkish.local.executor import LocalExecutor
from pyspark_flinkish.spark.plan import ExecPlan

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
