"""Stream operators: the per-record and per-watermark logic of Flink's runtime, engine-independent.

An operator receives records (:meth:`process_element`), watermarks (:meth:`process_watermark`), idleness
(:meth:`process_idle`) and processing-time advances (:meth:`advance_processing_time`), and sends its
results to an :class:`~pyspark_flinkish.core.records.Output`. Keyed operators keep every key's state and
timers in a :class:`KeyedStateBackend` and an :class:`InternalTimerService`, and can hand out and take
back one key's state as a snapshot: the JVM-free engine keeps operators alive in memory, the Spark
executors restore and snapshot the keys of each micro-batch.
"""

from __future__ import annotations

import traceback
from typing import Any, Callable, Dict, Hashable, List, Optional, Tuple, Union

from .clock import Clock
from .declared_output import DeclaredOutput
from .errors import BadInputError, InvalidTypeError, UserFunctionError
from .functions import (
    KeyedProcessFunction,
    KeyedStateStore,
    ProcessFunction,
    RuntimeContext,
    TimeDomain,
    TimerService,
)
from .javamath import LONG_MAX, LONG_MIN
from .records import Output, StreamRecord, check_output_tag, emit_results
from .state import VOID_NAMESPACE, KeyedStateBackend
from .state_descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from .subtasks import Subtasks, SubtaskStamping
from .timers import InternalTimerService
from .typeinfo import TypeInformation


def call_user(fn: Callable[..., Any], where: Union[str, Callable[[], str]], *args: Any) -> Any:
    """Call user code; wrap its exception in a :class:`UserFunctionError` that says where it happened.

    ``where`` may be a callable: it is only formatted when the call fails (a hot path must not pay for
    formatting keys and windows it will never show).
    """
    try:
        result = fn(*args)
        if result is not None and hasattr(result, "__next__"):
            result = list(result)  # run generators now, inside the right key/window context
        return result
    except (UserFunctionError, BadInputError):
        raise
    except Exception as exc:
        place = where() if callable(where) else where
        text = str(exc)  # in full at the end of the traceback below
        text = text if len(text) <= 500 else f"{text[:500]}... ({len(text)} characters)"
        msg = f"{place} raised {type(exc).__name__}: {text}\n{traceback.format_exc()}"
        raise UserFunctionError(msg) from exc


def short(value: Any, limit: int = 200) -> str:
    """``repr(value)``, cut to ``limit`` characters for error messages (a key or an element can be huge)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def in_node(exc: UserFunctionError, name: str, uid: str) -> UserFunctionError:
    """``exc`` with the plan node (name and uid) whose user code raised it in front of its message. Engines
    call this where a node runs; the innermost node names itself, outer nodes leave the error as it is."""
    if exc.uid is not None:
        return exc
    located = UserFunctionError(f"operator {name!r} (uid {uid!r}): {exc}")
    located.operator, located.uid = name, uid
    located.__cause__ = exc.__cause__ if exc.__cause__ is not None else exc
    return located


class StreamOperator:
    """Base class: forwards watermarks and idleness; subclasses handle records.

    ``declared_type``: the operator's declared output type; ``open()`` puts a
    :class:`~pyspark_flinkish.core.declared_output.DeclaredOutput` in front of the executor's output, so that
    records are handed on as Flink's serializers would (side outputs as their tag's type). ``self.output`` is
    that wrapper: executors keep their own reference to the output they open the operator with."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.declared_type: Optional[TypeInformation] = None
        self.output: Output = None  # type: ignore[assignment]
        self.clock: Clock = None  # type: ignore[assignment]
        self.current_watermark = LONG_MIN
        self.metrics: Dict[str, int] = {}
        self.subtasks = Subtasks()
        """Flink's parallel subtasks of the operator, as its functions' runtime context reports them (the plan's
        factory sets them: ``datastream/plan.py``, ``ParallelOperatorFactory``)."""

    def open(self, output: Output, clock: Clock) -> None:
        self.output = DeclaredOutput(output, self.declared_type, self.name)
        self.clock = clock

    def process_element(self, record: StreamRecord) -> None:
        raise NotImplementedError

    def process_watermark(self, watermark: int) -> None:
        self.current_watermark = watermark
        self.output.emit_watermark(watermark)

    def process_idle(self, idle: bool) -> None:
        self.output.emit_idle(idle)

    def advance_processing_time(self, now: int) -> None:
        return None

    def on_periodic_emit(self) -> None:
        """End of a micro-batch: Flink's periodic watermark emission happens here."""
        return None

    def end_input(self) -> None:
        return None

    def close(self) -> None:
        return None

    def _count(self, metric: str, n: int = 1) -> None:
        self.metrics[metric] = self.metrics.get(metric, 0) + n


