"""Functions of non-keyed windows (``window_all``): PyFlink's ``AllWindowFunction`` and ``ProcessAllWindowFunction``,
and the adapters that run them in the keyed :class:`~pyspark_flinkish.core.window_operator.WindowOperator`.

Flink runs ``window_all`` as a keyed window whose every element has the same key (``NullByteKeySelector``), at
parallelism 1; so does this package (:data:`ALL_WINDOW_KEY`). The window rules are the keyed operator's: these
adapters only drop the key from the function's arguments.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Generic, Iterable, Optional, TypeVar

from .functions import Function, KeyedStateStore, KeySelector

IN = TypeVar("IN")
OUT = TypeVar("OUT")
W = TypeVar("W")

ALL_WINDOW_KEY = 0
"""The one key of a non-keyed window's elements (Flink's ``NullByteKeySelector`` gives the byte 0)."""


class NullByteKeySelector(KeySelector):  # type: ignore[type-arg]
    """The key selector of ``window_all``: every element gets :data:`ALL_WINDOW_KEY`."""

    def get_key(self, value: Any) -> int:
        return ALL_WINDOW_KEY

    def __repr__(self) -> str:
        return "NullByteKeySelector()"


class AllWindowFunction(Function, Generic[IN, OUT, W]):
    """A function over the elements of a non-keyed window (PyFlink's ``AllWindowFunction``)."""

    @abstractmethod
    def apply(self, window: W, inputs: Iterable[IN]) -> Optional[Iterable[OUT]]:
        """Evaluate ``window``: ``inputs`` are its elements (or the one reduced/aggregated value); yield outputs."""


class ProcessAllWindowFunction(Function, Generic[IN, OUT, W]):
    """A function over the elements of a non-keyed window with a context (PyFlink's ``ProcessAllWindowFunction``)."""

    class Context(ABC, Generic[W]):  # type: ignore[misc]
        """The window being evaluated, its state and the side outputs (subscriptable: ``Context[TimeWindow]``)."""

        @abstractmethod
        def window(self) -> W: ...

        @abstractmethod
        def window_state(self) -> KeyedStateStore:
            """State of this window only; clean it up in :meth:`ProcessAllWindowFunction.clear`."""

        @abstractmethod
        def global_state(self) -> KeyedStateStore:
            """State shared by all windows of the operator (a non-keyed window has one key)."""

        def current_processing_time(self) -> int:  # Java's Context has it too (PyFlink's lacks it)
            raise NotImplementedError

        def current_watermark(self) -> int:
            raise NotImplementedError

        def output(self, output_tag: Any, value: Any) -> None:
            """Emit ``value`` to the side output ``output_tag`` (Java's ``Context.output``)."""
            raise NotImplementedError

    @abstractmethod
    def process(self, context: ProcessAllWindowFunction.Context, elements: Iterable[IN]) -> Optional[Iterable[OUT]]:  # type: ignore[type-arg]
        """Evaluate ``context.window()`` over ``elements``; yield outputs. Called once per firing."""

    def clear(self, context: ProcessAllWindowFunction.Context) -> None:  # type: ignore[type-arg]
        """Called when the window is cleaned up (watermark past its end + allowed lateness): drop its window state."""


class _Forwarding:
    """open/close of the user's function, called by the window operator through the adapter."""

    function: Any

    def open(self, runtime_context: Any) -> None:
        opener = getattr(self.function, "open", None)
        if callable(opener):
            opener(runtime_context)

    def close(self) -> None:
        closer = getattr(self.function, "close", None)
        if callable(closer):
            closer()


class ProcessAllWindowFunctionAdapter(_Forwarding):
    """Runs ``ProcessAllWindowFunction.process(context, elements)`` as the keyed operator's ``process(key, ...)``."""

    def __init__(self, function: Any) -> None:
        self.function = function

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Any:
        return self.function.process(context, elements)

    def clear(self, context: Any) -> None:
        clear = getattr(self.function, "clear", None)
        if callable(clear):
            clear(context)

    def __repr__(self) -> str:
        return f"ProcessAllWindowFunctionAdapter({self.function!r})"


class AllWindowFunctionAdapter(_Forwarding):
    """Runs ``AllWindowFunction.apply(window, inputs)`` (or such a callable) as the keyed operator's ``process``."""

    def __init__(self, function: Any) -> None:
        self.function = function
        apply = getattr(function, "apply", None)
        self.apply = apply if callable(apply) else function

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Any:
        return self.apply(context.window(), elements)

    def __repr__(self) -> str:
        return f"AllWindowFunctionAdapter({self.function!r})"


__all__ = [
    "ALL_WINDOW_KEY",
    "AllWindowFunction",
    "AllWindowFunctionAdapter",
    "NullByteKeySelector",
    "ProcessAllWindowFunction",
    "ProcessAllWindowFunctionAdapter",
]
