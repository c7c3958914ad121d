"""Processing-time ticks: the micro-batches that fire due processing-time timers on an idle stream.

Flink fires a processing-time timer (a ``KeyedProcessFunction``'s, a processing-time window's, a
``ContinuousProcessingTimeTrigger``'s) on the wall clock, with or without input. A Spark streaming query runs
a ``foreachBatch`` micro-batch only when a source has new data (no-data batches exist only for Spark's own
stateful operators), so on an idle stream an overdue timer would wait for the next record.

The driver therefore records, after every micro-batch, the earliest processing-time timer pending in any
keyed state partition (``<checkpoint>/flinkish/ticks.json``: the batch id and the timer's time), and a
:class:`TickTimer` (a daemon thread of the process that ran the batch) writes a *tick file* for that batch into
``<checkpoint>/flinkish/ticks/`` once the wall clock has passed the timer. The tick source unioned into the
query's input is Spark's own text file stream over that directory (a JVM source: no Python process at the
query's start or per poll): the new file is one new row, Spark runs a micro-batch, every keyed partition
advances its processing time and fires the timer. A tick carries no element and moves no watermark. Its name is
the recorded batch's (``tick-<batch>``, written atomically and never again once present), so each recorded batch
ticks at most once, and Spark's file source log makes a replayed batch read the same ticks (exactly-once); an idle
stream without due timers runs no batches. Every batch cancels the pending tick (it fires due timers itself) and
arms the next. When a query starts, the timer is armed from ``ticks.json``; a checkpoint without one (a new job, or
one restored from a savepoint) gets a tick at once (``tick-start``), so its first micro-batch runs with or without
input and fires the timers that are already due, as Flink does after a restore.

A checkpoint whose Spark offsets log holds the tick source of earlier versions (a Python data source, offset
``{"batch": n}``) cannot go on with the file stream: :func:`tick_stream` refuses it, naming the way through a
savepoint.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from ..core.assigners import WindowAssigner
from ..core.errors import StateError
from ..core.triggers import ContinuousEventTimeTrigger, CountTrigger, EventTimeTrigger
from ..datastream.plan import KeyedProcessSpec, Transformation, TwoInputSpec, WindowSpec
from . import storage

_log = logging.getLogger("pyspark_flinkish.spark")

TICK_SOURCE = "__flinkish_ticks__"
"""The ``src`` of a tick row in the driver's input (``SOURCE_DDL``): the route skips it."""

TICKS_FILE = "ticks.json"
"""Under ``<checkpoint>/flinkish``: ``{"batch": id, "due": ms or null}``, the earliest pending processing-time
timer after that batch."""

TICKS_DIR = "ticks"
"""Under ``<checkpoint>/flinkish``: the tick files, the directory the tick source (a text file stream) reads."""

START_TICK = "tick-start"
"""The tick file written when a query starts on a checkpoint without :data:`TICKS_FILE` (its first batch runs)."""


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
    """``(batch, due)`` as last recorded; ``(-1, None)`` before the first batch (or a file that does not parse)."""
    try:
        doc = json.loads(storage.read_bytes(storage.join(flinkish_dir, TICKS_FILE)))
    except (StateError, ValueError):  # not written yet
        return -1, None
    return int(doc["batch"]), None if doc["due"] is None else int(doc["due"])


def tick_name(batch: Optional[int]) -> str:
    """The tick file of recorded batch ``batch`` (None: :data:`START_TICK`); zero-padded, so names sort by batch."""
    return START_TICK if batch is None else f"tick-{batch:020d}"


def write_tick(flinkish_dir: str, batch: Optional[int]) -> bool:
    """Write the tick file of ``batch`` (:func:`tick_name`) unless it is there already; True if written. The file
    appears whole: on a file system written under a hidden name (Spark's file source skips names starting with a
    dot) and renamed, on an object store in one PUT."""
    directory = storage.join(flinkish_dir, TICKS_DIR)
    name = tick_name(batch)
    target = storage.join(directory, name)
    if storage.exists(target):
        return False
    data = f"{name}\n".encode()
    if storage.scheme_of(target) in storage.OBJECT_STORES:
        storage.write_bytes(target, data)
    else:
        hidden = storage.join(directory, f".{name}")
        storage.write_bytes(hidden, data)
        storage.replace_file(hidden, target)
    return True


FIRST_RETRY_S = 0.5
"""Seconds before :class:`TickTimer` first retries writing a tick file it could not write (storage unreachable)."""

MAX_RETRY_S = 30.0
"""The longest wait between two such retries: the wait doubles from :data:`FIRST_RETRY_S` up to this, and the timer
keeps trying until the tick is written or a batch replaces it (a timer due on an idle stream must fire once the
storage is back, not wait for the query's next start)."""


