"""The one dispatch point between a job's description and what runs it.

``datastream`` describes jobs and imports no executor. Each executor package registers itself here when it is
imported (``pyspark_flinkish/__init__.py`` imports both, so they are registered before any pipeline is built):

* :data:`LOCAL` -- ``pyspark_flinkish.local`` registers a *runner* ``(sinks, clock, progress, job_name) ->
  JobExecutionResult``: the JVM-free engine that ``StreamExecutionEnvironment.execute()`` uses;
* :data:`SPARK` -- ``pyspark_flinkish.spark`` registers an *environment factory* ``(spark, clock=..., **options)``
  that ``StreamExecutionEnvironment.get_execution_environment(spark)`` returns.

An environment names the executor that runs it (``StreamExecutionEnvironment.executor``); what only one
executor can do (``foreach_batch``, ``DeltaSink``, ``to_dataframe``) is refused up front on the others.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

from ..core.errors import UnsupportedFeatureError

LOCAL = "local"
"""The JVM-free engine (``pyspark_flinkish.local``)."""

SPARK = "spark"
"""The Spark executors (``pyspark_flinkish.spark``)."""

_registered: Dict[str, Callable[..., Any]] = {}


def register_executor(name: str, entry: Callable[..., Any]) -> None:
    """Called by an executor package when imported: ``entry`` is the local runner or the Spark environment factory."""
    _registered[name] = entry


def executor_entry(name: str) -> Callable[..., Any]:
    """The registered entry of executor ``name``; an error naming it when its package was never imported."""
    entry = _registered.get(name)
    if entry is None:
        msg = f"no {name!r} executor is registered: import pyspark_flinkish (it registers the local and Spark executors)"
        raise UnsupportedFeatureError(msg)
    return entry


__all__ = ["LOCAL", "SPARK", "executor_entry", "register_executor"]
