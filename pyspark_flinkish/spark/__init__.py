"""Spark execution: the only package that imports ``pyspark.sql``.

``StreamExecutionEnvironment.get_execution_environment(spark)`` returns a :class:`SparkStreamExecutionEnvironment`;
the same pipeline code then runs as a Spark Structured Streaming query through the foreachBatch executor.
"""

from __future__ import annotations

from .environment import SparkJobHandle, SparkStreamExecutionEnvironment
from .session import configure, session

__all__ = ["SparkJobHandle", "SparkStreamExecutionEnvironment", "configure", "session"]
