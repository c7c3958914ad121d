"""The one dispatch point between a job's description and what runs it.

``datastream`` describes jobs and imports no executor. Each executor package registers itself here when it is
imported (``pyspark_flinkish/__init__.py`` imports both, so they are registered before any pipeline is built):

* :data:`LOCAL` -- ``pyspark_flinkish.local`` registers a *runner* ``(sinks, clock, progress, job_name) ->
  JobExecutionResult``: the JVM-free engine that ``StreamExecutionEnvironment.execute()`` uses;
* :data:`SPARK` -- ``pyspark_flinkish.spark`` registers an *environment factory* ``(spark, clock=..., **options)``
  that ``StreamExecutionEnvironment.get_execution_environment(spark)`` returns.

An environment names the executor that runs it (``StreamExecutionEnvironment.executor``); what only Spark can do
(:data:`SPARK_ONLY`: ``from_kafka``, ``from_dataframe``, ``from_delta``, a ``KafkaSource``, ``foreach_batch``,
``to_dataframe``, ``DeltaSink``) is refused up front on the others by :func:`require_spark`, with one error shape:
the feature, why it needs Spark, how to get the Spark environment and what the JVM-free engine offers instead.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, NamedTuple

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


class SparkOnly(NamedTuple):
    """Why a feature needs the Spark environment, and what to do on the JVM-free engine instead."""

    why: str
    local_alternative: str
    spark_options: str = ""
    """Arguments of ``get_execution_environment(spark, ...)`` the feature needs besides the session."""


_KAFKA = SparkOnly(
    "Kafka is read by Spark's Kafka source",
    "replay recorded records with from_source(MicroBatchSource([...]), strategy) or from_micro_batches([...])",
)

SPARK_ONLY: Dict[str, SparkOnly] = {
    "from_kafka": _KAFKA,
    "KafkaSource": _KAFKA,
    "from_dataframe": SparkOnly(
        "a DataFrame is Spark's", "give the rows to from_collection([...]) or from_micro_batches([...])"
    ),
    "from_delta": SparkOnly(
        "Delta is read through Spark", "the JVM-free engine has no Delta reader: replay the rows with from_micro_batches([...])"
    ),
    "foreach_batch": SparkOnly(
        "it hands every micro-batch to the function as a Spark DataFrame", "use add_sink(...) or execute_and_collect()"
    ),
    "to_dataframe()": SparkOnly(
        "it returns a streaming DataFrame",
        "use add_sink(...) or execute_and_collect()",
        ", backend='apply_in_pandas_with_state'",
    ),
    "DeltaSink": SparkOnly(
        "Delta is written through Spark", "the JVM-free engine has no Delta writer: use add_sink(...) or execute_and_collect()"
    ),
}
"""Every feature only the Spark environment runs, by the name an error gives it."""


def spark_only_error(executor: str, feature: str, detail: str = "") -> UnsupportedFeatureError:
    """The error refusing the Spark-only ``feature`` (a key of :data:`SPARK_ONLY`; ``detail``, e.g. the table,
    follows its name in the message) on ``executor``."""
    entry = SPARK_ONLY[feature]
    msg = (
        f"{feature}{detail} needs the Spark environment ({entry.why}): use "
        f"StreamExecutionEnvironment.get_execution_environment(spark{entry.spark_options}); on the {executor!r} "
        f"executor (the JVM-free engine), {entry.local_alternative}"
    )
    return UnsupportedFeatureError(msg)


def require_spark(executor: str, feature: str, detail: str = "") -> None:
    """Refuse the Spark-only ``feature`` up front (:func:`spark_only_error`) unless ``executor`` is :data:`SPARK`."""
    if executor != SPARK:
        raise spark_only_error(executor, feature, detail)


__all__ = ["LOCAL", "SPARK", "SPARK_ONLY", "SparkOnly", "executor_entry", "register_executor", "require_spark",
           "spark_only_error"]
