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
from ..datastream.plan import TimestampsSpec, Transformation, WindowSpec, node_uid, topological
from . import state_store


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


def refuse_per_event_generators(transformations: List[Transformation]) -> None:
    """Refuse a custom ``WatermarkGenerator`` (``WatermarkStrategy.for_generator``) wherever a Spark pipeline has a
    watermark strategy: at a source or in ``assign_timestamps_and_watermarks``. Flink calls its ``on_event`` for
    every element, in order; the Spark executors generate watermarks on the driver from each micro-batch's
    per-partition maximum timestamp, which gives the built-in generators' exact result (they depend on that
    maximum only) but not a custom one's. Raises :class:`UnsupportedFeatureError` naming the alternatives."""
    for t in transformations:
        if t.kind == "source":
            strategy = t.watermark_strategy
        elif isinstance(t.spec, TimestampsSpec):
            strategy = t.spec.strategy
        else:
            continue
        if strategy is not None and strategy.has_user_generator:
            where = f"source {t.name!r}" if t.kind == "source" else f"assign_timestamps_and_watermarks ({t.name!r})"
            msg = (
                f"{where}: a custom WatermarkGenerator (WatermarkStrategy.for_generator) is not supported on Spark: "
                "Flink calls its on_event for every element, but the Spark executors generate watermarks on the "
                "driver from each micro-batch's maximum timestamp per source partition, so per-event (e.g. "
                "punctuated) logic cannot run as in Flink. Use a built-in strategy "
                "(WatermarkStrategy.for_bounded_out_of_orderness / for_monotonous_timestamps, optionally "
                ".with_idleness), or run the job on the local engine (get_execution_environment() without a "
                "SparkSession)."
            )
            raise UnsupportedFeatureError(msg)


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
                    key_selector=getattr(t.spec, "key_selector", None) if t.keyed else None,
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
        refuse_per_event_generators(order)
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


def keep_state_layouts(plan: ExecPlan, state_root: str) -> None:
    """A window whose checkpointed state is keyed snapshots (``v=`` files) keeps the general operator though it
    could run batch-wise: a checkpoint's first run fixes its layout (earlier versions of this package ran windows
    whose functions keep state of their own, or override ``clear()``, on the general operator)."""
    for node in plan.nodes:
        if node.batched and state_store.has_snapshots(state_root, node.uid):
            node.batched = False


__all__ = [
    "ExecPlan",
    "Node",
    "keep_state_layouts",
    "refuse_per_event_generators",
]
