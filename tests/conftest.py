"""Integration tests (JVM): Spark, Kafka and later Delta. Shares the root conftest's ``spark`` fixture; the
Kafka, HDFS and S3 fixtures (one broker, cluster and server per session) come from
:mod:`pyspark_flinkish.testing.fixtures`.

``make test-integration`` runs them in two pytest-xdist workers, a whole module at a time (``--dist loadfile``): each
worker has its own SparkSession, broker, HDFS and S3 server. Modules with a test marked ``slow`` (a minute or more:
the SIGKILL tests, ``spark-submit``, the live demo) are handed out first, so that no worker ends the run alone on
one of them."""

from __future__ import annotations

from typing import Any, List

from pyspark_flinkish.testing.fixtures import driver_runs, hdfs_cluster, kafka_broker, kafka_topic, s3_server

__all__ = ["driver_runs", "hdfs_cluster", "kafka_broker", "kafka_topic", "s3_server"]


def pytest_collection_finish(session: Any) -> None:
    """Functions defined in test modules run on Spark's Python workers, which cannot import the test
    modules: ship those modules by value (what ``--py-files`` does for a user's own modules)."""
    from pyspark import cloudpickle

    for module in {getattr(item, "module", None) for item in session.items}:
        if module is not None:
            cloudpickle.register_pickle_by_value(module)


def pytest_collection_modifyitems(config: Any, items: List[Any]) -> None:
    """The modules holding a ``slow`` test first, each module's tests in their order (a stable sort)."""
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow)
