"""Two-input operators (Flink's ``TwoInputStreamOperator``s): ``connect`` with co-functions and broadcast state.

An engine hands a two-input operator each record with the input it arrived on (:meth:`TwoInputOperator.
process_input`, channel 0 = the first stream, 1 = the second / broadcast stream) and the operator's watermark,
which the engine combines from both inputs with
:class:`~pyspark_flinkish.core.two_input_watermarks.TwoInputWatermarkValve` (the minimum of the two): event-time
timers fire when the slower input passes them.

* :class:`CoMapOperator`, :class:`CoFlatMapOperator`, :class:`CoProcessOperator`: non-keyed, no state;
* :class:`KeyedCoProcessOperator`: ``connect(...).key_by(k1, k2).process(KeyedCoProcessFunction)``; keyed state
  and timers shared by both inputs, per key (a :class:`KeyedOperator`, so engines snapshot it per key);
* :class:`BroadcastProcessOperator` and :class:`KeyedBroadcastProcessOperator`: broadcast state
  (:mod:`.broadcast_state`), read-write on the broadcast side, read-only on the other; the keyed one also has
  keyed state and timers on its keyed side. Their broadcast state is operator state:
  :meth:`~BroadcastProcessOperator.snapshot_broadcast_state` / ``restore_broadcast_state`` give it as a keyed
  snapshot without timers.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Hashable, List, Optional, Tuple

from .broadcast_state import BroadcastState, BroadcastStateStore
from .clock import Clock
from .co_functions import BaseBroadcastProcessFunction, CoProcessFunction, KeyedCoProcessFunction
from .coders import transported
from .errors import InvalidTypeError
from .functions import TimeDomain, TimerService
from .operators import (
    KeyedOperator,
    KeyedTimerContext,
    KeyedTimerService,
    StreamOperator,
    call_user,
    close_function,
    open_function,
    short,
)
from .records import Output, OutputTag, StreamRecord, check_output_tag, emit_results
from .state import VOID_NAMESPACE
from .state_descriptors import MapStateDescriptor

BROADCAST_STATE = "__broadcast_state"  # the state name of the broadcast maps in their snapshot


class TwoInputOperator(StreamOperator):
    """An operator with two inputs: ``process_element1`` / ``process_element2`` per record."""

    two_input = True

    def process_input(self, channel: int, record: StreamRecord) -> None:
        """A record of input ``channel`` (0: the first stream, 1: the second or broadcast stream)."""
        if channel == 0:
            self.process_element1(record)
        else:
            self.process_element2(record)

    def process_element(self, record: StreamRecord) -> None:
        msg = f"{self.name} is a two-input operator: records need their input (process_input(channel, record))"
        raise InvalidTypeError(msg)

    def process_element1(self, record: StreamRecord) -> None:
        raise NotImplementedError

    def process_element2(self, record: StreamRecord) -> None:
        raise NotImplementedError


# ------------------------------------------------------------------------------------ non-keyed


class CoMapOperator(TwoInputOperator):
    """``connect(...).map(CoMapFunction)``: ``map1`` / ``map2``, one output per element at its timestamp."""

    def __init__(self, name: str, fn1: Callable[[Any], Any], fn2: Callable[[Any], Any], function_obj: Any) -> None:
        super().__init__(name)
        self.fns = (fn1, fn2)
        self.function_obj = function_obj

    def open(self, output: Output, clock: Clock) -> None:
        super().open(output, clock)
        open_function(self.function_obj, self.name, subtasks=self.subtasks)

    def _call(self, i: int, record: StreamRecord) -> Any:
        return call_user(self.fns[i], lambda: f"{self.name}: {self.method}{i + 1}({short(record.value)})", record.value)

    method = "map"

    def process_element1(self, record: StreamRecord) -> None:
        self.output.collect(StreamRecord(self._call(0, record), record.timestamp))

    def process_element2(self, record: StreamRecord) -> None:
        self.output.collect(StreamRecord(self._call(1, record), record.timestamp))

    def close(self) -> None:
        close_function(self.function_obj, self.name)


class CoFlatMapOperator(CoMapOperator):
    """``connect(...).flat_map(CoFlatMapFunction)``: ``flat_map1`` / ``flat_map2``, zero or more outputs."""

    method = "flat_map"

    def process_element1(self, record: StreamRecord) -> None:
        emit_results(self.output, self._call(0, record), record.timestamp)

    def process_element2(self, record: StreamRecord) -> None:
        emit_results(self.output, self._call(1, record), record.timestamp)


class _NoTimers(TimerService):
    """The timer service of a non-keyed operator: the current times; registering a timer raises (Flink:
    timers are only supported on keyed streams)."""

    def __init__(self, op: StreamOperator) -> None:
        self._op = op

    def current_processing_time(self) -> int:
        return self._op.clock.now()

    def current_watermark(self) -> int:
        return self._op.current_watermark

    def _refuse(self, *_: Any) -> None:
        msg = (
            "Setting timers is only supported on keyed streams: use connect(...).key_by(key_selector1, key_selector2)"
            ".process(KeyedCoProcessFunction)"
        )
        raise InvalidTypeError(msg)

    register_processing_time_timer = _refuse
    register_event_time_timer = _refuse
    delete_processing_time_timer = _refuse
    delete_event_time_timer = _refuse


class _CoContext(CoProcessFunction.Context):
    def __init__(self, op: StreamOperator) -> None:
        self._op = op
        self.ts: Optional[int] = None
        self._timers = _NoTimers(op)

    def timestamp(self) -> Optional[int]:
        return self.ts

    def timer_service(self) -> TimerService:
        return self._timers

    def output(self, output_tag: Any, value: Any) -> None:
        check_output_tag(output_tag)
        self._op.output.collect_side(output_tag, StreamRecord(value, self.ts))


class CoProcessOperator(TwoInputOperator):
    """``connect(...).process(CoProcessFunction)`` (non-keyed)."""

    def __init__(self, name: str, function: CoProcessFunction) -> None:  # type: ignore[type-arg]
        super().__init__(name)
        self.function = function

    def open(self, output: Output, clock: Clock) -> None:
        super().open(output, clock)
        self._ctx = _CoContext(self)
        open_function(self.function, self.name, subtasks=self.subtasks)

    def _process(self, method: str, record: StreamRecord) -> None:
        self._ctx.ts = record.timestamp
        fn = getattr(self.function, method)
        results = call_user(fn, lambda: f"{self.name}: {method}({short(record.value)})", record.value, self._ctx)
        emit_results(self.output, results, record.timestamp)

    def process_element1(self, record: StreamRecord) -> None:
        self._process("process_element1", record)

    def process_element2(self, record: StreamRecord) -> None:
        self._process("process_element2", record)

    def close(self) -> None:
        close_function(self.function, self.name)


# ------------------------------------------------------------------------------------ keyed


class _KeyedCoContext(KeyedTimerContext, KeyedCoProcessFunction.OnTimerContext):
    pass


class KeyedTwoInputOperator(KeyedOperator):
    """A keyed operator with two inputs: each input's records are keyed by its own key selector (``None`` for a
    broadcast input, which has no key)."""

    two_input = True

    def __init__(self, name: str, key_selectors: List[Optional[Callable[[Any], Any]]]) -> None:
        super().__init__(name, key_selectors[0])  # type: ignore[arg-type]
        self.key_selectors = key_selectors

    def process_input(self, channel: int, record: StreamRecord) -> None:
        selector = self.key_selectors[channel]
        if selector is None:
            self.backend.unset_current_key()
            self.process_unkeyed(channel, record)
            return
        key = call_user(selector, lambda: f"{self.name}: key selector {channel + 1} on {short(record.value)}", record.value)
        self.backend.set_current_key(key)
        self.process_keyed_input(channel, key, record)

    def process_element(self, record: StreamRecord) -> None:
        msg = f"{self.name} is a two-input operator: records need their input (process_input(channel, record))"
        raise InvalidTypeError(msg)

    def process_keyed_input(self, channel: int, key: Any, record: StreamRecord) -> None:
        raise NotImplementedError

    def process_unkeyed(self, channel: int, record: StreamRecord) -> None:
        raise NotImplementedError


class KeyedCoProcessOperator(KeyedTwoInputOperator):
    """Runs a ``KeyedCoProcessFunction``: records at their timestamp, event-time timers at the timer time,
    processing-time timers without timestamp (their side outputs carry the timer time), as ``KeyedProcessOperator``."""

    def __init__(
        self,
        name: str,
        key_selector1: Callable[[Any], Any],
        key_selector2: Callable[[Any], Any],
        function: KeyedCoProcessFunction,  # type: ignore[type-arg]
    ) -> None:
        super().__init__(name, [key_selector1, key_selector2])
        self.function = function

    def open(self, output: Output, clock: Clock) -> None:
        super().open(output, clock)
        self._ctx = _KeyedCoContext(self)
        open_function(self.function, self.name, self.backend, self.subtasks)

    def process_keyed_input(self, channel: int, key: Any, record: StreamRecord) -> None:
        ctx = self._ctx
        ctx.ts, ctx.domain = record.timestamp, None
        method = f"process_element{channel + 1}"
        results = call_user(
            getattr(self.function, method),
            lambda: f"{self.name}: {method}({short(record.value)}) (key={short(key)})",
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


# ------------------------------------------------------------------------------------ broadcast


class _BroadcastContext(BaseBroadcastProcessFunction.Context):
    """The broadcast side's context (read-write broadcast state) and, with ``writable=False``, the other side's
    (read-only); the keyed operator's contexts add the key and the timers."""

    def __init__(self, op: Any, writable: bool) -> None:
        self._op = op
        self._writable = writable
        self.ts: Optional[int] = None

    def timestamp(self) -> Optional[int]:
        return self.ts

    def current_processing_time(self) -> int:
        return int(self._op.clock.now())

    def current_watermark(self) -> int:
        return int(self._op.current_watermark)

    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> BroadcastState[Any, Any]:
        return self._op.broadcast_state.view(state_descriptor, self._writable)  # type: ignore[no-any-return]

    def output(self, output_tag: Any, value: Any) -> None:
        check_output_tag(output_tag)
        self._op.output.collect_side(output_tag, StreamRecord(value, self.ts))


