"""User-function interfaces, named and shaped as in ``pyflink.datastream.functions``.

Functions return (or yield) their outputs. A yielded ``(OutputTag, value)`` pair goes to that side output,
as in PyFlink; ``ctx.output(tag, value)`` does the same. Wherever PyFlink accepts a plain callable, so do we.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from typing import Any, Dict, Generic, Iterable, Optional, TypeVar

from .state import AggregatingState, ListState, MapState, ReducingState, ValueState
from .state_descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from .windows import Window

IN = TypeVar("IN")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")
ACC = TypeVar("ACC")
W = TypeVar("W", bound=Window)
W2 = TypeVar("W2", bound=Window)


class KeyedStateStore(ABC):
    """Creates keyed state from descriptors (``get_state``, ``get_list_state``, ...)."""

    @abstractmethod
    def get_state(self, state_descriptor: ValueStateDescriptor) -> ValueState[Any]: ...

    @abstractmethod
    def get_list_state(self, state_descriptor: ListStateDescriptor) -> ListState[Any]: ...

    @abstractmethod
    def get_map_state(self, state_descriptor: MapStateDescriptor) -> MapState[Any, Any]: ...

    @abstractmethod
    def get_reducing_state(self, state_descriptor: ReducingStateDescriptor) -> ReducingState[Any]: ...

    @abstractmethod
    def get_aggregating_state(self, state_descriptor: AggregatingStateDescriptor) -> AggregatingState[Any, Any]: ...


class RuntimeContext(KeyedStateStore):
    """Given to ``open()``: the task's identity, job parameters and (in keyed operators) keyed state."""

    @abstractmethod
    def get_task_name(self) -> str: ...

    @abstractmethod
    def get_number_of_parallel_subtasks(self) -> int: ...

    @abstractmethod
    def get_index_of_this_subtask(self) -> int: ...

    def get_max_number_of_parallel_subtasks(self) -> int:
        return self.get_number_of_parallel_subtasks()

    def get_attempt_number(self) -> int:
        return 0

    def get_task_name_with_subtasks(self) -> str:
        return f"{self.get_task_name()} ({self.get_index_of_this_subtask() + 1}/{self.get_number_of_parallel_subtasks()})"

    def get_job_parameter(self, key: str, default_value: Optional[str] = None) -> Optional[str]:
        return default_value

    def get_metrics_group(self) -> None:
        return None


class Function(ABC):
    """Base of all user functions: ``open`` is called once before the first element, ``close`` at the end."""

    def open(self, runtime_context: RuntimeContext) -> None:  # noqa: B027 - optional hook
        pass

    def close(self) -> None:  # noqa: B027 - optional hook
        pass


class MapFunction(Function, Generic[IN, OUT]):
    @abstractmethod
    def map(self, value: IN) -> OUT: ...


class FlatMapFunction(Function, Generic[IN, OUT]):
    @abstractmethod
    def flat_map(self, value: IN) -> Iterable[OUT]: ...


class FilterFunction(Function, Generic[IN]):
    @abstractmethod
    def filter(self, value: IN) -> bool: ...


class KeySelector(Function, Generic[IN, KEY]):
    @abstractmethod
    def get_key(self, value: IN) -> KEY: ...


class ReduceFunction(Function, Generic[IN]):
    """Combines two values into one of the same type; used incrementally by windows and state."""

    @abstractmethod
    def reduce(self, value1: IN, value2: IN) -> IN: ...


class AggregateFunction(Function, Generic[IN, ACC, OUT]):
    """Incremental aggregation: ``create_accumulator``, ``add``, ``get_result``; ``merge`` for sessions."""

    @abstractmethod
    def create_accumulator(self) -> ACC: ...

    @abstractmethod
    def add(self, value: IN, accumulator: ACC) -> ACC: ...

    @abstractmethod
    def get_result(self, accumulator: ACC) -> OUT: ...

    def merge(self, acc_a: ACC, acc_b: ACC) -> ACC:
        msg = f"{type(self).__name__}.merge is needed for merging (session) windows"
        raise NotImplementedError(msg)


