"""Checkpoint locations read as Spark's (Hadoop's) ``Path`` reads them: ``file:`` forms are local paths, a path
without a scheme goes to ``fs.defaultFS`` as Spark would put it (so Spark's files and the package's are in one
directory), the cluster file systems ``spark/storage.py`` reaches are kept as URIs, any other scheme is refused up
front naming the URI, and no URI is ever taken for a relative directory (``<cwd>/dbfs:/x``)."""

from __future__ import annotations

import os
from typing import Any, List

import pytest

from pyspark_flinkish.core.errors import UnsupportedFeatureError
from pyspark_flinkish.spark.checkpoint_location import resolve_checkpoint, scheme_of
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment


@pytest.mark.parametrize(
    ("location", "local"),
    [
        ("/tmp/ck", "/tmp/ck"),
        ("file:/tmp/ck", "/tmp/ck"),
        ("file:///tmp/ck", "/tmp/ck"),
        ("file://localhost/tmp/ck", "/tmp/ck"),
        ("FILE:/tmp/ck/../ck2", "/tmp/ck2"),
        ("/tmp/a:b/ck", "/tmp/a:b/ck"),  # a colon after the first slash is part of the path, as in Hadoop
    ],
)
def test_local_forms_map_to_their_local_path(location: str, local: str) -> None:
    assert resolve_checkpoint(location) == local


def test_a_relative_path_is_made_absolute_on_the_driver(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_checkpoint("ck/run1") == os.path.join(str(tmp_path), "ck", "run1")


@pytest.mark.parametrize(
    ("location", "uri"),
    [
        ("hdfs://namenode:8020/ck", "hdfs://namenode:8020/ck"),
        ("hdfs://nameservice1/a/../ck/", "hdfs://nameservice1/ck"),
        ("s3a://bucket/jobs/ck", "s3a://bucket/jobs/ck"),
        ("gs://bucket/ck", "gs://bucket/ck"),
        ("abfss://container@account.dfs.core.windows.net/ck", "abfss://container@account.dfs.core.windows.net/ck"),
        ("dbfs:/tmp/ck", "dbfs:/tmp/ck"),
        ("dbfs:///tmp/ck", "dbfs:/tmp/ck"),
    ],
)
def test_cluster_file_systems_are_kept_as_uris(location: str, uri: str) -> None:
    assert resolve_checkpoint(location) == uri


@pytest.mark.parametrize(
    ("location", "names"),
    [
        ("wasb://c@a.blob.core.windows.net/ck", "'wasb' file system.*supported: a local path, file:, hdfs:"),
        ("ftp://host/ck", "'ftp' file system"),
        ("hdfs:/ck", "needs an authority"),
        ("file://otherhost/tmp/ck", "host 'otherhost'"),
        ("file:ck", "a relative path after 'file:'"),
    ],
)
def test_other_uris_are_refused_naming_the_location(location: str, names: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match=f"checkpoint_location '{location}'.*{names}"):
        resolve_checkpoint(location)


def test_a_path_without_a_scheme_goes_where_spark_puts_it() -> None:
    # Spark resolves it against fs.defaultFS (HDFS on YARN/EMR): the package's files go there too, never a
    # silently split checkpoint; file:/... names the local disk for both
    assert resolve_checkpoint("/tmp/ck", "hdfs://nn:8020") == "hdfs://nn:8020/tmp/ck"
    assert resolve_checkpoint("/tmp/ck/", "hdfs://nn:8020/") == "hdfs://nn:8020/tmp/ck"
    assert resolve_checkpoint("/tmp/ck", "file:///") == "/tmp/ck"
    assert resolve_checkpoint("file:/tmp/ck", "hdfs://nn:8020") == "/tmp/ck"
    # Hadoop would resolve a relative path against the user's home directory on that file system: refused
    with pytest.raises(UnsupportedFeatureError, match=r"checkpoint_location 'ck/run1' is a relative path.*'hdfs://nn:8020'"):
        resolve_checkpoint("ck/run1", "hdfs://nn:8020")


def test_the_scheme_is_what_precedes_a_colon_before_any_slash() -> None:
    assert [scheme_of(p) for p in ("dbfs:/x", "File:/x", "/x", "x/y:z", "a:b", ":x")] == ["dbfs", "file", "", "", "a", ""]


def _env_capturing_checkpoints(captured: List[str]) -> SparkStreamExecutionEnvironment:
    env = SparkStreamExecutionEnvironment(spark=None, state_partitions=2)
    env.from_collection([1]).add_sink(lambda v: None)

    def start(job_name: str, sinks: Any, checkpoint: str, trigger: Any, progress: Any, restore: Any = None) -> None:
        captured.append(checkpoint)

    env._start = start  # type: ignore[method-assign]
    return env


@pytest.mark.parametrize("backend", ["foreach_batch", "apply_in_pandas_with_state"])
def test_execute_reads_spark_uri_forms_on_every_executor(backend: str, tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    captured: List[str] = []
    env = _env_capturing_checkpoints(captured)
    env.backend = backend
    env.execute("job", checkpoint_location="file:/tmp/flinkish-ck")
    env.from_collection([1]).add_sink(lambda v: None)  # execute() cleared the pipeline, as Flink's does
    env.execute("job", checkpoint_location="file:///tmp/flinkish-ck")
    assert captured == ["/tmp/flinkish-ck", "/tmp/flinkish-ck"]
    env.from_collection([1]).add_sink(lambda v: None)
    env.execute("job", checkpoint_location="dbfs:/tmp/ck")
    assert captured == ["/tmp/flinkish-ck", "/tmp/flinkish-ck", "dbfs:/tmp/ck"]
    assert not os.path.exists(tmp_path / "dbfs:")
    env.from_collection([1]).add_sink(lambda v: None)
    with pytest.raises(UnsupportedFeatureError, match=r"checkpoint_location 'ftp://h/ck'.*'ftp' file system"):
        env.execute("job", checkpoint_location="ftp://h/ck")