class _KeyedReadOnlyContext(_BroadcastContext):
    """The keyed side's context of a keyed broadcast operator (and its ``on_timer``'s)."""

    def __init__(self, op: KeyedOperator) -> None:
        super().__init__(op, writable=False)
        self._timers = KeyedTimerService(op)
        self.domain: Optional[TimeDomain] = None

    def current_watermark(self) -> int:
        return int(self._op.timers.current_watermark)

    def timer_service(self) -> TimerService:
        return self._timers

    def get_current_key(self) -> Any:
        return self._op.backend.get_current_key()

    def time_domain(self) -> TimeDomain:
        if self.domain is None:
            msg = "time_domain() is only available in on_timer"
            raise InvalidTypeError(msg)
        return self.domain


def broadcast_snapshot(store: BroadcastStateStore) -> Dict[str, Any]:
    """A broadcast state store as a keyed snapshot without timers (what the state codec encodes)."""
    return {"state": {(BROADCAST_STATE, VOID_NAMESPACE): store.snapshot()}, "event_timers": [], "processing_timers": []}


def restore_broadcast(store: BroadcastStateStore, snapshot: Optional[Dict[str, Any]]) -> None:
    """Inverse of :func:`broadcast_snapshot`."""
    maps = {} if not snapshot else snapshot["state"].get((BROADCAST_STATE, VOID_NAMESPACE), {})
    store.restore(maps)


