"""Window assigners: which windows an element belongs to (Flink's ``WindowAssigner`` family).

Event-time assigners use the element's timestamp; processing-time ones use the operator's clock at the
time the element is processed. Session assigners are :class:`MergingWindowAssigner` s. The count assigners
(PyFlink's ``CountTumblingWindowAssigner`` / ``CountSlidingWindowAssigner``) number each key's elements in a
keyed counter and put them in :class:`CountWindow` s.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Collection, Generic, List, TypeVar

from .durations import TimeLike, to_millis
from .errors import InvalidArgumentError, InvalidPipelineError, InvalidTypeError
from .javamath import LONG_MIN
from .state_descriptors import ValueStateDescriptor
from .triggers import CountTrigger, EndOfStreamTrigger, EventTimeTrigger, NeverTrigger, ProcessingTimeTrigger, Trigger
from .typeinfo import Types
from .windows import CountWindow, GlobalWindow, TimeWindow, Window

T = TypeVar("T")
W = TypeVar("W", bound=Window)


class WindowAssignerContext(ABC):
    """Gives assigners the operator's current processing time."""

    @abstractmethod
    def get_current_processing_time(self) -> int: ...

    def get_runtime_context(self) -> Any:
        """The window operator's runtime context: keyed state of the current key (PyFlink's count assigners
        keep their element counter there). ``None`` where the operator gives none."""
        return None


class WindowAssigner(ABC, Generic[T, W]):
    """Assigns zero or more windows to each element."""

    @abstractmethod
    def assign_windows(self, element: T, timestamp: int, context: WindowAssignerContext) -> Collection[W]:
        """The windows ``element`` (with event ``timestamp``) belongs to."""

    @abstractmethod
    def get_default_trigger(self, env: Any = None) -> Trigger[T, W]:
        """The trigger used unless ``WindowedStream.trigger`` replaces it."""

    @abstractmethod
    def is_event_time(self) -> bool:
        """Whether windows are in event time (lateness and cleanup follow the watermark)."""

    def _config(self) -> tuple:  # type: ignore[type-arg]
        return tuple(sorted(vars(self).items()))

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._config() == other._config()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self._config())))


class MergeCallback(ABC, Generic[W]):
    @abstractmethod
    def merge(self, to_be_merged: Collection[W], merge_result: W) -> None: ...


class MergingWindowAssigner(WindowAssigner[T, W]):
    """An assigner whose windows merge (sessions). ``merge_windows`` reports groups to merge."""

    @abstractmethod
    def merge_windows(self, windows: Collection[W], callback: Any) -> None:
        """Call ``callback.merge(members, result)`` (or ``callback(members, result)``) per group."""


def _no_timestamp(assigner: object) -> InvalidArgumentError:
    msg = (
        f"{type(assigner).__name__} got an element without a timestamp (Long.MIN_VALUE). Is the stream missing "
        "assign_timestamps_and_watermarks(...) or a WatermarkStrategy with a timestamp assigner at the source?"
    )
    return InvalidArgumentError(msg)


def _ms(name: str, value: TimeLike) -> int:
    return to_millis(name, value)


class TumblingEventTimeWindows(WindowAssigner[Any, TimeWindow]):
    """Fixed-size, non-overlapping event-time windows ``[start, start+size)`` aligned to ``offset``.

    ``start = ts - floorMod(ts - offset, size)``. Requires ``|offset| < size``.
    """

    def __init__(self, size: int, offset: int = 0) -> None:
        if size <= 0 or abs(offset) >= size:
            msg = (
                "TumblingEventTimeWindows parameters must satisfy abs(offset) < size and size > 0; "
                f"got size={size} ms, offset={offset} ms"
            )
            raise InvalidArgumentError(msg)
        self.size = size
        self.offset = offset

    @staticmethod
    def of(size: TimeLike, offset: TimeLike = 0) -> TumblingEventTimeWindows:
        return TumblingEventTimeWindows(_ms("window size", size), _ms("window offset", offset))

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> List[TimeWindow]:
        if timestamp is None or timestamp <= LONG_MIN:
            raise _no_timestamp(self)
        start = TimeWindow.get_window_start_with_offset(timestamp, self.offset % self.size, self.size)
        return [TimeWindow(start, start + self.size)]

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, Any]:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"TumblingEventTimeWindows({self.size}, {self.offset})"


