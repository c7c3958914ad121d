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
from .async_data_stream import AsyncDataStream
from .data_stream import CloseableIterator, DataStream, DataStreamSink, KeyedStream, WindowedStream
from .functions import (
    AggregateFunction,
    AsyncFunction,
    AsyncRetryPredicate,
    AsyncRetryStrategy,
    FilterFunction,
    FlatMapFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    Partitioner,
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
    "AggregateFunction",
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