def retry_delay(attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (0 is the first) of a tick write: doubling, capped."""
    return min(MAX_RETRY_S, FIRST_RETRY_S * 2 ** min(attempt, 32))


class TickTimer:
    """Writes a recorded batch's tick file once the wall clock has passed its due time, from a daemon thread.

    :meth:`arm` replaces the pending tick (a newer batch's record supersedes it), :meth:`cancel` drops it. Pickled
    (the driver shipped to a Spark Connect server) without its thread: the copy arms its own.
    """

    def __init__(self, flinkish_dir: str) -> None:
        self.flinkish_dir = flinkish_dir
        self._lock = threading.Lock()
        self._pending: Optional[threading.Timer] = None
        self.written: List[Optional[int]] = []  # the batches whose tick this timer wrote (diagnostics, tests)

    def __getstate__(self) -> Dict[str, Any]:
        return {"flinkish_dir": self.flinkish_dir}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__init__(state["flinkish_dir"])  # type: ignore[misc]

    def arm(self, batch: int, due: Optional[int]) -> None:
        """Tick for ``batch`` once ``due`` (ms since the epoch) has passed; None: no timer pending, nothing to tick."""
        with self._lock:
            self._cancel()
            if due is not None:
                self._start(batch, due)

    def cancel(self) -> None:
        """Drop the pending tick, if any (a batch is running: it fires what is due itself)."""
        with self._lock:
            self._cancel()

    def resume(self) -> None:
        """When the query starts: arm from :data:`TICKS_FILE`, or, without one, tick at once (:data:`START_TICK`)."""
        batch, due = read_due(self.flinkish_dir)
        if batch < 0:
            write_tick(self.flinkish_dir, None)
        elif due is not None and not storage.exists(storage.join(self.flinkish_dir, TICKS_DIR, tick_name(batch))):
            self.arm(batch, due)

    def _cancel(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None

    def _start(self, batch: int, due: int, delay: Optional[float] = None, attempt: int = 0) -> None:
        if delay is None:
            delay = max(0.0, (due + 1 - time.time() * 1000) / 1000)  # a timer fires once the clock has passed it
        timer = threading.Timer(delay, self._fire, (batch, due, attempt))
        timer.daemon = True
        timer.name = "pyspark_flinkish-tick"
        self._pending = timer
        timer.start()

    def _fire(self, batch: int, due: int, attempt: int) -> None:
        with self._lock:
            if self._pending is None or self._pending is not threading.current_thread():
                return  # cancelled or replaced meanwhile
            self._pending = None
            if time.time() * 1000 <= due:  # woke early
                self._start(batch, due)
                return
            try:
                write_tick(self.flinkish_dir, batch)
                self.written.append(batch)
            except Exception as exc:  # the checkpoint's storage unreachable: try again, less and less often
                delay = retry_delay(attempt)
                if attempt == 0 or delay >= MAX_RETRY_S:
                    _log.warning(
                        "could not write the processing-time tick of batch %d (attempt %d, retrying in %.1f s): %r",
                        batch, attempt + 1, delay, exc,
                    )
                self._start(batch, due, delay, attempt + 1)


def refuse_python_tick_source(spark_checkpoint: str) -> None:
    """Refuse a Spark checkpoint whose latest offsets-log entry holds the tick source of earlier versions.

    Raises:
        StateError: an entry has the Python tick source's offset shape (``{"batch": n}``), naming the file and the
            way on (a savepoint taken with the version that wrote it).
    """
    offsets = storage.join(spark_checkpoint, "offsets")
    batches = [int(n) for n in storage.list_names(offsets) if n.isdigit()]
    if not batches:
        return
    path = storage.join(offsets, str(max(batches)))
    for i, line in enumerate(storage.read_bytes(path).decode("utf-8").splitlines()[2:]):
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # "-": a source without an offset
        if isinstance(entry, dict) and list(entry) == ["batch"] and isinstance(entry["batch"], int):
            msg = (
                f"{path}: source {i} is the processing-time tick source of an earlier version (a Python data source, "
                f"offset {line.strip()}), which this version replaced by a file stream of tick files that cannot go "
                "on from that offset. Take a savepoint with the version that wrote the checkpoint "
                "(handle.stop_with_savepoint(dir)) and start this version from it (execute(..., "
                "checkpoint_location=<new>, from_savepoint=dir)): state, timers and source positions carry over"
            )
            raise StateError(msg)


def tick_stream(spark: Any, timer: TickTimer) -> Any:
    """The tick source as a streaming DataFrame of ``SOURCE_DDL`` rows (``src`` = :data:`TICK_SOURCE`): Spark's text
    file stream over the ``timer``'s :data:`TICKS_DIR`; the timer is armed from the checkpoint (:meth:`TickTimer.resume`).

    Raises:
        StateError: the checkpoint was written with the Python tick source (:func:`refuse_python_tick_source`).
    """
    from pyspark.sql import functions as F

    from .session import spark_path

    refuse_python_tick_source(storage.join(storage.parent(timer.flinkish_dir), "spark"))
    directory = storage.join(timer.flinkish_dir, TICKS_DIR)
    storage.make_dirs(directory)  # Spark's file stream needs its directory to exist
    ticks = spark.readStream.format("text").load(spark_path(directory))
    timer.resume()
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
    "FIRST_RETRY_S",
    "MAX_RETRY_S",
    "START_TICK",
    "TICKS_DIR",
    "TICKS_FILE",
    "TICK_SOURCE",
    "TickTimer",
    "may_register_processing_timers",
    "needs_ticks",
    "read_due",
    "refuse_python_tick_source",
    "retry_delay",
    "tick_name",
    "tick_stream",
    "write_due",
    "write_tick",
]
