"""The watermark advance of one Flink micro-batch on the foreachBatch executor, from the batch's statistics.

The route's tasks report per source partition the latest event time and a count (``stat`` rows), the state of
the custom generators they ran (``gen`` rows, ``spark/generators.py``) and the replay batch they read
(``stat_batch``). :func:`advance_watermarks` feeds them to the driver's watermark graph (the JVM-free engine's,
``LocalExecutor(watermarks_only=True)``) and runs the periodic emission and the end of input: the one
implementation of that step, which the driver runs and which the keyed tasks of the one-pass path run too.

:class:`WatermarkAdvance` makes the step a deterministic function of (the graph's state as of the batch start, the
batch's statistics, the processing time ``now`` read at the batch start): a copy of the graph without source data or
sinks (:func:`watermark_template`) travels pickled, is restored on a clock fixed at ``now`` and advanced on the
statistics sorted into one order. Every keyed task computes the batch's new watermarks from it; the driver runs the
same on the same statistics and takes the resulting state, so that its graph is what every task computed.
"""

from __future__ import annotations

import base64
import copy
import pickle
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ..core.clock import ManualClock
from ..core.operators import StreamOperator, TimestampsAndWatermarksOperator
from ..datastream.plan import Transformation
from ..datastream.sources import MicroBatch, MicroBatchSource
from ..local.executor import LocalExecutor
from .generators import install_generator_state
from .rows import ROW_COLUMNS
from .source_rows import DataFrameSource, source_partition

STAT_KINDS = ("stat", "gen")
"""The statistics rows the advance reads (``future`` rows are the driver's report only)."""


@dataclass
class Advanced:
    """What an advance saw: the replay batch index (if any) and the records per source and partition."""

    batch_index: Optional[int] = None
    input_counts: Dict[str, Dict[str, int]] = field(default_factory=dict)


def advance_watermarks(
    graph: LocalExecutor, stats: Sequence[Mapping[str, Any]], step_watermarks: Optional[Mapping[int, Optional[int]]] = None
) -> Advanced:
    """Feed a batch's statistics rows (``kind``, ``dest``, ``part``, ``stat_max``, ``stat_count``, ``stat_batch``,
    ``value``) to ``graph``'s generators and run the periodic emission (``step_watermarks``: a source's explicit
    watermark by transformation id, from a source that steps Spark batches itself): the JVM-free engine's own
    :meth:`LocalExecutor.periodic_emission`, except that a replay source ends its input in the batch after its last
    one (so that every Spark batch advances each operator's watermark once): with sources of different lengths, one
    batch later than on the local engine (``docs/differences.md``)."""
    g = graph
    by_source: Dict[int, List[Mapping[str, Any]]] = {}
    for row in stats:
        if row["kind"] in STAT_KINDS:
            by_source.setdefault(int(row["dest"]), []).append(row)
    seen = Advanced()
    for i, t in enumerate(g.order):
        node = g.nodes[t.id]
        for row in by_source.get(i, ()):
            if row["kind"] == "gen":  # a custom generator's state after the route ran it (``spark/generators.py``)
                install_generator_state(g, i, row["value"])
                continue
            if row["stat_batch"] is not None and row["stat_batch"] >= 0:
                previous = seen.batch_index if seen.batch_index is not None else -1
                seen.batch_index = max(int(row["stat_batch"]), previous)
            if t.kind == "source":
                if row["part"] is None:
                    continue  # a batch marker: no partition, no event
                part = source_partition(t, row["part"])
                counts = seen.input_counts.setdefault(t.name, {})  # progress counter
                counts[str(part)] = counts.get(str(part), 0) + int(row["stat_count"] or 0)
                if row["stat_count"] and not t.watermark_strategy.has_user_generator:
                    g.runners[t.id].observe(part, None, int(row["stat_max"]))
                else:
                    g.runners[t.id].splits.add_partition(part)
            elif isinstance(node.operator, TimestampsAndWatermarksOperator) and row["stat_count"]:
                node.operator.generator.on_event(None, int(row["stat_max"]), node.operator.wm_output)
    g.periodic_emission(seen.batch_index, step_watermarks, end_later=True)  # the local engine's rule, Spark's end
    return seen


def graph_watermarks(graph: LocalExecutor) -> Dict[int, int]:
    """Every operator's current watermark, by plan index."""
    out = {}
    for i, t in enumerate(graph.order):
        op = graph.nodes[t.id].operator
        if op is not None:
            out[i] = op.current_watermark
    return out


class _Forwarding:
    """The factory of a watermark-only operator (the graph forwards watermarks through it): picklable."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self) -> StreamOperator:
        return StreamOperator(self.name)


class _ValveSpec:
    """Stands in for a two-input node's spec in the template: only the input valve it makes (a copy of ``valve``)."""

    def __init__(self, valve: Any) -> None:
        self.valve = valve

    def make_valve(self) -> Any:
        return copy.deepcopy(self.valve)


