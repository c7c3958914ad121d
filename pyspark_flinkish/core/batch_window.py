"""Flink's ``WindowOperator`` for its most common shape, one micro-batch at a time.

The shape: tumbling or sliding **event-time** windows, the default ``EventTimeTrigger`` (or
``PurgingTrigger.of(EventTimeTrigger())``), no evictor, and any contents (``reduce``, ``aggregate``, or the list
of elements of ``process``/``apply``), with any allowed lateness and late-data side output. For it, a window's
whole state is one accumulator (or list) and its only timers are "fire at ``max_ts``" and "clean up at
``max_ts + allowed_lateness``" — both implied by the window itself. :class:`BatchWindowOperator` therefore keeps
a plain table ``(key, window start) -> accumulator`` instead of keyed-state namespaces, trigger state and a timer
queue, and fires by scanning that table when the watermark advances. This is what makes the Spark executors'
vectorized path cheap; the semantics are those of :class:`~.window_operator.WindowOperator`, which it wraps
for everything else (window assignment by the assigner, lateness and cleanup times, late routing, the window
function call and its ``clear()``, side outputs, counters) and whose keyed state backend still holds what the
functions keep themselves (``window_state()``, ``global_state()``, runtime-context state; saved and restored
with the table, :meth:`BatchWindowOperator.snapshot_keyed`). ``jvm-free-tests/core/test_core_batch_window.py``
checks that both give the same output for random batches.

Per element (in order, at the batch's input watermark ``W``), as ``WindowOperator.processElement``:

* windows with ``max_ts + L <= W`` are late and skipped; the element is added to the others;
* a window with ``max_ts <= W`` fires at once (``EventTimeTrigger.onElement`` returns FIRE);
* with ``PurgingTrigger``, every firing also drops the window's contents (a later element starts afresh);
* an element that entered no window and has ``ts + L <= W`` goes to the late side output (or is dropped).

When the watermark advances from ``W`` to ``W'``, in timer order: every window with ``W < max_ts <= W'`` fires
(its ``EventTimeTrigger`` timer) and every window with ``max_ts + L <= W'`` is removed and its window function's
``clear()`` called (its cleanup timer).

:meth:`BatchWindowOperator.merge_partial` adds a pre-aggregated accumulator for many elements at once. It is
only used for :class:`~.aggregates.ColumnAggregate` functions, whose ``merge`` equals adding the elements one by one.
"""

from __future__ import annotations

import heapq
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .assigners import SlidingEventTimeWindows, TumblingEventTimeWindows
from .functions import ProcessWindowFunction
from .javamath import LONG_MAX
from .operators import call_user, short
from .records import StreamRecord
from .triggers import EventTimeTrigger, PurgingTrigger
from .window_operator import WindowOperator
from .windows import TimeWindow

_MISSING = object()


def batch_eligibility(op: WindowOperator) -> Optional[str]:
    """``None`` when ``op`` can run as a :class:`BatchWindowOperator`, else the reason it cannot.

    The rule is structural, never a guess about what user code does: the assigner, trigger and evictor must be
    of the shape above. Any window, aggregate or reduce function qualifies, whatever state it keeps: the
    batch-wise operator keeps the keyed state backend (``window_state()``, ``global_state()``, runtime-context
    state) like :class:`WindowOperator` and calls the window function's ``clear()`` at cleanup time. The one
    exception: a purging trigger with a window function that overrides ``clear()`` (a purged window leaves the
    table, but Flink still calls ``clear()`` at its cleanup time).
    """
    if not isinstance(op, WindowOperator):
        return f"{type(op).__name__} is not a window operator (e.g. BATCH runtime mode's sorted-input wrapper)"
    if type(op.assigner) not in (TumblingEventTimeWindows, SlidingEventTimeWindows):
        return f"assigner {op.assigner!r} is not a tumbling or sliding event-time assigner"
    purge = _purging(op.trigger)
    if purge is None:
        return f"trigger {op.trigger!r} is not EventTimeTrigger or PurgingTrigger.of(EventTimeTrigger())"
    if op.evictor is not None:
        return "the window has an evictor"
    clear = getattr(type(op.window_function), "clear", None)
    if purge and clear is not None and clear is not getattr(ProcessWindowFunction, "clear", None):
        return "the window function overrides clear() and the trigger purges"
    return None


def _purging(trigger: Any) -> Optional[bool]:
    """False for EventTimeTrigger, True for PurgingTrigger.of(EventTimeTrigger()), None for anything else."""
    if type(trigger) is EventTimeTrigger:
        return False
    if type(trigger) is PurgingTrigger and type(trigger.nested_trigger) is EventTimeTrigger:
        return True
    return None


