"""PyFlink's ``pyflink.datastream``: the environment, streams, output tags and the replay source.

Swap ``pyflink.datastream`` for ``pyspark_flinkish.datastream`` and ``pyflink.common`` for
``pyspark_flinkish.common``; submodules ``window``, ``functions`` and ``state`` sit where PyFlink has them.
"""

from __future__ import annotations

from ..core.clock import ManualClock, SystemClock
from ..core.functions import TimeDomain
from ..core.records import OutputTag
from .data_stream import CloseableIterator, DataStream, DataStreamSink, KeyedStream, WindowedStream
from .sources import CollectionSource, MicroBatch, MicroBatchSource
from .stream_execution_environment import JobExecutionResult, StreamExecutionEnvironment

__all__ = [
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
