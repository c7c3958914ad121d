"""Flink's ``IntervalJoinOperator``: joins two keyed streams on ``left.ts + lower <= right.ts <= left.ts + upper``.

The operator is keyed and reads one tagged stream (:mod:`.tagged_union`) whose two inputs combine their
watermarks as a two-input operator does
(:class:`~pyspark_flinkish.core.two_input_watermarks.TwoInputWatermarkValve`). Per record, as in Flink
(``flink-runtime/.../streaming/api/operators/co/IntervalJoinOperator.java``):

1. a record without timestamp is an error; a record with ``ts < watermark`` (strictly) is late: it goes to its
   side's late-data side output if one is set, else it is dropped;
2. it is added to its side's buffer (``MapState`` timestamp -> elements, per key);
3. it is joined at once with every buffered element of the other side in range (inclusive bounds; exclusive bounds
   are ``lower + 1`` / ``upper - 1``), so each pair is emitted once, by the later arrival, at the larger timestamp;
4. a cleanup timer removes it once the watermark reaches ``ts + upper`` (left, if ``upper > 0``, else ``ts``) or
   ``ts - lower`` (right, if ``lower < 0``, else ``ts``).

Flink iterates the other buffer in its state backend's map order (unspecified); this operator goes by timestamp.
Buffers and timers are ordinary keyed state, so the Spark executors snapshot them per key like any keyed operator.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, List, Optional, Tuple

from .clock import Clock
from .errors import FlinkishError, InvalidArgumentError, InvalidTypeError
from .join_functions import ProcessJoinFunction
from .operators import KeyedOperator, call_user, close_function, open_function, short
from .records import Output, OutputTag, StreamRecord, emit_results
from .state import VOID_NAMESPACE
from .state_descriptors import MapStateDescriptor
from .tagged_union import LEFT

LEFT_BUFFER = "LEFT_BUFFER"
RIGHT_BUFFER = "RIGHT_BUFFER"
CLEANUP_LEFT = "CLEANUP_LEFT"
CLEANUP_RIGHT = "CLEANUP_RIGHT"


def interval_bounds(lower: int, upper: int, lower_inclusive: bool, upper_inclusive: bool) -> Tuple[int, int]:
    """The inclusive bounds Flink works with: ``lower <= upper`` is required, then an exclusive bound moves by one."""
    if lower > upper:
        msg = f"interval join: between(lower, upper) needs lower <= upper; got lower={lower} ms, upper={upper} ms"
        raise InvalidArgumentError(msg)
    return (lower if lower_inclusive else lower + 1, upper if upper_inclusive else upper - 1)


class _JoinContext(ProcessJoinFunction.Context):
    def __init__(self, op: IntervalJoinOperator) -> None:
        self._op = op
        self.left_ts = 0
        self.right_ts = 0
        self.result_ts = 0

    def get_left_timestamp(self) -> int:
        return self.left_ts

    def get_right_timestamp(self) -> int:
        return self.right_ts

    def get_timestamp(self) -> int:
        return self.result_ts

    def output(self, output_tag: Any, value: Any) -> None:
        if not isinstance(output_tag, OutputTag):
            msg = f"output() needs an OutputTag as first argument; got {type(output_tag).__name__} {output_tag!r}"
            raise InvalidTypeError(msg)
        self._op.output.collect_side(output_tag, StreamRecord(value, self.result_ts))


class IntervalJoinOperator(KeyedOperator):
    """The interval join of a keyed, tagged stream; ``lower``/``upper`` are the inclusive bounds
    (:func:`interval_bounds`)."""

    def __init__(
        self,
        name: str,
        key_selector: Callable[[Any], Any],
        lower: int,
        upper: int,
        function: Any,
        left_late_tag: Optional[OutputTag] = None,
        right_late_tag: Optional[OutputTag] = None,
    ) -> None:
        super().__init__(name, key_selector)
        self.lower = lower
        self.upper = upper
        self.function = function
        self.left_late_tag = left_late_tag
        self.right_late_tag = right_late_tag
        self._ctx: _JoinContext = None  # type: ignore[assignment]

    def open(self, output: Output, clock: Clock) -> None:
        super().open(output, clock)
        self.left_buffer = self.backend.create_state(MapStateDescriptor(LEFT_BUFFER), VOID_NAMESPACE)
        self.right_buffer = self.backend.create_state(MapStateDescriptor(RIGHT_BUFFER), VOID_NAMESPACE)
        self._ctx = _JoinContext(self)
        open_function(self.function, self.name, self.backend, self.subtasks)

    def process_keyed(self, key: Any, record: StreamRecord) -> None:
        side, value = record.value
        ts = record.timestamp
        is_left = side == LEFT
        if ts is None:
            msg = (
                f"{self.name}: an interval join needs elements with timestamps (event time); got "
                f"{short(value)} without one: give the source a WatermarkStrategy with a timestamp assigner"
            )
            raise FlinkishError(msg)
        if ts < self.timers.current_watermark:
            tag = self.left_late_tag if is_left else self.right_late_tag
            if tag is not None:
                self.output.collect_side(tag, StreamRecord(value, ts))
                self._count("late_records_side_output")
            else:
                self._count("late_records_dropped")
            return
        ours, other = (self.left_buffer, self.right_buffer) if is_left else (self.right_buffer, self.left_buffer)
        low, high = (self.lower, self.upper) if is_left else (-self.upper, -self.lower)
        bucket: List[Any] = list(ours.get(ts) or [])
        bucket.append(value)
        ours.put(ts, bucket)
        for other_ts, elements in sorted(other.items(), key=lambda kv: kv[0]):
            if other_ts < ts + low or other_ts > ts + high:
                continue
            for element in elements:
                if is_left:
                    self._collect(key, value, element, ts, other_ts)
                else:
                    self._collect(key, element, value, other_ts, ts)
        cleanup = ts + high if high > 0 else ts
        self.timers.register_event_time_timer(CLEANUP_LEFT if is_left else CLEANUP_RIGHT, cleanup)

    def _collect(self, key: Any, left: Any, right: Any, left_ts: int, right_ts: int) -> None:
        ctx = self._ctx
        ctx.left_ts, ctx.right_ts = left_ts, right_ts
        ctx.result_ts = max(left_ts, right_ts)
        results = call_user(
            self.function.process_element,
            lambda: f"{self.name}: process_element({short(left)}, {short(right)}) (key={short(key)})",
            left,
            right,
            ctx,
        )
        emit_results(self.output, results, ctx.result_ts)
        self._count("joined_pairs")

    def on_event_time(self, ts: int, key: Any, namespace: Hashable) -> None:
        if namespace == CLEANUP_LEFT:
            self.left_buffer.remove(ts if self.upper <= 0 else ts - self.upper)
        elif namespace == CLEANUP_RIGHT:
            self.right_buffer.remove(ts + self.lower if self.lower <= 0 else ts)
        else:
            msg = f"{self.name}: invalid interval join timer namespace {namespace!r}"
            raise FlinkishError(msg)

    def on_processing_time(self, ts: int, key: Any, namespace: Hashable) -> None:
        return None

    def close(self) -> None:
        close_function(self.function, self.name)


__all__ = [
    "CLEANUP_LEFT",
    "CLEANUP_RIGHT",
    "LEFT_BUFFER",
    "RIGHT_BUFFER",
    "IntervalJoinOperator",
    "interval_bounds",
]
