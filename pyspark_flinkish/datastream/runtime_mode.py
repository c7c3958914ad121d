"""Runtime modes (``set_runtime_mode``): which sources are bounded, and the plan a BATCH job runs.

BATCH execution is a rewrite of the plan, the same for every engine: sources and ``assign_timestamps_and_watermarks``
keep their timestamps but generate no watermarks (the watermark stays ``LONG_MIN`` until the end of input, then jumps
to ``LONG_MAX``), and every keyed operator runs inside
:class:`~pyspark_flinkish.core.batch_execution.BatchKeyedOperator` (keys in the order of their serialized bytes, from
the operator's ``key_type``; input sorted per key by timestamp, each key ending with all of its timers). The window,
state and timer rules stay the keyed operators' own.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Callable, Dict, List

from ..core.batch_execution import BatchKeyedOperator
from ..core.errors import InvalidPipelineError, InvalidTypeError, UnsupportedFeatureError
from ..core.operators import KeyedOperator, TimestampsAndWatermarksOperator
from ..core.watermarks import WatermarkStrategy
from .execution_mode import RuntimeExecutionMode
from .plan import TimestampsSpec, Transformation, TwoInputSpec, topological
from .sources import MicroBatch, MicroBatchSource


def unbounded_sources(sinks: List[Transformation]) -> List[str]:
    """The names of the sources of the sinks' pipeline that never end: a source is bounded when it has
    ``end_of_input`` (``from_collection``, a ``MicroBatchSource`` with ``end_of_input=True``,
    ``from_delta(bounded=True)``); Kafka and streaming DataFrames are not."""
    return [t.name for t in topological(sinks) if t.kind == "source" and not getattr(t.source, "end_of_input", False)]


def check_mode(mode: Any) -> RuntimeExecutionMode:
    if not isinstance(mode, RuntimeExecutionMode):
        msg = f"set_runtime_mode needs a RuntimeExecutionMode (STREAMING, BATCH, AUTOMATIC); got {type(mode).__name__} {mode!r}"
        raise InvalidTypeError(msg)
    return mode


def is_batch(mode: RuntimeExecutionMode, sinks: List[Transformation]) -> bool:
    """Whether the job runs in BATCH mode: ``BATCH`` (refused, as Flink refuses it, when a source is unbounded), or
    ``AUTOMATIC`` with every source bounded."""
    if mode is RuntimeExecutionMode.STREAMING:
        return False
    unbounded = unbounded_sources(sinks)
    if mode is RuntimeExecutionMode.BATCH and unbounded:
        msg = (
            f"Detected an UNBOUNDED source ({', '.join(unbounded)}) with the runtime mode set to BATCH. This "
            "combination is not allowed (as in Flink): set the runtime mode to STREAMING or AUTOMATIC, or make the "
            "source bounded (MicroBatchSource(..., end_of_input=True), from_delta(path, bounded=True))"
        )
        raise InvalidPipelineError(msg)
    return not unbounded


def batch_strategy(strategy: WatermarkStrategy) -> WatermarkStrategy:
    """``strategy``'s timestamps without its watermarks (BATCH mode ignores watermarks until the end of input)."""
    batch = WatermarkStrategy.no_watermarks()
    if strategy.timestamp_assigner is not None:
        batch = batch.with_timestamp_assigner(strategy.timestamp_assigner)
    return batch


def _batch_source(source: Any) -> Any:
    """A ``MicroBatchSource``'s elements as one micro-batch without explicit watermarks, ending its input in that
    batch (``batch_execution``): a BATCH job reads its input whole (on Spark in one micro-batch, so that each keyed
    operator's sorted run sees all of it). Its processing time is the last batch's. Other sources as they are."""
    if not isinstance(source, MicroBatchSource):
        return source
    if len(source.batches) <= 1 and not source.explicit_watermarks:
        same = copy.copy(source)  # the user's source stays as it is for STREAMING runs
        same.batch_execution = True  # type: ignore[attr-defined]
        return same
    elements: List[Any] = []
    partitions: List[Any] = []
    times = [b.processing_time for b in source.batches if b.processing_time is not None]
    for b in source.batches:
        elements.extend(b.elements)
        partitions.extend(b.partition_of(i) for i in range(len(b.elements)))
    merged = MicroBatch(elements, partitions=partitions, processing_time=times[-1] if times else None)
    batch = MicroBatchSource([merged], source.end_of_input, list(source.partitions))
    batch.batch_execution = True  # type: ignore[attr-defined]
    return batch


def _batch_factory(factory: Callable[[], Any], key_type: Any) -> Callable[[], Any]:
    def make() -> Any:
        op = factory()
        if not isinstance(op, KeyedOperator):
            return op
        rolling = bool(getattr(getattr(op, "function", None), "rolling_aggregation", False))
        return BatchKeyedOperator(op, final_value_only=rolling, key_type=key_type)

    return make


def batch_plan(sinks: List[Transformation]) -> List[Transformation]:
    """The sinks of a copy of the plan that runs as Flink's BATCH mode does (the module docstring); the copy keeps
    every node's id, so node uids (state names) are the same."""
    copies: Dict[int, Transformation] = {}
    for t in topological(sinks):
        new = dataclasses.replace(t, inputs=[copies[i.id] for i in t.inputs])
        if t.kind == "source":
            new.source = _batch_source(t.source)
            new.watermark_strategy = batch_strategy(t.watermark_strategy)
        elif isinstance(t.spec, TimestampsSpec):
            strategy = batch_strategy(t.spec.strategy)
            new.spec = TimestampsSpec(strategy)
            new.factory = lambda name=t.name, s=strategy: TimestampsAndWatermarksOperator(name, s)
        elif t.keyed and isinstance(t.spec, TwoInputSpec):
            msg = (
                f"{t.name!r}: a keyed two-input operator (connect(...).key_by(...).process, or a keyed stream connected "
                "with a broadcast stream) is not supported in BATCH runtime mode yet: Flink sorts both inputs by key "
                "(the broadcast input first); run the job in STREAMING mode (the default)"
            )
            raise UnsupportedFeatureError(msg)
        elif t.keyed and t.factory is not None:
            new.factory = _batch_factory(t.factory, getattr(t.spec, "key_type", None))
        copies[t.id] = new
    return [copies[s.id] for s in sinks]


def plan_for_mode(mode: RuntimeExecutionMode, sinks: List[Transformation]) -> List[Transformation]:
    """The sinks to run in ``mode``: the BATCH plan (:func:`batch_plan`) when :func:`is_batch`, else ``sinks``."""
    return batch_plan(sinks) if is_batch(mode, sinks) else sinks


__all__ = ["batch_plan", "batch_strategy", "check_mode", "is_batch", "plan_for_mode", "unbounded_sources"]