class TimeDomain(enum.Enum):
    """Which clock fired a timer."""

    EVENT_TIME = 0
    PROCESSING_TIME = 1


class TimerService(ABC):
    """Time and timers of a keyed process function (timers are per key, de-duplicated by timestamp)."""

    @abstractmethod
    def current_processing_time(self) -> int: ...

    @abstractmethod
    def current_watermark(self) -> int: ...

    @abstractmethod
    def register_processing_time_timer(self, timestamp: int) -> None: ...

    @abstractmethod
    def register_event_time_timer(self, timestamp: int) -> None: ...

    @abstractmethod
    def delete_processing_time_timer(self, timestamp: int) -> None: ...

    @abstractmethod
    def delete_event_time_timer(self, timestamp: int) -> None: ...


class BaseContext(ABC):
    @abstractmethod
    def timestamp(self) -> Optional[int]:
        """The current element's (or firing timer's) timestamp; None if it has none."""

    @abstractmethod
    def timer_service(self) -> TimerService: ...

    @abstractmethod
    def output(self, output_tag: Any, value: Any) -> None:
        """Emit ``value`` to the side output ``output_tag``."""


class ProcessFunction(Function, Generic[IN, OUT]):
    """Non-keyed low-level processing: one call per element; no keyed state, no timers."""

    class Context(BaseContext):
        pass

    @abstractmethod
    def process_element(self, value: IN, ctx: ProcessFunction.Context) -> Optional[Iterable[OUT]]: ...


class KeyedProcessFunction(Function, Generic[KEY, IN, OUT]):
    """Keyed low-level processing with keyed state and event-/processing-time timers.

    ``on_timer`` runs under the timer's key; in event time ``ctx.timer_service().current_watermark()`` is
    the watermark that fired it. Outputs from ``on_timer`` carry the timer's timestamp (event time).
    """

    class Context(BaseContext):
        @abstractmethod
        def get_current_key(self) -> Any: ...

    class OnTimerContext(Context):
        @abstractmethod
        def time_domain(self) -> TimeDomain: ...

    @abstractmethod
    def process_element(self, value: IN, ctx: KeyedProcessFunction.Context) -> Optional[Iterable[OUT]]: ...

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Optional[Iterable[OUT]]:
        return None


class ProcessWindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """Called per window firing with all elements the window holds (or the one pre-aggregated value).

    ``context.window_state()`` lives per key and window until cleanup (not with merging windows);
    ``context.global_state()`` per key. ``clear(context)`` runs once, when the window is cleaned up.
    ``ProcessWindowFunction.Context[TimeWindow]`` is subscriptable, as in PyFlink.
    """

    class Context(ABC, Generic[W2]):
        @abstractmethod
        def window(self) -> Any: ...

        @abstractmethod
        def current_processing_time(self) -> int: ...

        @abstractmethod
        def current_watermark(self) -> int: ...

        @abstractmethod
        def window_state(self) -> KeyedStateStore: ...

        @abstractmethod
        def global_state(self) -> KeyedStateStore: ...

        @abstractmethod
        def output(self, output_tag: Any, value: Any) -> None: ...

    @abstractmethod
    def process(self, key: KEY, context: ProcessWindowFunction.Context, elements: Iterable[IN]) -> Optional[Iterable[OUT]]: ...

    def clear(self, context: ProcessWindowFunction.Context) -> None:
        pass


class WindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """The legacy window function: ``apply(key, window, inputs)``."""

    @abstractmethod
    def apply(self, key: KEY, window: W, inputs: Iterable[IN]) -> Optional[Iterable[OUT]]: ...


class SinkFunction(Function, Generic[IN]):
    """Consumes every record of a stream: ``invoke(value, context)``."""

    @abstractmethod
    def invoke(self, value: IN, context: Any) -> None: ...


Parameters = Dict[str, str]

__all__ = [
    "AggregateFunction",
    "BaseContext",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "KeySelector",
    "KeyedProcessFunction",
    "KeyedStateStore",
    "MapFunction",
    "ProcessFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "SinkFunction",
    "TimeDomain",
    "TimerService",
    "WindowFunction",
]
