"""Savepoints of jobs reading a file stream or a Delta table (``spark/source_logs.py``): the savepoint carries the
source's entries of Spark's offsets log (and a file stream's metadata log); a job restored from it into a new
checkpoint, with an added stateless operator or another number of state partitions, reads every record once.

Every record's event time is above the watermark when it arrives (timestamps rise from file to file and from commit
to commit, no out-of-orderness), so the restore's watermark at ``MIN`` (Flink restores none) changes no firing: each
restored run gives exactly the uninterrupted run's output, which is the JVM-free engine's. The ids sink sees every
record: one missing is a lost record, one twice a record read twice. The same file-stream job also restarts on its
own checkpoint with another number of state partitions (``spark/rescale.py``); a ``from_delta`` job does both with its
checkpoints and its savepoint on the test HDFS.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

import pytest

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.core.errors import StateError, UnsupportedFeatureError
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, StreamExecutionEnvironment
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows
from pyspark_flinkish.spark import storage
from pyspark_flinkish.spark.checkpoint import read_meta

pytestmark = pytest.mark.spark

SCHEMA = "id long, k string, t long, v long"
# one file (or Delta commit) per list; the savepoint is taken after the first three
FILES = [
    [(1, "a", 1_000, 1), (2, "b", 1_200, 2), (3, "a", 2_500, 3)],
    [(4, "b", 4_000, 4), (5, "c", 4_100, 5)],
    [(6, "a", 6_000, 6), (7, "c", 7_500, 7)],  # window [0, 5000) fires
    [(8, "b", 9_000, 8), (9, "a", 10_500, 9)],  # after the savepoint: [5000, 10000) fires
    [(10, "c", 12_000, 10), (11, "b", 16_000, 11)],  # [10000, 15000) fires
]
BEFORE = 3
STRATEGY = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))


def _pipeline(stream: Any, ids: List[Any], sums: List[Any], changed: bool = False) -> None:
    """Every record's id into ``ids``; per key and 5-second window, ``(key, window start, count, sum)``."""
    stream.map(lambda r: r["id"], output_type=Types.LONG()).add_sink(ids.append)
    windows = (
        stream.map(lambda r: (r["k"], r["t"], 1, r["v"]))
        .key_by(lambda e: e[0], key_type=Types.STRING())
        .window(TumblingEventTimeWindows.of(Duration.of_seconds(5)))
        .reduce(lambda x, y: (x[0], min(x[1], y[1]) // 5_000 * 5_000, x[2] + y[2], x[3] + y[3]))
        .uid("sums")
    )
    out = windows.map(lambda s: (s[0], s[1] // 5_000 * 5_000, s[2], s[3]))
    if changed:  # the upgraded job: a stateless operator after the window
        out = out.map(lambda s: s).filter(lambda s: True)
    out.add_sink(sums.append)


def jvm_free(batches: List[Any]) -> List[Any]:
    env = StreamExecutionEnvironment.get_execution_environment()
    ids: List[Any] = []
    sums: List[Any] = []
    source = MicroBatchSource(
        [MicroBatch([dict(zip(("id", "k", "t", "v"), r)) for r in b]) for b in batches], end_of_input=False
    )
    strategy = STRATEGY.with_timestamp_assigner(lambda e, _: e["t"])
    _pipeline(env.from_source(source, strategy, "events"), ids, sums)
    env.execute()
    return sums


def write_part(directory: Path, i: int, records: Iterable[Dict[str, Any]]) -> None:
    """``directory/part-<i>.json``: the records as JSON lines, modified at ``1000 + i`` s."""
    path = directory / f"part-{i}.json"
    path.write_text("\n".join(json.dumps(r) for r in records))
    os.utime(path, (1_000 + i, 1_000 + i))  # Spark's file source takes files in this order


def write_file(directory: Path, i: int) -> None:
    write_part(directory, i, (dict(zip(("id", "k", "t", "v"), r)) for r in FILES[i]))


def file_job(spark: Any, directory: Path, partitions: int, ids: List[Any], sums: List[Any], changed: bool = False,
              path: Optional[str] = None) -> Any:
    env = StreamExecutionEnvironment.get_execution_environment(spark, state_partitions=partitions)
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(path or directory))
    _pipeline(env.from_dataframe(df, STRATEGY, timestamp_column="t").uid("files"), ids, sums, changed)
    return env


def check(ids: List[Any], sums: List[Any], expected: List[Any]) -> None:
    assert sorted(ids) == list(range(1, 12))  # none lost, none twice
    assert sorted(sums) == sorted(expected)


def test_a_file_stream_job_restored_from_a_savepoint_reads_every_file_once(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "in"
    directory.mkdir()
    for i in range(BEFORE):
        write_file(directory, i)
    expected = jvm_free(FILES)

    ids: List[Any] = []
    sums: List[Any] = []
    handle = file_job(spark, directory, 2, ids, sums).execute("files-1", checkpoint_location=str(tmp_path / "ck1"))
    handle.process_all_available()
    path = handle.stop_with_savepoint(str(tmp_path / "savepoints"))
    assert sorted(ids) == [1, 2, 3, 4, 5, 6, 7]
    metadata = json.loads((Path(path) / "_metadata.json").read_text())
    assert metadata["positions"]["files"]["leaves"][0]["offset"] == {"logOffset": 2}
    for i in range(BEFORE, len(FILES)):
        write_file(directory, i)

    # a source reading another directory is refused up front, unless its position may be dropped
    other = tmp_path / "other"
    other.mkdir()
    refused = file_job(spark, directory, 2, [], [], path=str(other))
    with pytest.raises(StateError, match=r"source 'files' changed: it read .*json.* and reads .*other"):
        refused.execute("refused", checkpoint_location=str(tmp_path / "refused"), from_savepoint=path)
    assert not (tmp_path / "refused" / "spark").exists()
    # allow_non_restored_state: the keyed state is restored, the moved source starts as configured (every file of
    # the other directory, which holds the input after the savepoint)
    for i in range(BEFORE, len(FILES)):
        write_file(other, i)
    ids3, sums3 = [i for i in ids if i <= 7], [s for s in sums if s[1] < 5_000]
    handle = file_job(spark, directory, 2, ids3, sums3, path=str(other)).execute(
        "files-moved", checkpoint_location=str(tmp_path / "moved"), from_savepoint=path, allow_non_restored_state=True
    )
    handle.process_all_available()
    handle.stop()
    check(ids3, sums3, expected)

    # restored with an added stateless operator after the window, into as many state partitions: the savepoint's
    # snapshots are copied as they are, no row read or placed again
    with caplog.at_level(logging.INFO, logger="pyspark_flinkish.spark"):
        handle = file_job(spark, directory, 2, ids, sums, changed=True).execute(
            "files-2", checkpoint_location=str(tmp_path / "ck2"), from_savepoint=path
        )
    assert "operators ['sums']: their state copied as it is into 2 state partitions" in caplog.text
    handle.process_all_available()
    handle.stop()
    check(ids, sums, expected)

    # restored from the same savepoint into 3 state partitions: split
    ids2, sums2 = [i for i in ids if i <= 7], [s for s in sums if s[1] < 5_000]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="pyspark_flinkish.spark"):
        handle = file_job(spark, directory, 3, ids2, sums2).execute(
            "files-3", checkpoint_location=str(tmp_path / "ck3"), from_savepoint=path
        )
    assert "copied as it is" not in caplog.text
    handle.process_all_available()
    handle.stop()
    check(ids2, sums2, expected)
    # its batches ran on the restored files, not on a copy of them in the executor's cache (only partitions that
    # got no key have none: their empty caches are "rebuilt"): a key those batches missed or got wrong would be
    # missing or wrong in the sums checked above
    on_files, _ = state_served(str(tmp_path / "ck3"))
    assert on_files[0] >= 1 and on_files[-1] >= 1, on_files


def test_a_savepoint_of_an_unsupported_stream_is_refused_before_the_job_stops(spark: Any, tmp_path: Path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    df = spark.readStream.format("rate").option("rowsPerSecond", 1).load().selectExpr("value as id", "timestamp")
    env.from_dataframe(df, STRATEGY, timestamp_column="timestamp").map(lambda r: r["id"]).add_sink(lambda _: None)
    handle = env.execute("rate", checkpoint_location=str(tmp_path / "ck"))
    try:
        with pytest.raises(UnsupportedFeatureError, match=r"reads a .*rate.* stream, whose position only Spark"):
            handle.stop_with_savepoint(str(tmp_path / "savepoints"))
        assert handle.is_active
    finally:
        handle.stop()


def _append(spark: Any, table: str, files: List[Any]) -> None:
    """One commit of the records of ``files``."""
    rows = [dict(zip(("id", "k", "t", "v"), r)) for f in files for r in f]
    spark.createDataFrame(rows, SCHEMA).write.format("delta").mode("append").save(table)


def _delta_job(spark: Any, table: str, partitions: int, ids: List[Any], sums: List[Any], changed: bool = False) -> Any:
    env = StreamExecutionEnvironment.get_execution_environment(spark, state_partitions=partitions)
    _pipeline(env.from_delta(table, timestamp_column="t", watermark_strategy=STRATEGY).uid("table"), ids, sums, changed)
    return env


def test_a_from_delta_job_restored_from_a_savepoint_reads_every_commit_once(spark: Any, tmp_path: Path) -> None:
    table = str(tmp_path / "events")
    _append(spark, table, FILES[:BEFORE])
    expected = jvm_free(FILES)

    ids: List[Any] = []
    sums: List[Any] = []
    handle = _delta_job(spark, table, 2, ids, sums).execute("delta-1", checkpoint_location=str(tmp_path / "ck1"))
    handle.process_all_available()
    _append(spark, table, [FILES[BEFORE]])  # read by the first run after its first batch (not the initial snapshot)
    handle.process_all_available()
    path = handle.stop_with_savepoint(str(tmp_path / f"savepoints-{uuid.uuid4().hex[:6]}"))
    assert sorted(ids) == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    offset = json.loads((Path(path) / "_metadata.json").read_text())["positions"]["table"]["leaves"][0]["offset"]
    assert offset["reservoirId"] and offset["reservoirVersion"] >= 1
    _append(spark, table, FILES[BEFORE + 1 :])

    handle = _delta_job(spark, table, 2, ids, sums, changed=True).execute(
        "delta-2", checkpoint_location=str(tmp_path / "ck2"), from_savepoint=path
    )
    handle.process_all_available()
    handle.stop()
    check(ids, sums, expected)

    ids2, sums2 = [i for i in ids if i <= 9], [s for s in sums if s[1] < 10_000]
    handle = _delta_job(spark, table, 3, ids2, sums2).execute(
        "delta-3", checkpoint_location=str(tmp_path / "ck3"), from_savepoint=path
    )
    handle.process_all_available()
    handle.stop()
    check(ids2, sums2, expected)


@pytest.mark.hdfs
def test_a_file_stream_savepoint_between_checkpoints_on_hdfs(
    spark: Any, hdfs_cluster: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Spark's logs read from a checkpoint on HDFS into a savepoint on HDFS, and seeded into a new checkpoint on
    HDFS (the package's storage layer on both sides), restored with an added operator into as many state partitions
    (2: the snapshots copied as they are on HDFS), then restarted on that checkpoint with 3 (rescaled in place on
    HDFS)."""
    root = f"{hdfs_cluster.uri}/source-savepoints/{uuid.uuid4().hex[:8]}"
    directory = tmp_path / "in"
    directory.mkdir()
    for i in range(BEFORE):
        write_file(directory, i)
    ids: List[Any] = []
    sums: List[Any] = []
    handle = file_job(spark, directory, 2, ids, sums).execute("hdfs-files-1", checkpoint_location=f"{root}/ck1")
    handle.process_all_available()
    path = handle.stop_with_savepoint(f"{root}/savepoints")
    names = {s.path.rsplit("/", 1)[-1] for s in hdfs_cluster.client().list_status(f"{path[len(hdfs_cluster.uri):]}/spark-sources/0")}
    assert names == {"0", "1", "2"}  # the file stream's metadata log, one file per log batch
    write_file(directory, BEFORE)
    with caplog.at_level(logging.INFO, logger="pyspark_flinkish.spark"):
        handle = file_job(spark, directory, 2, ids, sums, changed=True).execute(
            "hdfs-files-2", checkpoint_location=f"{root}/ck2", from_savepoint=path
        )
    assert "operators ['sums']: their state copied as it is into 2 state partitions" in caplog.text
    handle.process_all_available()
    handle.stop()
    # the new checkpoint restarted in place with 3 state partitions (``spark/rescale.py`` on HDFS): its window of
    # [10000, 15000) holds a record from before the rescaling and fires after it
    for i in range(BEFORE + 1, len(FILES)):
        write_file(directory, i)
    handle = file_job(spark, directory, 3, ids, sums, changed=True).execute(
        "hdfs-files-3", checkpoint_location=f"{root}/ck2"
    )
    handle.process_all_available()
    handle.stop()
    check(ids, sums, jvm_free(FILES))
    assert read_meta(f"{root}/ck2")["state_partitions"] == 3
    assert not storage.exists(f"{root}/ck2/flinkish/rescale")
    on_files, _ = state_served(f"{root}/ck2")  # the restored and the rescaled state, read on HDFS by the batches
    assert on_files[0] >= 1 and on_files[-1] >= 1, on_files


def state_served(checkpoint: str) -> Tuple[List[int], List[int]]:
    """Per batch of ``checkpoint``'s progress: the state partitions whose batch ran on the state files (the
    executor's cache held another version, ``stateServedFromFiles``), and those whose cache was rebuilt (from
    files, or none: a partition without state)."""
    from pyspark_flinkish.spark.progress_files import read_progress

    progress = [p["operators"].values() for p in read_progress(checkpoint)]
    return (
        [sum(o.get("stateServedFromFiles") or 0 for o in ops) for ops in progress],
        [sum(o.get("stateCacheRebuilds") or 0 for o in ops) for ops in progress],
    )


def newest_state(checkpoint: Any) -> Dict[str, Any]:
    """The ``state`` of ``checkpoint``'s newest driver document (a path or a URI): per operator, its state
    partitions' files."""
    driver = storage.join(str(checkpoint), "flinkish", "driver")
    newest = [n for n in storage.list_names(driver) if n.startswith("b=") and n.endswith(".json")][-1]
    return json.loads(storage.read_bytes(storage.join(driver, newest)))["state"]  # type: ignore[no-any-return]


def state_partitions_named(checkpoint: Any) -> List[int]:
    """The state partitions the newest driver document of ``checkpoint`` names files of (every operator)."""
    state = newest_state(checkpoint)
    return sorted({int(sp) for op in state.values() for sp, m in op["partitions"].items() if m["files"]})


def test_a_checkpoint_restarted_with_another_number_of_state_partitions_is_rescaled(spark: Any, tmp_path: Path) -> None:
    """Not a savepoint: the job restarted on its own checkpoint with 4 state partitions instead of 2, then with 3,
    reassigns the state it resumes from each time (``spark/rescale.py``), as Flink restores a retained checkpoint at
    another parallelism; no record is lost or read twice, and the results are the uninterrupted run's."""
    directory = tmp_path / "in"
    directory.mkdir()
    for i in range(BEFORE):
        write_file(directory, i)
    checkpoint = tmp_path / "ck"
    ids: List[Any] = []
    sums: List[Any] = []
    for run, (partitions, files) in enumerate([(2, []), (4, [BEFORE]), (3, [BEFORE + 1])]):
        for i in files:
            write_file(directory, i)
        handle = file_job(spark, directory, partitions, ids, sums).execute(
            f"rescale-{run}", checkpoint_location=str(checkpoint)
        )
        handle.process_all_available()
        handle.stop()
        meta = json.loads((checkpoint / "flinkish" / "meta.json").read_text())
        assert meta["state_partitions"] == partitions
        assert all(sp < partitions for sp in state_partitions_named(checkpoint))
        assert not (checkpoint / "flinkish" / "rescale").exists()
    check(ids, sums, jvm_free(FILES))
    # the state files of the old layouts are gone (the restarted driver deletes what no kept document names)
    assert {p.name for p in (checkpoint / "flinkish" / "state" / "op=sums").iterdir() if any(p.iterdir())} <= {
        f"sp={sp:05d}" for sp in range(3)
    }


def _commit(spark: Any, table: str, i: int) -> None:
    """File ``i`` as one commit of a table with its change data feed on, recording the watermark a writing job would
    (``max(t) - 1``: bounded out-of-orderness 0, as ``STRATEGY``)."""
    from pyspark_flinkish.spark.delta_commits import commit_metadata

    rows = [dict(zip(("id", "k", "t", "v"), r)) for r in FILES[i]]
    writer = spark.createDataFrame(rows, SCHEMA).write.format("delta").mode("append")
    writer = writer.option("userMetadata", commit_metadata(max(r[2] for r in FILES[i]) - 1, i, "writer"))
    writer.option("delta.enableChangeDataFeed", "true").save(table)


def _cdf_job(spark: Any, table: str, partitions: int, ids: List[Any], sums: List[Any], changed: bool = False) -> Any:
    """The pipeline on ``from_delta`` of ``table`` with the writer's watermarks (its change data feed)."""
    env = StreamExecutionEnvironment.get_execution_environment(spark, state_partitions=partitions)
    _pipeline(env.from_delta(table, timestamp_column="t").uid("table"), ids, sums, changed)
    return env


def test_a_from_delta_job_with_upstream_watermarks_restored_from_a_savepoint(spark: Any, tmp_path: Path) -> None:
    """``from_delta`` reading the change data feed and the writer's watermarks (one Flink micro-batch per commit,
    ``spark/delta_source.py``, which finds each Spark batch's commits from the offsets log: after the restore, from
    the seeded batch 0): restored with an added operator into 3 state partitions, the uninterrupted run's results."""
    table = str(tmp_path / "events")
    for i in range(BEFORE):
        _commit(spark, table, i)

    def job(partitions: int, ids: List[Any], sums: List[Any], changed: bool = False) -> Any:
        return _cdf_job(spark, table, partitions, ids, sums, changed)

    ids: List[Any] = []
    sums: List[Any] = []
    handle = job(2, ids, sums).execute("cdf-1", checkpoint_location=str(tmp_path / "ck1"))
    handle.process_all_available()
    path = handle.stop_with_savepoint(str(tmp_path / "savepoints"))
    assert sorted(ids) == [1, 2, 3, 4, 5, 6, 7]
    for i in range(BEFORE, len(FILES)):
        _commit(spark, table, i)
    handle = job(3, ids, sums, changed=True).execute("cdf-2", checkpoint_location=str(tmp_path / "ck2"), from_savepoint=path)
    handle.process_all_available()
    handle.stop()
    check(ids, sums, jvm_free(FILES))


@pytest.mark.hdfs
def test_a_from_delta_job_on_hdfs_rescaled_in_place_2_4_3_then_restored_from_a_savepoint(
    spark: Any, hdfs_cluster: Any, tmp_path: Path
) -> None:
    """``from_delta`` with the writer's watermarks, its checkpoints and its savepoint on the test HDFS. The Spark
    offsets it steps its batches by are read through the storage layer (``delta_source.read_offset``; a plain
    ``open()`` finds nothing on HDFS, and the job's watermark silently never advances: no window would fire). Restarted
    in place on its checkpoint with 2, then 4, then 3 state partitions (``spark/rescale.py`` on HDFS; the window
    ``[10000, 15000)`` holds a record from before the last two rescalings and fires only after the restore), stopped
    with a savepoint on HDFS and restored with an added operator into 2: every record once, the uninterrupted run's
    windows."""
    root = f"{hdfs_cluster.uri}/delta-savepoints/{uuid.uuid4().hex[:8]}"
    checkpoint = f"{root}/ck1"
    table = str(tmp_path / "events")
    expected = jvm_free(FILES)
    ids: List[Any] = []
    sums: List[Any] = []
    path = ""
    for i in range(BEFORE):
        _commit(spark, table, i)
    for run, (partitions, commits, fired_before) in enumerate([(2, [], 5_000), (4, [BEFORE], 10_000), (3, [], 10_000)]):
        for i in commits:
            _commit(spark, table, i)
        handle = _cdf_job(spark, table, partitions, ids, sums).execute(f"hdfs-cdf-{run}", checkpoint_location=checkpoint)
        handle.process_all_available()
        if run < 2:
            handle.stop()
        else:
            path = handle.stop_with_savepoint(f"{root}/savepoints")
        # the writer's watermarks reached the windows (commit 2's is 7499, commit 3's 10499)
        assert sorted(sums) == sorted(s for s in expected if s[1] < fired_before), (run, sums)
        assert read_meta(checkpoint)["state_partitions"] == partitions
        assert all(sp < partitions for sp in state_partitions_named(checkpoint))
        assert not storage.exists(f"{checkpoint}/flinkish/rescale")
    assert sorted(ids) == list(range(1, 10))
    assert path.startswith(f"{root}/savepoints/savepoint-")
    _commit(spark, table, BEFORE + 1)
    handle = _cdf_job(spark, table, 2, ids, sums, changed=True).execute(
        "hdfs-cdf-restored", checkpoint_location=f"{root}/ck2", from_savepoint=path
    )
    handle.process_all_available()
    handle.stop()
    check(ids, sums, expected)
    assert read_meta(f"{root}/ck2")["state_partitions"] == 2


def test_a_file_stream_unioned_with_a_micro_batch_source_is_placed_after_the_replay_stream(spark: Any, tmp_path: Path) -> None:
    """The query's sources: the replay stream of the ``MicroBatchSource`` first, then the file stream; the savepoint
    takes the file stream's entry from its place and the restore seeds it at its place in the new query."""
    directory = tmp_path / "in"
    directory.mkdir()
    for i in range(BEFORE):
        write_file(directory, i)
    replayed = [[{"id": 100, "k": "r", "t": 1_000, "v": 0}], [{"id": 101, "k": "r", "t": 2_000, "v": 0}]]

    def job(ids: List[Any]) -> Any:
        env = StreamExecutionEnvironment.get_execution_environment(spark)
        df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(directory))
        files = env.from_dataframe(df, STRATEGY, timestamp_column="t").uid("files")
        source = MicroBatchSource([MicroBatch(b) for b in replayed], end_of_input=False)
        batches = env.from_source(source, STRATEGY.with_timestamp_assigner(lambda e, _: e["t"]), "replayed").uid("replayed")
        files.union(batches).map(lambda r: r["id"], output_type=Types.LONG()).add_sink(ids.append)
        return env

    ids: List[Any] = []
    handle = job(ids).execute("union-1", checkpoint_location=str(tmp_path / "ck1"))
    handle.process_all_available()
    path = handle.stop_with_savepoint(str(tmp_path / "savepoints"))
    metadata = json.loads((Path(path) / "_metadata.json").read_text())
    assert metadata["positions"]["files"]["leaves"][0]["offset"] == {"logOffset": 2}
    for i in range(BEFORE, len(FILES)):
        write_file(directory, i)
    handle = job(ids).execute("union-2", checkpoint_location=str(tmp_path / "ck2"), from_savepoint=path)
    handle.process_all_available()
    handle.stop()
    assert sorted(ids) == [*range(1, 12), 100, 101]
