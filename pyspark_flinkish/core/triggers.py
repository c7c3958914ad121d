"""Triggers: when a window's contents are emitted (Flink's ``Trigger`` and its built-ins).

Triggers are immutable configuration; whatever they remember per key and window (a count, the next
firing time) lives in partitioned state reached through the :class:`TriggerContext`, exactly as in
Flink, so that it is snapshotted, merged and cleared with the window.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from typing import Any, Callable, Generic, TypeVar

from .durations import TimeLike, to_millis
from .errors import InvalidArgumentError, InvalidTypeError
from .javamath import java_rem, long_add
from .state_descriptors import ReducingStateDescriptor, StateDescriptor, ValueStateDescriptor
from .typeinfo import Types
from .windows import Window

T = TypeVar("T")
W = TypeVar("W", bound=Window)


class TriggerResult(enum.Enum):
    """What a trigger decided: whether to emit (fire) and whether to clear the contents (purge)."""

    CONTINUE = (False, False)
    FIRE_AND_PURGE = (True, True)
    FIRE = (True, False)
    PURGE = (False, True)

    def is_fire(self) -> bool:
        return self.value[0]

    def is_purge(self) -> bool:
        return self.value[1]


class TriggerContext(ABC):
    """What a trigger may use: time, timers for the current key and window, and partitioned state."""

    @abstractmethod
    def get_current_processing_time(self) -> int: ...

    @abstractmethod
    def get_current_watermark(self) -> int: ...

    @abstractmethod
    def register_processing_time_timer(self, time: int) -> None: ...

    @abstractmethod
    def register_event_time_timer(self, time: int) -> None: ...

    @abstractmethod
    def delete_processing_time_timer(self, time: int) -> None: ...

    @abstractmethod
    def delete_event_time_timer(self, time: int) -> None: ...

    @abstractmethod
    def get_partitioned_state(self, state_descriptor: StateDescriptor) -> Any: ...

    def get_metric_group(self) -> None:
        return None


class OnMergeContext(TriggerContext):
    """Context of :meth:`Trigger.on_merge`: can also merge partitioned state of the merged windows."""

    @abstractmethod
    def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None: ...


class Trigger(ABC, Generic[T, W]):
    """Decides when a window fires. Must not keep per-window state in attributes: use the context.

    ``Trigger.TriggerContext`` and ``Trigger.OnMergeContext`` name the contexts, as in PyFlink."""

    TriggerContext = TriggerContext
    OnMergeContext = OnMergeContext

    @abstractmethod
    def on_element(self, element: T, timestamp: int, window: W, ctx: TriggerContext) -> TriggerResult:
        """Called for every element added to ``window``."""

    @abstractmethod
    def on_processing_time(self, time: int, window: W, ctx: TriggerContext) -> TriggerResult:
        """Called when a processing-time timer registered through ``ctx`` fires."""

    @abstractmethod
    def on_event_time(self, time: int, window: W, ctx: TriggerContext) -> TriggerResult:
        """Called when an event-time timer registered through ``ctx`` fires."""

    def can_merge(self) -> bool:
        """Whether the trigger supports merging (session) windows; if True implement ``on_merge``."""
        return False

    def on_merge(self, window: W, ctx: OnMergeContext) -> None:
        msg = f"{type(self).__name__} does not support merging windows"
        raise NotImplementedError(msg)

    @abstractmethod
    def clear(self, window: W, ctx: TriggerContext) -> None:
        """Remove the trigger's timers and state for ``window`` (called at window cleanup)."""

    # value-object protocol
    def _config(self) -> tuple:  # type: ignore[type-arg]
        return tuple(sorted(vars(self).items()))

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._config() == other._config()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self._config())))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _check_trigger(name: str, trigger: Any) -> Trigger:  # type: ignore[type-arg]
    if not isinstance(trigger, Trigger):
        msg = f"{name} must be a Trigger (e.g. CountTrigger.of(3)); got {type(trigger).__name__} {trigger!r}"
        raise InvalidTypeError(msg)
    return trigger


def _positive(name: str, value: int) -> int:
    if value <= 0:
        msg = f"{name} must be > 0; got {value}"
        raise InvalidArgumentError(msg)
    return value


