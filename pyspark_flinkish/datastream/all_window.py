"""``AllWindowedStream``: windows over a whole, non-keyed stream (PyFlink's ``DataStream.window_all``).

As in Flink, it is a keyed window whose elements all have one key (``NullByteKeySelector``): every rule (assignment,
triggers, evictors, lateness, cleanup) is the keyed :class:`~pyspark_flinkish.datastream.data_stream.WindowedStream`'s,
built here with the function adapters of :mod:`~pyspark_flinkish.core.all_window_functions`. Flink runs it at
parallelism 1; the one key puts all of its state in one keyed-state partition on Spark, so it is one task there too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from ..core.all_window_functions import (
    AllWindowFunction,
    AllWindowFunctionAdapter,
    NullByteKeySelector,
    ProcessAllWindowFunctionAdapter,
)
from ..core.assigners import WindowAssigner
from ..core.durations import TimeLike
from ..core.errors import InvalidTypeError
from ..core.evictors import Evictor
from ..core.functions import AggregateFunction, ReduceFunction
from ..core.records import OutputTag
from ..core.triggers import Trigger
from ..core.typeinfo import TypeInformation

if TYPE_CHECKING:  # data_stream builds an AllWindowedStream in window_all: types only here
    from .data_stream import DataStream, WindowedStream


def _window_function(window_function: Any) -> Any:
    """The adapter of an optional ``AllWindowFunction`` / ``ProcessAllWindowFunction`` given to reduce/aggregate."""
    if window_function is None:
        return None
    if isinstance(window_function, AllWindowFunction):
        return AllWindowFunctionAdapter(window_function)
    if callable(getattr(window_function, "process", None)):
        return ProcessAllWindowFunctionAdapter(window_function)
    if callable(getattr(window_function, "apply", None)) or callable(window_function):
        return AllWindowFunctionAdapter(window_function)
    msg = (
        "window_function should be an AllWindowFunction or a ProcessAllWindowFunction; "
        f"got {type(window_function).__name__} {window_function!r}"
    )
    raise InvalidTypeError(msg)


class AllWindowedStream:
    """A non-keyed stream split into windows: configure trigger, evictor, allowed lateness and the late-data side
    output, then give the window function. Built by ``DataStream.window_all`` / ``count_window_all``."""

    def __init__(self, stream: DataStream, windowed: WindowedStream) -> None:
        self._stream = stream
        self._windowed = windowed

    @staticmethod
    def of(stream: DataStream, window_assigner: WindowAssigner) -> AllWindowedStream:  # type: ignore[type-arg]
        """``stream.window_all(window_assigner)``."""
        return AllWindowedStream(stream, stream.key_by(NullByteKeySelector()).window(window_assigner))

    @staticmethod
    def count(stream: DataStream, size: int, slide: int = 0) -> AllWindowedStream:
        """``stream.count_window_all(size, slide)``: Java Flink's ``countWindowAll`` (PyFlink 2.3 has none): the
        rule of ``KeyedStream.count_window`` over the one key."""
        return AllWindowedStream(stream, stream.key_by(NullByteKeySelector()).count_window(size, slide))

    def get_execution_environment(self) -> Any:
        return self._stream.get_execution_environment()

    def get_input_type(self) -> Optional[TypeInformation]:
        return self._stream.get_type()

    def trigger(self, trigger: Trigger) -> AllWindowedStream:  # type: ignore[type-arg]
        """Replace the assigner's default trigger (a merging assigner needs a trigger that can merge)."""
        self._windowed.trigger(trigger)
        return self

    def evictor(self, evictor: Evictor) -> AllWindowedStream:  # type: ignore[type-arg]
        """Java Flink's ``AllWindowedStream.evictor`` (PyFlink's promises one in its docstring but lacks it): evict
        elements before/after each firing; all elements are buffered."""
        self._windowed.evictor(evictor)
        return self

    def allowed_lateness(self, time_ms: TimeLike) -> AllWindowedStream:
        """Keep windows ``time_ms`` past their end: late elements within it fire the window again."""
        self._windowed.allowed_lateness(time_ms)
        return self

    def side_output_late_data(self, output_tag: OutputTag) -> AllWindowedStream:
        """Send elements too late for every window to ``output_tag`` instead of dropping them."""
        self._windowed.side_output_late_data(output_tag)
        return self

    @staticmethod
    def _named(stream: DataStream, what: str) -> DataStream:
        return stream.name(f"AllWindow({what})")

    def reduce(
        self,
        reduce_function: Union[ReduceFunction, Callable[[Any, Any], Any]],
        window_function: Any = None,
        output_type: Optional[TypeInformation] = None,
    ) -> DataStream:
        """Incremental reduce per window; ``window_function`` (optional ``AllWindowFunction`` or
        ``ProcessAllWindowFunction``) gets the one reduced value."""
        out = self._windowed.reduce(reduce_function, _window_function(window_function), output_type)
        return self._named(out, "reduce")

    def aggregate(
        self,
        aggregate_function: AggregateFunction,  # type: ignore[type-arg]
        window_function: Any = None,
        accumulator_type: Optional[TypeInformation] = None,
        output_type: Optional[TypeInformation] = None,
    ) -> DataStream:
        """Incremental aggregate per window; ``window_function`` (optional) gets the one result."""
        out = self._windowed.aggregate(aggregate_function, _window_function(window_function), accumulator_type, output_type)
        return self._named(out, "aggregate")

    def apply(self, window_function: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        """``AllWindowFunction.apply(window, inputs)`` (or such a callable) with all of the window's elements."""
        if not (callable(getattr(window_function, "apply", None)) or callable(window_function)):
            msg = f"apply() needs an AllWindowFunction or a callable (window, inputs); got {type(window_function).__name__}"
            raise InvalidTypeError(msg)
        out = self._windowed.process(AllWindowFunctionAdapter(window_function), output_type)  # type: ignore[arg-type]
        return self._named(out, "apply")

    def process(self, process_window_function: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        """``ProcessAllWindowFunction.process(context, elements)`` with all of the window's elements at each firing."""
        if not callable(getattr(process_window_function, "process", None)):
            msg = f"process() needs a ProcessAllWindowFunction; got {type(process_window_function).__name__}"
            raise InvalidTypeError(msg)
        out = self._windowed.process(ProcessAllWindowFunctionAdapter(process_window_function), output_type)  # type: ignore[arg-type]
        return self._named(out, "process")


__all__ = ["AllWindowedStream"]
