"""Integration tests (JVM): Spark, Kafka and later Delta. Shares the root conftest's ``spark`` fixture; the
Kafka, HDFS and S3 fixtures (one broker, cluster and server per session) come from
:mod:`pyspark_flinkish.testing.fixtures`.

``make test-integration`` runs them in two pytest-xdist workers, a whole module at a time (``--dist loadfile``): each
worker has its own SparkSession, broker, HDFS and S3 server."""

from __future__ import annotations

from typing import Any

from pyspark_flinkish.testing.fixtures import driver_runs, hdfs_cluster, kafka_broker, kafka_topic, s3_server

__all__ = ["driver_runs", "hdfs_cluster", "kafka_broker", "kafka_topic", "s3_server"]


def pytest_collection_finish(session: Any) -> None:
    """Functions defined in test modules run on Spark's Python workers, which cannot import the test
    modules: ship those modules by value (what ``--py-files`` does for a user's own modules)."""
    from pyspark import cloudpickle

    for module in {getattr(item, "module", None) for item in session.items}:
        if module is not None:
            cloudpickle.register_pickle_by_value(module)
