"""Windows: Flink's ``TimeWindow`` ``[start, end)``, the single ``GlobalWindow`` and PyFlink's ``CountWindow``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, List, Tuple

from .errors import InvalidArgumentError
from .javamath import LONG_MAX, check_long, java_hash_set_order, long_to_int_with_bit_mixing


class Window:
    """A grouping of elements into a finite bucket; ``max_timestamp()`` is its last instant."""

    __slots__ = ()

    def max_timestamp(self) -> int:
        raise NotImplementedError


@dataclass(frozen=True, order=True)
class TimeWindow(Window):
    """The half-open interval ``[start, end)``; it contains ``start … end-1``.

    ``max_timestamp()`` is ``end - 1``: an event-time window fires when the watermark reaches it.
    Windows order by ``(start, end)``.
    """

    start: int
    end: int

    def __post_init__(self) -> None:
        check_long("TimeWindow.start", self.start)
        check_long("TimeWindow.end", self.end)

    def max_timestamp(self) -> int:
        return self.end - 1

    def intersects(self, other: TimeWindow) -> bool:
        """Whether the windows overlap or touch (``[0,5)`` and ``[5,9)`` intersect, as in Flink)."""
        return self.start <= other.end and self.end >= other.start

    def cover(self, other: TimeWindow) -> TimeWindow:
        """The smallest window containing both."""
        return TimeWindow(min(self.start, other.start), max(self.end, other.end))

    def java_hash_code(self) -> int:
        """``TimeWindow.hashCode()`` in Flink (used to reproduce Flink's merge order)."""
        return long_to_int_with_bit_mixing(self.start + self.end)

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        """Flink's ``TimeWindow.getWindowStartWithOffset``: floor-mod alignment to ``offset``."""
        if window_size <= 0:
            msg = f"window_size must be > 0; got {window_size}"
            raise InvalidArgumentError(msg)
        return timestamp - (timestamp - offset) % window_size

    @staticmethod
    def merge_windows(
        windows: Iterable[TimeWindow],
        callback: Callable[[List[TimeWindow], TimeWindow], None],
    ) -> None:
        """Flink's ``TimeWindow.mergeWindows``: sort by start, sweep intersecting runs, and call
        ``callback(members, cover)`` for every run of more than one window. ``members`` is in the
        iteration order of the ``HashSet`` Flink collects them in."""
        ordered = sorted(windows, key=lambda w: w.start)
        groups: List[Tuple[TimeWindow, List[TimeWindow]]] = []
        current: Tuple[TimeWindow, List[TimeWindow]] | None = None
        for candidate in ordered:
            if current is None:
                current = (candidate, [candidate])
            elif current[0].intersects(candidate):
                current = (current[0].cover(candidate), current[1] + [candidate])
            else:
                groups.append(current)
                current = (candidate, [candidate])
        if current is not None:
            groups.append(current)
        for cover, members in groups:
            members = java_hash_set_order(members, TimeWindow.java_hash_code)
            if len(members) > 1:
                callback(members, cover)

    def __repr__(self) -> str:
        return f"TimeWindow(start={self.start}, end={self.end})"


class GlobalWindow(Window):
    """The single window of ``GlobalWindows``; its max timestamp is ``LONG_MAX``."""

    __slots__ = ()
    _instance: GlobalWindow | None = None

    def __new__(cls) -> GlobalWindow:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    @staticmethod
    def get() -> GlobalWindow:
        return GlobalWindow()

    def max_timestamp(self) -> int:
        return LONG_MAX

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GlobalWindow)

    def __hash__(self) -> int:
        return 0

    def __lt__(self, other: object) -> bool:
        if isinstance(other, GlobalWindow):
            return False
        return NotImplemented

    def __reduce__(self) -> tuple:  # type: ignore[type-arg]
        return (GlobalWindow, ())

    def __repr__(self) -> str:
        return "GlobalWindow()"


@dataclass(frozen=True, order=True)
class CountWindow(Window):
    """PyFlink's count window: the ``id``-th window of one key's count assigner (``CountTumblingWindowAssigner`` /
    ``CountSlidingWindowAssigner``). Its max timestamp is ``LONG_MAX``, so it is never cleaned up by time.

    Java Flink has no such window: its ``count_window`` uses :class:`GlobalWindow`."""

    id: int

    def max_timestamp(self) -> int:
        return LONG_MAX

    def __repr__(self) -> str:
        return f"CountWindow(id={self.id})"


__all__ = ["CountWindow", "GlobalWindow", "TimeWindow", "Window"]
