"""PyFlink's ``pyflink.datastream``: the environment, streams, output tags and the replay source.

Swap ``pyflink.datastream`` for ``pyspark_flinkish.datastream`` and ``pyflink.common`` for
``pyspark_flinkish.common``; submodules ``window``, ``functions``, ``state``, ``async_data_stream``,
``async_retry_strategies`` and ``async_retry_predicates`` sit where PyFlink has them.
"""

from __future__ import annotations

from ..common.job_execution_result import JobExecutionResult
from ..core.clock import ManualClock, SystemClock
from ..core.functions import TimeDomain
from ..core.records import OutputTag
from .all_window import AllWindowedStream
from .async_data_stream import AsyncDataStream
from .checkpointing_mode import CheckpointingMode
from .connected_streams import BroadcastConnectedStream, BroadcastStream, ConnectedStreams
from .data_stream import CloseableIterator, DataStream, DataStreamSink, KeyedStream, WindowedStream
from .execution_mode import RuntimeExecutionMode
from .functions import (
    AggregateFunction,
    AllWindowFunction,
    AsyncFunction,
    AsyncRetryPredicate,
    AsyncRetryStrategy,
    BroadcastProcessFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    Partitioner,
    ProcessAllWindowFunction,
    ProcessFunction,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
    SinkFunction,
    TimerService,
    WindowFunction,
)
from .sources import CollectionSource, MicroBatch, MicroBatchSource
from .stream_execution_environment import StreamExecutionEnvironment
from .window import CountWindow, MergingWindowAssigner, TimeWindow, Trigger, TriggerResult, Window, WindowAssigner

__all__ = [
    "BroadcastConnectedStream",
    "BroadcastProcessFunction",
    "BroadcastStream",
    "CoFlatMapFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "ConnectedStreams",
    "KeyedBroadcastProcessFunction",
    "KeyedCoProcessFunction",
    "AggregateFunction",
    "AllWindowFunction",
    "AllWindowedStream",
    "CheckpointingMode",
    "ProcessAllWindowFunction",
    "AsyncDataStream",
    "AsyncFunction",
    "AsyncRetryPredicate",
    "AsyncRetryStrategy",
    "CountWindow",
    "FilterFunction",
    "FlatMapFunction",
    "KeySelector",
    "KeyedProcessFunction",
    "MapFunction",
    "MergingWindowAssigner",
    "Partitioner",
    "ProcessFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeExecutionMode",
    "RuntimeContext",
    "SinkFunction",
    "TimeWindow",
    "TimerService",
    "Trigger",
    "TriggerResult",
    "Window",
    "WindowAssigner",
    "WindowFunction",
    "CloseableIterator",
    "CollectionSource",
    "DataStream",
    "DataStreamSink",
    "JobExecutionResult",
    "KeyedStream",
    "ManualClock",
    "MicroBatch",
    "MicroBatchSource",
    "OutputTag",
    "StreamExecutionEnvironment",
    "SystemClock",
    "TimeDomain",
    "WindowedStream",
]
