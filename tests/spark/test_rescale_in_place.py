"""Rescaling a checkpoint in place (``spark/rescale.py``): SIGKILLed during the redistribution and restarted, of a
job with broadcast state, and of a window on Spark's columnar path.

The kill test runs the file-stream job of ``test_source_savepoints.py`` (whose uninterrupted run is the JVM-free
engine's) and kills its driver (``rescale_kill_job.py``, its own process) at two points inside the redistribution,
with the checkpoint on the local disk and on the test HDFS;
the restart after the second kill asks for the checkpoint's old number of state partitions, which only a driver
that knows the rescaling was interrupted gets right (the base's document then names the new layout's files).
"""

from __future__ import annotations

import json
import signal
import uuid
from pathlib import Path
from typing import Any, Dict, List, Set, Union

import pytest
from test_source_savepoints import (
    BEFORE,
    FILES,
    check,
    file_job,
    jvm_free,
    newest_state,
    state_partitions_named,
    write_file,
    write_part,
)

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.aggregates import ColumnAggregate, Count, Sum
from pyspark_flinkish.datastream.functions import KeyedBroadcastProcessFunction, ProcessWindowFunction
from pyspark_flinkish.datastream.state import MapStateDescriptor, ValueStateDescriptor
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows
from pyspark_flinkish.spark import storage
from pyspark_flinkish.spark.rescale import rescale_dir
from pyspark_flinkish.testing.sigkill import DriverRun

pytestmark = [pytest.mark.spark, pytest.mark.slow]

JOB = Path(__file__).with_name("rescale_kill_job.py")
RUN_TIMEOUT = 300  # seconds for one driver process (its session's start-up included)


def _killed_run(tmp_path: Path, checkpoint: str, directory: Path, partitions: int, kill_at: str,
                runs: List[DriverRun]) -> str:
    """Run ``rescale_kill_job.py`` until it SIGKILLs itself, then kill what is left of it; returns its output."""
    args = ["--checkpoint", checkpoint, "--input", str(directory), "--partitions", str(partitions),
            "--kill-at", kill_at]
    run = DriverRun(JOB, args, tmp_path / f"kill-{kill_at}.log", cwd=JOB.parents[2])
    runs.append(run)
    rc = run.finish(RUN_TIMEOUT)
    text = run.log.read_text(errors="replace")
    assert rc == -signal.SIGKILL, f"the run was not killed (rc {rc}):\n{text[-3000:]}"
    return text


def _meta(checkpoint: Union[str, Path]) -> Dict[str, Any]:
    """The checkpoint's ``meta.json`` (a local path or a URI such as the test HDFS's)."""
    return json.loads(storage.read_bytes(storage.join(str(checkpoint), "flinkish", "meta.json")))  # type: ignore[no-any-return]


def _state_files(checkpoint: str) -> Set[str]:
    """The names of the state files of the operator ``sums`` in ``checkpoint`` (every partition)."""
    root = storage.join(checkpoint, "flinkish", "state", "op=sums")
    return {n for sp in storage.list_dirs(root) for n in storage.list_names(storage.join(root, sp))
            if n.startswith("s=") and n.endswith(".parquet")}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("store", ["local", pytest.param("hdfs", marks=pytest.mark.hdfs)])
def test_a_sigkill_during_the_redistribution_leaves_a_checkpoint_that_restarts(
    spark: Any, tmp_path: Path, driver_runs: List[DriverRun], store: str, request: Any
) -> None:
    """On the local disk and on the test HDFS (``write_bytes`` renames over the old file there in one NameNode
    operation, as ``os.replace`` does on the local disk)."""
    directory = tmp_path / "in"
    directory.mkdir()
    for i in range(BEFORE):
        write_file(directory, i)
    if store == "hdfs":
        checkpoint = f"{request.getfixturevalue('hdfs_cluster').uri}/rescale-kill/{uuid.uuid4().hex[:8]}/ck"
    else:
        checkpoint = str(tmp_path / "ck")
    ids: List[Any] = []
    sums: List[Any] = []
    handle = file_job(spark, directory, 2, ids, sums).execute("kill-rescale-1", checkpoint_location=checkpoint)
    handle.process_all_available()
    handle.stop()
    before = newest_state(checkpoint)
    files_before = _state_files(checkpoint)

    # killed after the split wrote some of the 4 new partitions: nothing the driver reads has changed
    log = _killed_run(tmp_path, checkpoint, directory, 4, "written", driver_runs)
    assert "SIGKILL after the split wrote" in log
    assert _meta(checkpoint)["state_partitions"] == 2 and newest_state(checkpoint) == before
    orphans = _state_files(checkpoint) - files_before
    assert orphans  # new files, named by nothing

    # killed once the base's document names the new files, before meta.json
    log = _killed_run(tmp_path, checkpoint, directory, 4, "manifests", driver_runs)
    assert "SIGKILL before meta.json" in log
    assert _meta(checkpoint)["state_partitions"] == 2
    assert 2 in state_partitions_named(checkpoint)  # key "a" (crc32 % 4 == 2): the document has the new layout
    assert storage.exists(storage.join(rescale_dir(checkpoint), "pending.json"))
    assert not orphans & _state_files(checkpoint)  # deleted by the restart before it rescaled, no batch run

    # restarted with the old number: the interrupted rescaling is done again, into 2 partitions
    for i in range(BEFORE, len(FILES)):
        write_file(directory, i)
    handle = file_job(spark, directory, 2, ids, sums).execute("kill-rescale-2", checkpoint_location=checkpoint)
    handle.process_all_available()
    handle.stop()
    check(ids, sums, jvm_free(FILES))
    assert _meta(checkpoint)["state_partitions"] == 2 and set(state_partitions_named(checkpoint)) <= {0, 1}
    assert not storage.exists(rescale_dir(checkpoint))


