"""Custom ``WatermarkGenerator``\\ s (``WatermarkStrategy.for_generator``) on the foreachBatch executor, where Flink runs
them: ``on_event`` per element, in processing order.

* The generators' state across micro-batches stays with the driver (its watermark graph, the local engine's, whose
  JSON state pickles them). Per batch the driver ships each one's state into the route (:func:`generator_states`);
  the route runs in **one task, in processing order** (:func:`ordered_route`), calls ``on_event`` per element and
  returns the new state in a ``gen`` row; the driver installs it (:func:`install_generator_state`) and runs the
  periodic emission at the batch end, as the local engine does. Generators travel pickled as elements do (a class
  defined in ``__main__`` or a notebook by value).
* At a source, a generator per source partition (``SplitWatermarks``); in ``assign_timestamps_and_watermarks``, one
  generator. Either way, what ``on_event`` emits goes downstream at once (after the record's own depth-first
  processing), as Flink's source (its split's immediate output: the combined watermark, the minimum over the
  partitions, updated right after the record) and its assigner emit it: a later record of the same batch can be
  late. The route carries each such watermark to every state partition of the keyed operators after it as a ``wm``
  row ordered right after the triggering record's descendants (``[*order, WATERMARK_ORDER]``); the keyed task
  processes it at that point of its sequence and passes it on the same way (:func:`mid_batch_order`). A watermark
  meeting another input (``union``, a two-input operator) or an async I/O operator after such a generator is
  refused (:func:`refuse_unaligned_generators`). What ``on_periodic_emit`` emits goes on at the batch end (the
  driver), as do the built-in generators' watermarks.
"""

from __future__ import annotations

import pickle
from typing import Any, Dict, List, Optional

from ..core.clock import Clock
from ..core.errors import UnsupportedFeatureError
from ..core.operators import TimestampsAndWatermarksOperator
from ..core.watermark_alignment import SplitWatermarks
from ..core.watermarks import generator_from_dict, generator_to_dict
from ..datastream.plan import AsyncWaitSpec, Transformation
from .plan import ExecPlan, Node
from .rows import dumps, loads

WATERMARK_ORDER = 2**62
"""The last position below a record's order: a mid-batch watermark follows everything the record caused."""


def mid_batch_order(order: List[int]) -> List[int]:
    """The order of a watermark emitted right after the record (or watermark) at ``order`` and its descendants."""
    return [*order, WATERMARK_ORDER]


def ordered_route(plan: ExecPlan) -> bool:
    """Whether the route must run in one task in processing order: a custom generator sees every element of its
    partition (source) or stream (``assign_timestamps_and_watermarks``) in order, in one place."""
    return any(n.custom_generator for n in plan.nodes)


def refuse_unaligned_generators(plan: ExecPlan) -> None:
    """Refuse what would make a mid-batch watermark of a custom generator (at a source or in
    ``assign_timestamps_and_watermarks``) differ from Flink's on the foreachBatch executor: an operator after it
    with another input (``union``, ``connect``), whose watermark is the minimum over its inputs at that moment, or
    an async I/O operator (a watermark waits there for the requests before it)."""
    for node in plan.nodes:
        if not (node.custom_generator and node.kind in ("operator", "source")):
            continue
        for index in _downstream(plan, node.index):
            later = plan.nodes[index]
            parents = plan.parents(index)
            if len(parents) > 1 or later.two_input or later.kind == "union" or _is_async(plan, index):
                what = f"async I/O ({later.name!r})" if _is_async(plan, index) else f"{later.name!r}, which has another input"
                where = "assign_timestamps_and_watermarks" if node.kind == "operator" else "the source"
                msg = (
                    f"{where} ({node.name!r}): the watermarks a custom WatermarkGenerator emits within a "
                    f"micro-batch (from on_event, right after the event, as in Flink) cannot reach {what} as in "
                    "Flink on Spark. Use a built-in strategy (bounded out-of-orderness, monotonous timestamps: they "
                    "emit at the end of each micro-batch), or run the job on the local engine "
                    "(get_execution_environment() without a SparkSession)."
                )
                raise UnsupportedFeatureError(msg)


def _downstream(plan: ExecPlan, index: int) -> List[int]:
    seen: List[int] = []
    stack = [index]
    while stack:
        node = plan.nodes[stack.pop()]
        for nxt in [*node.main, *(c for cs in node.side.values() for c in cs)]:
            if nxt not in seen:
                seen.append(nxt)
                stack.append(nxt)
    return seen


def _is_async(plan: ExecPlan, index: int) -> bool:
    transformations: List[Transformation] = plan.transformations
    return bool(transformations) and isinstance(transformations[index].spec, AsyncWaitSpec)


