"""Paths on Databricks: the checkpoint's local path (``/dbfs/...``, for the local file APIs of keyed state and
replayed micro-batches) and the path Spark is given must be the same directory."""

from __future__ import annotations

import os

import pytest

from pyspark_flinkish.spark.session import default_file_system, local_temp_dir, spark_path


def test_spark_path_names_the_local_file_system_outside_databricks(monkeypatch: pytest.MonkeyPatch) -> None:
    # a session whose fs.defaultFS is hdfs:// would otherwise resolve a bare path there (Spark's offsets on HDFS,
    # the package's files on the local disk)
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    assert spark_path("/dbfs/tmp/ck/spark") == "file:/dbfs/tmp/ck/spark"
    assert spark_path("/tmp/ck") == "file:/tmp/ck"
    assert spark_path("file:/tmp/ck") == "file:/tmp/ck"


class _Conf:
    def __init__(self, values: dict) -> None:
        self.values = values

    def get(self, key: str, default: object = None) -> object:
        return self.values.get(key, default)


class _ConnectLikeSession:
    """A session with no JVM in reach (``sparkContext`` raises, as on Spark Connect) and a Spark conf."""

    def __init__(self, values: dict) -> None:
        self.conf = _Conf(values)

    @property
    def sparkContext(self) -> object:  # noqa: N802 (Spark's name)
        raise RuntimeError("no sparkContext on Spark Connect")  # noqa: EM101 (a stand-in's error)


def test_default_file_system_from_the_spark_conf_without_a_jvm() -> None:
    assert default_file_system(_ConnectLikeSession({})) == "file:///"
    hdfs = _ConnectLikeSession({"spark.hadoop.fs.defaultFS": "hdfs://nn:8020"})
    assert default_file_system(hdfs) == "hdfs://nn:8020"


def test_spark_path_maps_the_dbfs_mount_to_dbfs_uris_on_databricks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", "17.3")
    assert spark_path("/dbfs/tmp/ck/spark") == "dbfs:/tmp/ck/spark"
    assert spark_path("/dbfs") == "dbfs:/"
    assert spark_path("/dbfsx/tmp") == "/dbfsx/tmp"  # not the mount
    assert spark_path("/local_disk0/tmp") == "/local_disk0/tmp"
    assert spark_path("dbfs:/tmp/t") == "dbfs:/tmp/t"


def test_local_temp_dir_outside_databricks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    path = local_temp_dir("flinkish-test-")
    try:
        assert os.path.isdir(path) and os.path.basename(path).startswith("flinkish-test-")
    finally:
        os.rmdir(path)