class _PerInstanceOutput:
    """Collects what ``process_broadcast_element`` emits (returned, yielded, or through ``ctx.output``) so that it can
    be sent once per parallel instance of the operator: in Flink every instance gets every broadcast element, runs
    ``process_broadcast_element`` on its own copy of the broadcast state and emits what it returns. The package runs
    the operator as one instance, calls the function once and sends its outputs ``copies`` times; this equals Flink's
    output when the function behaves the same on every instance, which Flink's broadcast state pattern requires
    ("the same deterministic behavior across all parallel instances")."""

    def __init__(self) -> None:
        self.records: List[Tuple[Optional[OutputTag], StreamRecord]] = []

    def collect(self, record: StreamRecord) -> None:
        self.records.append((None, record))

    def collect_side(self, tag: OutputTag, record: StreamRecord) -> None:
        self.records.append((tag, record))

    def send(self, output: Output, copies: int) -> None:
        """Each instance's outputs in turn (instance 0's, then 1's, ...); every instance has values of its own: the
        others' copied as Flink's instances deserialize their input (:func:`~.coders.transported`: a pickle round
        trip, so an object's own ``__deepcopy__`` never applies)."""
        for instance in range(copies):
            for tag, record in self.records:
                value = record.value if instance == 0 else transported(record.value, None)
                if tag is None:
                    output.collect(StreamRecord(value, record.timestamp))
                else:
                    output.collect_side(tag, StreamRecord(value, record.timestamp))


def _broadcast_side(op: Any, call: Callable[[], Any], timestamp: Optional[int]) -> None:
    """Run ``call`` (``process_broadcast_element``) and send its outputs once per parallel instance
    (``op.broadcast_copies``; 0 on a Spark state partition whose copies another partition sends)."""
    if op.broadcast_copies == 1:
        emit_results(op.output, call(), timestamp)
        return
    real, recorder = op.output, _PerInstanceOutput()
    op.output = recorder  # ctx.output(tag, value) writes through op.output too
    try:
        emit_results(recorder, call(), timestamp)
    finally:
        op.output = real
    recorder.send(real, op.broadcast_copies)


