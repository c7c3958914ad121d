"""Flink's ``TaggedUnion``: how the two inputs of a join travel as one stream to one keyed operator.

Flink builds a window join or co-group by tagging each side's elements, unioning the two streams, keying the union
with :class:`UnionKeySelector` and windowing it (``CoGroupedStreams``); the interval join's operator reads its two
inputs, tagged the same way here. A tagged element is the pair ``(LEFT, element)`` or ``(RIGHT, element)``, which
keyed state stores without pickling; triggers and evictors of a window join see these pairs, as Flink's see
``TaggedUnion`` objects.
"""

from __future__ import annotations

from typing import Any, Callable, Tuple

LEFT = 0
RIGHT = 1


def tag_left(value: Any) -> Tuple[int, Any]:
    """A left element as the joining operator reads it (Flink's ``TaggedUnion.one``)."""
    return (LEFT, value)


def tag_right(value: Any) -> Tuple[int, Any]:
    """A right element as the joining operator reads it (Flink's ``TaggedUnion.two``)."""
    return (RIGHT, value)


class UnionKeySelector:
    """The key of a tagged element: the left key selector for left elements, the right one for right elements."""

    def __init__(self, left: Callable[[Any], Any], right: Callable[[Any], Any]) -> None:
        self.left = left
        self.right = right

    def __call__(self, tagged: Tuple[int, Any]) -> Any:
        side, value = tagged
        return self.left(value) if side == LEFT else self.right(value)

    def __repr__(self) -> str:
        return f"UnionKeySelector({self.left!r}, {self.right!r})"

__all__ = ["LEFT", "RIGHT", "UnionKeySelector", "tag_left", "tag_right"]
