"""The logical plan a pipeline builds: a DAG of transformations, independent of any engine.

Each engine compiles the same plan: the JVM-free engine into in-process operators, the Spark executors
into streaming queries. Operators are created by factories so that every execution starts fresh.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from ..core.operators import StreamOperator
from ..core.records import OutputTag

_ids = itertools.count(1)


@dataclass(eq=False)
class Transformation:
    """One node of the plan.

    ``kind`` is ``source``, ``operator`` (one input, ``factory`` makes its operator), ``union``,
    ``side_output`` (selects ``tag`` of its input) or ``sink``.
    """

    kind: str
    name: str
    inputs: List[Transformation] = field(default_factory=list)
    factory: Optional[Callable[[], StreamOperator]] = None
    source: Any = None
    watermark_strategy: Any = None
    tag: Optional[OutputTag] = None
    sink: Any = None
    keyed: bool = False
    spec: Dict[str, Any] = field(default_factory=dict)
    output_type: Any = None
    uid: Optional[str] = None
    id: int = field(default_factory=lambda: next(_ids))

    def __repr__(self) -> str:
        return f"Transformation({self.id}, {self.kind}, {self.name!r})"


def node_uid(t: Transformation, position: int) -> str:
    """The uid that names a node's state: the user's ``.uid(...)``, else one made of the node's position in
    :func:`topological` order, its kind and name (stable while the pipeline's shape stays the same)."""
    if t.uid:
        return t.uid
    uid = f"{position:03d}-{t.kind}-{t.name}"
    return uid.replace("/", "_").replace(" ", "_").replace("(", "_").replace(")", "")


def topological(sinks: List[Transformation]) -> List[Transformation]:
    """All transformations the sinks depend on, inputs before consumers, in creation order."""
    seen: Dict[int, Transformation] = {}

    def visit(t: Transformation) -> None:
        if t.id in seen:
            return
        for i in t.inputs:
            visit(i)
        seen[t.id] = t

    for s in sinks:
        visit(s)
    return sorted(seen.values(), key=lambda t: t.id)


__all__ = [
    "Transformation",
    "node_uid",
    "topological",
]