class _SimpleRuntimeContext(RuntimeContext):
    def __init__(
        self, task_name: str, backend: Optional[KeyedStateBackend] = None, subtasks: Optional[Subtasks] = None
    ) -> None:
        self._task_name = task_name
        self._backend = backend
        self._subtasks = subtasks if subtasks is not None else Subtasks()

    def get_task_name(self) -> str:
        return self._task_name

    def get_number_of_parallel_subtasks(self) -> int:
        return self._subtasks.parallelism

    def get_max_number_of_parallel_subtasks(self) -> int:
        return self._subtasks.effective_max_parallelism()

    def get_index_of_this_subtask(self) -> int:
        backend = self._backend
        keyed = backend is not None and backend.has_current_key()
        return self._subtasks.index_of(self._task_name, backend.get_current_key if keyed else None)  # type: ignore[union-attr]

    def _state(self, descriptor: StateDescriptor, kind: type) -> Any:
        if not isinstance(descriptor, kind):
            msg = f"expected a {kind.__name__}; got {type(descriptor).__name__}"
            raise InvalidTypeError(msg)
        if self._backend is None:
            msg = (
                f"{self._task_name}: keyed state ({descriptor.name!r}) is only available on a keyed stream; "
                "call key_by(...) first"
            )
            raise InvalidTypeError(msg)
        return self._backend.create_state(descriptor, VOID_NAMESPACE)

    def get_state(self, state_descriptor: ValueStateDescriptor) -> Any:
        return self._state(state_descriptor, ValueStateDescriptor)

    def get_list_state(self, state_descriptor: ListStateDescriptor) -> Any:
        return self._state(state_descriptor, ListStateDescriptor)

    def get_map_state(self, state_descriptor: MapStateDescriptor) -> Any:
        return self._state(state_descriptor, MapStateDescriptor)

    def get_reducing_state(self, state_descriptor: ReducingStateDescriptor) -> Any:
        return self._state(state_descriptor, ReducingStateDescriptor)

    def get_aggregating_state(self, state_descriptor: AggregatingStateDescriptor) -> Any:
        return self._state(state_descriptor, AggregatingStateDescriptor)


def runtime_context(
    task_name: str, backend: Optional[KeyedStateBackend] = None, subtasks: Optional[Subtasks] = None
) -> RuntimeContext:
    """The ``RuntimeContext`` a function of task ``task_name`` sees; its keyed state (when ``backend`` is given)
    is the current key's, outside any window; its subtask values are ``subtasks``' (:mod:`.subtasks`: the index is
    the current key's subtask, asked when called)."""
    return _SimpleRuntimeContext(task_name, backend, subtasks)


def open_function(
    fn: Any, task_name: str, backend: Optional[KeyedStateBackend] = None, subtasks: Optional[Subtasks] = None
) -> None:
    opener = getattr(fn, "open", None)
    if callable(opener):
        call_user(opener, lambda: f"{task_name}: open()", runtime_context(task_name, backend, subtasks))


def close_function(fn: Any, task_name: str) -> None:
    closer = getattr(fn, "close", None)
    if callable(closer):
        call_user(closer, lambda: f"{task_name}: close()")


# ------------------------------------------------------------------------------ stateless operators