class EventTimeTrigger(Trigger[Any, Window]):
    """Fires when the watermark passes the window's max timestamp; at once for late-but-allowed elements.

    FIRE does not purge: every late firing (within allowed lateness) re-emits the whole window.
    """

    @staticmethod
    def create() -> EventTimeTrigger:
        return EventTimeTrigger()

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())

    def __repr__(self) -> str:
        return "EventTimeTrigger()"


class ProcessingTimeTrigger(Trigger[Any, Window]):
    """Fires when the processing-time clock passes the window's max timestamp."""

    @staticmethod
    def create() -> ProcessingTimeTrigger:
        return ProcessingTimeTrigger()

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        ctx.register_processing_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        if window.max_timestamp() > ctx.get_current_processing_time():
            ctx.register_processing_time_timer(window.max_timestamp())

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.delete_processing_time_timer(window.max_timestamp())

    def __repr__(self) -> str:
        return "ProcessingTimeTrigger()"


def _sum(a: int, b: int) -> int:
    return a + b


def _min(a: int, b: int) -> int:
    return a if a <= b else b


class CountTrigger(Trigger[Any, Window]):
    """Fires every ``count`` elements per key and window; never fires on time (also not at end of input)."""

    def __init__(self, count: int) -> None:
        self.count = _positive("CountTrigger count", int(count))
        self._state_desc = ReducingStateDescriptor("count", _sum, Types.LONG())

    @staticmethod
    def of(count: int) -> CountTrigger:
        return CountTrigger(count)

    def _config(self) -> tuple:  # type: ignore[type-arg]
        return (self.count,)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        count = ctx.get_partitioned_state(self._state_desc)
        count.add(1)
        if count.get() >= self.count:
            count.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        ctx.merge_partitioned_state(self._state_desc)

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.get_partitioned_state(self._state_desc).clear()

    def __repr__(self) -> str:
        return f"CountTrigger.of({self.count})"


class PurgingTrigger(Trigger[T, W]):
    """Wraps a trigger and turns every FIRE into FIRE_AND_PURGE (contents cleared after emitting)."""

    def __init__(self, nested_trigger: Trigger[T, W]) -> None:
        self.nested_trigger = _check_trigger("PurgingTrigger's nested trigger", nested_trigger)

    @staticmethod
    def of(nested_trigger: Trigger[T, W]) -> PurgingTrigger[T, W]:
        return PurgingTrigger(nested_trigger)

    @staticmethod
    def _purging(result: TriggerResult) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if result.is_fire() else result

    def on_element(self, element: T, timestamp: int, window: W, ctx: TriggerContext) -> TriggerResult:
        return self._purging(self.nested_trigger.on_element(element, timestamp, window, ctx))

    def on_event_time(self, time: int, window: W, ctx: TriggerContext) -> TriggerResult:
        return self._purging(self.nested_trigger.on_event_time(time, window, ctx))

    def on_processing_time(self, time: int, window: W, ctx: TriggerContext) -> TriggerResult:
        return self._purging(self.nested_trigger.on_processing_time(time, window, ctx))

    def can_merge(self) -> bool:
        return self.nested_trigger.can_merge()

    def on_merge(self, window: W, ctx: OnMergeContext) -> None:
        self.nested_trigger.on_merge(window, ctx)

    def clear(self, window: W, ctx: TriggerContext) -> None:
        self.nested_trigger.clear(window, ctx)

    def __repr__(self) -> str:
        return f"PurgingTrigger.of({self.nested_trigger!r})"


class ContinuousEventTimeTrigger(Trigger[Any, Window]):
    """Fires periodically every ``interval`` of event time, and at the window's end.

    The first firing is aligned with Java's truncating ``%``: ``ts - ts % interval + interval``.
    A large watermark jump fires once per elapsed interval (a burst of cumulative firings).
    """

    def __init__(self, interval: TimeLike) -> None:
        self.interval = _positive("ContinuousEventTimeTrigger interval", to_millis("interval", interval))
        self._state_desc = ReducingStateDescriptor("fire-time", _min, Types.LONG())

    @staticmethod
    def of(interval: TimeLike) -> ContinuousEventTimeTrigger:
        return ContinuousEventTimeTrigger(interval)

    def _config(self) -> tuple:  # type: ignore[type-arg]
        return (self.interval,)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        fire_time = ctx.get_partitioned_state(self._state_desc)
        if fire_time.get() is None:
            self._register_next(timestamp - java_rem(timestamp, self.interval), window, ctx, fire_time)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        fire_time = ctx.get_partitioned_state(self._state_desc)
        pending = fire_time.get()
        if pending is not None and pending == time:
            fire_time.clear()
            self._register_next(time, window, ctx, fire_time)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def _register_next(self, time: int, window: Window, ctx: TriggerContext, fire_time: Any) -> None:
        next_fire = min(long_add(time, self.interval), window.max_timestamp())
        fire_time.add(next_fire)
        ctx.register_event_time_timer(next_fire)

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        ctx.merge_partitioned_state(self._state_desc)
        pending = ctx.get_partitioned_state(self._state_desc).get()
        if pending is not None:
            ctx.register_event_time_timer(pending)

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        fire_time = ctx.get_partitioned_state(self._state_desc)
        pending = fire_time.get()
        if pending is not None:
            ctx.delete_event_time_timer(pending)
            fire_time.clear()

    def __repr__(self) -> str:
        return f"ContinuousEventTimeTrigger.of({self.interval})"


