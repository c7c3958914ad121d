"""Flink's BATCH execution of a keyed operator (``RuntimeExecutionMode.BATCH``): sorted inputs and the batch timer
service, around any :class:`~pyspark_flinkish.core.operators.KeyedOperator`.

What Flink does (``SortingDataInput``, ``BatchExecutionInternalTimeService``): a keyed operator reads its whole
input first, sorted by key and then by timestamp; it processes one key at a time with the watermark at ``LONG_MIN``
(nothing is late); when the key changes, the watermark is ``LONG_MAX``, every event-time timer fires, then every
processing-time timer (timers registered meanwhile are ignored); a rolling ``KeyedStream.reduce`` emits only each
key's final value (``BatchGroupedReduceOperator``, timestamp ``LONG_MAX``). The operator's own rules (windows,
triggers, state) are unchanged: :class:`BatchKeyedOperator` only feeds it that way.

Keys are processed in Flink's order: by their serialized bytes (:mod:`~pyspark_flinkish.core.key_order`, from the
operator's ``key_type``; None: untyped, pickled). Where the package cannot know a key's bytes (a key type or an
untyped key that module lists), the operator's keys are processed in the order of their first element instead, and
the order of output *across* keys can differ from Flink's; each key's output is Flink's.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from .clock import Clock
from .errors import StateError
from .javamath import LONG_MAX, LONG_MIN
from .key_order import batch_sort_key
from .operators import KeyedOperator, StreamOperator, call_user, short
from .records import Output, OutputTag, StreamRecord


class _LastValue:
    """The output of a rolling reduce during one key: only the last main-output value is kept."""

    def __init__(self, output: Output) -> None:
        self.output = output
        self.last: Optional[StreamRecord] = None

    def collect(self, record: StreamRecord) -> None:
        self.last = record

    def collect_side(self, tag: OutputTag, record: StreamRecord) -> None:
        self.output.collect_side(tag, record)

    def emit_watermark(self, watermark: int) -> None:
        self.output.emit_watermark(watermark)

    def emit_idle(self, idle: bool) -> None:
        self.output.emit_idle(idle)


class BatchKeyedOperator(StreamOperator):
    """``inner`` (a keyed operator) run as Flink's BATCH mode runs it: its input is buffered until end of input
    (the watermark ``LONG_MAX``), then processed key by key in timestamp order (stable), each key ending with all
    of its timers. ``final_value_only``: a rolling aggregation, which emits only each key's last value. ``key_type``:
    the ``key_by(..., key_type)`` of the operator (None: untyped), which decides the order of the keys."""

    def __init__(self, inner: KeyedOperator, final_value_only: bool = False, key_type: Any = None) -> None:
        super().__init__(inner.name)
        self.inner = inner
        self.final_value_only = final_value_only
        self.key_type = key_type
        self.metrics = inner.metrics
        self._buffer: List[StreamRecord] = []
        self.firing_timer: Optional[int] = None
        """While the keys run: the position of the current key (the Spark executors order a keyed operator's output
        by it, so each key's output stays together and in Flink's order); None otherwise."""

    def open(self, output: Output, clock: Clock) -> None:
        super().open(output, clock)
        self._last = _LastValue(output) if self.final_value_only else None
        self.inner.open(self._last if self._last is not None else output, clock)
        self.inner.restore_watermark(LONG_MIN)

    def process_element(self, record: StreamRecord) -> None:
        self._buffer.append(record)

    def process_watermark(self, watermark: int) -> None:
        """Watermarks below ``LONG_MAX`` mean nothing in BATCH mode; ``LONG_MAX`` (end of input) runs the keys."""
        if watermark != LONG_MAX or self.current_watermark == LONG_MAX:
            return
        self._run_keys()
        self.current_watermark = LONG_MAX
        self.inner.restore_watermark(LONG_MAX)  # the processing-time service is quiesced from now on
        self.output.emit_watermark(LONG_MAX)

    def advance_processing_time(self, now: int) -> None:
        """Processing-time timers do not fire while the input is read: each key's fire at its end."""
        return None

    def _run_keys(self) -> None:
        inner = self.inner
        by_key: Dict[Any, List[StreamRecord]] = {}
        for record in self._buffer:
            key = call_user(inner.key_selector, lambda r=record: f"{inner.name}: key selector on {short(r.value)}", record.value)
            by_key.setdefault(key, []).append(record)
        self._buffer = []
        sort_keys = {key: batch_sort_key(key, self.key_type) for key in by_key}
        known = all(k is not None for k in sort_keys.values())
        keys = sorted(by_key, key=sort_keys.__getitem__) if known else list(by_key)
        for position, key in enumerate(keys):
            records = by_key[key]
            self.firing_timer = position
            self.key_order = sort_keys[key] if known else None
            records.sort(key=lambda r: LONG_MIN if r.timestamp is None else r.timestamp)
            for record in records:
                inner.process_element(record)
            inner.timers.fire_all()
            if self._last is not None and self._last.last is not None:
                self.output.collect(StreamRecord(self._last.last.value, LONG_MAX, self._last.last.subtask))
                self._last.last = None
        self.firing_timer = None
        self.key_order = None

    def end_input(self) -> None:
        self.inner.end_input()

    def close(self) -> None:
        self.inner.close()
        if self._buffer:
            msg = (
                f"{self.name}: BATCH mode ended a run with {len(self._buffer)} records before the end of input; the "
                "input of a BATCH job must end within one run (on Spark: one micro-batch)"
            )
            raise StateError(msg)

    # -- the keyed-operator interface the Spark executors use between micro-batches: the inner operator's
    def restore_watermark(self, watermark: int) -> None:
        self.inner.restore_watermark(watermark)

    def restore_key(self, key: Any, snapshot: Optional[Dict[str, Any]]) -> None:
        self.inner.restore_key(key, snapshot)

    def active_keys(self) -> List[Any]:
        return self.inner.active_keys()

    def snapshot_key(self, key: Any) -> Optional[Dict[str, Any]]:
        return self.inner.snapshot_key(key)

    def evict_key(self, key: Any) -> None:
        self.inner.evict_key(key)

    def due_times(self, key: Any) -> Tuple[Optional[int], Optional[int], Optional[int]]:
        return self.inner.due_times(key)

    def open_windows(self, keys: Optional[Iterable[Any]] = None) -> Optional[int]:
        count = getattr(self.inner, "open_windows", None)
        return count(keys) if callable(count) else None


__all__ = ["BatchKeyedOperator"]
