"""Flink's DataStream joins with Flink Java's API in snake_case (PyFlink has none): window join, co-group and
interval join.

* ``a.join(b).where(key_a).equal_to(key_b).window(assigner)[.trigger(t)][.evictor(e)][.allowed_lateness(ms)]
  .apply(join_function)`` -- :class:`JoinedStreams`;
* ``a.co_group(b)...apply(co_group_function)`` -- :class:`CoGroupedStreams`;
* ``a.key_by(ka).interval_join(b.key_by(kb)).between(lower, upper)[.lower_bound_exclusive()]
  [.upper_bound_exclusive()][.side_output_left_late_data(tag)][.side_output_right_late_data(tag)]
  .process(process_join_function)`` -- :class:`IntervalJoin`.

A window join or co-group is built as Flink builds it: each side is tagged (``map``), the two are unioned, keyed by
:class:`~pyspark_flinkish.core.tagged_union.UnionKeySelector` and windowed with the given assigner, trigger, evictor
and lateness; the window function is :class:`~pyspark_flinkish.core.window_join.CoGroupWindowFunction`. So the
window rules, their state and both engines' support are the keyed window's. An interval join is a keyed
:class:`~pyspark_flinkish.core.interval_join.IntervalJoinOperator` reading the tagged union of both keyed inputs,
whose watermark is a two-input operator's (:class:`~pyspark_flinkish.core.two_input_watermarks.TwoInputWatermarkValve`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional

from ..core.assigners import WindowAssigner
from ..core.durations import TimeLike, to_millis
from ..core.errors import InvalidArgumentError, InvalidPipelineError, InvalidTypeError, UnsupportedFeatureError
from ..core.evictors import Evictor
from ..core.interval_join import IntervalJoinOperator, interval_bounds
from ..core.join_functions import ProcessJoinFunction
from ..core.records import OutputTag
from ..core.tagged_union import UnionKeySelector, tag_left, tag_right
from ..core.triggers import Trigger
from ..core.two_input_watermarks import TwoInputWatermarkValve
from ..core.typeinfo import TypeInformation
from ..core.window_join import CoGroupWindowFunction, JoinCoGroup
from .plan import NodeSpec

if TYPE_CHECKING:
    from .data_stream import DataStream, KeyedStream


@dataclass(eq=False)
class TwoInputUnionSpec(NodeSpec):
    """The ``union`` node feeding a two-input operator (the interval join): its watermark is the two-input rule's."""

    op: str = "two_input_union"

    def make_valve(self) -> TwoInputWatermarkValve:
        return TwoInputWatermarkValve(2)


@dataclass(eq=False)
class IntervalJoinSpec(NodeSpec):
    """``interval_join(...).between(...).process(...)``: a keyed operator over the tagged union of both inputs."""

    key_selector: Callable[[Any], Any]
    key_type: Any = None
    op: str = "interval_join"


def _key_selector(selector: Any, what: str) -> Callable[[Any], Any]:
    """A ``KeySelector``'s ``get_key``, or the callable itself."""
    get_key = None if isinstance(selector, type) else getattr(selector, "get_key", None)
    if callable(get_key):
        return get_key  # type: ignore[no-any-return]
    if callable(selector) and not isinstance(selector, type):
        return selector  # type: ignore[no-any-return]
    msg = f"{what} must be a KeySelector instance or a callable; got {type(selector).__name__} {selector!r}"
    raise InvalidTypeError(msg)


def _check_inputs(first: Any, second: Any, what: str) -> None:
    if not (hasattr(second, "_t") and hasattr(second, "_env")):  # a DataStream (this module is below data_stream.py)
        msg = f"{what}() takes a DataStream; got {type(second).__name__}"
        raise InvalidTypeError(msg)
    if second._env is not first._env:
        msg = f"{what}() of streams from different environments"
        raise InvalidPipelineError(msg)


