"""Checkpoint locations read as Spark's (Hadoop's) ``Path`` reads them: ``file:`` forms are local paths, other
schemes are refused up front naming the URI, and no URI is ever taken for a relative directory (``<cwd>/dbfs:/x``)."""

from __future__ import annotations

import os
from typing import Any, List

import pytest

from pyspark_flinkish.core.errors import UnsupportedFeatureError
from pyspark_flinkish.spark.checkpoint_location import local_checkpoint_path, scheme_of
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
    assert local_checkpoint_path(location) == local


def test_a_relative_path_is_made_absolute_on_the_driver(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    assert local_checkpoint_path("ck/run1") == os.path.join(str(tmp_path), "ck", "run1")


@pytest.mark.parametrize(
    ("location", "names"),
    [
        ("dbfs:/tmp/ck", "'dbfs' file system.*here /dbfs/tmp/ck"),
        ("dbfs:///tmp/ck", "'dbfs' file system.*here /dbfs/tmp/ck"),
        ("s3a://bucket/ck", "'s3a' file system"),
        ("hdfs://namenode:8020/ck", "'hdfs' file system"),
        ("file://otherhost/tmp/ck", "host 'otherhost'"),
        ("file:ck", "a relative path after 'file:'"),
    ],
)
def test_other_uris_are_refused_naming_the_location(location: str, names: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match=f"checkpoint_location '{location}'.*{names}"):
        local_checkpoint_path(location)


@pytest.mark.parametrize("location", ["/tmp/ck", "ck/run1"])
def test_a_path_without_a_scheme_is_refused_when_fs_default_fs_is_another_file_system(location: str) -> None:
    # Spark resolves it against fs.defaultFS (HDFS on YARN/EMR): its offsets would go there, the package's files
    # to the local disk -- a silently split checkpoint; file:/... names the local disk for both
    with pytest.raises(UnsupportedFeatureError, match=f"checkpoint_location '{location}' has no scheme.*'hdfs://nn:8020'.*file:/"):
        local_checkpoint_path(location, "hdfs://nn:8020")
    assert local_checkpoint_path("/tmp/ck", "file:///") == "/tmp/ck"
    assert local_checkpoint_path("file:/tmp/ck", "hdfs://nn:8020") == "/tmp/ck"


def test_the_scheme_is_what_precedes_a_colon_before_any_slash() -> None:
    assert [scheme_of(p) for p in ("dbfs:/x", "File:/x", "/x", "x/y:z", "a:b", ":x")] == ["dbfs", "file", "", "", "a", ""]


def _env_capturing_checkpoints(captured: List[str]) -> SparkStreamExecutionEnvironment:
    env = SparkStreamExecutionEnvironment(spark=None, state_partitions=2)
    env.from_collection([1]).add_sink(lambda v: None)

    def start(job_name: str, sinks: Any, checkpoint: str, trigger: Any, progress: Any) -> None:
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
    with pytest.raises(UnsupportedFeatureError, match=r"checkpoint_location 'dbfs:/tmp/ck'.*'dbfs' file system"):
        env.execute("job", checkpoint_location="dbfs:/tmp/ck")
    assert captured == ["/tmp/flinkish-ck", "/tmp/flinkish-ck"]
    assert not os.path.exists(tmp_path / "dbfs:")
