"""The pytest plugin of pyspark_flinkish: fixtures for testing pipelines and user functions.

Installed with the package, it is registered through the ``pytest11`` entry point ``pyspark_flinkish``
(disable it with ``-p no:pyspark_flinkish``; without the entry point, load it with
``-p pyspark_flinkish.testing.plugin`` or ``pytest_plugins = ["pyspark_flinkish.testing.plugin"]``).

Fixtures:

* ``jvm_free_env`` -- a fresh JVM-free ``StreamExecutionEnvironment`` (no Spark, no Java).
* ``window_harness`` / ``keyed_process_harness`` -- factories of operator test harnesses
  (:class:`~pyspark_flinkish.testing.WindowHarness`, :class:`~pyspark_flinkish.testing.KeyedProcessHarness`)
  that push elements, watermarks and processing time into one window or keyed process function, like
  Flink's operator test harnesses; no JVM. Harnesses are closed (the user function's ``close()``) at teardown.
* ``flinkish_spark`` -- one local SparkSession for the test session, from :func:`pyspark_flinkish.spark.session`
  (UTC, few shuffle partitions, Delta Lake and the Kafka connector configured); an active SparkSession is
  reused instead (and then not stopped). With ``PYSPARK_FLINKISH_REMOTE`` set (``local[2]``, ``sc://...``) it is
  a Spark Connect session. Override ``flinkish_spark_options`` to change its settings.
* ``kafka_broker`` / ``kafka_topic`` -- a single-node Kafka broker per test session and a topic factory
  (:mod:`pyspark_flinkish.testing.fixtures`).
* ``hdfs_cluster`` -- a test HDFS (Hadoop's ``MiniDFSCluster``, one NameNode and one DataNode, own JVM) per test
  session: a :class:`~pyspark_flinkish.testing.hdfs.MiniHdfs` with ``.uri`` (``hdfs://127.0.0.1:<port>``) and
  ``.client()`` (:mod:`pyspark_flinkish.testing.fixtures`).
* ``s3_server`` -- an S3-compatible server (S3Proxy, own JVM) per test session: a
  :class:`~pyspark_flinkish.testing.s3.S3Proxy` with ``.create_bucket(name)``, ``.hadoop_settings()`` (the
  ``fs.s3a.*`` of a Spark session that reaches it) and ``.filesystem()`` (:mod:`pyspark_flinkish.testing.fixtures`).
* ``driver_runs`` -- a list for the driver processes a kill test starts
  (:class:`~pyspark_flinkish.testing.sigkill.DriverRun`), whatever is left of them killed at the test's end
  (:mod:`pyspark_flinkish.testing.sigkill`).

Importing this module imports neither pyspark nor kafka-python nor hdfs-native, and starts no JVM: only the Spark,
Kafka, HDFS and S3 fixtures do, when a test requests them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

import pytest

from ..core.clock import ManualClock
from .fixtures import driver_runs, hdfs_cluster, kafka_broker, kafka_topic, s3_server
from .harness import KeyedProcessHarness, OneInputHarness, WindowHarness

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ..datastream import StreamExecutionEnvironment

__all__ = [
    "HarnessFactory",
    "driver_runs",
    "flinkish_spark",
    "flinkish_spark_options",
    "hdfs_cluster",
    "jvm_free_env",
    "kafka_broker",
    "kafka_topic",
    "keyed_process_harness",
    "s3_server",
    "window_harness",
]


class HarnessFactory:
    """Builds harnesses for one test and closes them at its end (what the ``window_harness`` and
    ``keyed_process_harness`` fixtures return).

    ``window_harness.process(assigner, fn, key_selector, **options)``, ``.reduce(...)`` and ``.aggregate(...)``
    build a :class:`~pyspark_flinkish.testing.WindowHarness` (options: ``trigger``, ``evictor``,
    ``allowed_lateness`` in ms, ``late_data_tag``, ``clock``); ``keyed_process_harness(fn, key_selector)``
    builds a :class:`~pyspark_flinkish.testing.KeyedProcessHarness`.
    """

    def __init__(self) -> None:
        self.harnesses: List[OneInputHarness] = []

    def _keep(self, harness: Any) -> Any:
        self.harnesses.append(harness)
        return harness

    def process(self, assigner: Any, function: Any, key_selector: Callable[[Any], Any], **options: Any) -> WindowHarness:
        """A window whose ``ProcessWindowFunction`` gets all the window's elements."""
        return self._keep(WindowHarness.process(assigner, function, key_selector, **options))

    def reduce(self, assigner: Any, function: Any, key_selector: Callable[[Any], Any], **options: Any) -> WindowHarness:
        """A window that reduces incrementally (``window_function=`` for a function over the result)."""
        return self._keep(WindowHarness.reduce(assigner, function, key_selector, **options))

    def aggregate(self, assigner: Any, function: Any, key_selector: Callable[[Any], Any], **options: Any) -> WindowHarness:
        """A window with an ``AggregateFunction`` (``window_function=`` for a function over the result)."""
        return self._keep(WindowHarness.aggregate(assigner, function, key_selector, **options))

    def __call__(
        self, function: Any, key_selector: Callable[[Any], Any], clock: Optional[ManualClock] = None
    ) -> KeyedProcessHarness:
        """A ``KeyedProcessFunction`` (its processing time starts at 0 on a manual clock)."""
        return self._keep(KeyedProcessHarness(function, key_selector, clock))

    def close(self) -> None:
        """Close every harness's operator (and so the user functions), like Flink's ``harness.close()``."""
        harnesses, self.harnesses = self.harnesses, []
        for harness in harnesses:
            harness.operator.close()


