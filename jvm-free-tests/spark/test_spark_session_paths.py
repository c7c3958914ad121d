"""Paths on Databricks: the checkpoint's local path (``/dbfs/...``, for the local file APIs of keyed state and
replayed micro-batches) and the path Spark is given must be the same directory. The S3 client's settings from a
session (classic or Connect), as Spark's s3a takes them."""

from __future__ import annotations

import os

import pytest

from pyspark_flinkish.spark.session import default_file_system, local_temp_dir, spark_path, storage_options


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


class _ClassicLikeSession:
    """A classic session's surface: the JVM's Hadoop configuration (``sparkContext._jsc.hadoopConfiguration()``)
    and the session's SQL conf (``spark.conf``)."""

    def __init__(self, hadoop: dict, session: dict) -> None:
        self.conf = _Conf(session)
        jsc = type("Jsc", (), {"hadoopConfiguration": lambda _self: _Conf(hadoop)})()
        self.sparkContext = type("Sc", (), {"_jsc": jsc})()


def test_the_s3_client_takes_the_sessions_fs_s3a_settings_over_the_hadoop_configuration() -> None:
    """``spark.conf.set("fs.s3a.endpoint", ...)`` on a running session reaches Spark's s3a (a query's Hadoop
    configuration is the JVM's with the session's settings over it): the package's S3 client must follow it, or its
    files go to another endpoint than Spark's offsets (found against S3Proxy, tests/s3)."""
    hadoop = {"fs.s3a.endpoint": "http://core-site:9000", "fs.s3a.path.style.access": "true"}
    session = {"fs.s3a.endpoint": "http://127.0.0.1:9000", "fs.s3a.access.key": "k", "fs.s3a.secret.key": "s"}
    assert storage_options(_ClassicLikeSession(hadoop, session)) == {
        "s3a.endpoint": "http://127.0.0.1:9000", "s3a.path.style.access": "true", "s3a.access.key": "k",
        "s3a.secret.key": "s",
    }
    assert storage_options(_ClassicLikeSession(hadoop, {})) == {
        "s3a.endpoint": "http://core-site:9000", "s3a.path.style.access": "true",
    }
    connect = _ConnectLikeSession({"spark.hadoop.fs.s3a.endpoint": "http://a:1", "fs.s3a.endpoint.region": "eu-west-1"})
    assert storage_options(connect) == {"s3a.endpoint": "http://a:1", "s3a.endpoint.region": "eu-west-1"}


def test_read_state_reaches_s3_with_the_sessions_settings_in_a_process_that_ran_no_job(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``read_state`` (and ``read_timers``/``read_windows``) configure the S3 client from the session as
    ``execute()`` does: in a fresh process it went to the AWS defaults (found against S3Proxy, tests/s3)."""
    from pyspark_flinkish.common import Types
    from pyspark_flinkish.datastream.state import ValueStateDescriptor
    from pyspark_flinkish.spark import state_reader, storage

    seen = []

    def committed_state(location: str, *args: object) -> None:
        seen.append((location, storage.current_options()))
        raise LookupError(location)

    monkeypatch.setattr(state_reader, "committed_state", committed_state)
    spark = _ClassicLikeSession({"fs.defaultFS": "file:///"}, {"fs.s3a.endpoint": "http://127.0.0.1:9000"})
    storage.configure({})
    try:
        with pytest.raises(LookupError):
            state_reader.read_state(spark, "s3a://bucket/ck", "uid", ValueStateDescriptor("n", Types.LONG()))
    finally:
        storage.configure({})
    assert seen == [("s3a://bucket/ck", {"s3a.endpoint": "http://127.0.0.1:9000"})]
