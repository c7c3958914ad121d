"""Evictors: remove elements from a window's buffer before or after the window function runs.

With an evictor Flink buffers every element with its timestamp (no incremental aggregation). On each
FIRE: ``evict_before``, the function on the survivors, ``evict_after``; the buffer is then replaced by the
survivors, so evictions are permanent. Evictors remove in place from the list they are given.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Generic, List, Optional, TypeVar

from .durations import TimeLike, to_millis
from .errors import InvalidArgumentError, InvalidTypeError
from .windows import Window

T = TypeVar("T")
W = TypeVar("W", bound=Window)


@dataclass
class TimestampedValue(Generic[T]):
    """An element with its event timestamp (``None`` when it has none), as evictors see it."""

    value: T
    timestamp: Optional[int]

    def get_value(self) -> T:
        return self.value

    def get_timestamp(self) -> Optional[int]:
        return self.timestamp

    def has_timestamp(self) -> bool:
        return self.timestamp is not None


class EvictorContext(ABC):
    """What an evictor may ask: the current processing time and watermark."""

    @abstractmethod
    def get_current_processing_time(self) -> int: ...

    @abstractmethod
    def get_current_watermark(self) -> int: ...


class Evictor(ABC, Generic[T, W]):
    """Removes elements from ``elements`` (a list, in buffer order) in place."""

    @abstractmethod
    def evict_before(self, elements: List[TimestampedValue[T]], size: int, window: W, ctx: EvictorContext) -> None:
        """Called before the window function."""

    @abstractmethod
    def evict_after(self, elements: List[TimestampedValue[T]], size: int, window: W, ctx: EvictorContext) -> None:
        """Called after the window function."""

    def _config(self) -> tuple:  # type: ignore[type-arg]
        return tuple(sorted(vars(self).items()))

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._config() == other._config()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self._config())))


def _keep(elements: List[TimestampedValue[Any]], predicate: Callable[[TimestampedValue[Any]], bool]) -> None:
    elements[:] = [e for e in elements if predicate(e)]


class CountEvictor(Evictor[Any, Window]):
    """Keeps at most ``max_count`` elements: evicts the first (oldest in buffer order) ``size - max_count``."""

    def __init__(self, max_count: int, do_evict_after: bool = False) -> None:
        if isinstance(max_count, bool) or not isinstance(max_count, int):
            msg = f"CountEvictor max_count must be an int; got {type(max_count).__name__}"
            raise InvalidTypeError(msg)
        if max_count < 0:
            msg = f"CountEvictor max_count must be >= 0; got {max_count}"
            raise InvalidArgumentError(msg)
        self.max_count = max_count
        self.do_evict_after = bool(do_evict_after)

    @staticmethod
    def of(max_count: int, do_evict_after: bool = False) -> CountEvictor:
        return CountEvictor(max_count, do_evict_after)

    def _evict(self, elements: List[TimestampedValue[Any]], size: int) -> None:
        if size <= self.max_count:
            return
        del elements[: size - self.max_count]

    def evict_before(self, elements: List[TimestampedValue[Any]], size: int, window: Window, ctx: EvictorContext) -> None:
        if not self.do_evict_after:
            self._evict(elements, size)

    def evict_after(self, elements: List[TimestampedValue[Any]], size: int, window: Window, ctx: EvictorContext) -> None:
        if self.do_evict_after:
            self._evict(elements, size)

    def __repr__(self) -> str:
        return f"CountEvictor.of({self.max_count}, do_evict_after={self.do_evict_after})"


class TimeEvictor(Evictor[Any, Window]):
    """Keeps elements newer than ``window_size`` before the newest: evicts ``ts <= max(ts) - window_size``.

    Does nothing when the first buffered element has no timestamp. With ``window_size == 0`` it evicts all.
    """

    def __init__(self, window_size: TimeLike, do_evict_after: bool = False) -> None:
        self.window_size = to_millis("TimeEvictor window_size", window_size)
        if self.window_size < 0:
            msg = f"TimeEvictor window_size must be >= 0 ms; got {self.window_size}"
            raise InvalidArgumentError(msg)
        self.do_evict_after = bool(do_evict_after)

    @staticmethod
    def of(window_size: TimeLike, do_evict_after: bool = False) -> TimeEvictor:
        return TimeEvictor(window_size, do_evict_after)

    def _evict(self, elements: List[TimestampedValue[Any]]) -> None:
        if not elements or not elements[0].has_timestamp():
            return
        newest = max(e.timestamp for e in elements if e.timestamp is not None)
        cutoff = newest - self.window_size
        _keep(elements, lambda e: not (e.timestamp is not None and e.timestamp <= cutoff))

    def evict_before(self, elements: List[TimestampedValue[Any]], size: int, window: Window, ctx: EvictorContext) -> None:
        if not self.do_evict_after:
            self._evict(elements)

    def evict_after(self, elements: List[TimestampedValue[Any]], size: int, window: Window, ctx: EvictorContext) -> None:
        if self.do_evict_after:
            self._evict(elements)

    def __repr__(self) -> str:
        return f"TimeEvictor.of({self.window_size}, do_evict_after={self.do_evict_after})"


class DeltaEvictor(Evictor[T, Window]):
    """Evicts every element ``e`` with ``delta_function(e, last_element) >= threshold`` (note ``>=``)."""

    def __init__(self, threshold: float, delta_function: Callable[[T, T], float], do_evict_after: bool = False) -> None:
        fn = getattr(delta_function, "get_delta", delta_function)
        if not callable(fn):
            msg = f"DeltaEvictor needs a delta function (a, b) -> float; got {type(delta_function).__name__}"
            raise InvalidTypeError(msg)
        self.threshold = threshold
        self.delta_function = fn
        self.do_evict_after = bool(do_evict_after)

    @staticmethod
    def of(threshold: float, delta_function: Callable[[T, T], float], do_evict_after: bool = False) -> DeltaEvictor[T]:
        return DeltaEvictor(threshold, delta_function, do_evict_after)

    def _evict(self, elements: List[TimestampedValue[T]]) -> None:
        if not elements:
            return
        last = elements[-1].value
        _keep(elements, lambda e: not (self.delta_function(e.value, last) >= self.threshold))

    def evict_before(self, elements: List[TimestampedValue[T]], size: int, window: Window, ctx: EvictorContext) -> None:
        if not self.do_evict_after:
            self._evict(elements)

    def evict_after(self, elements: List[TimestampedValue[T]], size: int, window: Window, ctx: EvictorContext) -> None:
        if self.do_evict_after:
            self._evict(elements)

    def __repr__(self) -> str:
        return f"DeltaEvictor.of({self.threshold}, {self.delta_function!r}, do_evict_after={self.do_evict_after})"


__all__ = ["CountEvictor", "DeltaEvictor", "Evictor", "EvictorContext", "TimeEvictor", "TimestampedValue"]
