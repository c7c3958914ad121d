"""``pyflink.datastream.functions``: the user-function interfaces."""

from __future__ import annotations

from ..core.all_window_functions import AllWindowFunction, ProcessAllWindowFunction
from ..core.functions import (
    AggregateFunction,
    FilterFunction,
    FlatMapFunction,
    Function,
    KeyedProcessFunction,
    KeyedStateStore,
    KeySelector,
    MapFunction,
    ProcessFunction,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
    SinkFunction,
    TimeDomain,
    TimerService,
    WindowFunction,
)

__all__ = [
    "AggregateFunction",
    "AllWindowFunction",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "KeySelector",
    "KeyedProcessFunction",
    "KeyedStateStore",
    "MapFunction",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "SinkFunction",
    "TimeDomain",
    "TimerService",
    "WindowFunction",
]
