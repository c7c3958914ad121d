"""The compiled graph of a plan: one picklable node per transformation, in topological order, with its edges.

Both executors start from it: the JVM-free engine (``local/executor.py``, ``LocalExecutor``) instantiates each node
(its operator from ``factory``, its input valve from :meth:`CompiledNode.make_valve`), and the foreachBatch executor
(``spark/plan.py``, ``ExecPlan``) extends each node with its Spark fields (keyed levels, key selectors, column
layouts) and ships it to its tasks. So the order, the uids, the kinds and the edges are one rule
(``jvm-free-tests/spark/test_compiled_graph.py``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from ..core.operators import StreamOperator
from ..core.records import OutputTag
from ..core.watermark_alignment import StatusWatermarkValve
from .plan import Transformation, TwoInputSpec, consumers, node_uids, topological


@dataclass
class CompiledNode:
    """One node of the compiled graph: what it is and where its output goes, no source data and no live operator.

    ``kind`` is the transformation's (``source``, ``operator``, ``union``, ``side_output``, ``sink``); ``keyed``: a
    keyed operator; ``two_input``: a two-input operator (``process_input(channel, record)``); ``factory`` makes the
    operator (each executor, or each task, opens its own). ``main`` lists the consumers of the main output by index,
    ``main_channels`` the consumer's input each of them is, ``side`` the consumers of each side output by tag (each
    a ``side_output`` node, its input 0)."""

    index: int
    kind: str
    uid: str
    factory: Optional[Callable[[], StreamOperator]]
    name: str = ""
    keyed: bool = False
    two_input: bool = False
    main: List[int] = field(default_factory=list)
    main_channels: List[int] = field(default_factory=list)
    side: Dict[OutputTag, List[int]] = field(default_factory=dict)
    valve: Any = None
    """A fresh copy of the input valve a node of this kind starts with (:meth:`make_valve`); None: a plain
    :class:`~pyspark_flinkish.core.watermark_alignment.StatusWatermarkValve` of ``inputs`` channels."""
    inputs: int = 1

    def channel_of(self, position: int) -> int:
        """The input of ``main[position]`` this node feeds."""
        return self.main_channels[position] if position < len(self.main_channels) else 0

    def make_valve(self) -> Any:
        """The node's input valve, fresh: the minimum over its inputs as its spec says (a two-input operator's, a
        ``make_valve`` of the spec), else a ``StatusWatermarkValve`` of its inputs."""
        if self.valve is not None:
            return copy.deepcopy(self.valve)
        return StatusWatermarkValve(max(1, self.inputs))


def compiled_fields(t: Transformation, index: int, uid: str) -> Dict[str, Any]:
    """The :class:`CompiledNode` fields of ``t`` at ``index`` of the topological order, without its edges (for a
    subclass's constructor, ``spark/plan.py``'s ``Node``)."""
    make_valve = getattr(t.spec, "make_valve", None)  # a two-input operator's inputs (``datastream/join.py`` too)
    return {
        "index": index,
        "kind": t.kind,
        "uid": uid,
        "factory": t.factory,
        "name": t.name,
        "keyed": t.keyed,
        "two_input": isinstance(t.spec, TwoInputSpec),
        "valve": make_valve() if callable(make_valve) else None,
        "inputs": len(t.inputs),
    }


def link(nodes: List[Any], order: List[Transformation]) -> None:
    """Give each node of ``nodes`` (compiled from ``order``) its edges, by :func:`~.plan.consumers`: the one rule
    both executors compile with."""
    for node, edges in zip(nodes, consumers(order)):
        node.main = [c for c, _ in edges.main]
        node.main_channels = [channel for _, channel in edges.main]
        node.side = {tag: [c for c, _ in edges_of] for tag, edges_of in edges.side.items()}


def compile_graph(sinks: List[Transformation]) -> List[CompiledNode]:
    """The compiled graph of the sinks' pipeline: one :class:`CompiledNode` per transformation of
    :func:`~.plan.topological` order, with its uid (:func:`~.plan.node_uids`) and edges."""
    order = topological(sinks)
    nodes = [CompiledNode(**compiled_fields(t, i, uid)) for i, (t, uid) in enumerate(zip(order, node_uids(order)))]
    link(nodes, order)
    return nodes


__all__ = ["CompiledNode", "compile_graph", "compiled_fields", "link"]