class ContinuousProcessingTimeTrigger(Trigger[Any, Window]):
    """Fires periodically every ``interval`` of processing time, and at the window's end."""

    def __init__(self, interval: TimeLike) -> None:
        self.interval = _positive("ContinuousProcessingTimeTrigger interval", to_millis("interval", interval))
        self._state_desc = ReducingStateDescriptor("fire-time", _min, Types.LONG())

    @staticmethod
    def of(interval: TimeLike) -> ContinuousProcessingTimeTrigger:
        return ContinuousProcessingTimeTrigger(interval)

    def _config(self) -> tuple:  # type: ignore[type-arg]
        return (self.interval,)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        fire_time = ctx.get_partitioned_state(self._state_desc)
        now = ctx.get_current_processing_time()
        if fire_time.get() is None:
            self._register_next(now - java_rem(now, self.interval), window, ctx, fire_time)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        fire_time = ctx.get_partitioned_state(self._state_desc)
        if fire_time.get() == time:
            fire_time.clear()
            self._register_next(time, window, ctx, fire_time)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def _register_next(self, time: int, window: Window, ctx: TriggerContext, fire_time: Any) -> None:
        next_fire = min(long_add(time, self.interval), window.max_timestamp())
        fire_time.add(next_fire)
        ctx.register_processing_time_timer(next_fire)

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        ctx.merge_partitioned_state(self._state_desc)
        pending = ctx.get_partitioned_state(self._state_desc).get()
        if pending is not None:
            ctx.register_processing_time_timer(pending)

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        fire_time = ctx.get_partitioned_state(self._state_desc)
        pending = fire_time.get()
        if pending is not None:
            ctx.delete_processing_time_timer(pending)
            fire_time.clear()

    def __repr__(self) -> str:
        return f"ContinuousProcessingTimeTrigger.of({self.interval})"


