"""``pyflink.datastream.functions``: the user-function interfaces."""

from __future__ import annotations

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
from ..core.partitioning import Partitioner

__all__ = [
    "AggregateFunction",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "KeySelector",
    "KeyedProcessFunction",
    "KeyedStateStore",
    "MapFunction",
    "Partitioner",
    "ProcessFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "SinkFunction",
    "TimeDomain",
    "TimerService",
    "WindowFunction",
]
