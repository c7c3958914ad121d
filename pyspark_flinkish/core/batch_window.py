"""Flink's ``WindowOperator`` for its most common shape, one micro-batch at a time.

The shape: tumbling or sliding **event-time** windows, the default ``EventTimeTrigger`` (or
``PurgingTrigger.of(EventTimeTrigger())``), no evictor, and any contents (``reduce``, ``aggregate``, or the list
of elements of ``process``/``apply``), with any allowed lateness and late-data side output. For it, a window's
whole state is one accumulator (or list) and its only timers are "fire at ``max_ts``" and "clean up at
``max_ts + allowed_lateness``" — both implied by the window itself. :class:`BatchWindowOperator` therefore keeps
a plain table ``(key, window start) -> accumulator`` instead of keyed-state namespaces, trigger state and a timer
queue, and fires by scanning that table when the watermark advances. This is what makes the Spark executors'
vectorized path cheap; the semantics are those of :class:`~.window_operator.WindowOperator`, which it wraps
for everything else (window assignment by the assigner, lateness and cleanup times, the window function call,
side outputs, counters). ``jvm-free-tests/core/test_batch_window.py`` checks that both give the same output
for random batches.

Per element (in order, at the batch's input watermark ``W``), as ``WindowOperator.processElement``:

* windows with ``max_ts + L <= W`` are late and skipped; the element is added to the others;
* a window with ``max_ts <= W`` fires at once (``EventTimeTrigger.onElement`` returns FIRE);
* with ``PurgingTrigger``, every firing also drops the window's contents (a later element starts afresh);
* an element that entered no window and has ``ts + L <= W`` goes to the late side output (or is dropped).

When the watermark advances from ``W`` to ``W'``: every window with ``W < max_ts <= W'`` fires (its
``EventTimeTrigger`` timer), in timer order; then every window with ``max_ts + L <= W'`` is removed (its
cleanup timer).

:meth:`BatchWindowOperator.merge_partial` adds a pre-aggregated accumulator for many elements at once. It is
only used for :class:`~.aggregates.ColumnAggregate` functions, whose ``merge`` equals adding the elements one by one.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from .assigners import SlidingEventTimeWindows, TumblingEventTimeWindows
from .functions import ProcessWindowFunction
from .javamath import LONG_MAX, long_add
from .operators import call_user, short
from .records import StreamRecord
from .triggers import EventTimeTrigger, PurgingTrigger
from .window_operator import PassThroughWindowFunction, WindowFunctionAdapter, WindowOperator
from .windows import TimeWindow

_MISSING = object()

# Names whose use in a window or aggregate function means it reads keyed or per-window state, which the batched
# operator does not keep (it keeps only the accumulators).
_STATE_NAMES = frozenset(
    {
        "window_state",
        "global_state",
        "get_state",
        "get_list_state",
        "get_map_state",
        "get_reducing_state",
        "get_aggregating_state",
        "get_runtime_context",
    }
)


def _code_names(obj: Any) -> set:  # type: ignore[type-arg]
    """Attribute and global names used by the methods of ``obj``'s class (and a plain function's own code)."""
    names: set = set()  # type: ignore[type-arg]
    funcs = [obj] if callable(obj) and hasattr(obj, "__code__") else []
    for klass in type(obj).__mro__:
        if klass.__module__.startswith("pyspark_flinkish.") or klass is object:
            continue
        funcs.extend(v for v in vars(klass).values() if hasattr(v, "__code__"))
    for f in funcs:
        stack = [f.__code__]
        while stack:
            code = stack.pop()
            names.update(code.co_names)
            stack.extend(c for c in code.co_consts if hasattr(c, "co_names"))
    return names


def batch_eligibility(op: WindowOperator) -> Optional[str]:
    """``None`` when ``op`` can run as a :class:`BatchWindowOperator`, else the reason it cannot."""
    if type(op.assigner) not in (TumblingEventTimeWindows, SlidingEventTimeWindows):
        return f"assigner {op.assigner!r} is not a tumbling or sliding event-time assigner"
    if _purging(op.trigger) is None:
        return f"trigger {op.trigger!r} is not EventTimeTrigger or PurgingTrigger.of(EventTimeTrigger())"
    if op.evictor is not None:
        return "the window has an evictor"
    wf = op.window_function
    user = wf.function if isinstance(wf, WindowFunctionAdapter) else wf
    if not isinstance(wf, (PassThroughWindowFunction, WindowFunctionAdapter)):
        clear = getattr(type(wf), "clear", None)
        if clear is not None and clear is not getattr(ProcessWindowFunction, "clear", None):
            return "the window function overrides clear()"
    for fn in (user, op.contents.agg_fn, op.contents.reduce_fn):
        if fn is not None and _code_names(fn) & _STATE_NAMES:
            return f"{type(fn).__name__} uses keyed or per-window state"
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

    def restore(self, entries: Iterable[Tuple[Any, int, Any]], watermark: int) -> None:
        """Load ``(key, window start, accumulator)`` entries and the operator's watermark."""
        self.windows = {(k, s): acc for k, s, acc in entries}
        self.op.restore_watermark(watermark)

    def open_windows(self) -> int:
        """Windows holding contents (all keys of the table)."""
        return len(self.windows)

    def num_keys(self) -> int:
        """Keys with at least one window in the table."""
        return len({k for k, _ in self.windows})

    def snapshot(self) -> List[Tuple[Any, int, Any]]:
        return [(k, s, acc) for (k, s), acc in self.windows.items()]

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
            op.backend.set_current_key(key)
            if op.late_data_tag is not None:
                op._count("late_records_side_output")
                op.output.collect_side(op.late_data_tag, record)
            else:
                op._count("late_records_dropped")

    def merge_partial(self, key: Any, start: int, partial: Any) -> None:
        """Add the accumulator of several on-time elements (``max_ts > watermark``) of one window at once."""
        slot = (key, start)
        acc = self.windows.get(slot, _MISSING)
        if acc is _MISSING:
            self.windows[slot] = partial
        else:
            fn = self.op.contents.agg_fn
            self.windows[slot] = call_user(fn.merge, self._where(key, self._window(start), "merge"), acc, partial)

    # ------------------------------------------------------------------ watermark
    def cleanup_time(self, start: int) -> int:
        max_ts = start + self.size - 1
        t = long_add(max_ts, self.op.allowed_lateness)
        return t if t >= max_ts else LONG_MAX

    def advance_watermark(self, watermark: int) -> None:
        """Fire the windows whose end the watermark passed, then drop those whose cleanup time it reached."""
        op = self.op
        old = self.watermark
        if watermark <= old:
            return
        op.current_watermark = watermark
        op.timers.current_watermark = watermark
        due = [(s + self.size - 1, slot) for slot in self.windows for s in (slot[1],) if old < s + self.size - 1 <= watermark]
        due.sort(key=lambda d: d[0])  # timer order; ties keep the table's (deterministic) order
        for max_ts, (key, start) in due:
            op.firing_timer = max_ts
            self._fire(key, self._window(start), self.windows[(key, start)])  # a window in the table has contents
        op.firing_timer = None
        expired = [slot for slot in self.windows if self.cleanup_time(slot[1]) <= watermark]
        for slot in expired:
            del self.windows[slot]
        if expired:
            op._count("windows_cleaned", len(expired))


__all__ = [
    "batch_eligibility",
    "BatchWindowOperator",
]