class MapOperator(StreamOperator):
    def __init__(self, name: str, fn: Callable[[Any], Any], function_obj: Any = None) -> None:
        super().__init__(name)
        self.fn = fn
        self.function_obj = function_obj

    def open(self, output: Output, clock: Clock) -> None:
        super().open(output, clock)
        open_function(self.function_obj, self.name, subtasks=self.subtasks)

    def process_element(self, record: StreamRecord) -> None:
        value = call_user(self.fn, lambda: f"{self.name}: map({short(record.value)})", record.value)
        self.output.collect(StreamRecord(value, record.timestamp, record.subtask))

    def close(self) -> None:
        close_function(self.function_obj, self.name)


class FlatMapOperator(MapOperator):
    def process_element(self, record: StreamRecord) -> None:
        results = call_user(self.fn, lambda: f"{self.name}: flat_map({short(record.value)})", record.value)
        emit_results(self.output, results, record.timestamp, subtask=record.subtask)


class FilterOperator(MapOperator):
    def process_element(self, record: StreamRecord) -> None:
        if call_user(self.fn, lambda: f"{self.name}: filter({short(record.value)})", record.value):
            self.output.collect(record)


class _NonKeyedTimerService(TimerService):
    def __init__(self, op: StreamOperator) -> None:
        self._op = op

    def current_processing_time(self) -> int:
        return self._op.clock.now()

    def current_watermark(self) -> int:
        return self._op.current_watermark

    def _no_timers(self) -> None:
        msg = "Setting timers is only supported on keyed streams: use key_by(...).process(KeyedProcessFunction)"
        raise InvalidTypeError(msg)

    def register_processing_time_timer(self, timestamp: int) -> None:
        self._no_timers()

    def register_event_time_timer(self, timestamp: int) -> None:
        self._no_timers()

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self._no_timers()

    def delete_event_time_timer(self, timestamp: int) -> None:
        self._no_timers()


class ProcessOperator(StreamOperator):
    """A non-keyed ``ProcessFunction``."""

    def __init__(self, name: str, function: ProcessFunction) -> None:  # type: ignore[type-arg]
        super().__init__(name)
        self.function = function
        self._record: Optional[StreamRecord] = None
        self._timer_service = _NonKeyedTimerService(self)
        self._ctx = _Ctx(self)

    def open(self, output: Output, clock: Clock) -> None:
        super().open(output, clock)
        open_function(self.function, self.name, subtasks=self.subtasks)

    def timestamp(self) -> Optional[int]:
        return None if self._record is None else self._record.timestamp

    def timer_service(self) -> TimerService:
        return self._timer_service

    def process_element(self, record: StreamRecord) -> None:
        self._record = record
        try:
            results = call_user(
                self.function.process_element,
                lambda: f"{self.name}: process_element({short(record.value)})",
                record.value,
                self._ctx,
            )
            emit_results(self.output, results, record.timestamp, subtask=record.subtask)
        finally:
            self._record = None

    def close(self) -> None:
        close_function(self.function, self.name)


class _Ctx(ProcessFunction.Context):
    """The context handed to a non-keyed ProcessFunction (its ``output`` is the side-output method)."""

    def __init__(self, op: ProcessOperator) -> None:
        self._op = op

    def timestamp(self) -> Optional[int]:
        return self._op.timestamp()

    def timer_service(self) -> TimerService:
        return self._op.timer_service()

    def output(self, output_tag: Any, value: Any) -> None:
        check_output_tag(output_tag)
        self._op.output.collect_side(output_tag, StreamRecord(value, self._op.timestamp()))


# ---------------------------------------------------------------------------------- keyed operators


