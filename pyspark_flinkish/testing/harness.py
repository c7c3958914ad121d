"""Operator test harnesses, like Flink's ``KeyedOneInputStreamOperatorTestHarness``: push elements,
watermarks and processing time into one operator and read what it emitted — no JVM, no engine.

Example:
    >>> from pyspark_flinkish.datastream.window import TumblingEventTimeWindows
    >>> h = WindowHarness.reduce(TumblingEventTimeWindows.of(10), lambda a, b: a + b, key_selector=lambda v: "k")
    >>> h.process_element(3, timestamp=3); h.process_element(4, timestamp=7)
    >>> h.process_watermark(9)
    >>> h.extract_output_values()
    [7]
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from ..core.clock import ManualClock
from ..core.evictors import Evictor
from ..core.functions import KeyedProcessFunction
from ..core.javamath import LONG_MAX
from ..core.operators import KeyedProcessOperator, StreamOperator
from ..core.records import OutputTag, StreamRecord
from ..core.triggers import Trigger
from ..core.window_operator import PassThroughWindowFunction, WindowContents, WindowOperator


class OneInputHarness:
    """Drives one operator. Outputs are kept in emission order, with watermarks interleaved in
    :attr:`events` as ``("record", StreamRecord)``, ``("side", tag, StreamRecord)``, ``("watermark", w)``."""

    def __init__(self, operator: StreamOperator, clock: Optional[ManualClock] = None) -> None:
        self.operator = operator
        self.clock = clock if clock is not None else ManualClock(0)
        self.events: List[Tuple[Any, ...]] = []
        operator.open(self, self.clock)

    # -- Output protocol
    def collect(self, record: StreamRecord) -> None:
        self.events.append(("record", record))

    def collect_side(self, tag: OutputTag, record: StreamRecord) -> None:
        self.events.append(("side", tag, record))

    def emit_watermark(self, watermark: int) -> None:
        self.events.append(("watermark", watermark))

    def emit_idle(self, idle: bool) -> None:
        self.events.append(("idle", idle))

    # -- inputs
    def process_element(self, value: Any, timestamp: Optional[int] = None) -> None:
        self.operator.process_element(StreamRecord(value, timestamp))

    def process_watermark(self, watermark: int) -> None:
        self.operator.process_watermark(watermark)

    def end_input(self) -> None:
        """Flink's end of input: the ``LONG_MAX`` watermark fires every event-time timer."""
        self.operator.process_watermark(LONG_MAX)
        self.operator.end_input()

    def set_processing_time(self, now: int) -> None:
        """Move the clock to ``now`` and fire processing-time timers that are due (``timestamp < now``)."""
        self.clock.set(now)
        self.operator.advance_processing_time(now)

    # -- outputs
    def get_output(self) -> List[StreamRecord]:
        return [e[1] for e in self.events if e[0] == "record"]

    def extract_output_values(self) -> List[Any]:
        return [r.value for r in self.get_output()]

    def get_side_output(self, tag: OutputTag) -> List[StreamRecord]:
        return [e[2] for e in self.events if e[0] == "side" and e[1] == tag]

    def extract_side_output_values(self, tag: OutputTag) -> List[Any]:
        return [r.value for r in self.get_side_output(tag)]

    def watermarks(self) -> List[int]:
        return [e[1] for e in self.events if e[0] == "watermark"]

    def clear_output(self) -> None:
        self.events.clear()

    # -- state inspection
    def snapshot(self) -> Dict[Any, Any]:
        """Every key's snapshot (state and timers), for assertions on cleanup."""
        op = self.operator
        keys = op.active_keys() if hasattr(op, "active_keys") else []
        return {k: op.snapshot_key(k) for k in keys}  # type: ignore[attr-defined]

    def num_event_time_timers(self) -> int:
        return len(self.operator.timers.event_timers)  # type: ignore[attr-defined]

    def num_processing_time_timers(self) -> int:
        return len(self.operator.timers.processing_timers)  # type: ignore[attr-defined]


class KeyedProcessHarness(OneInputHarness):
    """A harness around a ``KeyedProcessFunction``."""

    def __init__(
        self, function: KeyedProcessFunction, key_selector: Callable[[Any], Any], clock: Optional[ManualClock] = None
    ) -> None:  # type: ignore[type-arg]
        super().__init__(KeyedProcessOperator("KeyedProcess", key_selector, function), clock)


class WindowHarness(OneInputHarness):
    """A harness around a window operator; build it with :meth:`process`, :meth:`reduce` or :meth:`aggregate`."""

    @classmethod
    def _make(
        cls,
        assigner: Any,
        contents: WindowContents,
        window_function: Any,
        key_selector: Callable[[Any], Any],
        trigger: Optional[Trigger] = None,  # type: ignore[type-arg]
        evictor: Optional[Evictor] = None,  # type: ignore[type-arg]
        allowed_lateness: int = 0,
        late_data_tag: Optional[OutputTag] = None,
        clock: Optional[ManualClock] = None,
    ) -> WindowHarness:
        op = WindowOperator(
            "Window",
            key_selector,
            assigner,
            trigger if trigger is not None else assigner.get_default_trigger(),
            contents,
            window_function,
            evictor,
            allowed_lateness if assigner.is_event_time() else 0,
            late_data_tag,
            [window_function],
        )
        return cls(op, clock)

    @classmethod
    def process(
        cls, assigner: Any, process_window_function: Any, key_selector: Callable[[Any], Any], **options: Any
    ) -> WindowHarness:
        """Window with ``process(ProcessWindowFunction)`` (all elements buffered)."""
        return cls._make(assigner, WindowContents("list"), process_window_function, key_selector, **options)

    @classmethod
    def reduce(
        cls,
        assigner: Any,
        reduce_function: Callable[[Any, Any], Any],
        key_selector: Callable[[Any], Any],
        window_function: Any = None,
        **options: Any,
    ) -> WindowHarness:
        fn = getattr(reduce_function, "reduce", reduce_function)
        wf = window_function if window_function is not None else PassThroughWindowFunction()
        return cls._make(assigner, WindowContents("reduce", reduce_fn=fn), wf, key_selector, **options)

    @classmethod
    def aggregate(
        cls,
        assigner: Any,
        aggregate_function: Any,
        key_selector: Callable[[Any], Any],
        window_function: Any = None,
        **options: Any,
    ) -> WindowHarness:
        wf = window_function if window_function is not None else PassThroughWindowFunction()
        return cls._make(assigner, WindowContents("aggregate", agg_fn=aggregate_function), wf, key_selector, **options)


__all__ = ["KeyedProcessHarness", "OneInputHarness", "WindowHarness"]