@pytest.fixture
def window_harness() -> Iterator[HarnessFactory]:
    """A factory of :class:`~pyspark_flinkish.testing.WindowHarness`: ``.process``, ``.reduce``, ``.aggregate``."""
    factory = HarnessFactory()
    yield factory
    factory.close()


@pytest.fixture
def keyed_process_harness() -> Iterator[HarnessFactory]:
    """A factory of :class:`~pyspark_flinkish.testing.KeyedProcessHarness`: ``keyed_process_harness(fn, key_selector)``."""
    factory = HarnessFactory()
    yield factory
    factory.close()


@pytest.fixture
def jvm_free_env() -> StreamExecutionEnvironment:
    """A new JVM-free ``StreamExecutionEnvironment.get_execution_environment()`` for each test."""
    from ..datastream import StreamExecutionEnvironment

    return StreamExecutionEnvironment.get_execution_environment()


@pytest.fixture(scope="session")
def flinkish_spark_options() -> Dict[str, Any]:
    """Keyword arguments of :func:`pyspark_flinkish.spark.session` for ``flinkish_spark``.

    Override this fixture (session-scoped) in a ``conftest.py`` to change them, e.g. to add Spark settings:
    ``dict(app_name="my-tests", master="local[2]", shuffle_partitions=2, spark__driver__memory="2g")``
    (``__`` in a keyword stands for ``.``).
    """
    return {
        "app_name": "pyspark_flinkish-tests",
        "master": "local[2]",
        "shuffle_partitions": 2,
        "spark__default__parallelism": "2",
    }


@pytest.fixture(scope="session")
def flinkish_spark(flinkish_spark_options: Dict[str, Any]) -> Iterator[SparkSession]:
    """One local SparkSession for the whole test session, configured for pyspark_flinkish.

    An active SparkSession (one a test suite or notebook already created) is reused as it is and left running;
    otherwise a new one is built with :func:`pyspark_flinkish.spark.session` -- Python workers on this
    interpreter, UTC, few shuffle partitions, the Spark UI off, Delta Lake and the Kafka connector on the
    classpath (jars fetched by ``make jars``/``$PYSPARK_FLINKISH_JARS``, else ``spark.jars.packages``) --
    and stopped at the end of the test session.
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is None and SparkContext._active_spark_context is not None:
        active = SparkSession.builder.getOrCreate()  # a session exists, just not as this thread's active one
    if active is not None:
        yield active  # not ours: left running
        return
    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        pytest.fail(
            "flinkish_spark needs Java 17 for Spark: no `java` on PATH and JAVA_HOME is unset "
            "(tests of user functions need no Spark: use the window_harness or jvm_free_env fixtures)",
            pytrace=False,
        )
    from ..spark import session

    spark = session(**flinkish_spark_options)
    from ..spark.connect import set_log_level
    set_log_level(spark, "ERROR")
    try:
        yield spark
    finally:
        spark.stop()