class KeyedOperator(StreamOperator):
    """An operator with keyed state and timers; ``key_selector`` picks each record's key."""

    def __init__(self, name: str, key_selector: Callable[[Any], Any]) -> None:
        super().__init__(name)
        self.key_selector = key_selector
        self.backend: KeyedStateBackend = None  # type: ignore[assignment]
        self.timers: InternalTimerService = None  # type: ignore[assignment]
        self.firing_timer: Optional[int] = None  # timestamp of the timer being fired, if any

    def open(self, output: Output, clock: Clock) -> None:
        if getattr(self, "stamps_subtask", False):  # a print sink after it numbers its lines by the key's subtask
            task = f"{self.name} (a print() after it numbers its lines by the key's subtask)"
            output = SubtaskStamping(output, lambda: self.subtasks.index_of(task, self.backend.get_current_key))
        super().open(output, clock)
        subtasks = getattr(self, "subtasks", None)
        self.backend = KeyedStateBackend(clock.now, getattr(subtasks, "key_type", None))
        self.timers = InternalTimerService(self.backend.current_state_key, self._fire_event_timer, self._fire_processing_timer)

    def process_element(self, record: StreamRecord) -> None:
        key = call_user(self.key_selector, lambda: f"{self.name}: key selector on {short(record.value)}", record.value)
        self.backend.set_current_key(key)
        self.process_keyed(self.backend.current_state_key(), record)  # as a timer's: the key Flink holds

    def process_keyed(self, key: Any, record: StreamRecord) -> None:
        """One record of the current key (``key``: as the state and timers hold it, ``core/key_identity.py``;
        ``plain_key`` gives the value Flink hands a function)."""
        raise NotImplementedError

    def process_watermark(self, watermark: int) -> None:
        self.current_watermark = watermark
        self.timers.advance_watermark(watermark)
        self.output.emit_watermark(watermark)

    def advance_processing_time(self, now: int) -> None:
        if self.current_watermark == LONG_MAX:
            return  # end of input reached this operator: Flink quiesces its processing-time service
        self.timers.advance_processing_time(now)

    def _fire_event_timer(self, ts: int, key: Any, namespace: Hashable) -> None:
        self.backend.set_current_key(key)
        self.firing_timer = ts
        try:
            self.on_event_time(ts, key, namespace)
        finally:
            self.firing_timer = None

    def _fire_processing_timer(self, ts: int, key: Any, namespace: Hashable) -> None:
        self.backend.set_current_key(key)
        self.firing_timer = ts
        try:
            self.on_processing_time(ts, key, namespace)
        finally:
            self.firing_timer = None

    def on_event_time(self, ts: int, key: Any, namespace: Hashable) -> None:
        raise NotImplementedError

    def on_processing_time(self, ts: int, key: Any, namespace: Hashable) -> None:
        raise NotImplementedError

    # -- per-key snapshots (used by the Spark executors)
    def active_keys(self) -> List[Any]:
        keys = dict.fromkeys(self.backend.keys())
        keys.update(dict.fromkeys(self.timers.event_timers.keys()))
        keys.update(dict.fromkeys(self.timers.processing_timers.keys()))
        return list(keys)

    def snapshot_key(self, key: Any) -> Optional[Dict[str, Any]]:
        """One key's state and timers as plain data, or None when the key holds nothing."""
        key = self.backend.state_key(key)
        self.backend.purge_expired(key)
        table = self.backend.key_table(key)
        event, processing = self.timers.timers_for_key(key)
        if not table and not event and not processing:
            return None
        return {"state": dict(table), "event_timers": event, "processing_timers": processing}

    def due_times(self, key: Any) -> Tuple[Optional[int], Optional[int], Optional[int]]:
        """When ``key`` must next be in memory though no record touches it: its earliest event-time timer (due
        once the watermark reaches it), its earliest processing-time timer and its earliest TTL expiry (due once
        processing time reaches them); None where it has none. An executor that restores only the keys a
        micro-batch needs restores these too, so every timer fires and every expired entry is dropped as when all
        keys are in memory."""
        key = self.backend.state_key(key)
        event, processing = self.timers.timers_for_key(key)
        return (event[0][0] if event else None), (processing[0][0] if processing else None), self.backend.next_expiry(key)

    def restore_key(self, key: Any, snapshot: Optional[Dict[str, Any]]) -> None:
        key = self.backend.state_key(key)
        self.backend.drop_key(key)
        self.timers.drop_key(key)
        if snapshot:
            self.backend.set_key_table(key, dict(snapshot["state"]))
            self.timers.restore_key(key, snapshot["event_timers"], snapshot["processing_timers"])

    def restore_watermark(self, watermark: int) -> None:
        """Set the operator's current watermark without firing timers (the driver restores it per batch)."""
        self.current_watermark = watermark
        self.timers.current_watermark = watermark

    def evict_key(self, key: Any) -> None:
        """Forget a key (after its snapshot was taken)."""
        key = self.backend.state_key(key)
        self.backend.drop_key(key)
        self.timers.drop_key(key)