class DeltaTrigger(Trigger[T, Window]):
    """Fires when ``delta_function(last_fired_element, element) > threshold``. Not mergeable."""

    def __init__(self, threshold: float, delta_function: Callable[[T, T], float], state_type_info: Any = None) -> None:
        if not callable(delta_function) and not callable(getattr(delta_function, "get_delta", None)):
            msg = f"DeltaTrigger needs a delta function (a, b) -> float; got {type(delta_function).__name__}"
            raise InvalidTypeError(msg)
        self.threshold = threshold
        self.delta_function = getattr(delta_function, "get_delta", delta_function)
        self._state_desc = ValueStateDescriptor("last-element", state_type_info)

    @staticmethod
    def of(threshold: float, delta_function: Callable[[T, T], float], state_type_info: Any = None) -> DeltaTrigger[T]:
        return DeltaTrigger(threshold, delta_function, state_type_info)

    def _config(self) -> tuple:  # type: ignore[type-arg]
        return (self.threshold, self.delta_function)

    def on_element(self, element: T, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        last = ctx.get_partitioned_state(self._state_desc)
        if last.value() is None:
            last.update(element)
            return TriggerResult.CONTINUE
        if self.delta_function(last.value(), element) > self.threshold:
            last.update(element)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.get_partitioned_state(self._state_desc).clear()

    def __repr__(self) -> str:
        return f"DeltaTrigger.of({self.threshold}, {self.delta_function!r})"


class NeverTrigger(Trigger[Any, Window]):
    """Never fires: the default trigger of ``GlobalWindows.create()``."""

    @staticmethod
    def create() -> NeverTrigger:
        return NeverTrigger()

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        return None

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        return None

    def __repr__(self) -> str:
        return "NeverTrigger()"


class EndOfStreamTrigger(Trigger[Any, Window]):
    """Fires once at end of input: the trigger of ``GlobalWindows.create_with_end_of_stream_trigger()``."""

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        return None

    def __repr__(self) -> str:
        return "EndOfStreamTrigger()"


class ProcessingTimeoutTrigger(Trigger[T, W]):
    """Fires when the nested trigger fires, or ``timeout`` of processing time after the first element
    (after every element with ``reset_timer_on_new_record``), whichever comes first.

    As in Flink, *every* timer callback reaching this trigger FIREs (FIRE_AND_PURGE if the nested
    trigger purges), including the window's cleanup timer and the nested trigger's own timers.
    Not mergeable.
    """

    def __init__(
        self,
        nested_trigger: Trigger[T, W],
        timeout: TimeLike,
        reset_timer_on_new_record: bool = False,
        should_clear_on_timeout: bool = True,
    ) -> None:
        self.nested_trigger = _check_trigger("ProcessingTimeoutTrigger's nested trigger", nested_trigger)
        self.timeout = _positive("ProcessingTimeoutTrigger timeout", to_millis("timeout", timeout))
        self.reset_timer_on_new_record = bool(reset_timer_on_new_record)
        self.should_clear_on_timeout = bool(should_clear_on_timeout)
        self._state_desc = ValueStateDescriptor("timeout", Types.LONG())

    @staticmethod
    def of(
        nested_trigger: Trigger[T, W],
        timeout: TimeLike,
        reset_timer_on_new_record: bool = False,
        should_clear_on_timeout: bool = True,
    ) -> ProcessingTimeoutTrigger[T, W]:
        return ProcessingTimeoutTrigger(nested_trigger, timeout, reset_timer_on_new_record, should_clear_on_timeout)

    def _config(self) -> tuple:  # type: ignore[type-arg]
        return (self.nested_trigger, self.timeout, self.reset_timer_on_new_record, self.should_clear_on_timeout)

    def on_element(self, element: T, timestamp: int, window: W, ctx: TriggerContext) -> TriggerResult:
        result = self.nested_trigger.on_element(element, timestamp, window, ctx)
        if result.is_fire():
            self.clear(window, ctx)
            return result
        timeout_state = ctx.get_partitioned_state(self._state_desc)
        next_fire = ctx.get_current_processing_time() + self.timeout
        pending = timeout_state.value()
        if pending is not None and self.reset_timer_on_new_record:
            ctx.delete_processing_time_timer(pending)
            timeout_state.clear()
            pending = None
        if pending is None:
            timeout_state.update(next_fire)
            ctx.register_processing_time_timer(next_fire)
        return result

    def _on_timer(self, result: TriggerResult, window: W, ctx: TriggerContext) -> TriggerResult:
        if self.should_clear_on_timeout:
            self.clear(window, ctx)
        return TriggerResult.FIRE_AND_PURGE if result.is_purge() else TriggerResult.FIRE

    def on_processing_time(self, time: int, window: W, ctx: TriggerContext) -> TriggerResult:
        return self._on_timer(self.nested_trigger.on_processing_time(time, window, ctx), window, ctx)

    def on_event_time(self, time: int, window: W, ctx: TriggerContext) -> TriggerResult:
        return self._on_timer(self.nested_trigger.on_event_time(time, window, ctx), window, ctx)

    def clear(self, window: W, ctx: TriggerContext) -> None:
        timeout_state = ctx.get_partitioned_state(self._state_desc)
        pending = timeout_state.value()
        if pending is not None:
            ctx.delete_processing_time_timer(pending)
            timeout_state.clear()
        self.nested_trigger.clear(window, ctx)

    def __repr__(self) -> str:
        return f"ProcessingTimeoutTrigger.of({self.nested_trigger!r}, {self.timeout})"


__all__ = [
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountTrigger",
    "DeltaTrigger",
    "EndOfStreamTrigger",
    "EventTimeTrigger",
    "NeverTrigger",
    "OnMergeContext",
    "ProcessingTimeTrigger",
    "ProcessingTimeoutTrigger",
    "PurgingTrigger",
    "Trigger",
    "TriggerContext",
    "TriggerResult",
]
