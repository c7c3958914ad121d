"""The pure-Python semantic core: Flink's windowing, triggers, evictors, watermarks, keyed state and
timers, engine-independent. It never imports pyspark or py4j and never reads a wall clock itself; the
JVM-free engine and the Spark executors both drive these same classes."""

from __future__ import annotations

from .javamath import LONG_MAX, LONG_MIN

__all__ = ["LONG_MAX", "LONG_MIN"]