class _KeyedTimerService(TimerService):
    def __init__(self, op: KeyedOperator) -> None:
        self._op = op

    def current_processing_time(self) -> int:
        return self._op.clock.now()

    def current_watermark(self) -> int:
        return self._op.timers.current_watermark

    def register_processing_time_timer(self, timestamp: int) -> None:
        self._op.timers.register_processing_time_timer(VOID_NAMESPACE, int(timestamp))

    def register_event_time_timer(self, timestamp: int) -> None:
        self._op.timers.register_event_time_timer(VOID_NAMESPACE, int(timestamp))

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self._op.timers.delete_processing_time_timer(VOID_NAMESPACE, int(timestamp))

    def delete_event_time_timer(self, timestamp: int) -> None:
        self._op.timers.delete_event_time_timer(VOID_NAMESPACE, int(timestamp))


KeyedTimerService = _KeyedTimerService  # the timer service of every keyed operator's function context


class KeyedTimerContext:
    """The body of a keyed function's context and on-timer context (``KeyedProcessFunction``'s and
    ``KeyedCoProcessFunction``'s): the element's or timer's timestamp (``ts``), the keyed timer service, the current
    key, the timer's time domain (``domain``, only in ``on_timer``) and side outputs at ``ts``. Mixed in before the
    PyFlink context class it implements."""

    def __init__(self, op: KeyedOperator) -> None:
        self._op = op
        self.ts: Optional[int] = None
        self.domain: Optional[TimeDomain] = None
        self._timer_service = _KeyedTimerService(op)

    def timestamp(self) -> Optional[int]:
        return self.ts

    def timer_service(self) -> TimerService:
        return self._timer_service

    def get_current_key(self) -> Any:
        return self._op.backend.get_current_key()

    def time_domain(self) -> TimeDomain:
        if self.domain is None:
            msg = "time_domain() is only available in on_timer"
            raise InvalidTypeError(msg)
        return self.domain

    def output(self, output_tag: Any, value: Any) -> None:
        check_output_tag(output_tag)
        self._op.output.collect_side(output_tag, StreamRecord(value, self.ts))


class _KeyedProcessContext(KeyedTimerContext, KeyedProcessFunction.OnTimerContext):
    pass


class KeyedProcessOperator(KeyedOperator):
    """Runs a ``KeyedProcessFunction``: records at their timestamp, event timers at the timer time,
    processing-time timers without timestamp (side outputs still get the timer time)."""

    def __init__(self, name: str, key_selector: Callable[[Any], Any], function: KeyedProcessFunction) -> None:  # type: ignore[type-arg]
        super().__init__(name, key_selector)
        self.function = function
        self._ctx: _KeyedProcessContext = None  # type: ignore[assignment]

    def open(self, output: Output, clock: Clock) -> None:
        super().open(output, clock)
        self._ctx = _KeyedProcessContext(self)
        open_function(self.function, self.name, self.backend, self.subtasks)

    def process_keyed(self, key: Any, record: StreamRecord) -> None:
        ctx = self._ctx
        ctx.ts, ctx.domain = record.timestamp, None
        results = call_user(
            self.function.process_element,
            lambda: f"{self.name}: process_element({short(record.value)}) (key={short(key)})",
            record.value,
            ctx,
        )
        emit_results(self.output, results, record.timestamp)

    def _on_timer(self, ts: int, key: Any, domain: TimeDomain, out_ts: Optional[int]) -> None:
        ctx = self._ctx
        ctx.ts, ctx.domain = ts, domain
        results = call_user(self.function.on_timer, lambda: f"{self.name}: on_timer({ts}) (key={short(key)})", ts, ctx)
        emit_results(self.output, results, out_ts, side_timestamp=ts)

    def on_event_time(self, ts: int, key: Any, namespace: Hashable) -> None:
        self._on_timer(ts, key, TimeDomain.EVENT_TIME, ts)

    def on_processing_time(self, ts: int, key: Any, namespace: Hashable) -> None:
        self._on_timer(ts, key, TimeDomain.PROCESSING_TIME, None)

    def close(self) -> None:
        close_function(self.function, self.name)


