"""Apache Flink's DataStream semantics on Apache Spark Structured Streaming.

Import as you would from PyFlink: ``pyspark_flinkish.datastream`` (with ``window``, ``functions`` and
``state`` submodules) and ``pyspark_flinkish.common``. The most used names are re-exported here.
"""

from __future__ import annotations

from .core.durations import Duration, Time
from .core.errors import FlinkishError
from .core.records import OutputTag
from .core.watermarks import WatermarkStrategy
from .datastream import DataStream, StreamExecutionEnvironment

# the executors register themselves with ``datastream.executors``, the one place an environment finds them
from . import local, spark  # noqa: F401  isort: skip

__version__ = "0.1.0"

__all__ = [
    "DataStream",
    "Duration",
    "FlinkishError",
    "OutputTag",
    "StreamExecutionEnvironment",
    "Time",
    "WatermarkStrategy",
    "__version__",
]
