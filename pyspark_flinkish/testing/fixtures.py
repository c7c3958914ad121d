"""pytest fixtures for pipelines that read Kafka or use HDFS or S3: a broker per test session, fresh topics per test,
a test HDFS (``MiniDFSCluster``) per test session and an S3-compatible server (S3Proxy) per test session; and the driver
processes of a kill test (``driver_runs``), killed at its end.

A module of fixtures only, so that it can be registered as a pytest plugin (an entry point in the
``pytest11`` group pointing here, or ``-p pyspark_flinkish.testing.fixtures``); this repository's ``tests/``
import the fixtures in their ``conftest.py``. Importing this module imports neither pyspark nor kafka-python.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator

import pytest

from .hdfs import MiniHdfs
from .kafka import KafkaBroker
from .s3 import S3Proxy
from .sigkill import DriverRun

__all__ = ["driver_runs", "hdfs_cluster", "kafka_broker", "kafka_topic", "s3_server"]


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[KafkaBroker]:
    """One single-node Kafka broker (KRaft, own JVM) for the whole test session, killed at its end.

    A test that restarts it (``kafka_broker.restart()``) leaves it running on the same port. When the broker's
    jars are missing, the error says how to fetch them (``make jars``).
    """
    broker = KafkaBroker()
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def kafka_topic(kafka_broker: KafkaBroker, request: pytest.FixtureRequest) -> Callable[..., str]:
    """A factory ``kafka_topic(partitions=1, suffix="")`` creating a topic named after the test (unique per call)."""

    def create(partitions: int = 1, suffix: str = "") -> str:
        base = re.sub(r"[^A-Za-z0-9._-]", "-", request.node.name)[:80]
        name = f"{base}{'-' + suffix if suffix else ''}-{uuid.uuid4().hex[:6]}"
        return kafka_broker.create_topic(name, partitions)

    return create


@pytest.fixture(scope="session")
def hdfs_cluster() -> Iterator[MiniHdfs]:
    """One test HDFS (a NameNode and a DataNode on 127.0.0.1, own JVM) for the whole test session, stopped at its end.

    Yields the running :class:`~pyspark_flinkish.testing.hdfs.MiniHdfs`: ``hdfs_cluster.uri`` is
    ``hdfs://127.0.0.1:<port>`` (use ``f"{hdfs_cluster.uri}/some/path"`` in Spark, no configuration needed) and
    ``hdfs_cluster.client()`` an hdfs-native client. Its storage is shared by every test of the session: give each
    test its own paths (e.g. named after the test). When the jars are missing, the error says how to fetch them
    (``make jars``); a cluster that does not start within 120 s fails with its log's tail.
    """
    cluster = MiniHdfs()
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Proxy]:
    """One S3-compatible server (S3Proxy on 127.0.0.1, own JVM, objects in a temporary folder) for the whole test
    session, stopped at its end.

    Yields the running :class:`~pyspark_flinkish.testing.s3.S3Proxy`: ``s3_server.create_bucket(name)`` makes a
    bucket, ``s3_server.hadoop_settings()`` are the ``fs.s3a.*`` settings of a Spark session that reaches it
    (with the ``s3a`` jars of ``make jars`` on its classpath: ``pyspark_flinkish.spark.jars.s3a_settings()``) and
    ``s3_server.filesystem()`` a pyarrow S3 client. Its buckets are shared by every test of the session: give each
    test its own bucket or paths. When the jar is missing, the error says how to fetch it (``make jars``); a
    server that does not answer within 60 s fails with its log's tail.
    """
    server = S3Proxy()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def driver_runs() -> Iterator[list[DriverRun]]:
    """A list for the :class:`~pyspark_flinkish.testing.sigkill.DriverRun` s a kill test starts: whatever is left of
    them (a driver, its JVM, the JVM's Python workers) is killed at the end of the test, pass or fail."""
    started: list[DriverRun] = []
    yield started
    for run in started:
        run.kill_all()
        run.proc.wait()
