"""Flink's internal timer service: event-time and processing-time timers per (key, namespace).

A timer is identified by ``(timestamp, key, namespace)``: registering it twice keeps one, deleting a
missing one is a no-op. Event-time timers fire in timestamp order across all keys and namespaces when
the watermark reaches them (``timestamp <= watermark``, inclusive); a timer registered while firing
with a due timestamp fires in the same advance. Processing-time timers fire once the clock is past
them (``timestamp < now``), since Flink schedules them ``timestamp - now + 1`` ms ahead.
Ties fire in registration order (Flink leaves them unordered).
"""

from __future__ import annotations

import heapq
from typing import Any, Callable, Dict, Hashable, List, Optional, Set, Tuple

from .javamath import LONG_MAX, LONG_MIN

Timer = Tuple[int, Hashable]  # (timestamp, namespace) for one key


class _TimerQueue:
    """De-duplicating priority queue of ``(timestamp, key, namespace)`` with per-key lookup."""

    def __init__(self) -> None:
        self._heap: List[Tuple[int, int, Any, Hashable]] = []
        self._by_key: Dict[Any, Set[Timer]] = {}
        self._seq = 0

    def add(self, ts: int, key: Any, namespace: Hashable) -> bool:
        timers = self._by_key.setdefault(key, set())
        if (ts, namespace) in timers:
            return False
        timers.add((ts, namespace))
        self._seq += 1
        heapq.heappush(self._heap, (ts, self._seq, key, namespace))
        return True

    def remove(self, ts: int, key: Any, namespace: Hashable) -> None:
        timers = self._by_key.get(key)
        if timers is not None:
            timers.discard((ts, namespace))
            if not timers:
                del self._by_key[key]

    def _clean_head(self) -> None:
        heap = self._heap
        while heap:
            ts, _, key, ns = heap[0]
            timers = self._by_key.get(key)
            if timers is not None and (ts, ns) in timers:
                return
            heapq.heappop(heap)

    def peek_ts(self) -> Optional[int]:
        self._clean_head()
        return self._heap[0][0] if self._heap else None

    def pop(self) -> Tuple[int, Any, Hashable]:
        self._clean_head()
        ts, _, key, ns = heapq.heappop(self._heap)
        self.remove(ts, key, ns)
        return ts, key, ns

    def for_key(self, key: Any) -> List[Timer]:
        return sorted(self._by_key.get(key, ()), key=lambda t: t[0])

    def drop_key(self, key: Any) -> None:
        self._by_key.pop(key, None)  # heap entries are discarded lazily

    def keys(self) -> List[Any]:
        return list(self._by_key)

    def __len__(self) -> int:
        return sum(len(t) for t in self._by_key.values())


class InternalTimerService:
    """Timers of one operator instance. ``key_context()`` supplies the current key on registration;
    ``on_event_time`` / ``on_processing_time`` are called with ``(timestamp, key, namespace)`` when a
    timer fires, after the owner has been asked to switch to that key."""

    def __init__(
        self,
        key_context: Callable[[], Any],
        on_event_time: Callable[[int, Any, Hashable], None],
        on_processing_time: Callable[[int, Any, Hashable], None],
    ) -> None:
        self._key_context = key_context
        self._on_event_time = on_event_time
        self._on_processing_time = on_processing_time
        self.event_timers = _TimerQueue()
        self.processing_timers = _TimerQueue()
        self.current_watermark = LONG_MIN
        self.quiesced = False
        """True while :meth:`fire_all` runs: registrations are ignored (Flink's BATCH timer service)."""

    def register_event_time_timer(self, namespace: Hashable, ts: int) -> None:
        if self.quiesced:
            return
        self.event_timers.add(ts, self._key_context(), namespace)

    def delete_event_time_timer(self, namespace: Hashable, ts: int) -> None:
        self.event_timers.remove(ts, self._key_context(), namespace)

    def register_processing_time_timer(self, namespace: Hashable, ts: int) -> None:
        if self.quiesced:
            return
        self.processing_timers.add(ts, self._key_context(), namespace)

    def delete_processing_time_timer(self, namespace: Hashable, ts: int) -> None:
        self.processing_timers.remove(ts, self._key_context(), namespace)

    def advance_watermark(self, watermark: int) -> None:
        """Set the watermark, then fire every event-time timer ``<= watermark`` in timestamp order."""
        self.current_watermark = watermark
        queue = self.event_timers
        while True:
            head = queue.peek_ts()
            if head is None or head > watermark:
                return
            ts, key, ns = queue.pop()
            self._on_event_time(ts, key, ns)

    def advance_processing_time(self, now: int) -> None:
        """Fire every processing-time timer with ``timestamp < now`` in timestamp order."""
        queue = self.processing_timers
        while True:
            head = queue.peek_ts()
            if head is None or head >= now:
                return
            ts, key, ns = queue.pop()
            self._on_processing_time(ts, key, ns)

    def fire_all(self) -> None:
        """End of a key in BATCH execution (Flink's ``BatchExecutionInternalTimeService.setCurrentKey``): the watermark
        is ``LONG_MAX``, every event-time timer fires in timestamp order, then every processing-time timer; timers
        registered meanwhile are ignored (the service is quiesced); then the watermark is ``LONG_MIN`` again."""
        self.current_watermark = LONG_MAX
        self.quiesced = True
        try:
            for queue, fire in ((self.event_timers, self._on_event_time), (self.processing_timers, self._on_processing_time)):
                while queue.peek_ts() is not None:
                    ts, key, ns = queue.pop()
                    fire(ts, key, ns)
        finally:
            self.quiesced = False
            self.current_watermark = LONG_MIN

    def next_processing_time(self) -> Optional[int]:
        return self.processing_timers.peek_ts()

    # -- per-key snapshot support
    def timers_for_key(self, key: Any) -> Tuple[List[Timer], List[Timer]]:
        return self.event_timers.for_key(key), self.processing_timers.for_key(key)

    def restore_key(self, key: Any, event: List[Timer], processing: List[Timer]) -> None:
        for ts, ns in event:
            self.event_timers.add(ts, key, ns)
        for ts, ns in processing:
            self.processing_timers.add(ts, key, ns)

    def drop_key(self, key: Any) -> None:
        self.event_timers.drop_key(key)
        self.processing_timers.drop_key(key)


__all__ = [
    "Timer",
    "InternalTimerService",
]
