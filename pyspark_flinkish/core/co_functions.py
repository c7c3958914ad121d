"""User-function interfaces of two-input operators, named and shaped as in ``pyflink.datastream.functions``:
``connect`` (``CoMapFunction``, ``CoFlatMapFunction``, ``CoProcessFunction``, ``KeyedCoProcessFunction``) and
broadcast state (``BroadcastProcessFunction``, ``KeyedBroadcastProcessFunction``).

As everywhere in this package, functions return or yield their outputs and a yielded ``(OutputTag, value)`` pair
goes to that side output (PyFlink's way); the contexts' ``output(tag, value)`` (Java Flink's way) does the same.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Generic, Iterable, Optional, TypeVar

from .broadcast_state import BroadcastState, ReadOnlyBroadcastState
from .functions import BaseContext, Function, TimeDomain, TimerService
from .state_descriptors import MapStateDescriptor

IN1 = TypeVar("IN1")
IN2 = TypeVar("IN2")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")


class CoMapFunction(Function, Generic[IN1, IN2, OUT]):
    """``connect(...).map``: ``map1`` for each element of the first stream, ``map2`` for the second; one instance
    serves both inputs, so the two can share fields (and keyed state after ``key_by``)."""

    @abstractmethod
    def map1(self, value: IN1) -> OUT: ...

    @abstractmethod
    def map2(self, value: IN2) -> OUT: ...


class CoFlatMapFunction(Function, Generic[IN1, IN2, OUT]):
    """``connect(...).flat_map``: ``flat_map1`` / ``flat_map2`` return or yield zero or more outputs."""

    @abstractmethod
    def flat_map1(self, value: IN1) -> Iterable[OUT]: ...

    @abstractmethod
    def flat_map2(self, value: IN2) -> Iterable[OUT]: ...


class CoProcessFunction(Function, Generic[IN1, IN2, OUT]):
    """Non-keyed low-level processing of two streams: the element's timestamp and the current time; timers need a
    keyed stream (``connect(...).key_by(k1, k2).process(KeyedCoProcessFunction)``), as in Flink."""

    class Context(BaseContext):
        """The context of ``process_element1`` / ``process_element2`` (valid during the call only)."""

    @abstractmethod
    def process_element1(self, value: IN1, ctx: CoProcessFunction.Context) -> Optional[Iterable[OUT]]: ...

    @abstractmethod
    def process_element2(self, value: IN2, ctx: CoProcessFunction.Context) -> Optional[Iterable[OUT]]: ...


class KeyedCoProcessFunction(Function, Generic[KEY, IN1, IN2, OUT]):
    """Two streams keyed alike (``connect(...).key_by(k1, k2)``): keyed state shared by both inputs per key,
    event- and processing-time timers, ``on_timer`` under the timer's key. The operator's watermark is the
    minimum of its two inputs' watermarks, so an event-time timer fires only once both inputs passed it."""

    class Context(BaseContext):
        """The context of ``process_element1`` / ``process_element2``."""

        @abstractmethod
        def get_current_key(self) -> Any: ...

    class OnTimerContext(Context):
        """The context of ``on_timer``: also the firing timer's time domain."""

        @abstractmethod
        def time_domain(self) -> TimeDomain: ...

    @abstractmethod
    def process_element1(self, value: IN1, ctx: KeyedCoProcessFunction.Context) -> Optional[Iterable[OUT]]: ...

    @abstractmethod
    def process_element2(self, value: IN2, ctx: KeyedCoProcessFunction.Context) -> Optional[Iterable[OUT]]: ...

    def on_timer(self, timestamp: int, ctx: KeyedCoProcessFunction.OnTimerContext) -> Optional[Iterable[OUT]]:
        """Called when a timer registered through ``ctx.timer_service()`` fires."""
        return None


class BaseBroadcastProcessFunction(Function):
    """What both broadcast process functions share: their contexts."""

    class BaseContext(ABC):
        """Available to every method: the element's timestamp and the current times."""

        @abstractmethod
        def timestamp(self) -> Optional[int]: ...

        @abstractmethod
        def current_processing_time(self) -> int: ...

        @abstractmethod
        def current_watermark(self) -> int: ...

        @abstractmethod
        def output(self, output_tag: Any, value: Any) -> None:
            """Emit ``value`` to the side output ``output_tag`` (or yield ``(output_tag, value)``)."""

    class Context(BaseContext):
        """The broadcast side's context: read-write broadcast state."""

        @abstractmethod
        def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> BroadcastState[Any, Any]: ...

    class ReadOnlyContext(BaseContext):
        """The other side's context: broadcast state read-only (writes raise)."""

        @abstractmethod
        def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> ReadOnlyBroadcastState[Any, Any]: ...


class BroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[IN1, IN2, OUT]):
    """``stream.connect(other.broadcast(descriptor...)).process(...)`` on a non-keyed stream:
    ``process_broadcast_element`` sees every broadcast element and may update the broadcast state;
    ``process_element`` sees the stream's elements with the broadcast state read-only."""

    class Context(BaseBroadcastProcessFunction.Context):
        """The broadcast side's context."""

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext):
        """The non-broadcast side's context."""

    @abstractmethod
    def process_element(self, value: IN1, ctx: BroadcastProcessFunction.ReadOnlyContext) -> Optional[Iterable[OUT]]: ...

    @abstractmethod
    def process_broadcast_element(self, value: IN2, ctx: BroadcastProcessFunction.Context) -> Optional[Iterable[OUT]]: ...


class KeyedBroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[KEY, IN1, IN2, OUT]):
    """``keyed_stream.connect(other.broadcast(descriptor...)).process(...)``: the keyed side has keyed state,
    timers and read-only broadcast state; the broadcast side updates the broadcast state and has no key.

    PyFlink has no ``Context.apply_to_keyed_state`` (Java's ``applyToKeyedState``); neither has this package."""

    class Context(BaseBroadcastProcessFunction.Context):
        """The broadcast side's context (no current key, no timers)."""

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext):
        """The keyed side's context: also the current key and the timer service."""

        @abstractmethod
        def timer_service(self) -> TimerService: ...

        @abstractmethod
        def get_current_key(self) -> Any: ...

    class OnTimerContext(ReadOnlyContext):
        """The context of ``on_timer``: also the firing timer's time domain."""

        @abstractmethod
        def time_domain(self) -> TimeDomain: ...

    @abstractmethod
    def process_element(
        self, value: IN1, ctx: KeyedBroadcastProcessFunction.ReadOnlyContext
    ) -> Optional[Iterable[OUT]]: ...

    @abstractmethod
    def process_broadcast_element(
        self, value: IN2, ctx: KeyedBroadcastProcessFunction.Context
    ) -> Optional[Iterable[OUT]]: ...

    def on_timer(self, timestamp: int, ctx: KeyedBroadcastProcessFunction.OnTimerContext) -> Optional[Iterable[OUT]]:
        """Called when a timer registered on the keyed side fires, under that timer's key."""
        return None


__all__ = [
    "BaseBroadcastProcessFunction",
    "BroadcastProcessFunction",
    "CoFlatMapFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "KeyedBroadcastProcessFunction",
    "KeyedCoProcessFunction",
]
