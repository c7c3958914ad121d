"""Far-future event times, seen by the foreachBatch driver.

A record whose event time is more than the environment's ``future_horizon_ms`` ahead of the micro-batch's
processing time is processed exactly as Flink would process it, but it advances its partition's watermark far
ahead, so later records of that partition will be late. The executors count such records next to the watermark
statistics (``spark/rows.py``: ``future`` rows; ``spark/columnar.py``); the driver adds them to the progress
report (``future_records``) and logs up to :data:`LOGGED_PER_BATCH` of them per batch with their source
partition, position (the offset, for Kafka) and event time.
"""

from __future__ import annotations

import datetime as _dt
import logging
from typing import Any, Dict, List, Optional, Sequence, Tuple

_log = logging.getLogger("pyspark_flinkish.spark.far_future")

DEFAULT_HORIZON_MS = 3_600_000
"""One hour: Kafka's own limit for future timestamps (the topic setting ``message.timestamp.after.max.ms``, one
hour by default since Kafka 4.0), well above clock skew between producers and the driver and above usual
out-of-orderness bounds, and short enough to catch event times in the wrong time zone or unit."""

LOGGED_PER_BATCH = 10
"""Far-future records logged with their position per micro-batch (all are counted)."""


class FutureRecords:
    """One batch's far-future records: counts per source and partition, and the first few positions."""

    def __init__(self, horizon_ms: int, now: int) -> None:
        self.horizon_ms = horizon_ms
        self.now = now
        self.counts: Dict[str, Dict[str, int]] = {}
        self.samples: List[Tuple[str, str, int, Optional[List[int]]]] = []  # (source, partition, ts, order)
        self.describe: Dict[str, Sequence[str]] = {}  # source name -> its order columns

    def add(self, source: str, row: Any, order_columns: Sequence[str] = ()) -> None:
        """One ``future`` row of the executors (see ``spark/rows.py``) for the source named ``source``."""
        part = "" if row["part"] is None else str(row["part"])
        self.describe[source] = order_columns
        if row["ts"] is None:  # the count row
            counts = self.counts.setdefault(source, {})
            counts[part] = counts.get(part, 0) + int(row["stat_count"] or 0)
        else:
            order = None if row["ord"] is None else [int(x) for x in row["ord"]]
            self.samples.append((source, part, int(row["ts"]), order))

    def log(self) -> None:
        """Warn about this batch's far-future records (a summary per source, then the first few records)."""
        if not self.counts:
            return
        horizon = _span(self.horizon_ms)
        for source, parts in sorted(self.counts.items()):
            total = sum(parts.values())
            _log.warning(
                "source %r: %d record(s) with an event time more than %s ahead of processing time (%s) in this "
                "micro-batch, per partition %s; they are processed as Flink would, but they advance their partition's "
                "watermark, so later records of that partition will be late",
                source, total, horizon, _iso(self.now), dict(sorted(parts.items())),
            )
        samples = sorted(self.samples, key=lambda s: (s[0], s[1], s[3] or [], s[2]))
        for source, part, ts, order in samples[:LOGGED_PER_BATCH]:
            _log.warning(
                "far-future record: source %r, partition %s, %s: event time %s (%d ms), %s ahead of processing time",
                source, part or "-", position(self.describe.get(source, ()), order), _iso(ts), ts, _span(ts - self.now),
            )
        if _total(self.counts) > LOGGED_PER_BATCH:
            _log.warning("far-future records: %d in this micro-batch, %d logged", _total(self.counts), LOGGED_PER_BATCH)


def position(order_columns: Sequence[str], order: Optional[List[int]]) -> str:
    """A record's position in its source for a log line: ``offset N`` for Kafka, else its order columns.

    Example:
        >>> position(["__kafka_partition", "__kafka_offset"], [3, 1207])
        'offset 1207'
        >>> position(["p", "off"], [1, 9])
        'p=1, off=9'
    """
    if order is None:
        return "position unknown"
    if order_columns and order_columns[-1] == "__kafka_offset" and len(order) == len(order_columns):
        return f"offset {order[-1]}"
    if order_columns and len(order) == len(order_columns):
        return ", ".join(f"{c}={v}" for c, v in zip(order_columns, order))
    return f"order {order}"


def _total(counts: Dict[str, Dict[str, int]]) -> int:
    return sum(sum(p.values()) for p in counts.values())


def _iso(ms: int) -> str:
    try:
        return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms"


def _span(ms: int) -> str:
    """A duration for people.

    Example:
        >>> _span(3_600_000), _span(9_000_000), _span(90_000), _span(45_000), _span(3 * 86_400_000)
        ('1 h', '2.5 h', '1.5 min', '45 s', '3 d')
    """
    for unit, size in (("d", 2 * 86_400_000), ("h", 3_600_000), ("min", 60_000)):
        if ms >= size:
            return f"{ms / (86_400_000 if unit == 'd' else size):.3g} {unit}"
    return f"{ms / 1000:.3g} s"


__all__ = [
    "DEFAULT_HORIZON_MS",
    "LOGGED_PER_BATCH",
    "FutureRecords",
    "position",
]
