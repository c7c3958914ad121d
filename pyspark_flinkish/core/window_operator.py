"""Flink's ``WindowOperator`` and ``EvictingWindowOperator`` as one class, step for step.

Per element: assign windows (merging sessions first), skip windows that are late
(``max_ts + allowed_lateness <= watermark``), add the element, ask the trigger, fire/purge, register the
cleanup timer; an element that entered no window and is itself late goes to the late side output (or is
dropped). Per timer: ask the trigger, fire/purge, and at ``max_ts + allowed_lateness`` clear everything
the window had. See ``../shared/spec/flink-semantics.md`` §6–§10 for the rules this follows.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Hashable, Iterable, List, Optional, Tuple

from .assigners import MergingWindowAssigner, WindowAssigner, WindowAssignerContext
from .clock import Clock
from .errors import InvalidPipelineError, StateError
from .evictors import Evictor, EvictorContext, TimestampedValue
from .functions import KeyedStateStore, ProcessWindowFunction
from .javamath import LONG_MAX, long_add
from .key_identity import plain_key
from .operators import (
    KeyedOperator,
    NamespacedStateStore,
    call_user,
    close_function,
    open_function,
    runtime_context,
    short,
)
from .records import Output, OutputTag, StreamRecord, emit_results
from .state import VOID_NAMESPACE, InternalState
from .state_descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from .triggers import OnMergeContext, Trigger, TriggerResult
from .windows import Window

CONTENTS = "__window_contents"
MERGING_SET = "__merging_window_set"
TRIGGER_PREFIX = "__trigger:"


class WindowContents:
    """How a window stores its contents and turns them into the window function's input.

    ``kind`` is ``"reduce"`` (ReducingState: one value), ``"aggregate"`` (AggregatingState: one result) or
    ``"list"`` (all values). With an evictor the operator always buffers ``(value, timestamp)`` pairs and
    applies the reduce/aggregate to the survivors at each firing, as Flink does.
    """

    def __init__(self, kind: str, reduce_fn: Optional[Callable[[Any, Any], Any]] = None, agg_fn: Any = None) -> None:
        if kind not in ("reduce", "aggregate", "list"):
            raise ValueError(kind)
        self.kind = kind
        self.reduce_fn = reduce_fn
        self.agg_fn = agg_fn

    def descriptor(self, evicting: bool) -> StateDescriptor:
        if evicting or self.kind == "list":
            return ListStateDescriptor(CONTENTS)
        if self.kind == "reduce":
            return ReducingStateDescriptor(CONTENTS, self.reduce_fn)
        return AggregatingStateDescriptor(CONTENTS, self.agg_fn)

    def from_values(self, values: List[Any], where: Callable[[], str]) -> List[Any]:
        """The window function's input for the evictor's survivors."""
        if self.kind == "list":
            return values
        if self.kind == "reduce":
            current: Any = None
            for v in values:
                current = v if current is None else call_user(self.reduce_fn, lambda: f"{where()}: reduce", current, v)  # type: ignore[arg-type]
            return [current]
        acc = call_user(self.agg_fn.create_accumulator, lambda: f"{where()}: create_accumulator")
        for v in values:
            acc = call_user(self.agg_fn.add, lambda: f"{where()}: add", v, acc)
        return [call_user(self.agg_fn.get_result, lambda: f"{where()}: get_result", acc)]


class MergingWindowSet:
    """Per key: which in-flight (session) window keeps its contents under which state window."""

    def __init__(self, assigner: MergingWindowAssigner, stored: Optional[List[Tuple[Window, Window]]]) -> None:  # type: ignore[type-arg]
        self.assigner = assigner
        self.mapping: Dict[Window, Window] = dict(stored or [])
        self._initial = dict(self.mapping)

    def get_state_window(self, window: Window) -> Optional[Window]:
        return self.mapping.get(window)

    def retire_window(self, window: Window) -> None:
        if self.mapping.pop(window, None) is None:
            msg = f"window {window!r} is not in in-flight window set"
            raise StateError(msg)

    def changed(self) -> bool:
        return self.mapping != self._initial

    def stored(self) -> List[Tuple[Window, Window]]:
        return list(self.mapping.items())

    def add_window(
        self, new_window: Window, merge_function: Callable[[Window, List[Window], Window, List[Window]], None]
    ) -> Window:
        windows = list(self.mapping) + [new_window]
        merge_results: List[Tuple[Window, List[Window]]] = []
        self.assigner.merge_windows(windows, lambda members, result: merge_results.append((result, list(members))))
        result_window = new_window
        merged_new_window = False
        for merge_result, merged_windows in merge_results:
            if new_window in merged_windows:
                merged_windows.remove(new_window)
                merged_new_window = True
                result_window = merge_result
            merged_state_window = self.mapping[merged_windows[0]]
            merged_state_windows = []
            for merged in merged_windows:
                res = self.mapping.pop(merged, None)
                if res is not None:
                    merged_state_windows.append(res)
            self.mapping[merge_result] = merged_state_window
            if merged_state_window in merged_state_windows:
                merged_state_windows.remove(merged_state_window)
            if not (merge_result in merged_windows and len(merged_windows) == 1):
                merge_function(merge_result, merged_windows, self.mapping[merge_result], merged_state_windows)
        if not merge_results or (result_window == new_window and not merged_new_window):
            self.mapping[result_window] = result_window
        return result_window


class _TriggerContext(OnMergeContext):
    """Flink's ``WindowOperator.Context``: the trigger's view of one key and window."""

    def __init__(self, op: WindowOperator) -> None:
        self.op = op
        self.window: Window = None  # type: ignore[assignment]
        self.merged_windows: List[Window] = []
        self._states: Dict[str, InternalState] = {}

    def _state(self, descriptor: StateDescriptor) -> InternalState:
        name = TRIGGER_PREFIX + descriptor.name
        state = self._states.get(name)
        if state is None:
            internal = _renamed(descriptor, name)
            state = self._states[name] = self.op.backend.create_state(internal, self.window)
        return state

    def get_partitioned_state(self, state_descriptor: StateDescriptor) -> Any:
        state = self._state(state_descriptor)
        state.set_current_namespace(self.window)
        return state

    def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
        if self.merged_windows:
            self._state(state_descriptor).merge_namespaces(self.window, self.merged_windows)

    def get_current_processing_time(self) -> int:
        return self.op.clock.now()

    def get_current_watermark(self) -> int:
        return self.op.timers.current_watermark

    def register_processing_time_timer(self, time: int) -> None:
        self.op.timers.register_processing_time_timer(self.window, time)

    def register_event_time_timer(self, time: int) -> None:
        self.op.timers.register_event_time_timer(self.window, time)

    def delete_processing_time_timer(self, time: int) -> None:
        self.op.timers.delete_processing_time_timer(self.window, time)

    def delete_event_time_timer(self, time: int) -> None:
        self.op.timers.delete_event_time_timer(self.window, time)

    # -- trigger calls, with the user-code error wrapping
    def _where(self, what: str) -> Callable[[], str]:
        window = self.window

        def where() -> str:
            key = self.op.backend.get_current_key()
            return f"{self.op.name}: trigger {self.op.trigger!r}.{what} (key={short(key)}, window={window!r})"

        return where

    def on_element(self, record: StreamRecord) -> TriggerResult:
        return call_user(self.op.trigger.on_element, self._where("on_element"), record.value, record.timestamp, self.window, self)  # type: ignore[no-any-return]

    def on_event_time(self, time: int) -> TriggerResult:
        return call_user(self.op.trigger.on_event_time, self._where("on_event_time"), time, self.window, self)  # type: ignore[no-any-return]

    def on_processing_time(self, time: int) -> TriggerResult:
        return call_user(self.op.trigger.on_processing_time, self._where("on_processing_time"), time, self.window, self)  # type: ignore[no-any-return]

    def on_merge(self, merged_windows: List[Window]) -> None:
        self.merged_windows = merged_windows
        try:
            call_user(self.op.trigger.on_merge, self._where("on_merge"), self.window, self)
        finally:
            self.merged_windows = []

    def clear(self) -> None:
        call_user(self.op.trigger.clear, self._where("clear"), self.window, self)


def _renamed(descriptor: StateDescriptor, name: str) -> StateDescriptor:
    clone = object.__new__(type(descriptor))
    clone.__dict__.update(descriptor.__dict__)
    clone.name = name
    return clone


class _ProcessContext(ProcessWindowFunction.Context):
    def __init__(self, op: WindowOperator) -> None:
        self.op = op
        self._window: Window = None  # type: ignore[assignment]

    def window(self) -> Any:
        return self._window

    def current_processing_time(self) -> int:
        return self.op.clock.now()

    def current_watermark(self) -> int:
        return self.op.timers.current_watermark

    def window_state(self) -> KeyedStateStore:
        if self.op.merging:
            msg = (
                "ProcessWindowFunction.Context.window_state() is not supported with merging (session) windows; "
                "use global_state() or a different assigner (Flink throws the same way)"
            )
            raise InvalidPipelineError(msg)
        return NamespacedStateStore(self.op.backend, self._window)

    def global_state(self) -> KeyedStateStore:
        return NamespacedStateStore(self.op.backend, VOID_NAMESPACE)

    def output(self, output_tag: Any, value: Any) -> None:
        if not isinstance(output_tag, OutputTag):
            msg = f"output() needs an OutputTag; got {type(output_tag).__name__}"
            raise InvalidPipelineError(msg)
        self.op.output.collect_side(output_tag, StreamRecord(value, self._window.max_timestamp()))


class _AssignerContext(WindowAssignerContext):
    def __init__(self, op: WindowOperator) -> None:
        self.op = op
        self._runtime_context = runtime_context(op.name, op.backend, op.subtasks)

    def get_current_processing_time(self) -> int:
        return self.op.clock.now()

    def get_runtime_context(self) -> Any:
        return self._runtime_context


class _EvictorContext(EvictorContext):
    def __init__(self, op: WindowOperator) -> None:
        self.op = op

    def get_current_processing_time(self) -> int:
        return self.op.clock.now()

    def get_current_watermark(self) -> int:
        return self.op.timers.current_watermark


class WindowOperator(KeyedOperator):
    """A keyed window: assigner, trigger, optional evictor, allowed lateness, late-data side output and a
    window function that receives ``(key, context, elements)`` like ``ProcessWindowFunction.process``."""

    def __init__(
        self,
        name: str,
        key_selector: Callable[[Any], Any],
        assigner: WindowAssigner,  # type: ignore[type-arg]
        trigger: Trigger,  # type: ignore[type-arg]
        contents: WindowContents,
        window_function: Any,
        evictor: Optional[Evictor] = None,  # type: ignore[type-arg]
        allowed_lateness: int = 0,
        late_data_tag: Optional[OutputTag] = None,
        user_functions: Iterable[Any] = (),
    ) -> None:
        super().__init__(name, key_selector)
        self.assigner = assigner
        self.trigger = trigger
        self.contents = contents
        self.window_function = window_function
        self.evictor = evictor
        self.allowed_lateness = allowed_lateness
        self.late_data_tag = late_data_tag
        self.user_functions = [f for f in user_functions if f is not None]
        self.merging = isinstance(assigner, MergingWindowAssigner)
        self.event_time = assigner.is_event_time()
        if self.merging and not trigger.can_merge():
            msg = (
                f"{name}: the trigger {trigger!r} does not support merging windows, but the assigner "
                f"{assigner!r} merges windows (sessions). Use a trigger whose can_merge() is True."
            )
            raise InvalidPipelineError(msg)

    def open(self, output: Output, clock: Clock) -> None:
        super().open(output, clock)
        self.window_state: Any = self.backend.create_state(self.contents.descriptor(self.evictor is not None))
        self.merging_state: Any = self.backend.create_state(ValueStateDescriptor(MERGING_SET))
        self.trigger_ctx = _TriggerContext(self)
        self.process_ctx = _ProcessContext(self)
        self.assigner_ctx = _AssignerContext(self)
        self.evictor_ctx = _EvictorContext(self)
        for fn in self.user_functions:
            open_function(fn, self.name, self.backend, self.subtasks)

    def close(self) -> None:
        for fn in self.user_functions:
            close_function(fn, self.name)

    def open_windows(self, keys: Optional[Iterable[Any]] = None) -> int:
        """Windows holding contents in state (of all keys in memory, or of ``keys``): a monitoring gauge, not a
        Flink metric."""
        keys = self.backend.keys() if keys is None else keys
        return sum(1 for key in keys for name, _ in self.backend.key_table(key) if name == CONTENTS)

    # ------------------------------------------------------------------------------ time helpers
    def cleanup_time(self, window: Window) -> int:
        """When the window's state is dropped: ``max_ts + allowed_lateness`` in event time (``LONG_MAX``, i.e.
        never, on overflow), ``max_ts`` in processing time (Flink's ``cleanupTime``)."""
        if self.event_time:
            t = long_add(window.max_timestamp(), self.allowed_lateness)
            return t if t >= window.max_timestamp() else LONG_MAX
        return window.max_timestamp()

    def is_window_late(self, window: Window) -> bool:
        return self.event_time and self.cleanup_time(window) <= self.timers.current_watermark

    def is_element_late(self, record: StreamRecord) -> bool:
        return (
            self.event_time
            and record.timestamp is not None
            and long_add(record.timestamp, self.allowed_lateness) <= self.timers.current_watermark
        )

    def register_cleanup_timer(self, window: Window) -> None:
        t = self.cleanup_time(window)
        if t == LONG_MAX:
            return
        if self.event_time:
            self.trigger_ctx.register_event_time_timer(t)
        else:
            self.trigger_ctx.register_processing_time_timer(t)

    def delete_cleanup_timer(self, window: Window) -> None:
        t = self.cleanup_time(window)
        if t == LONG_MAX:
            return
        if self.event_time:
            self.trigger_ctx.delete_event_time_timer(t)
        else:
            self.trigger_ctx.delete_processing_time_timer(t)

    # ------------------------------------------------------------------------------ merging set
    def _merging_set(self) -> MergingWindowSet:
        return MergingWindowSet(self.assigner, self.merging_state.value())  # type: ignore[arg-type]

    def _persist(self, mws: MergingWindowSet) -> None:
        if mws.changed():
            self.merging_state.update(mws.stored() or None)

    # ------------------------------------------------------------------------------ elements
    def process_keyed(self, key: Any, record: StreamRecord) -> None:
        windows = call_user(
            self.assigner.assign_windows,
            lambda: f"{self.name}: {self.assigner!r}.assign_windows({short(record.value)}) (key={short(key)})",
            record.value,
            record.timestamp,
            self.assigner_ctx,
        )
        skipped = True
        tctx = self.trigger_ctx
        if self.merging:
            mws = self._merging_set()
            for window in windows:

                def merge(result: Window, merged: List[Window], state_result: Window, merged_state: List[Window]) -> None:
                    tctx.window = result
                    tctx.on_merge(merged)
                    for m in merged:
                        tctx.window = m
                        tctx.clear()
                        self.delete_cleanup_timer(m)
                    self.window_state.merge_namespaces(state_result, merged_state)

                actual = mws.add_window(window, merge)
                if self.is_window_late(actual):
                    mws.retire_window(actual)
                    continue
                skipped = False
                state_window = mws.get_state_window(actual)
                if state_window is None:
                    msg = f"{self.name}: window {actual!r} has no state window"
                    raise StateError(msg)
                self._add(state_window, record)
                tctx.window = actual
                result = tctx.on_element(record)
                if result.is_fire():
                    contents = self._contents()
                    if contents is not None:
                        self._emit(key, actual, contents)
                if result.is_purge():
                    self.window_state.clear()
                self.register_cleanup_timer(actual)
            self._persist(mws)
        else:
            for window in windows:
                if self.is_window_late(window):
                    continue
                skipped = False
                self._add(window, record)
                tctx.window = window
                result = tctx.on_element(record)
                if result.is_fire():
                    contents = self._contents()
                    if contents is None:
                        continue
                    self._emit(key, window, contents)
                if result.is_purge():
                    self.window_state.clear()
                self.register_cleanup_timer(window)
        if skipped and self.is_element_late(record):
            self.route_late(record)

    def route_late(self, record: StreamRecord) -> None:
        """An element that entered no window and is itself late (:meth:`is_element_late`): Flink's
        ``sideOutput`` to the late-data tag, or dropped (``numLateRecordsDropped``)."""
        if self.late_data_tag is not None:
            self._count("late_records_side_output")
            self.output.collect_side(self.late_data_tag, record)
        else:
            self._count("late_records_dropped")

    def _add(self, state_window: Window, record: StreamRecord) -> None:
        self.window_state.set_current_namespace(state_window)
        if self.evictor is not None:
            self.window_state.add((record.value, record.timestamp))
        else:
            call_user(self.window_state.add, lambda: self._adding(state_window), record.value)

    def _adding(self, window: Window) -> str:
        what = {"reduce": "reduce", "aggregate": "aggregate function add"}.get(self.contents.kind, "add")
        return f"{self.name}: {what} (key={short(self.backend.get_current_key())}, window={window!r})"

    def _contents(self) -> Any:
        if self.evictor is not None or self.contents.kind == "list":
            return self.window_state.get_raw()
        return self.window_state.get()

    # ------------------------------------------------------------------------------ timers
    def on_event_time(self, ts: int, key: Any, namespace: Hashable) -> None:
        self._on_timer(ts, key, namespace, event_time=True)

    def on_processing_time(self, ts: int, key: Any, namespace: Hashable) -> None:
        self._on_timer(ts, key, namespace, event_time=False)

    def _on_timer(self, ts: int, key: Any, window: Any, event_time: bool) -> None:
        tctx = self.trigger_ctx
        tctx.window = window
        mws: Optional[MergingWindowSet] = None
        if self.merging:
            mws = self._merging_set()
            state_window = mws.get_state_window(window)
            if state_window is None:
                return  # a stale timer of a window merged away or already cleaned up
            self.window_state.set_current_namespace(state_window)
        else:
            self.window_state.set_current_namespace(window)
        result = tctx.on_event_time(ts) if event_time else tctx.on_processing_time(ts)
        if result.is_fire():
            contents = self._contents()
            if contents is not None:
                self._emit(key, window, contents)
        if result.is_purge():
            self.window_state.clear()
        if self.event_time == event_time and ts == self.cleanup_time(window):
            self._clear_all_state(window, mws)
        if mws is not None:
            self._persist(mws)

    def _clear_all_state(self, window: Window, mws: Optional[MergingWindowSet]) -> None:
        self.window_state.clear()
        self.trigger_ctx.window = window
        self.trigger_ctx.clear()
        self.clear_window_function(window)
        if mws is not None:
            mws.retire_window(window)
        self._count("windows_cleaned")

    def clear_window_function(self, window: Window) -> None:
        """The window function's ``clear(context)`` at the window's cleanup time (for the current key): where a
        ``ProcessWindowFunction`` drops its per-window state (Flink never clears ``window_state()`` itself)."""
        self.process_ctx._window = window
        clear = getattr(self.window_function, "clear", None)
        if callable(clear):
            key = short(self.backend.get_current_key())
            call_user(clear, lambda: f"{self.name}: window function clear (key={key}, window={window!r})", self.process_ctx)

    # ------------------------------------------------------------------------------ firing
    def _emit(self, key: Any, window: Window, contents: Any) -> None:
        self.process_ctx._window = window

        def where() -> str:
            return f"{self.name}: window function (key={short(key)}, window={window!r})"

        metrics = self.metrics
        metrics["windows_fired"] = metrics.get("windows_fired", 0) + 1  # ``_count``, inline: once per fired window
        if self.evictor is None:
            elements = contents if self.contents.kind == "list" else [contents]
            results = call_user(self.window_function.process, where, plain_key(key), self.process_ctx, elements)
            emit_results(self.output, results, window.max_timestamp())  # ``_call_function``, inline
            return
        buffer = [TimestampedValue(v, t) for v, t in contents]
        call_user(self.evictor.evict_before, lambda: f"{where()}: evict_before", buffer, len(buffer), window, self.evictor_ctx)
        values = self.contents.from_values([e.value for e in buffer], where)
        self._call_function(key, values, where, window)
        call_user(self.evictor.evict_after, lambda: f"{where()}: evict_after", buffer, len(buffer), window, self.evictor_ctx)
        self.window_state.update([(e.value, e.timestamp) for e in buffer])

    def _call_function(self, key: Any, elements: List[Any], where: Callable[[], str], window: Window) -> None:
        key = plain_key(key)  # a timer's key as Flink hands it back (core/key_identity.py)
        results = call_user(self.window_function.process, where, key, self.process_ctx, elements)
        emit_results(self.output, results, window.max_timestamp())


class PassThroughWindowFunction:
    """The window function of ``reduce(f)`` / ``aggregate(f)`` without one: emits the aggregate."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> List[Any]:
        return list(elements)

    def __repr__(self) -> str:
        return "PassThroughWindowFunction()"


class WindowFunctionAdapter:
    """Runs a legacy ``WindowFunction.apply(key, window, inputs)`` (or such a callable) as a process function."""

    def __init__(self, function: Any) -> None:
        self.function = function
        self._apply = getattr(function, "apply", None) if not _is_plain_callable(function) else function

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Any:
        return self._apply(key, context.window(), elements)  # type: ignore[misc]

    def open(self, runtime_context: Any) -> None:
        opener = getattr(self.function, "open", None)
        if callable(opener):
            opener(runtime_context)

    def close(self) -> None:
        closer = getattr(self.function, "close", None)
        if callable(closer):
            closer()

    def __repr__(self) -> str:
        return f"WindowFunctionAdapter({self.function!r})"


def _is_plain_callable(fn: Any) -> bool:
    return callable(fn) and not callable(getattr(fn, "apply", None))


__all__ = [
    "CONTENTS",
    "MERGING_SET",
    "TRIGGER_PREFIX",
    "WindowContents",
    "MergingWindowSet",
    "WindowOperator",
    "PassThroughWindowFunction",
    "WindowFunctionAdapter",
]
