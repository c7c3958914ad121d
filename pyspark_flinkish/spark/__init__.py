"""Spark execution: the only package that imports ``pyspark.sql``.

``StreamExecutionEnvironment.get_execution_environment(spark)`` returns a :class:`SparkStreamExecutionEnvironment`;
the same pipeline code then runs as a Spark Structured Streaming query through the foreachBatch executor.
Importing this package registers it as the ``"spark"`` executor of ``datastream.executors`` (nothing here imports
pyspark until a pipeline runs).
"""

from __future__ import annotations

from ..datastream.executors import SPARK, register_executor
from .environment import SparkJobHandle, SparkStreamExecutionEnvironment
from .session import configure, session
from .state_reader import read_state, read_timers, read_windows

register_executor(SPARK, SparkStreamExecutionEnvironment)

__all__ = [
    "SparkJobHandle",
    "SparkStreamExecutionEnvironment",
    "configure",
    "read_state",
    "read_timers",
    "read_windows",
    "session",
]