class BroadcastProcessOperator(TwoInputOperator):
    """``stream.connect(broadcast_stream).process(BroadcastProcessFunction)``: input 0 is the stream
    (``process_element``, broadcast state read-only), input 1 the broadcast stream (``process_broadcast_element``,
    read-write)."""

    def __init__(self, name: str, function: Any, descriptors: List[MapStateDescriptor], parallelism: int = 1) -> None:
        super().__init__(name)
        self.function = function
        self.descriptors = descriptors
        self.broadcast_state = BroadcastStateStore(descriptors)
        # how often what process_broadcast_element emits is sent: once per parallel instance (0 on a Spark state
        # partition whose copies partition 0 sends)
        self.broadcast_copies = parallelism

    def open(self, output: Output, clock: Clock) -> None:
        super().open(output, clock)
        self._read_only = _BroadcastContext(self, writable=False)
        self._read_write = _BroadcastContext(self, writable=True)
        open_function(self.function, self.name, subtasks=self.subtasks)

    def _call(self, method: str, ctx: _BroadcastContext, record: StreamRecord) -> Any:
        ctx.ts = record.timestamp
        return call_user(
            getattr(self.function, method), lambda: f"{self.name}: {method}({short(record.value)})", record.value, ctx
        )

    def process_element1(self, record: StreamRecord) -> None:
        emit_results(self.output, self._call("process_element", self._read_only, record), record.timestamp)

    def process_element2(self, record: StreamRecord) -> None:
        _broadcast_side(self, lambda: self._call("process_broadcast_element", self._read_write, record), record.timestamp)

    def snapshot_broadcast_state(self) -> Dict[str, Any]:
        return broadcast_snapshot(self.broadcast_state)

    def restore_broadcast_state(self, snapshot: Optional[Dict[str, Any]]) -> None:
        restore_broadcast(self.broadcast_state, snapshot)

    def close(self) -> None:
        close_function(self.function, self.name)


class KeyedBroadcastProcessOperator(KeyedTwoInputOperator):
    """``keyed_stream.connect(broadcast_stream).process(KeyedBroadcastProcessFunction)``: input 0 is the keyed
    stream (``process_element`` with keyed state, timers and read-only broadcast state; ``on_timer``), input 1 the
    broadcast stream (``process_broadcast_element``, no key, read-write broadcast state)."""

    def __init__(
        self,
        name: str,
        key_selector: Callable[[Any], Any],
        function: Any,
        descriptors: List[MapStateDescriptor],
        parallelism: int = 1,
    ) -> None:
        super().__init__(name, [key_selector, None])
        self.function = function
        self.descriptors = descriptors
        self.broadcast_state = BroadcastStateStore(descriptors)
        self.broadcast_copies = parallelism  # as BroadcastProcessOperator's

    def open(self, output: Output, clock: Clock) -> None:
        super().open(output, clock)
        self._keyed_ctx = _KeyedReadOnlyContext(self)
        self._read_write = _BroadcastContext(self, writable=True)
        open_function(self.function, self.name, self.backend, self.subtasks)

    def process_keyed_input(self, channel: int, key: Any, record: StreamRecord) -> None:
        ctx = self._keyed_ctx
        ctx.ts, ctx.domain = record.timestamp, None
        results = call_user(
            self.function.process_element,
            lambda: f"{self.name}: process_element({short(record.value)}) (key={short(key)})",
            record.value,
            ctx,
        )
        emit_results(self.output, results, record.timestamp)

    def process_unkeyed(self, channel: int, record: StreamRecord) -> None:
        ctx = self._read_write
        ctx.ts = record.timestamp
        _broadcast_side(
            self,
            lambda: call_user(
                self.function.process_broadcast_element,
                lambda: f"{self.name}: process_broadcast_element({short(record.value)})",
                record.value,
                ctx,
            ),
            record.timestamp,
        )

    def _on_timer(self, ts: int, key: Any, domain: TimeDomain, out_ts: Optional[int]) -> None:
        ctx = self._keyed_ctx
        ctx.ts, ctx.domain = ts, domain
        results = call_user(self.function.on_timer, lambda: f"{self.name}: on_timer({ts}) (key={short(key)})", ts, ctx)
        emit_results(self.output, results, out_ts, side_timestamp=ts)

    def on_event_time(self, ts: int, key: Any, namespace: Hashable) -> None:
        self._on_timer(ts, key, TimeDomain.EVENT_TIME, ts)

    def on_processing_time(self, ts: int, key: Any, namespace: Hashable) -> None:
        self._on_timer(ts, key, TimeDomain.PROCESSING_TIME, None)

    def snapshot_broadcast_state(self) -> Dict[str, Any]:
        return broadcast_snapshot(self.broadcast_state)

    def restore_broadcast_state(self, snapshot: Optional[Dict[str, Any]]) -> None:
        restore_broadcast(self.broadcast_state, snapshot)

    def close(self) -> None:
        close_function(self.function, self.name)


__all__ = [
    "BROADCAST_STATE",
    "BroadcastProcessOperator",
    "CoFlatMapOperator",
    "CoMapOperator",
    "CoProcessOperator",
    "KeyedBroadcastProcessOperator",
    "KeyedCoProcessOperator",
    "KeyedTwoInputOperator",
    "TwoInputOperator",
    "broadcast_snapshot",
    "restore_broadcast",
]
