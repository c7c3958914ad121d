"""``pyflink.datastream.functions``: the user-function interfaces."""

from __future__ import annotations

from ..core.all_window_functions import AllWindowFunction, ProcessAllWindowFunction
from ..core.async_functions import AsyncFunction, AsyncFunctionDescriptor, AsyncRetryPredicate, AsyncRetryStrategy
from ..core.co_functions import (
    BaseBroadcastProcessFunction,
    BroadcastProcessFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
)
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
from ..core.join_functions import CoGroupFunction, FlatJoinFunction, JoinFunction, ProcessJoinFunction
from ..core.partitioning import Partitioner

__all__ = [
    "BaseBroadcastProcessFunction",
    "BroadcastProcessFunction",
    "CoFlatMapFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "KeyedBroadcastProcessFunction",
    "KeyedCoProcessFunction",
    "AggregateFunction",
    "AllWindowFunction",
    "AsyncFunction",
    "AsyncFunctionDescriptor",
    "AsyncRetryPredicate",
    "AsyncRetryStrategy",
    "CoGroupFunction",
    "FilterFunction",
    "FlatJoinFunction",
    "FlatMapFunction",
    "Function",
    "JoinFunction",
    "KeyedProcessFunction",
    "KeyedStateStore",
    "KeySelector",
    "MapFunction",
    "ProcessAllWindowFunction",
    "Partitioner",
    "ProcessFunction",
    "ProcessJoinFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "SinkFunction",
    "TimeDomain",
    "TimerService",
    "WindowFunction",
]
