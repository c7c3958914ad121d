"""The executable form of a pipeline for Spark: its nodes in topological order with routing edges and levels.

Executors get a copy of the :class:`ExecPlan` without source data (the driver drops the transformations);
a :class:`Node` holds only what running it needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from ..core.batch_window import batch_eligibility
from ..core.errors import UnsupportedFeatureError
from ..core.operators import StreamOperator
from ..core.records import OutputTag
from ..datastream.plan import KeyedProcessSpec, TimestampsSpec, Transformation, WindowSpec, node_uid, topological


@dataclass
class Node:
    """One plan node as executors see it (no source data, only what running it needs)."""

    index: int
    kind: str  # source | operator | union | side_output | sink
    uid: str
    factory: Optional[Callable[[], StreamOperator]]
    keyed: bool
    key_selector: Optional[Callable[[Any], Any]]
    main: List[int] = field(default_factory=list)
    side: Dict[OutputTag, List[int]] = field(default_factory=dict)
    level: int = 0  # keyed operators: 1 + the deepest keyed ancestor
    generates_watermarks: bool = False  # assign_timestamps_and_watermarks
    batched: bool = False  # a window run by BatchWindowOperator (core/batch_window.py)
    name: str = ""  # the transformation's name (error messages)


class ExecPlan:
    """The pipeline's nodes in topological order, with routing edges."""

    def __init__(self, sinks: List[Transformation], vectorize: bool = True) -> None:
        order = topological(sinks)
        self.transformations = order
        index = {t.id: i for i, t in enumerate(order)}
        self.nodes: List[Node] = []
        for i, t in enumerate(order):
            uid = node_uid(t, i)
            self.nodes.append(
                Node(
                    index=i,
                    kind=t.kind,
                    uid=uid,
                    factory=t.factory,
                    keyed=t.keyed,
                    key_selector=t.spec.key_selector if isinstance(t.spec, (KeyedProcessSpec, WindowSpec)) else None,
                    generates_watermarks=isinstance(t.spec, TimestampsSpec),
                    batched=vectorize and isinstance(t.spec, WindowSpec) and batch_eligibility(t.factory()) is None,
                    name=t.name,
                )
            )
        for i, t in enumerate(order):
            for parent in t.inputs:
                p = self.nodes[index[parent.id]]
                if t.kind == "side_output":
                    p.side.setdefault(t.tag, []).append(i)  # type: ignore[arg-type]
                else:
                    p.main.append(i)
        for i, t in enumerate(order):  # levels of keyed operators
            node = self.nodes[i]
            parents = [self.nodes[index[p.id]] for p in t.inputs]
            deepest = max((p.level for p in parents), default=0)
            node.level = deepest + 1 if node.keyed else deepest
        for node in self.nodes:
            if node.kind == "operator" and not node.keyed and node.generates_watermarks and node.level > 0:
                msg = (
                    "assign_timestamps_and_watermarks after a keyed operator is not supported on Spark yet; "
                    "assign timestamps at the source (from_source's WatermarkStrategy) instead"
                )
                raise UnsupportedFeatureError(msg)
        self.sources = [n.index for n in self.nodes if n.kind == "source"]
        self.sinks = [n.index for n in self.nodes if n.kind == "sink"]
        self.levels = sorted({n.level for n in self.nodes if n.keyed})
        self.future_horizon_ms: Optional[int] = None  # far-future records: see the module docstring

    def keyed_at(self, level: int) -> List[int]:
        return [n.index for n in self.nodes if n.keyed and n.level == level]

    def parents(self, index: int) -> List[int]:
        return [n.index for n in self.nodes if index in n.main or any(index in v for v in n.side.values())]


__all__ = [
    "Node",
    "ExecPlan",
]