class TumblingProcessingTimeWindows(WindowAssigner[Any, TimeWindow]):
    """Fixed-size windows over the operator's processing-time clock."""

    def __init__(self, size: int, offset: int = 0) -> None:
        if size <= 0 or abs(offset) >= size:
            msg = (
                "TumblingProcessingTimeWindows parameters must satisfy abs(offset) < size and size > 0; "
                f"got size={size} ms, offset={offset} ms"
            )
            raise InvalidArgumentError(msg)
        self.size = size
        self.offset = offset

    @staticmethod
    def of(size: TimeLike, offset: TimeLike = 0) -> TumblingProcessingTimeWindows:
        return TumblingProcessingTimeWindows(_ms("window size", size), _ms("window offset", offset))

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> List[TimeWindow]:
        now = context.get_current_processing_time()
        start = TimeWindow.get_window_start_with_offset(now, self.offset % self.size, self.size)
        return [TimeWindow(start, start + self.size)]

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, Any]:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"TumblingProcessingTimeWindows({self.size}, {self.offset})"


def _sliding(ts: int, size: int, slide: int, offset: int) -> List[TimeWindow]:
    last_start = TimeWindow.get_window_start_with_offset(ts, offset, slide)
    windows = []
    start = last_start
    while start > ts - size:
        windows.append(TimeWindow(start, start + size))
        start -= slide
    return windows


def _check_sliding(name: str, size: int, slide: int, offset: int) -> None:
    if size <= 0 or slide <= 0 or abs(offset) >= slide:
        msg = (
            f"{name} parameters must satisfy abs(offset) < slide, size > 0 and slide > 0; "
            f"got size={size} ms, slide={slide} ms, offset={offset} ms"
        )
        raise InvalidArgumentError(msg)
    if size // slide > 10_000_000:
        msg = (
            f"{name}: size / slide must be <= 10^7 (each element would belong to {size // slide} windows); "
            f"got size={size} ms, slide={slide} ms"
        )
        raise InvalidArgumentError(msg)


class SlidingEventTimeWindows(WindowAssigner[Any, TimeWindow]):
    """Overlapping event-time windows of ``size`` every ``slide`` (latest start first).

    With ``size < slide`` some timestamps belong to no window; such elements vanish silently.
    """

    def __init__(self, size: int, slide: int, offset: int = 0) -> None:
        _check_sliding("SlidingEventTimeWindows", size, slide, offset)
        self.size = size
        self.slide = slide
        self.offset = offset

    @staticmethod
    def of(size: TimeLike, slide: TimeLike, offset: TimeLike = 0) -> SlidingEventTimeWindows:
        return SlidingEventTimeWindows(_ms("window size", size), _ms("window slide", slide), _ms("window offset", offset))

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> List[TimeWindow]:
        if timestamp is None or timestamp <= LONG_MIN:
            raise _no_timestamp(self)
        return _sliding(timestamp, self.size, self.slide, self.offset)

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, Any]:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"SlidingEventTimeWindows({self.size}, {self.slide}, {self.offset})"


class SlidingProcessingTimeWindows(WindowAssigner[Any, TimeWindow]):
    """Overlapping windows over the operator's processing-time clock."""

    def __init__(self, size: int, slide: int, offset: int = 0) -> None:
        _check_sliding("SlidingProcessingTimeWindows", size, slide, offset)
        self.size = size
        self.slide = slide
        self.offset = offset

    @staticmethod
    def of(size: TimeLike, slide: TimeLike, offset: TimeLike = 0) -> SlidingProcessingTimeWindows:
        return SlidingProcessingTimeWindows(_ms("window size", size), _ms("window slide", slide), _ms("window offset", offset))

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> List[TimeWindow]:
        return _sliding(context.get_current_processing_time(), self.size, self.slide, self.offset)

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, Any]:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"SlidingProcessingTimeWindows({self.size}, {self.slide}, {self.offset})"


class _TimeWindowMerging(MergingWindowAssigner[Any, TimeWindow]):
    def merge_windows(self, windows: Collection[TimeWindow], callback: Any) -> None:
        fn = getattr(callback, "merge", callback)
        TimeWindow.merge_windows(windows, fn)


def _check_gap(name: str, gap: int) -> int:
    if gap <= 0:
        msg = f"{name} parameters must satisfy 0 < gap; got gap={gap} ms"
        raise InvalidArgumentError(msg)
    return gap


class SessionWindowTimeGapExtractor(ABC, Generic[T]):
    """Extracts the session gap (ms) from an element, for dynamic session windows."""

    @abstractmethod
    def extract(self, element: T) -> int: ...


def _gap_extractor(extractor: Any) -> Callable[[Any], int]:
    fn = getattr(extractor, "extract", extractor)
    if not callable(fn):
        msg = (
            "a dynamic session gap needs a SessionWindowTimeGapExtractor or a callable element -> gap ms; "
            f"got {type(extractor).__name__}"
        )
        raise InvalidTypeError(msg)
    return fn  # type: ignore[no-any-return]