RULES = MapStateDescriptor("rules", Types.STRING(), Types.LONG())
# one file per list; a rule (k == "rule") sets the factor every key's events are multiplied by
BROADCAST_FILES = [
    [(1, "rule", 1_000, 10)],
    [(2, "a", 2_000, 1), (3, "b", 2_000, 2), (4, "e", 2_000, 3), (5, "h", 2_000, 4)],
    # restarted with 3 state partitions: "e" and "h" move to partition 2, which held nothing before
    [(6, "a", 3_000, 5), (7, "e", 3_000, 6), (8, "h", 3_000, 7), (9, "b", 3_000, 8)],
]


class Scale(KeyedBroadcastProcessFunction):
    """Per key, the running total of its events' values times the factor in force (broadcast state)."""

    def open(self, runtime_context: Any) -> None:
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        factor = ctx.get_broadcast_state(RULES).get("factor") or 0
        total = (self.total.value() or 0) + value["v"] * factor
        self.total.update(total)
        yield value["id"], value["k"], factor, total

    def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
        ctx.get_broadcast_state(RULES).put("factor", value["v"])
        return []


def _scaled(stream: Any, out: List[Any]) -> None:
    rules = stream.filter(lambda r: r["k"] == "rule").broadcast(RULES)
    events = stream.filter(lambda r: r["k"] != "rule").key_by(lambda r: r["k"], key_type=Types.STRING())
    events.connect(rules).process(Scale()).uid("scale").add_sink(out.append)


def test_broadcast_state_is_rescaled_in_place_one_copy_per_partition(spark: Any, tmp_path: Path) -> None:
    """Broadcast state is the same in every partition: the rescaled checkpoint's new partitions (partition 2 held
    no key before) each get one copy of it, and the results are the uninterrupted run's (the JVM-free engine's)."""
    from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource

    rows = [[dict(zip(("id", "k", "t", "v"), r)) for r in f] for f in BROADCAST_FILES]
    local = StreamExecutionEnvironment.get_execution_environment()
    expected: List[Any] = []
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
    source = MicroBatchSource([MicroBatch(b) for b in rows], end_of_input=False)
    _scaled(local.from_source(source, strategy.with_timestamp_assigner(lambda e, _: e["t"]), "events"), expected)
    local.execute()

    directory = tmp_path / "in"
    directory.mkdir()
    checkpoint = tmp_path / "ck"
    got: List[Any] = []
    for run, (partitions, files) in enumerate([(2, [0, 1]), (3, []), (3, [2])]):
        for i in files:
            write_part(directory, i, rows[i])
        env = StreamExecutionEnvironment.get_execution_environment(spark, state_partitions=partitions)
        df = spark.readStream.schema("id long, k string, t long, v long").option("maxFilesPerTrigger", 1).json(str(directory))
        _scaled(env.from_dataframe(df, strategy, timestamp_column="t").uid("files"), got)
        handle = env.execute(f"broadcast-rescale-{run}", checkpoint_location=str(checkpoint))
        handle.process_all_available()
        handle.stop()
        if run == 1:  # rescaled, no batch run since: one broadcast row (the empty key) in each partition
            import pyarrow.parquet as pq

            layout = newest_state(checkpoint)["scale"]["partitions"]
            root = checkpoint / "flinkish" / "state" / "op=scale"
            copies = {
                sp: sum(pq.read_table(root / f"sp={int(sp):05d}" / f["name"]).column("key").to_pylist().count(b"")
                        for f in m["files"])
                for sp, m in layout.items()
            }
            assert copies == {"0": 1, "1": 1, "2": 1}
    assert sorted(got) == sorted(expected)
    assert (7, "e", 10, 30 + 60) in got and (8, "h", 10, 40 + 70) in got  # partition 2's keys saw the factor of before


