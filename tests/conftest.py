"""Integration tests (JVM): Spark, Kafka and later Delta. Shares the root conftest's ``spark`` fixture; the
Kafka, HDFS and S3 fixtures (one broker, cluster and server per session) come from
:mod:`pyspark_flinkish.testing.fixtures`.

``make test-integration`` runs them in two pytest-xdist workers, a whole module at a time (``--dist loadfile``): each
worker has its own SparkSession, broker, HDFS and S3 server. With ``--no-loadscope-reorder`` xdist hands the modules
out in collection order, which :func:`pytest_collection_modifyitems` makes longest first."""

from __future__ import annotations

from typing import Any, Dict

import pytest

from pyspark_flinkish.testing.fixtures import driver_runs, hdfs_cluster, kafka_broker, kafka_topic, s3_server

__all__ = ["DELTA_SNAPSHOT_PARTITIONS", "driver_runs", "flinkish_spark_options", "hdfs_cluster", "kafka_broker",
           "kafka_topic", "s3_server"]

#: Delta's ``spark.databricks.delta.snapshotPartitions`` (50 by default: the partitions of a table's state
#: reconstruction, e.g. a MERGE's file list and every log checkpoint, 50 tasks each on a 2-core ``local[2]``) for
#: the integration suite's Spark sessions. A static setting (given to the session's builder, or ``--conf``): the
#: Delta writer's own ``newSession()`` starts from the static settings and never sees a runtime ``conf.set``. The
#: subprocess jobs, the Spark Connect server, the spark-submit examples and the live demo get the same value (the Delta
#: crash job's ``local[1]`` session: 1).
DELTA_SNAPSHOT_PARTITIONS = "2"


@pytest.fixture(scope="session")
def flinkish_spark_options(flinkish_spark_options: Dict[str, Any]) -> Dict[str, Any]:
    """The plugin's session options, with :data:`DELTA_SNAPSHOT_PARTITIONS` on the builder."""
    return {**flinkish_spark_options, "spark__databricks__delta__snapshotPartitions": DELTA_SNAPSHOT_PARTITIONS}


#: The modules that take longest, longest first: their seconds in the fresh-clone CI-equivalent run of 28 November
#: 2026 on the idle machine (two workers; ``--durations`` prints each module's total at the end of a run, to keep
#: this list current). Started first, no long module is left running alone on one worker at the end while the other
#: is idle. Only the order of the run changes; every other module follows in collection order.
LONGEST_FIRST = (
    "tests/e2e/test_kafka_to_delta_exactly_once.py",  # 419
    "tests/spark/test_exactly_once.py",  # 316
    "tests/cluster/test_examples_submit.py",  # 226
    "tests/connect/test_connect.py",  # 191
    "tests/delta/test_delta.py",  # 188
    "tests/kafka/test_kafka_sink_kills.py",  # 170
    "tests/spark/test_spark_stateful.py",  # 151
    "tests/demo/test_live_demo.py",  # 147
    "tests/spark/test_rescale_in_place.py",  # 122
    "tests/spark/test_file_sink_exactly_once.py",  # 105
    "tests/cluster/test_spark_submit_standalone.py",  # 92
    "tests/s3/test_s3_checkpoint.py",  # 86
    "tests/spark/test_spark_conformance.py",  # 79
    "tests/spark/test_source_savepoints.py",  # 79
    "tests/soak/test_soak.py",  # 79
    "tests/spark/test_large_batches.py",  # 54, its one test
)


def pytest_collection_modifyitems(items: list[Any]) -> None:
    """Collect the :data:`LONGEST_FIRST` modules first, in that order (a stable sort: tests keep their order)."""
    rank = {module: i for i, module in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def pytest_collection_finish(session: Any) -> None:
    """Functions defined in test modules run on Spark's Python workers, which cannot import the test
    modules: ship those modules by value (what ``--py-files`` does for a user's own modules)."""
    from pyspark import cloudpickle

    for module in {getattr(item, "module", None) for item in session.items}:
        if module is not None:
            cloudpickle.register_pickle_by_value(module)
