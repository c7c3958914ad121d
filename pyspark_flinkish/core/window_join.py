"""The window function of Flink's window join and co-group (``CoGroupedStreams.CoGroupWindowFunction``,
``JoinedStreams.JoinCoGroupFunction`` / ``FlatJoinCoGroupFunction``).

A window join or co-group is a keyed window over the tagged union of both inputs (:mod:`.tagged_union`), so every
window rule (assigners including sessions, triggers, evictors, allowed lateness, cleanup) is the window operator's.
At each firing the window's elements, in the window's order, are split into the left and the right ones and handed
to the co-group function; a join is the co-group that emits, for each left element, for each right element, the join
function's result (an inner join within one window: a window with one empty side emits nothing).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, List, Optional

from .errors import InvalidTypeError
from .functions import WindowFunction
from .join_functions import CoGroupFunction, FlatJoinFunction, JoinFunction
from .tagged_union import LEFT


def _hook(fn: Any, name: str, *args: Any) -> None:
    method = getattr(fn, name, None)
    if callable(method):
        method(*args)


class JoinCoGroup:
    """A join function as a co-group function: the nested loop ``for left: for right: join(left, right)``."""

    def __init__(self, function: Any) -> None:
        if isinstance(function, type):
            msg = f"the join function must be an instance; got the class {function.__name__}"
            raise InvalidTypeError(msg)
        join = function if not callable(getattr(function, "join", None)) else function.join
        if not callable(join):
            msg = f"apply() needs a JoinFunction, a FlatJoinFunction or a callable (first, second); got {function!r}"
            raise InvalidTypeError(msg)
        self.function = function
        self.join = join
        self.flat = isinstance(function, FlatJoinFunction)

    def co_group(self, first: Iterable[Any], second: Iterable[Any]) -> List[Any]:
        out: List[Any] = []
        right = list(second)
        for a in first:
            for b in right:
                result = self.join(a, b)
                if not self.flat:
                    out.append(result)
                elif result is not None:
                    out.extend(result)
        return out

    def open(self, runtime_context: Any) -> None:
        _hook(self.function, "open", runtime_context)

    def close(self) -> None:
        _hook(self.function, "close")

    def __repr__(self) -> str:
        return f"JoinCoGroup({self.function!r})"


class CoGroupWindowFunction(WindowFunction):  # type: ignore[type-arg]
    """The window function of a co-group: ``co_group(lefts, rights)`` over the window's tagged elements."""

    def __init__(self, function: Any) -> None:
        if isinstance(function, type):
            msg = f"the co-group function must be an instance; got the class {function.__name__}"
            raise InvalidTypeError(msg)
        co_group: Optional[Callable[..., Any]] = getattr(function, "co_group", None)
        if not callable(co_group):
            co_group = function if callable(function) and not isinstance(function, (JoinFunction, CoGroupFunction)) else None
        if co_group is None:
            msg = f"apply() needs a CoGroupFunction or a callable (first, second); got {type(function).__name__} {function!r}"
            raise InvalidTypeError(msg)
        self.function = function
        self.co_group = co_group

    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Any:
        first: List[Any] = []
        second: List[Any] = []
        for side, value in inputs:
            (first if side == LEFT else second).append(value)
        return self.co_group(first, second)

    def open(self, runtime_context: Any) -> None:
        _hook(self.function, "open", runtime_context)

    def close(self) -> None:
        _hook(self.function, "close")

    def __repr__(self) -> str:
        return f"CoGroupWindowFunction({self.function!r})"


__all__ = ["CoGroupWindowFunction", "JoinCoGroup"]