class _WithWindow(ProcessWindowFunction):  # type: ignore[type-arg]
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        for result in elements:
            yield key, context.window().start, result


# (id, k, region, t, v), one file per list; keyed by (k, region): 8 keys over the partitions
COLUMNAR_FILES = [
    [(i, i % 4, "eu" if i % 3 else "us", 1_000 + 200 * i, i) for i in range(10)],
    [(i, i % 4, "eu" if i % 3 else "us", 3_000 + 300 * (i - 10), i) for i in range(10, 20)],  # fires [0, 5000)
    # restarted with 3 state partitions: windows of [5000, 10000) hold records from before
    [(i, i % 4, "eu" if i % 3 else "us", 6_000 + 300 * (i - 20), i) for i in range(20, 30)],
    [(i, i % 4, "eu" if i % 3 else "us", 10_500 + 100 * (i - 30), i) for i in range(30, 34)],  # fires [5000, 10000)
    # restored from a savepoint into 2 state partitions
    [(i, i % 4, "eu" if i % 3 else "us", 14_000 + 500 * (i - 34), i) for i in range(34, 38)],  # fires [10000, 15000)
]


def _windowed(stream: Any, out: List[Any]) -> None:
    (
        stream.key_by(lambda r: (r.k, r["region"]))
        .window(TumblingEventTimeWindows.of(Duration.of_seconds(5)))
        .aggregate(ColumnAggregate(Count(), Sum("v")), _WithWindow())
        .uid("columnar")
        .add_sink(out.append)
    )


def test_a_columnar_window_is_rescaled_in_place_by_sparks_hash_of_its_key_columns(spark: Any, tmp_path: Path) -> None:
    """A window on Spark's columnar path (``vectorize=True``) places its keys by ``pmod(xxhash64(k, region), n)``:
    restarted with 3 state partitions instead of 2, its rows are placed by that hash of the key columns decoded from
    the keys, and so they are when a savepoint of it is restored into 2; the results are the uninterrupted run's (the
    JVM-free engine's)."""
    from pyspark.sql import Row

    from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource

    names = ("id", "k", "region", "t", "v")
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
    local = StreamExecutionEnvironment.get_execution_environment()
    expected: List[Any] = []
    source = MicroBatchSource([MicroBatch([Row(**dict(zip(names, r))) for r in f]) for f in COLUMNAR_FILES],
                              end_of_input=False)
    _windowed(local.from_source(source, strategy.with_timestamp_assigner(lambda e, _: e["t"]), "rows"), expected)
    local.execute()

    directory = tmp_path / "in"
    directory.mkdir()
    checkpoint = tmp_path / "ck"
    got: List[Any] = []
    savepoint = None
    for run, (partitions, files) in enumerate([(2, [0, 1]), (3, [2, 3]), (2, [4])]):
        for i in files:
            write_part(directory, i, (dict(zip(names, r)) for r in COLUMNAR_FILES[i]))
        env = StreamExecutionEnvironment.get_execution_environment(spark, state_partitions=partitions, vectorize=True)
        df = spark.readStream.schema("id long, k int, region string, t long, v long").option("maxFilesPerTrigger", 1)
        _windowed(env.from_dataframe(df.json(str(directory)), strategy, timestamp_column="t", order_columns=["id"]), got)
        location = checkpoint if savepoint is None else tmp_path / "restored"
        handle = env.execute(f"columnar-rescale-{run}", checkpoint_location=str(location), from_savepoint=savepoint)
        handle.process_all_available()
        assert handle.driver.columnar is not None
        if run == 1:
            assert _meta(checkpoint)["state_partitions"] == 3
            savepoint = handle.stop_with_savepoint(str(tmp_path / "savepoints"))
            # it records the rule that placed the window's keys: a restore into 3 would copy its files as they are
            recorded = json.loads(Path(savepoint, "_metadata.json").read_text())["hashed"]
            assert recorded == {"uid": "columnar", "types": ["int", "string"], "is_tuple": True}
        else:
            handle.stop()
    assert expected and sorted(got) == sorted(expected)
