"""Per micro-batch metrics of a pipeline on Spark, and a one-line rendering of them.

The foreachBatch executor computes, for every micro-batch, a *progress* dict (JSON-serialisable; see
``docs/operations.md#metrics``). Besides its older keys (``batch_id``, ``watermarks``, ``durations_ms``,
``input_records``, ``source_watermarks``, ``sink_records``) it holds:

* ``sources``: ``{source name: {partition: {"currentWatermark": ms or None (idle), "numRecordsIn": n}}}``;
* ``operators``: ``{operator uid: {"name": ..., "currentInputWatermark": ms, "currentOutputWatermark": ms,
  "watermarkLag": ms, ...}}`` (``watermarkLag``: :func:`watermark_lag` of the batch's ``processing_time``) with,
  for keyed operators, the counters of :data:`OPERATOR_COUNTERS` and the gauges of
  :data:`OPERATOR_GAUGES` (summed over the operator's state partitions), for async I/O operators those of
  :data:`ASYNC_METRICS`.

Metric names are Flink's where Flink has one (``numLateRecordsDropped``, ``currentOutputWatermark``,
``numRecordsIn``); the others follow the same style. Nothing here imports pyspark.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional

LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1

log = logging.getLogger("pyspark_flinkish.progress")
"""One INFO line per micro-batch (:func:`progress_line`), the whole progress dict as JSON at DEBUG."""

OPERATOR_COUNTERS = (
    "numRecordsIn",
    "numRecordsOut",
    "numLateRecordsDropped",
    "numLateRecordsToSideOutput",
    "numWindowsFired",
    "numWindowsCleaned",
    "busyTimeMs",
    "numKeysLoaded",
    "stateBytesWritten",
    "stateCacheRebuilds",
    "stateServedFromFiles",
    "numRecordsInAsColumns",
    "numKeysInAsColumns",
)
"""Per keyed operator and micro-batch, summed over its state partitions (``busyTimeMs``: the executors' time in
the operator's Python function, all tasks together; ``numKeysLoaded``: keys read from the state because a record
touched them or a timer or TTL expiry was due; ``stateBytesWritten``: bytes of the state files the batch wrote;
``stateCacheRebuilds``: state partitions whose executor-local cache had to be rebuilt from the files;
``stateServedFromFiles``: state partitions whose batch ran on the files, the executor's cache holding another
version; ``numRecordsInAsColumns`` / ``numKeysInAsColumns``: records of ``numRecordsIn`` that crossed into the keyed
stage as typed Arrow columns rather than pickled / whose key did rather than as its bytes,
``spark/record_columns.py``)."""

OPERATOR_GAUGES = ("openWindows", "numKeys", "stateSizeBytes")
"""Per keyed operator after the micro-batch, summed over its state partitions (``openWindows``: windows operators
only; ``stateSizeBytes``: the bytes of its keys and values, uncompressed)."""

_CORE_COUNTERS = {  # the core operators' counter names -> the published names
    "late_records_dropped": "numLateRecordsDropped",
    "late_records_side_output": "numLateRecordsToSideOutput",
    "windows_fired": "numWindowsFired",
    "windows_cleaned": "numWindowsCleaned",
}


# ----------------------------------------------------------------------------- executors
def watermark_lag(processing_time: Optional[int], watermark: Optional[int]) -> Optional[int]:
    """How far an operator's event-time clock is behind processing time: ``processing_time - watermark`` in ms (what
    Flink's dashboards show as a watermark's lag, and its sources' ``watermarkLag``). None without a watermark yet
    (``LONG_MIN``), after the end of input (``LONG_MAX``), for an idle input (None) or without a processing time.
    Negative when event times run ahead of the processing-time clock."""
    if processing_time is None or watermark is None or watermark <= LONG_MIN or watermark >= LONG_MAX:
        return None
    return int(processing_time) - int(watermark)


def partition_metrics(op: Any, records_in: Optional[int], records_out: int, started: float) -> Dict[str, Any]:
    """The metrics of one (keyed operator, state partition) after a micro-batch, from the operator's counters
    (``op.metrics``) and what the caller counted (on an executor; the state gauges ``numKeys``, ``openWindows`` and
    ``stateSizeBytes`` are the state store's to add); ``nextProcessingTimer``: its earliest pending
    processing-time timer among the keys in memory (not published: the Spark driver reads it to schedule the batch
    that fires it, ``spark/ticks.py``)."""
    out: Dict[str, Any] = dict.fromkeys(OPERATOR_COUNTERS, 0)
    for name, value in getattr(op, "metrics", {}).items():
        if name in _CORE_COUNTERS:
            out[_CORE_COUNTERS[name]] = int(value)
    out["numRecordsIn"] = records_in
    out["numRecordsOut"] = records_out
    out["openWindows"] = None
    out["numKeys"] = None
    out["stateSizeBytes"] = None
    out["busyTimeMs"] = round((time.perf_counter() - started) * 1000, 3)
    timers = getattr(op, "timers", None)  # the earliest pending processing-time timer: when to run the next batch
    out["nextProcessingTimer"] = timers.next_processing_time() if timers is not None else None
    return out


def merge_partitions(parts: Iterable[Mapping[str, Any]]) -> Dict[str, Any]:
    """One operator's metrics from those of its state partitions: sums (a metric no partition has is None)."""
    out: Dict[str, Any] = {}
    for name in (*OPERATOR_COUNTERS, *OPERATOR_GAUGES):
        values = [p.get(name) for p in parts]
        present: List[float] = [v for v in values if v is not None]
        out[name] = (round(sum(present), 1) if name == "busyTimeMs" else sum(present)) if present else None
    return out


ASYNC_METRICS = {
    "async_requests": "numAsyncRequests",
    "async_retries": "numAsyncRetries",
    "async_timeouts": "numAsyncTimeouts",
    "async_in_flight_max": "asyncInFlightMax",
}
"""An async I/O operator's counters (``core/async_operator.py``) -> the published names: requests started,
retries, timeouts (per micro-batch, summed over the tasks) and the most requests one task had in flight at once."""


def async_metrics(parts: Iterable[Mapping[str, Any]]) -> Dict[str, int]:
    """One async I/O operator's published metrics from its tasks' counters (:data:`ASYNC_METRICS`)."""
    parts = list(parts)
    out = {}
    for core, published in ASYNC_METRICS.items():
        values = [int(p.get(core, 0)) for p in parts]
        out[published] = max(values, default=0) if core == "async_in_flight_max" else sum(values)
    return out


# ----------------------------------------------------------------------------- rendering
def format_time(ms: Optional[int]) -> str:
    """A watermark for people: ``idle`` (None), ``-`` (no watermark yet), ``end`` (end of input), UTC
    ``HH:MM:SS.mmm`` for epoch milliseconds of this century, else the number of milliseconds."""
    if ms is None:
        return "idle"
    if ms <= LONG_MIN:
        return "-"
    if ms >= LONG_MAX:
        return "end"
    if 946_684_800_000 <= ms < 4_102_444_800_000:  # 2000 .. 2100
        t = time.gmtime(ms // 1000)
        return f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}.{ms % 1000:03d}"
    return str(ms)


def format_lag(ms: int) -> str:
    """A watermark lag for people: ``850ms``, ``12.3s``, ``5m03s``, ``2h05m``, ``3d04h`` (a minus sign when
    negative)."""
    sign, ms = ("-", -ms) if ms < 0 else ("", ms)
    if ms < 1000:
        return f"{sign}{ms}ms"
    if ms < 60_000:
        return f"{sign}{ms / 1000:.1f}s"
    seconds = ms // 1000
    if seconds < 3600:
        return f"{sign}{seconds // 60}m{seconds % 60:02d}s"
    if seconds < 86_400:
        return f"{sign}{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{sign}{seconds // 86_400}d{seconds % 86_400 // 3600:02d}h"


def _size(n: Optional[float]) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    return f"{n:.1f}GiB"  # pragma: no cover


def _count(value: Any) -> Optional[int]:
    """A counter that may be a number or a dict of them (e.g. per source or sink): its total."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        parts = [_count(v) for v in value.values()]
        return sum(p for p in parts if p is not None)
    if isinstance(value, (int, float)):
        return int(value)
    return None


def _short_partitions(parts: Mapping[str, Any]) -> Dict[str, Any]:
    """Kafka partitions ``<topic>-<n>`` of one topic, and partitions named by a number, shown as ``p<n>``."""
    names = list(parts)
    if names and all(n.isdigit() for n in names):
        return {f"p{n}": v for n, v in parts.items()}
    heads = {n.rsplit("-", 1)[0] for n in names if "-" in n and n.rsplit("-", 1)[1].isdigit()}
    if len(heads) == 1 and all(n.startswith(next(iter(heads)) + "-") for n in names):
        return {"p" + n.rsplit("-", 1)[1]: v for n, v in parts.items()}
    return dict(parts)


def _sum(ops: Iterable[Mapping[str, Any]], name: str) -> Optional[int]:
    values: List[int] = [o[name] for o in ops if o.get(name) is not None]
    return sum(values) if values else None


def progress_line(progress: Mapping[str, Any], time_format: Callable[[Optional[int]], str] = format_time) -> str:
    """One line for a micro-batch's progress dict, e.g.
    ``   12 in=600 src[p0=12:03:05.000 p1=idle] wm=12:01:00.000 lag=2m05s fired=3 late=1+2 open=40 keys=12
    state=8.1KiB took=1.92s``.

    Fields: the batch id; ``in``: records read; ``src[...]``: each source partition's watermark; ``wm``: the lowest
    output watermark of the keyed operators (of all operators without keyed ones); ``lag``: the largest
    ``watermarkLag`` of those operators (processing time minus the lowest watermark, :func:`format_lag`); ``fired``:
    windows fired; ``late``: late records dropped + sent to the late side output; ``open`` / ``keys`` / ``state``: open windows,
    keys with state and the state files' size after the batch; ``dead`` / ``future``: dead-letter and
    far-future records of the batch (when there are any); ``in/s`` and ``done/s`` when it carries Spark's
    progress of the same batch (``spark``); ``took``: the batch's time on the driver. Fields without a value are
    left out. ``time_format`` renders watermarks (default :func:`format_time`)."""
    fields = [f"{progress.get('batch_id', '?'):>5}"]
    inputs = progress.get("input_records")
    if inputs is not None:
        fields.append(f"in={_count(inputs)}")
    for name, parts in (progress.get("source_watermarks") or {}).items():
        if parts:
            shown = " ".join(f"{p}={time_format(w)}" for p, w in _short_partitions(parts).items())
            label = "src" if len(progress["source_watermarks"]) == 1 else name
            fields.append(f"{label}[{shown}]")
    ops = progress.get("operators") or {}
    keyed = [o for o in ops.values() if o.get("keyed")]
    marks = [o.get("currentOutputWatermark") for o in (keyed or list(ops.values()))]
    marks = [m for m in marks if m is not None]
    if marks:
        fields.append(f"wm={time_format(min(marks))}")
        lags = [o["watermarkLag"] for o in (keyed or list(ops.values())) if o.get("watermarkLag") is not None]
        if lags:
            fields.append(f"lag={format_lag(max(lags))}")
    elif progress.get("watermarks"):
        fields.append(f"wm={time_format(min(progress['watermarks'].values()))}")
    fired = _sum(keyed, "numWindowsFired")
    if fired is not None and any(o.get("openWindows") is not None for o in keyed):
        fields.append(f"fired={fired}")
    dropped, side = _sum(keyed, "numLateRecordsDropped"), _sum(keyed, "numLateRecordsToSideOutput")
    if dropped is not None or side is not None:
        fields.append(f"late={dropped or 0}+{side or 0}")
    for label, name in (("open", "openWindows"), ("keys", "numKeys")):
        value = _sum(keyed, name)
        if value is not None:
            fields.append(f"{label}={value}")
    state = _sum(keyed, "stateSizeBytes")
    if state is not None:
        fields.append(f"state={_size(state)}")
    for label, name in (("dead", "dead_letters"), ("future", "future_records")):
        value = _count(progress.get(name))
        if value:
            fields.append(f"{label}={value}")
    spark = progress.get("spark")
    if isinstance(spark, Mapping):
        for label, name in (("in/s", "inputRowsPerSecond"), ("done/s", "processedRowsPerSecond")):
            if spark.get(name) is not None:
                fields.append(f"{label}={spark[name]:.0f}")
    total = (progress.get("durations_ms") or {}).get("total")
    if total is not None:
        fields.append(f"took={total / 1000:.2f}s")
    return " ".join(fields)


def log_progress(progress: Mapping[str, Any]) -> None:
    """Publish a progress dict on the ``pyspark_flinkish.progress`` logger: :func:`progress_line` at INFO, the
    whole dict as JSON (``batch <id> metrics {...}``) at DEBUG."""
    if log.isEnabledFor(logging.INFO):
        log.info("%s", progress_line(progress))
    if log.isEnabledFor(logging.DEBUG):
        log.debug("batch %s metrics %s", progress.get("batch_id"), json.dumps(progress, default=str, sort_keys=True))


# ----------------------------------------------------------------------------- reading it back
def progress_from_log(path: str) -> Iterator[Dict[str, Any]]:
    """The progress dicts in a log file with DEBUG lines of :func:`log_progress` (the checkpoint's copies:
    ``pyspark_flinkish.spark.progress_files``)."""
    with open(path, errors="replace") as f:
        for line in f:
            at = line.find(" metrics {")
            if at >= 0:
                try:
                    yield json.loads(line[at + len(" metrics ") :])
                except ValueError:
                    continue


__all__ = [
    "LONG_MIN",
    "LONG_MAX",
    "log",
    "OPERATOR_COUNTERS",
    "OPERATOR_GAUGES",
    "ASYNC_METRICS",
    "async_metrics",
    "partition_metrics",
    "merge_partitions",
    "format_time",
    "format_lag",
    "watermark_lag",
    "progress_line",
    "log_progress",
    "progress_from_log",
]