def _dynamic_gap(fn: Callable[[Any], int], element: Any) -> int:
    gap = to_millis("session gap", fn(element))
    if gap <= 0:
        msg = f"Dynamic session time gap must satisfy 0 < gap; the extractor returned {gap} for {element!r}"
        raise InvalidArgumentError(msg)
    return gap


class EventTimeSessionWindows(_TimeWindowMerging):
    """Sessions in event time: ``[ts, ts+gap)`` merged with every window it touches or overlaps."""

    def __init__(self, gap: int) -> None:
        self.gap = _check_gap("EventTimeSessionWindows", gap)

    @staticmethod
    def with_gap(gap: TimeLike) -> EventTimeSessionWindows:
        return EventTimeSessionWindows(_ms("session gap", gap))

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> DynamicEventTimeSessionWindows:
        return DynamicEventTimeSessionWindows(extractor)

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> List[TimeWindow]:
        if timestamp is None or timestamp <= LONG_MIN:
            raise _no_timestamp(self)
        return [TimeWindow(timestamp, timestamp + self.gap)]

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, Any]:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"EventTimeSessionWindows({self.gap})"


class DynamicEventTimeSessionWindows(_TimeWindowMerging):
    """Event-time sessions whose gap is extracted from each element (a gap <= 0 is an error)."""

    def __init__(self, extractor: Any) -> None:
        self.extractor = _gap_extractor(extractor)

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> DynamicEventTimeSessionWindows:
        return DynamicEventTimeSessionWindows(extractor)

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> List[TimeWindow]:
        if timestamp is None or timestamp <= LONG_MIN:
            raise _no_timestamp(self)
        return [TimeWindow(timestamp, timestamp + _dynamic_gap(self.extractor, element))]

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, Any]:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"DynamicEventTimeSessionWindows({self.extractor!r})"


class ProcessingTimeSessionWindows(_TimeWindowMerging):
    """Sessions in processing time: ``[now, now+gap)``, merged."""

    def __init__(self, gap: int) -> None:
        self.gap = _check_gap("ProcessingTimeSessionWindows", gap)

    @staticmethod
    def with_gap(gap: TimeLike) -> ProcessingTimeSessionWindows:
        return ProcessingTimeSessionWindows(_ms("session gap", gap))

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> DynamicProcessingTimeSessionWindows:
        return DynamicProcessingTimeSessionWindows(extractor)

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> List[TimeWindow]:
        now = context.get_current_processing_time()
        return [TimeWindow(now, now + self.gap)]

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, Any]:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"ProcessingTimeSessionWindows({self.gap})"


class DynamicProcessingTimeSessionWindows(_TimeWindowMerging):
    """Processing-time sessions whose gap is extracted from each element."""

    def __init__(self, extractor: Any) -> None:
        self.extractor = _gap_extractor(extractor)

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> DynamicProcessingTimeSessionWindows:
        return DynamicProcessingTimeSessionWindows(extractor)

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> List[TimeWindow]:
        now = context.get_current_processing_time()
        return [TimeWindow(now, now + _dynamic_gap(self.extractor, element))]

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, Any]:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"DynamicProcessingTimeSessionWindows({self.extractor!r})"


class GlobalWindows(WindowAssigner[Any, GlobalWindow]):
    """Every element goes to the single :class:`GlobalWindow`. Never late, never cleaned up.

    ``create()`` uses :class:`NeverTrigger` (give a trigger); ``create_with_end_of_stream_trigger()``
    fires once at end of input.
    """

    def __init__(self, end_of_stream: bool = False) -> None:
        self.end_of_stream = end_of_stream

    @staticmethod
    def create() -> GlobalWindows:
        return GlobalWindows()

    @staticmethod
    def create_with_end_of_stream_trigger() -> GlobalWindows:
        return GlobalWindows(end_of_stream=True)

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> List[GlobalWindow]:
        return [GlobalWindow()]

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, Any]:
        return EndOfStreamTrigger() if self.end_of_stream else NeverTrigger()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "GlobalWindows.create_with_end_of_stream_trigger()" if self.end_of_stream else "GlobalWindows.create()"


def _count_state(assigner: object, context: WindowAssignerContext, descriptor: ValueStateDescriptor) -> Any:
    runtime_context = context.get_runtime_context()
    if runtime_context is None:
        msg = (
            f"{assigner!r} keeps a per-key element counter in keyed state, but its WindowAssignerContext "
            f"({type(context).__name__}) gives no runtime context; use it in KeyedStream.window(...)"
        )
        raise InvalidPipelineError(msg)
    return runtime_context.get_state(descriptor)