class _WithWindow:
    """``where(...).equal_to(...).window(assigner)``: the window's trigger, evictor and lateness (each call returns a
    new object, as in Flink), then ``apply``."""

    kind = ""

    def __init__(self, left: DataStream, right: DataStream, keys: Dict[str, Any], settings: Dict[str, Any]) -> None:
        self._left = left
        self._right = right
        self._keys = keys
        self._settings = settings

    def _with(self, **changes: Any) -> Any:
        return type(self)(self._left, self._right, self._keys, {**self._settings, **changes})

    def trigger(self, trigger: Trigger) -> Any:  # type: ignore[type-arg]
        """Replace the assigner's default trigger (it sees tagged elements, see :mod:`~pyspark_flinkish.core.tagged_union`)."""
        if not isinstance(trigger, Trigger):
            msg = f"trigger() needs a Trigger; got {type(trigger).__name__} {trigger!r}"
            raise InvalidTypeError(msg)
        return self._with(trigger=trigger)

    def evictor(self, evictor: Evictor) -> Any:  # type: ignore[type-arg]
        """Evict tagged elements before/after each firing (the window buffers all of them)."""
        if not isinstance(evictor, Evictor):
            msg = f"evictor() needs an Evictor; got {type(evictor).__name__} {evictor!r}"
            raise InvalidTypeError(msg)
        return self._with(evictor=evictor)

    def allowed_lateness(self, time_ms: TimeLike) -> Any:
        """Keep windows ``time_ms`` past their end; a late element within it fires the window again, with the whole
        join or co-group of the window."""
        ms = to_millis("allowed_lateness", time_ms)
        if ms < 0:
            msg = f"allowed_lateness cannot be negative; got {ms} ms"
            raise InvalidArgumentError(msg)
        return self._with(allowed_lateness=ms)

    def _window_function(self, function: Any) -> CoGroupWindowFunction:
        raise NotImplementedError

    def apply(self, function: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        """Run the function at every firing of every key's window; results carry the window's ``max_timestamp``."""
        window_function = self._window_function(function)
        left = self._left.map(tag_left).name(f"{self.kind}: tag left")
        right = self._right.map(tag_right).name(f"{self.kind}: tag right")
        selector = UnionKeySelector(self._keys["left"], self._keys["right"])
        windowed = left.union(right).key_by(selector, self._keys.get("type")).window(self._settings["assigner"])
        if self._settings.get("trigger") is not None:
            windowed = windowed.trigger(self._settings["trigger"])
        if self._settings.get("evictor") is not None:
            windowed = windowed.evictor(self._settings["evictor"])
        if self._settings.get("allowed_lateness"):
            windowed = windowed.allowed_lateness(self._settings["allowed_lateness"])
        return windowed.apply(window_function, output_type)


class _Where:
    def __init__(self, with_window: type, left: DataStream, right: DataStream, key: Callable[[Any], Any], key_type: Any) -> None:
        self._cls = with_window
        self._left = left
        self._right = right
        self._key = key
        self._key_type = key_type

    def equal_to(self, key_selector: Any, key_type: Optional[TypeInformation] = None) -> _EqualTo:
        """The right input's key; elements join when their keys are equal."""
        right_key = _key_selector(key_selector, "equal_to()'s key selector")
        keys = {"left": self._key, "right": right_key, "type": self._key_type if self._key_type is not None else key_type}
        return _EqualTo(self._cls, self._left, self._right, keys)


class _EqualTo:
    def __init__(self, with_window: type, left: DataStream, right: DataStream, keys: Dict[str, Any]) -> None:
        self._cls = with_window
        self._left = left
        self._right = right
        self._keys = keys

    def window(self, assigner: WindowAssigner) -> Any:  # type: ignore[type-arg]
        """The windows both inputs are grouped into, per key (any assigner, sessions included)."""
        if not isinstance(assigner, WindowAssigner):
            msg = f"window() needs a WindowAssigner; got {type(assigner).__name__} {assigner!r}"
            raise InvalidTypeError(msg)
        return self._cls(self._left, self._right, self._keys, {"assigner": assigner})


class _TwoStreams:
    _with_window: type = _WithWindow

    def __init__(self, input1: DataStream, input2: DataStream) -> None:
        _check_inputs(input1, input2, "join/co_group")
        self._left = input1
        self._right = input2

    def where(self, key_selector: Any, key_type: Optional[TypeInformation] = None) -> _Where:
        """The left input's key."""
        key = _key_selector(key_selector, "where()'s key selector")
        return _Where(self._with_window, self._left, self._right, key, key_type)


class JoinedStreamsWithWindow(_WithWindow):
    """Flink's ``JoinedStreams.WithWindow``: ``apply(JoinFunction | FlatJoinFunction | callable)``."""

    kind = "Join"

    def _window_function(self, function: Any) -> CoGroupWindowFunction:
        return CoGroupWindowFunction(JoinCoGroup(function))


class CoGroupedStreamsWithWindow(_WithWindow):
    """Flink's ``CoGroupedStreams.WithWindow``: ``apply(CoGroupFunction | callable)``."""

    kind = "CoGroup"

    def _window_function(self, function: Any) -> CoGroupWindowFunction:
        return CoGroupWindowFunction(function)


class JoinedStreams(_TwoStreams):
    """``a.join(b)``: an inner join of two streams per key and window."""

    _with_window = JoinedStreamsWithWindow


class CoGroupedStreams(_TwoStreams):
    """``a.co_group(b)``: both streams' elements per key and window, handed to a ``CoGroupFunction``."""

    _with_window = CoGroupedStreamsWithWindow


class IntervalJoin:
    """``left.interval_join(right)`` of two keyed streams: choose the interval with ``between``."""

    def __init__(self, left: KeyedStream, right: KeyedStream) -> None:
        _check_inputs(left, right, "interval_join")
        if not hasattr(right, "_key_selector"):  # a KeyedStream
            msg = "interval_join() joins two keyed streams: call key_by(...) on the other stream first"
            raise InvalidPipelineError(msg)
        self._left = left
        self._right = right
        self._event_time = True

    def in_event_time(self) -> IntervalJoin:
        return self

    def in_processing_time(self) -> IntervalJoin:
        """Accepted as in Flink, whose ``between`` then refuses it: interval joins are event time only."""
        self._event_time = False
        return self

    def between(self, lower_bound: TimeLike, upper_bound: TimeLike) -> IntervalJoined:
        """Join ``left`` with every ``right`` of the same key with ``left.ts + lower <= right.ts <= left.ts + upper``."""
        if not self._event_time:
            msg = "interval joins (time-bounded stream joins) are only supported in event time, as in Flink"
            raise UnsupportedFeatureError(msg)
        lower = to_millis("between()'s lower bound", lower_bound)
        upper = to_millis("between()'s upper bound", upper_bound)
        interval_bounds(lower, upper, True, True)  # lower <= upper, now
        return IntervalJoined(self._left, self._right, lower, upper)


class IntervalJoined:
    """An interval join with its bounds: set exclusiveness and late-data side outputs, then ``process``."""

    def __init__(self, left: KeyedStream, right: KeyedStream, lower: int, upper: int) -> None:
        self._left = left
        self._right = right
        self._lower = lower
        self._upper = upper
        self._lower_inclusive = True
        self._upper_inclusive = True
        self._left_late: Optional[OutputTag] = None
        self._right_late: Optional[OutputTag] = None

    def lower_bound_exclusive(self) -> IntervalJoined:
        self._lower_inclusive = False
        return self

    def upper_bound_exclusive(self) -> IntervalJoined:
        self._upper_inclusive = False
        return self

    @staticmethod
    def _tag(tag: Any, what: str) -> OutputTag:
        if not isinstance(tag, OutputTag):
            msg = f"{what} needs an OutputTag; got {type(tag).__name__}"
            raise InvalidTypeError(msg)
        return tag

    def side_output_left_late_data(self, output_tag: OutputTag) -> IntervalJoined:
        """Left elements behind the watermark (``ts < watermark``) go to ``output_tag`` instead of being dropped."""
        self._left_late = self._tag(output_tag, "side_output_left_late_data")
        return self

    def side_output_right_late_data(self, output_tag: OutputTag) -> IntervalJoined:
        """Right elements behind the watermark go to ``output_tag`` instead of being dropped."""
        self._right_late = self._tag(output_tag, "side_output_right_late_data")
        return self

    def process(self, process_join_function: ProcessJoinFunction, output_type: Optional[TypeInformation] = None) -> DataStream:  # type: ignore[type-arg]
        """Call ``process_element(left, right, ctx)`` for every pair in range, when the later of the two arrives."""
        function = process_join_function
        if isinstance(function, type) or not callable(getattr(function, "process_element", None)):
            msg = f"process() needs a ProcessJoinFunction instance; got {function!r}"
            raise InvalidTypeError(msg)
        lower, upper = interval_bounds(self._lower, self._upper, self._lower_inclusive, self._upper_inclusive)
        left, right = self._left, self._right
        tagged_left = left.map(tag_left).name("IntervalJoin: tag left")
        tagged_right = right.map(tag_right).name("IntervalJoin: tag right")
        inputs = tagged_left.union(tagged_right).name("IntervalJoin: inputs")
        inputs._t.spec = TwoInputUnionSpec()  # the two inputs' watermarks combine as a two-input operator's
        selector = UnionKeySelector(left._key_selector, right._key_selector)
        left_late, right_late = self._left_late, self._right_late

        def factory() -> IntervalJoinOperator:
            return IntervalJoinOperator("IntervalJoin", selector, lower, upper, function, left_late, right_late)

        key_type = left._key_type if left._key_type is not None else right._key_type
        t = inputs._one_input("IntervalJoin", factory, output_type, IntervalJoinSpec(selector, key_type), keyed=True)
        return type(inputs)(inputs._env, t)


__all__ = [
    "CoGroupedStreams",
    "CoGroupedStreamsWithWindow",
    "IntervalJoin",
    "IntervalJoinSpec",
    "IntervalJoined",
    "JoinedStreams",
    "JoinedStreamsWithWindow",
    "TwoInputUnionSpec",
]
