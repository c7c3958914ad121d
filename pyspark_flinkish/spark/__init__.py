"""Spark execution: the only package that imports ``pyspark.sql``.

``StreamExecutionEnvironment.get_execution_environment(spark)`` returns a :class:`SparkStreamExecutionEnvironment`;
the same pipeline code then runs as a Spark Structured Streaming query through the foreachBatch executor.
Importing this package registers it as the ``"spark"`` executor of ``datastream.executors`` (nothing here imports
pyspark until a pipeline runs).

The environment and the state reader are imported on first use (the names below resolve lazily): a Python worker
unpickling a task's function imports only the modules that function needs (``spark/columnar.py``,
``spark/keyed_partition.py`` and theirs), not the driver, Spark Connect or savepoint modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..datastream.executors import SPARK, register_executor
from .session import configure, session  # eager: the ``session`` function must win over the module's name

if TYPE_CHECKING:
    from .environment import SparkJobHandle, SparkStreamExecutionEnvironment
    from .state_reader import read_state, read_timers, read_windows

_LAZY = {
    "SparkJobHandle": "environment",
    "SparkStreamExecutionEnvironment": "environment",
    "read_state": "state_reader",
    "read_timers": "state_reader",
    "read_windows": "state_reader",
}


def _environment(*args: Any, **options: Any) -> Any:
    """The ``"spark"`` executor's environment factory: :class:`SparkStreamExecutionEnvironment`, imported now."""
    from .environment import SparkStreamExecutionEnvironment

    return SparkStreamExecutionEnvironment(*args, **options)


register_executor(SPARK, _environment)


def __getattr__(name: str) -> Any:
    """The environment's and the state reader's public names, imported on first use."""
    module = _LAZY.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "SparkJobHandle",
    "SparkStreamExecutionEnvironment",
    "configure",
    "read_state",
    "read_timers",
    "read_windows",
    "session",
]