def _next_count(assigner: object, context: WindowAssignerContext, descriptor: ValueStateDescriptor) -> int:
    """The key's element counter before this element (0 for the first), incremented in keyed state."""
    state = _count_state(assigner, context, descriptor)
    value = state.value()
    current = 0 if value is None else int(value)
    state.update(current + 1)
    return current


def _check_count(name: str, **values: int) -> None:
    for what, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            msg = f"{name}: {what} must be a positive int (a number of elements); got {value!r}"
            raise InvalidArgumentError(msg)


class CountTumblingWindowAssigner(WindowAssigner[Any, CountWindow]):
    """PyFlink's count tumbling windows: a key's ``n``-th element (from 0) goes to ``CountWindow(n // size)``.

    The default trigger, ``CountTrigger(size)``, fires (without purging) when a window holds ``size`` elements;
    a remainder at the end of input is never emitted. The element counter is keyed state (``tumble-count-assigner``,
    as in PyFlink). Neither event nor processing time is involved; ``is_event_time()`` is False as in PyFlink.
    Like PyFlink, fired windows keep their contents in state (a count window's max timestamp is ``LONG_MAX``, so it
    is never cleaned up); ``.trigger(PurgingTrigger.of(CountTrigger.of(size)))`` fires the same windows and drops them.
    """

    def __init__(self, window_size: int) -> None:
        _check_count("CountTumblingWindowAssigner", window_size=window_size)
        self.window_size = window_size
        self._count_descriptor = ValueStateDescriptor("tumble-count-assigner", Types.LONG())

    @staticmethod
    def of(window_size: int) -> CountTumblingWindowAssigner:
        return CountTumblingWindowAssigner(window_size)

    def _config(self) -> tuple:  # type: ignore[type-arg]
        return (self.window_size,)

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> List[CountWindow]:
        current = _next_count(self, context, self._count_descriptor)
        return [CountWindow(current // self.window_size)]

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, Any]:
        return CountTrigger(self.window_size)

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"CountTumblingWindowAssigner({self.window_size})"


class CountSlidingWindowAssigner(WindowAssigner[Any, CountWindow]):
    """PyFlink's count sliding windows: ``CountWindow(i)`` holds a key's elements ``i*slide … i*slide+size-1``
    (numbered from 0), so every window has exactly ``size`` elements.

    The default trigger, ``CountTrigger(size)``, fires a window when it is full: ``of(3, 2)`` over 1…7 emits
    ``[1,2,3]``, ``[3,4,5]``, ``[5,6,7]`` (Java Flink's ``count_window(3, 2)`` fires every 2 elements over the last
    3: ``[1,2]``, ``[2,3,4]``, ``[4,5,6]``). Partial windows are never emitted; with ``slide > size`` the elements
    between windows belong to none. An element's windows are listed latest first, as in PyFlink. The counter is
    keyed state (``slide-count-assigner``); fired windows keep their contents in state, as in PyFlink
    (``.trigger(PurgingTrigger.of(CountTrigger.of(size)))`` fires the same windows and drops them).
    """

    def __init__(self, window_size: int, window_slide: int) -> None:
        _check_count("CountSlidingWindowAssigner", window_size=window_size, window_slide=window_slide)
        self.window_size = window_size
        self.window_slide = window_slide
        self._count_descriptor = ValueStateDescriptor("slide-count-assigner", Types.LONG())

    @staticmethod
    def of(window_size: int, window_slide: int) -> CountSlidingWindowAssigner:
        return CountSlidingWindowAssigner(window_size, window_slide)

    def _config(self) -> tuple:  # type: ignore[type-arg]
        return (self.window_size, self.window_slide)

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> List[CountWindow]:
        current = _next_count(self, context, self._count_descriptor)
        last_id = current // self.window_slide
        last_start = last_id * self.window_slide
        windows = []
        while last_id >= 0 and last_start <= current <= last_start + self.window_size - 1:
            windows.append(CountWindow(last_id))
            last_id -= 1
            last_start -= self.window_slide
        return windows

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, Any]:
        return CountTrigger(self.window_size)

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"CountSlidingWindowAssigner({self.window_size}, {self.window_slide})"


__all__ = [
    "CountSlidingWindowAssigner",
    "CountTumblingWindowAssigner",
    "DynamicEventTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows",
    "EventTimeSessionWindows",
    "GlobalWindows",
    "MergeCallback",
    "MergingWindowAssigner",
    "ProcessingTimeSessionWindows",
    "SessionWindowTimeGapExtractor",
    "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows",
    "TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows",
    "WindowAssigner",
    "WindowAssignerContext",
]
