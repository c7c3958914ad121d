"""The test HDFS itself (``hdfs_cluster``, a MiniDFSCluster in its own JVM) and what Spark and the JVM-free client do
on it: hdfs-native file operations, a Parquet round trip, and a streaming aggregation whose checkpoint is on hdfs://
and which restarts from it."""

from __future__ import annotations

import os
import re
import time
import uuid

import pytest

from pyspark_flinkish.testing.hdfs import MiniHdfs, MiniHdfsError

pytestmark = [pytest.mark.spark, pytest.mark.hdfs]


def _unique(name: str) -> str:
    return f"/{name}-{uuid.uuid4().hex[:8]}"


def test_hdfs_native_writes_lists_reads_renames_and_deletes(hdfs_cluster: MiniHdfs) -> None:
    from hdfs_native import WriteOptions

    assert hdfs_cluster.uri == f"hdfs://127.0.0.1:{hdfs_cluster.port}"
    client = hdfs_cluster.client()
    root = _unique("native")
    client.mkdirs(root, create_parent=True)
    writer = client.create(f"{root}/a.bin", WriteOptions(overwrite=False))
    writer.write(b"hello" * 100)
    writer.close()
    assert [(s.path, s.length) for s in client.list_status(root)] == [(f"{root}/a.bin", 500)]
    assert client.read(f"{root}/a.bin").read() == b"hello" * 100
    with pytest.raises(FileExistsError):  # create-if-absent is exclusive
        client.create(f"{root}/a.bin", WriteOptions(overwrite=False)).close()
    client.rename(f"{root}/a.bin", f"{root}/b.bin")
    assert [s.path for s in client.list_status(root)] == [f"{root}/b.bin"]
    assert client.read(f"{root}/b.bin").read() == b"hello" * 100
    assert client.delete(root, recursive=True)
    with pytest.raises(FileNotFoundError):
        client.get_file_info(root)


def test_spark_writes_and_reads_parquet_on_hdfs(hdfs_cluster: MiniHdfs, spark) -> None:  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    path = f"{hdfs_cluster.uri}/x"
    spark.range(1000).withColumn("s", F.col("id").cast("string")).write.mode("overwrite").parquet(path)
    back = spark.read.parquet(path)
    assert back.count() == 1000
    assert back.agg(F.sum("id")).first()[0] == sum(range(1000))
    files = [s.path for s in hdfs_cluster.client().list_status("/x")]  # the other client sees Spark's files
    assert "/x/_SUCCESS" in files and any(f.endswith(".parquet") for f in files)


def test_a_streaming_query_checkpoints_on_hdfs_and_restarts_from_it(hdfs_cluster: MiniHdfs, spark) -> None:  # type: ignore[no-untyped-def]
    root = _unique("stream")
    source, checkpoint = f"{hdfs_cluster.uri}{root}/in", f"{hdfs_cluster.uri}{root}/ckpt"
    client = hdfs_cluster.client()
    client.mkdirs(f"{root}/in", create_parent=True)

    def add_file(n: int, keys: str) -> None:
        writer = client.create(f"{root}/in/{n}.csv")
        writer.write("".join(f"{k}\n" for k in keys).encode())
        writer.close()

    def run() -> dict:  # type: ignore[type-arg]
        name = f"hdfs_counts_{uuid.uuid4().hex[:8]}"
        query = (
            spark.readStream.schema("k string").option("maxFilesPerTrigger", 1).csv(source)
            .groupBy("k").count()
            .writeStream.outputMode("complete").format("memory").queryName(name)
            .option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
        )
        try:
            assert query.awaitTermination(120), "the availableNow query did not finish within 120 s"
            assert query.exception() is None
            last = query.lastProgress
        finally:
            query.stop()
        counts = {r["k"]: r["count"] for r in spark.table(name).collect()}
        spark.catalog.dropTempView(name)
        return {"batch": last["batchId"], "counts": counts}

    add_file(0, "aab")
    add_file(1, "bc")
    first = run()  # one file per batch: batches 0 and 1
    assert first == {"batch": 1, "counts": {"a": 2, "b": 2, "c": 1}}
    add_file(2, "ad")
    second = run()  # a new memory sink: complete mode shows the counts restored from the checkpoint's state
    assert second == {"batch": 2, "counts": {"a": 3, "b": 2, "c": 1, "d": 1}}
    offsets = sorted(s.path.rsplit("/", 1)[1] for s in client.list_status(f"{root}/ckpt/offsets"))
    assert offsets == ["0", "1", "2"]
    assert client.get_file_info(f"{root}/ckpt/state").isdir


def test_a_jvm_that_cannot_start_fails_fast_with_its_log() -> None:
    cluster = MiniHdfs(heap="1k")  # the JVM refuses such a heap and exits at once
    started = time.monotonic()
    with pytest.raises(MiniHdfsError, match=r"exited during start-up(.|\n)*heap"):
        cluster.start()
    assert time.monotonic() - started < 30
    assert cluster.directory is None and not cluster.is_running


def test_start_up_is_bounded_and_the_jvm_is_killed() -> None:
    cluster = MiniHdfs(startup_timeout=0.5)
    with pytest.raises(MiniHdfsError, match=r"did not start within 0.5 s \(its JVM, pid (\d+), is killed\)") as failure:
        cluster.start()
    assert cluster.directory is None and not cluster.is_running
    pid = int(re.search(r"pid (\d+)", str(failure.value)).group(1))  # type: ignore[union-attr]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.slow
def test_a_data_dir_keeps_the_files_across_clusters(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with MiniHdfs(data_dir=tmp_path) as first:
        writer = first.client().create("/kept.txt")
        writer.write(b"kept")
        writer.close()
    assert (tmp_path / "minihdfs.log").exists()
    with MiniHdfs(data_dir=tmp_path) as second:  # not formatted again
        assert second.client().read("/kept.txt").read() == b"kept"
