"""Processing-time ticks: the micro-batches that fire due processing-time timers on an idle stream.

Flink fires a processing-time timer (a ``KeyedProcessFunction``'s, a processing-time window's, a
``ContinuousProcessingTimeTrigger``'s) on the wall clock, with or without input. A Spark streaming query runs
a ``foreachBatch`` micro-batch only when a source has new data (no-data batches exist only for Spark's own
stateful operators), so on an idle stream an overdue timer would wait for the next record.

The driver therefore records, after every micro-batch, the earliest processing-time timer pending in any
keyed state partition (``<checkpoint>/flinkish/ticks.json``: the batch id and the timer's time). The tick
source, unioned into the query's input, reads that file whenever Spark polls its sources and has one new row
(a *tick*) once the wall clock has passed the timer: Spark runs a micro-batch, every keyed partition advances
its processing time and fires the timer. A tick carries no element and moves no watermark; each recorded
batch ticks at most once (its offset is the batch id), so an idle stream without due timers runs no batches.
The source's classes live in ``spark/tick_source.py``, which Spark's Python process for the reader unpickles
without importing the package.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

from ..core.assigners import WindowAssigner
from ..core.errors import StateError
from ..core.triggers import ContinuousEventTimeTrigger, CountTrigger, EventTimeTrigger
from ..datastream.plan import KeyedProcessSpec, Transformation, TwoInputSpec, WindowSpec
from . import storage

TICK_SOURCE = "__flinkish_ticks__"
"""The ``src`` of a tick row in the driver's input (``SOURCE_DDL``): the route skips it."""

TICKS_FILE = "ticks.json"
"""Under ``<checkpoint>/flinkish``: ``{"batch": id, "due": ms or null}``, the earliest pending processing-time
timer after that batch."""


def may_register_processing_timers(transformations: List[Transformation]) -> bool:
    """Whether a keyed operator of the pipeline may register processing-time timers: a process function, keyed
    co-process or keyed broadcast process function (any user code may), or a window with a processing-time
    assigner or a trigger that is not event-time only."""
    for t in transformations:
        spec = t.spec
        if isinstance(spec, KeyedProcessSpec) or (isinstance(spec, TwoInputSpec) and t.keyed):
            return True
        if isinstance(spec, WindowSpec):
            assigner: WindowAssigner = spec.assigner  # type: ignore[type-arg]
            if not assigner.is_event_time():
                return True
            if spec.trigger is not None and not isinstance(
                spec.trigger, (EventTimeTrigger, ContinuousEventTimeTrigger, CountTrigger)
            ):
                return True
    return False


def needs_ticks(transformations: List[Transformation], manual_clock: bool, trigger: Optional[Dict[str, Any]]) -> bool:
    """Ticks are needed on the wall clock (a ``ManualClock`` moves only with the replayed batches), in a
    continuing query (``availableNow`` and ``once`` end when the input they saw at the start is processed),
    when a keyed operator may register processing-time timers."""
    if manual_clock or (trigger and (trigger.get("availableNow") or trigger.get("once"))):
        return False
    return may_register_processing_timers(transformations)


def write_due(flinkish_dir: str, batch_id: int, due: Optional[int]) -> None:
    """Record the earliest pending processing-time timer after ``batch_id`` (None: none pending)."""
    storage.write_bytes(storage.join(flinkish_dir, TICKS_FILE), json.dumps({"batch": batch_id, "due": due}).encode())


def read_due(flinkish_dir: str) -> Tuple[int, Optional[int]]:
    """``(batch, due)`` as last recorded; ``(-1, None)`` before the first batch."""
    from .tick_source import parse_due  # PySpark's data source classes: not for the workers that import this module

    try:
        data: Optional[bytes] = storage.read_bytes(storage.join(flinkish_dir, TICKS_FILE))
    except StateError:  # not written yet
        data = None
    return parse_due(data)


def tick_due(flinkish_dir: str, after_batch: int, now_ms: int) -> Optional[int]:
    """The batch whose due timer needs a tick now, if any: recorded after ``after_batch`` (the last tick's) and
    overdue (``due < now``: a timer fires when the clock has passed it)."""
    from .tick_source import due_batch

    return due_batch(read_due(flinkish_dir), after_batch, now_ms)


def tick_stream(spark: Any, flinkish_dir: str) -> Any:
    """The tick source as a streaming DataFrame of ``SOURCE_DDL`` rows (``src`` = :data:`TICK_SOURCE`)."""
    from pyspark.sql import functions as F

    from .tick_source import FORMAT_NAME, TickSource, ship_by_value

    ship_by_value()  # Spark's Python process for the reader unpickles the classes without importing the package
    spark.dataSource.register(TickSource)
    uri = storage.join(flinkish_dir, TICKS_FILE)
    options: Dict[str, str] = {
        "uri": uri,
        "local": storage.local_path(uri) or "",
        "storage": json.dumps(storage.current_options()),
    }
    ticks = spark.readStream.format(FORMAT_NAME).options(**options).load()
    return ticks.select(
        F.lit(TICK_SOURCE).alias("src"),
        F.lit(None).cast("binary").alias("value"),
        F.lit(None).cast("long").alias("ts"),
        F.lit(None).cast("string").alias("part"),
        F.lit(None).cast("array<long>").alias("ord"),
        F.lit(-1).cast("long").alias("batch"),
        F.lit(True).alias("marker"),
    )


__all__ = [
    "TICKS_FILE",
    "TICK_SOURCE",
    "may_register_processing_timers",
    "needs_ticks",
    "read_due",
    "tick_due",
    "tick_stream",
    "write_due",
]