class NamespacedStateStore(KeyedStateStore):
    """``window_state()`` / ``global_state()`` of a ProcessWindowFunction context."""

    def __init__(self, backend: KeyedStateBackend, namespace: Hashable) -> None:
        self._backend = backend
        self._namespace = namespace

    def _get(self, descriptor: StateDescriptor) -> Any:
        return self._backend.create_state(descriptor, self._namespace)

    def get_state(self, state_descriptor: ValueStateDescriptor) -> Any:
        return self._get(state_descriptor)

    def get_list_state(self, state_descriptor: ListStateDescriptor) -> Any:
        return self._get(state_descriptor)

    def get_map_state(self, state_descriptor: MapStateDescriptor) -> Any:
        return self._get(state_descriptor)

    def get_reducing_state(self, state_descriptor: ReducingStateDescriptor) -> Any:
        return self._get(state_descriptor)

    def get_aggregating_state(self, state_descriptor: AggregatingStateDescriptor) -> Any:
        return self._get(state_descriptor)


__all__ = [
    "FilterOperator",
    "FlatMapOperator",
    "KeyedOperator",
    "NamespacedStateStore",
    "KeyedProcessOperator",
    "KeyedTimerContext",
    "KeyedTimerService",
    "MapOperator",
    "ProcessOperator",
    "StreamOperator",
    "call_user",
    "in_node",
    "runtime_context",
    "short",
]


class _GeneratorOutput:
    """The WatermarkOutput of an ``assign_timestamps_and_watermarks`` operator: strictly increasing
    watermarks from MIN; idleness toggled on mark_idle / the next emitted watermark."""

    def __init__(self, op: TimestampsAndWatermarksOperator) -> None:
        self.op = op
        self.current = LONG_MIN
        self.idle = False

    def emit_watermark(self, watermark: Any) -> None:
        ts = getattr(watermark, "timestamp", watermark)
        if ts <= self.current:
            return
        self.current = ts
        self.mark_active()
        self.op.output.emit_watermark(ts)

    def mark_idle(self) -> None:
        if not self.idle:
            self.idle = True
            self.op.output.emit_idle(True)

    def mark_active(self) -> None:
        if self.idle:
            self.idle = False
            self.op.output.emit_idle(False)


class TimestampsAndWatermarksOperator(StreamOperator):
    """``assign_timestamps_and_watermarks``: assigns timestamps, generates watermarks (periodic emit at the
    end of each micro-batch), and drops upstream watermarks except the end-of-input ``MAX``."""

    def __init__(self, name: str, strategy: Any) -> None:
        super().__init__(name)
        self.strategy = strategy

    def open(self, output: Output, clock: Clock) -> None:
        super().open(output, clock)
        self.generator = self.strategy.create_watermark_generator(clock)
        self.wm_output = _GeneratorOutput(self)

    def process_element(self, record: StreamRecord) -> None:
        ts = call_user(
            self.strategy.extract_timestamp,
            lambda: f"{self.name}: timestamp assigner on {short(record.value)}",
            record.value,
            record.timestamp,
        )
        out = StreamRecord(record.value, ts)
        self.output.collect(out)
        if ts is not None:
            call_user(
                self.generator.on_event, lambda: f"{self.name}: watermark generator on_event", record.value, ts, self.wm_output
            )

    def process_watermark(self, watermark: int) -> None:
        from .javamath import LONG_MAX

        if watermark == LONG_MAX:
            self.current_watermark = watermark
            self.output.emit_watermark(watermark)

    def process_idle(self, idle: bool) -> None:
        return None

    def on_periodic_emit(self) -> None:
        call_user(self.generator.on_periodic_emit, lambda: f"{self.name}: watermark generator on_periodic_emit", self.wm_output)

    def end_input(self) -> None:
        self.on_periodic_emit()
