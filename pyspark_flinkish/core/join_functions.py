"""The user functions of Flink's DataStream joins, with Flink Java's names in snake_case (PyFlink has no join API).

* :class:`JoinFunction` -- ``join(first, second)`` returns one result per pair of a window join;
* :class:`FlatJoinFunction` -- ``join(first, second)`` returns or yields any number of results per pair;
* :class:`CoGroupFunction` -- ``co_group(first, second)`` gets all left and all right elements of a key and window
  (either side may be empty) and returns or yields its results;
* :class:`ProcessJoinFunction` -- ``process_element(left, right, ctx)`` per pair of an interval join; ``ctx`` gives
  both elements' timestamps and the result's (the larger one), and side outputs.

As elsewhere in this package, functions return (or yield) their results instead of writing to a ``Collector``, and
a plain callable may stand for a ``JoinFunction`` or a ``CoGroupFunction``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Generic, Iterable, Optional, TypeVar

from .functions import Function

IN1 = TypeVar("IN1")
IN2 = TypeVar("IN2")
OUT = TypeVar("OUT")


class JoinFunction(Function, Generic[IN1, IN2, OUT]):
    """A window join's function: one result per pair of elements with the same key in the same window."""

    @abstractmethod
    def join(self, first: IN1, second: IN2) -> OUT: ...


class FlatJoinFunction(Function, Generic[IN1, IN2, OUT]):
    """A window join's function that returns or yields zero or more results per pair."""

    @abstractmethod
    def join(self, first: IN1, second: IN2) -> Optional[Iterable[OUT]]: ...


class CoGroupFunction(Function, Generic[IN1, IN2, OUT]):
    """A co-group's function: called once per key and window firing with the left and the right elements."""

    @abstractmethod
    def co_group(self, first: Iterable[IN1], second: Iterable[IN2]) -> Optional[Iterable[OUT]]: ...


class ProcessJoinFunction(Function, Generic[IN1, IN2, OUT]):
    """An interval join's function: called once per joined pair, as soon as the later of the two arrives."""

    class Context(ABC):
        @abstractmethod
        def get_left_timestamp(self) -> int:
            """The left element's timestamp."""

        @abstractmethod
        def get_right_timestamp(self) -> int:
            """The right element's timestamp."""

        @abstractmethod
        def get_timestamp(self) -> int:
            """The result's timestamp: the larger of the two."""

        @abstractmethod
        def output(self, output_tag: Any, value: Any) -> None:
            """Emit ``value`` to the side output ``output_tag`` (at the result's timestamp)."""

    @abstractmethod
    def process_element(self, left: IN1, right: IN2, ctx: ProcessJoinFunction.Context) -> Optional[Iterable[OUT]]: ...


__all__ = ["CoGroupFunction", "FlatJoinFunction", "JoinFunction", "ProcessJoinFunction"]