def _source_shape(source: Any) -> Optional[Any]:
    """What the watermark graph reads of a source (partitions, explicit watermarks, end of input, the replay
    batches' watermarks and processing times), without its data; None for a source it cannot ship."""
    if isinstance(source, MicroBatchSource):
        # a plain MicroBatchSource with the source's settings: a subclass may read its batches through a property
        # (FileSource reads its files), which the shape's empty batches must not go through
        shape = MicroBatchSource.__new__(MicroBatchSource)
        shape.__dict__.update(source.__dict__)
        shape.batches = [MicroBatch((), b.watermark, None, b.processing_time) for b in source.batches]
        return shape
    if isinstance(source, DataFrameSource):
        shape = copy.copy(source)
        shape.df, shape.element, shape.restart = None, None, None
        return shape
    return None


def watermark_template(graph: LocalExecutor) -> Optional[bytes]:
    """The driver's watermark graph without source data, sink functions or DataFrames, built on a
    :class:`ManualClock` and pickled: what a task restores a batch's graph into. None when a source or a timestamp
    assigner cannot be shipped (the caller keeps the driver-only advance, which gives the same watermarks)."""
    made: Dict[int, Transformation] = {}
    for t in graph.order:
        op = graph.nodes[t.id].operator
        factory: Any = None
        if isinstance(op, TimestampsAndWatermarksOperator):
            factory = t.factory
        elif op is not None:
            factory = _Forwarding(op.name)
        source = None
        if t.kind == "source":
            source = _source_shape(t.source)
            if source is None:
                return None
        make_valve = getattr(t.spec, "make_valve", None)
        spec = _ValveSpec(make_valve()) if callable(make_valve) else None
        made[t.id] = Transformation(
            kind=t.kind,
            name=t.name,
            inputs=[made[i.id] for i in t.inputs],
            factory=factory,
            source=source,
            watermark_strategy=t.watermark_strategy,
            tag=t.tag,
            keyed=t.keyed,
            spec=spec,
            uid=t.uid,
            id=t.id,
        )
    sinks = [made[t.id] for t in graph.order if t.kind == "sink"]
    clock = ManualClock(0)
    template = LocalExecutor(sinks, clock, watermarks_only=True)
    for t in template.order:
        node = template.nodes[t.id]
        if node.operator is not None:
            node.operator.open(node, clock)
    from pyspark import cloudpickle  # pure-Python module shipped with pyspark; no JVM

    try:
        return cloudpickle.dumps(template)  # type: ignore[no-any-return]
    except Exception:  # e.g. an assigner holding a lock: the same objects could not reach the route either
        return None


def sorted_stats(blobs: Sequence[bytes]) -> List[Dict[str, Any]]:
    """The statistics rows of a batch from the route tasks' pickled lists (``stats`` rows, ``spark/rows.py``), in
    one order whatever order they arrived in."""
    rows: List[Dict[str, Any]] = []
    for blob in sorted(bytes(b) for b in blobs):
        rows.extend({c: r.get(c) for c in ROW_COLUMNS} for r in pickle.loads(blob))
    return rows


def _by_value(state: Any) -> Any:
    """``state`` (``LocalExecutor.watermark_state``) with every user generator pickled again by cloudpickle: the
    state pickles it with ``pickle``, by reference to its class, which a Python worker cannot import when the class
    was defined in ``__main__``, a notebook or a module not shipped to the executors (as elements travel)."""
    if isinstance(state, dict):
        obj = state.get("object")
        if state.get("kind") == "user" and isinstance(obj, dict) and set(obj) == {"P"}:
            from pyspark import cloudpickle  # pure-Python module shipped with pyspark; no JVM

            generator = pickle.loads(base64.b64decode(obj["P"]))  # the driver's own state
            return {**state, "object": {"P": base64.b64encode(cloudpickle.dumps(generator, protocol=4)).decode("ascii")}}
        return {k: _by_value(v) for k, v in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(_by_value(v) for v in state)
    return state


@dataclass
class AdvanceResult:
    """A batch's advance: the advanced graph, every operator's new watermark by plan index, and what the advance
    saw."""

    graph: LocalExecutor
    watermarks: Dict[int, int]
    seen: Advanced

    @property
    def state(self) -> Dict[str, Any]:
        """The graph's new state (``LocalExecutor.watermark_state``), what the driver keeps. Only the driver asks for
        it: in a Python worker a user generator whose class came by value cannot be pickled by ``pickle``."""
        return self.graph.watermark_state()


class WatermarkAdvance:
    """The watermark advance of one batch as a function of its statistics: the graph template, its state as of the
    batch start and the batch's processing time. Shipped to the keyed tasks; the driver runs the same."""

    def __init__(self, template: bytes, state: Dict[str, Any], now: int) -> None:
        self.template = template
        self.state = _by_value(state)
        self.now = now

    def run(self, stats: Sequence[Mapping[str, Any]]) -> AdvanceResult:
        """Restore the graph as of the batch start on a clock at ``now`` and advance it on ``stats``."""
        graph: LocalExecutor = pickle.loads(self.template)
        graph.clock.set(self.now)  # type: ignore[attr-defined]  # the template's ManualClock, shared by its parts
        graph.restore_watermark_state(self.state)
        seen = advance_watermarks(graph, stats)
        return AdvanceResult(graph, graph_watermarks(graph), seen)


__all__ = [
    "STAT_KINDS",
    "Advanced",
    "AdvanceResult",
    "WatermarkAdvance",
    "advance_watermarks",
    "graph_watermarks",
    "sorted_stats",
    "watermark_template",
]