def generator_states(graph: Any) -> Dict[int, bytes]:
    """The state of every custom generator in the driver's watermark graph (``LocalExecutor``), by plan index, as the
    route gets it: a source's generator and output per partition, an assigner's generator and output. Pickled as
    elements are (``rows.dumps``: a class defined in ``__main__`` or a notebook travels by value)."""
    states: Dict[int, bytes] = {}
    for i, t in enumerate(graph.order):
        node = graph.nodes[t.id]
        runner = graph.runners.get(t.id)
        if runner is not None and runner.strategy.has_user_generator:
            splits = runner.splits
            parts = {p: (g, splits.outputs[p].watermark, splits.outputs[p].idle) for p, g in splits.generators.items()}
            states[i] = dumps(parts)
        elif isinstance(node.operator, TimestampsAndWatermarksOperator) and node.operator.strategy.has_user_generator:
            op = node.operator
            states[i] = dumps((op.generator, op.wm_output.current, op.wm_output.idle))
    return states


def route_splits(node: Node, state: Optional[bytes], clock: Clock) -> SplitWatermarks:
    """A source's per-partition generators in the route, as the driver left them after the previous batch."""
    splits = SplitWatermarks(node.strategy, clock)  # type: ignore[arg-type]
    for p in node.source_partitions:
        splits.add_partition(p)
    if state is not None:
        _install_partitions(splits, loads(state))
        splits.update()  # the combined watermark the driver's source has emitted: a mid-batch one must pass it
    return splits


def _install_partitions(splits: SplitWatermarks, parts: Dict[Any, Any]) -> None:
    for p, (generator, watermark, idle) in parts.items():
        splits.add_partition(p)
        splits.generators[p] = generator
        splits.outputs[p].watermark, splits.outputs[p].idle = int(watermark), bool(idle)


def install_assigner_state(op: TimestampsAndWatermarksOperator, state: Optional[bytes]) -> None:
    """An assigner's generator and output in the route, as the driver left them after the previous batch."""
    if state is not None:
        op.generator, current, idle = loads(state)
        op.wm_output.current, op.wm_output.idle = int(current), bool(idle)


def splits_row(index: int, splits: SplitWatermarks) -> Dict[str, Any]:
    """The route's ``gen`` row for a source: its partitions' generators and outputs after the batch."""
    parts = {p: (g, splits.outputs[p].watermark, splits.outputs[p].idle) for p, g in splits.generators.items()}
    return {"kind": "gen", "dest": index, "sp": -1, "value": dumps(parts)}


def assigner_row(index: int, op: TimestampsAndWatermarksOperator) -> Dict[str, Any]:
    """The route's ``gen`` row for an assigner: its generator and output after the batch."""
    return {"kind": "gen", "dest": index, "sp": -1, "value": dumps((op.generator, op.wm_output.current, op.wm_output.idle))}


def _on_clock(generator: Any, clock: Clock) -> Any:
    """The generator bound to the driver's clock (one that came back from an executor holds a copy of it). In a
    Python worker (the one-pass path's advance, ``spark/watermark_advance.py``) a user generator whose class came by
    value cannot be pickled by reference: it stays the copy it came as, on the copy of the clock it came with (the
    worker's clock is fixed at the batch's processing time)."""
    try:
        data = generator_to_dict(generator, True)
    except pickle.PicklingError:
        return generator
    return generator_from_dict(data, clock, True)


def install_generator_state(graph: Any, index: int, value: bytes) -> None:
    """Install a ``gen`` row's state in the driver's watermark graph: a source's generators (the combined watermark
    goes downstream in the batch end's periodic emission) or an assigner's generator, whose last mid-batch watermark
    and idleness go downstream now (the keyed tasks processed each mid-batch watermark at its place in the batch)."""
    t = graph.order[index]
    state = loads(bytes(value))
    runner = graph.runners.get(t.id)
    if runner is not None:
        parts = {p: (_on_clock(g, graph.clock), w, idle) for p, (g, w, idle) in state.items()}
        _install_partitions(runner.splits, parts)
        return
    op = graph.nodes[t.id].operator
    generator, current, idle = state
    op.generator = _on_clock(generator, graph.clock)
    op.wm_output.emit_watermark(int(current))
    if idle:
        op.wm_output.mark_idle()
    else:
        op.wm_output.mark_active()


__all__ = [
    "WATERMARK_ORDER",
    "assigner_row",
    "generator_states",
    "install_assigner_state",
    "install_generator_state",
    "mid_batch_order",
    "ordered_route",
    "refuse_unaligned_generators",
    "route_splits",
    "splits_row",
]
