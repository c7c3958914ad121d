"""Paths on Databricks: the checkpoint's local path (``/dbfs/...``, for the local file APIs of keyed state and
replayed micro-batches) and the path Spark is given must be the same directory."""

from __future__ import annotations

import os

import pytest

from pyspark_flinkish.spark.session import local_temp_dir, spark_path


def test_spark_path_is_unchanged_outside_databricks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    assert spark_path("/dbfs/tmp/ck/spark") == "/dbfs/tmp/ck/spark"
    assert spark_path("/tmp/ck") == "/tmp/ck"


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