class BatchWindowOperator:
    """Runs an opened :class:`WindowOperator` of the eligible shape (see :func:`batch_eligibility`) batch-wise.

    The wrapped operator's ``timers.current_watermark`` is the operator's watermark; its output, counters,
    window function and late-data tag are used as they are.
    """

    def __init__(self, op: WindowOperator) -> None:
        reason = batch_eligibility(op)
        if reason is not None:
            msg = f"{op.name}: cannot run batch-wise: {reason}"
            raise ValueError(msg)
        self.op = op
        self.kind = op.contents.kind  # aggregate | reduce | list
        self.purge = bool(_purging(op.trigger))
        self.size = op.assigner.size  # type: ignore[attr-defined]
        # (key, window start) -> accumulator (aggregate), reduced value (reduce) or element list; insertion order kept
        self.windows: Dict[Tuple[Any, int], Any] = {}

    # ------------------------------------------------------------------ state
    @property
    def watermark(self) -> int:
        return self.op.timers.current_watermark

    def restore(
        self,
        entries: Iterable[Tuple[Any, int, Any]],
        watermark: int,
        keyed: Iterable[Tuple[Any, Dict[str, Any]]] = (),
    ) -> None:
        """Load ``(key, window start, accumulator)`` entries, the keyed state of the window and user functions
        (``(key, keyed snapshot)``, see :meth:`snapshot_keyed`) and the operator's watermark."""
        state_key = self.op.backend.state_key  # keys as Flink tells them apart (core/key_identity.py)
        self.windows = {(state_key(k), s): acc for k, s, acc in entries}
        for key, snapshot in keyed:
            self.op.restore_key(key, snapshot)
        self.op.restore_watermark(watermark)

    def open_windows(self) -> int:
        """Windows holding contents (all keys of the table)."""
        return len(self.windows)

    def num_keys(self) -> int:
        """Keys with a window in the table or keyed state."""
        return len({k for k, _ in self.windows} | set(self.op.active_keys()))

    def snapshot(self) -> List[Tuple[Any, int, Any]]:
        """The window table: ``(key, window start, accumulator)``."""
        return [(k, s, acc) for (k, s), acc in self.windows.items()]

    def snapshot_keyed(self, keys: Optional[Iterable[Any]] = None) -> List[Tuple[Any, Dict[str, Any]]]:
        """``(key, keyed snapshot)`` of every key (or of ``keys``) holding keyed state: what the window function
        keeps in ``window_state()`` / ``global_state()`` and user functions in runtime-context state (the
        window contents are in the table, not here)."""
        out = []
        for key in self.op.active_keys() if keys is None else keys:
            snap = self.op.snapshot_key(key)
            if snap is not None:
                out.append((key, snap))
        return out

    def _window(self, start: int) -> TimeWindow:
        return TimeWindow(start, start + self.size)

    def _where(self, key: Any, window: TimeWindow, what: str) -> Any:
        return lambda: f"{self.op.name}: {what} (key={short(key)}, window={window!r})"

    def _result(self, key: Any, window: TimeWindow, acc: Any) -> Any:
        if self.kind != "aggregate":
            return acc
        fn = self.op.contents.agg_fn
        return call_user(fn.get_result, self._where(key, window, "get_result"), acc)

    def _fire(self, key: Any, window: TimeWindow, acc: Any) -> None:
        self.op.backend.set_current_key(key)
        self.op._emit(key, window, self._result(key, window, acc))
        if self.purge:
            del self.windows[(key, window.start)]

    # ------------------------------------------------------------------ elements
    def process_element(self, key: Any, value: Any, timestamp: Optional[int]) -> None:
        """One element at the current watermark, exactly as ``WindowOperator.process_keyed`` for this shape."""
        op = self.op
        op.backend.set_current_key(key)
        key = op.backend.current_state_key()
        record = StreamRecord(value, timestamp)
        windows = call_user(
            op.assigner.assign_windows,
            lambda: f"{op.name}: {op.assigner!r}.assign_windows({short(value)}) (key={short(key)})",
            value,
            timestamp,
            op.assigner_ctx,
        )
        wm = self.watermark
        skipped = True
        for window in windows:
            if op.is_window_late(window):
                continue
            skipped = False
            slot = (key, window.start)
            acc = self.windows.get(slot, _MISSING)
            if self.kind == "list":
                acc = [value] if acc is _MISSING else [*acc, value]
            elif self.kind == "aggregate":
                fn = op.contents.agg_fn
                if acc is _MISSING:
                    acc = call_user(fn.create_accumulator, self._where(key, window, "create_accumulator"))
                acc = call_user(fn.add, self._where(key, window, "add"), value, acc)
            elif acc is _MISSING:
                acc = value
            else:
                acc = call_user(op.contents.reduce_fn, self._where(key, window, "reduce"), acc, value)  # type: ignore[arg-type]
            self.windows[slot] = acc
            if window.max_timestamp() <= wm:  # EventTimeTrigger.on_element: FIRE
                self._fire(key, window, acc)
        if skipped and op.is_element_late(record):
            op.route_late(record)

    def merge_partial(self, key: Any, start: int, partial: Any) -> None:
        """Add the accumulator of several on-time elements (``max_ts > watermark``) of one window at once."""
        slot = (self.op.backend.state_key(key), start)
        acc = self.windows.get(slot, _MISSING)
        if acc is _MISSING:
            self.windows[slot] = partial
        else:
            fn = self.op.contents.agg_fn
            self.windows[slot] = call_user(fn.merge, self._where(key, self._window(start), "merge"), acc, partial)

    # ------------------------------------------------------------------ watermark
    def cleanup_time(self, start: int) -> int:
        """The cleanup time of the window starting at ``start`` (:meth:`WindowOperator.cleanup_time`)."""
        return self.op.cleanup_time(self._window(start))

    def timer_times(self, start: int) -> Tuple[int, int]:
        """The event-time timers of the window starting at ``start``: it fires at its ``max_ts`` and is cleaned up
        at its cleanup time (``LONG_MAX``: never)."""
        window = self._window(start)
        return window.max_timestamp(), self.op.cleanup_time(window)

    def pending_timer(self, start: int) -> Optional[int]:
        """The earliest event-time timer of the window starting at ``start`` still pending at the current
        watermark: its firing time while the watermark is below it, then its cleanup time (None: never cleaned
        up). The window's key must be in memory once the watermark reaches it."""
        max_ts, cleanup = self.timer_times(start)
        if max_ts > self.watermark:
            return max_ts
        return None if cleanup == LONG_MAX else cleanup

    def windows_by_key(self) -> Dict[Any, List[Tuple[int, Any]]]:
        """The window table grouped by key: ``{key: [(window start, accumulator), ...]}`` in table order."""
        out: Dict[Any, List[Tuple[int, Any]]] = {}
        for (key, start), acc in self.windows.items():
            out.setdefault(key, []).append((start, acc))
        return out

    def advance_watermark(self, watermark: int) -> None:
        """The operator's event-time timers up to ``watermark``, in timestamp order: a window fires at its
        ``max_ts`` (``EventTimeTrigger``) and is dropped at its cleanup time, where the window function's
        ``clear()`` runs (``WindowOperator``'s cleanup timer; none when the cleanup time overflows).

        Timers of the same time run in the table's (deterministic) order, a window's firing before its cleanup.
        The windows of one start share their timers, so the due windows are gathered per start (in table order)
        and each time's starts merged by table position: one pass over the table, no per-window timer."""
        op = self.op
        old = self.watermark
        if watermark <= old:
            return
        op.current_watermark = watermark
        op.timers.current_watermark = watermark
        due: Dict[int, Optional[List[Tuple[int, Any, int]]]] = {}  # by window start: its due windows, or None
        at: Dict[int, List[Tuple[int, int]]] = {}  # timer time -> (window start, 0 fire | 1 clean up)
        for i, (key, start) in enumerate(self.windows):
            slots = due.get(start, _MISSING)
            if slots is _MISSING:
                max_ts, cleanup = self.timer_times(start)
                slots = None
                if old < max_ts <= watermark:
                    slots = []
                    at.setdefault(max_ts, []).append((start, 0))
                if cleanup <= watermark and cleanup != LONG_MAX:
                    slots = []
                    at.setdefault(cleanup, []).append((start, 1))
                due[start] = slots
            if slots is not None:
                slots.append((i, key, start))  # type: ignore[union-attr]
        clear = _runs_clear(op.window_function)
        cleaned = 0
        windows: Dict[int, TimeWindow] = {}  # one (immutable) TimeWindow per start
        for time in sorted(at):
            kinds: Dict[int, List[int]] = {}
            for start, kind in sorted(at[time]):  # per start: its firing before its cleanup
                kinds.setdefault(start, []).append(kind)
            starts = list(kinds)
            ordered = due[starts[0]] if len(starts) == 1 else heapq.merge(*(due[s] for s in starts))  # table order
            op.firing_timer = time
            for _, key, start in ordered:  # type: ignore[union-attr]
                window = windows.get(start)
                if window is None:
                    window = windows[start] = self._window(start)
                for kind in kinds[start]:
                    acc = self.windows.get((key, start), _MISSING)
                    if acc is _MISSING:
                        continue  # purged when it fired: nothing left to clean up (clear() is the default no-op)
                    if kind == 0:
                        self._fire(key, window, acc)
                    else:
                        del self.windows[(key, start)]
                        op.backend.set_current_key(key)
                        if clear:
                            op.clear_window_function(window)
                        cleaned += 1
        op.firing_timer = None
        if cleaned:
            op._count("windows_cleaned", cleaned)


def _runs_clear(function: Any) -> bool:
    """Whether the window function's ``clear()`` at cleanup runs user code (what
    :meth:`WindowOperator.clear_window_function` calls), not ``ProcessWindowFunction``'s no-op or nothing."""
    clear = getattr(function, "clear", None)
    return callable(clear) and getattr(clear, "__func__", None) is not getattr(ProcessWindowFunction, "clear", None)


__all__ = [
    "batch_eligibility",
    "BatchWindowOperator",
]
