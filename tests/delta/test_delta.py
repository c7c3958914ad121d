"""DeltaSink and from_delta on Spark: exactly-once commits per micro-batch (replays of a batch id, restarts from a
checkpoint, side outputs), merge mode with late firings, bounded and streaming reads, and watermarks flowing
from one job to the next through a Delta table (a two-stage medallion equal to the same chain run as one job).

Timeline of the medallion's input (minutes:seconds; stage 1 = per-minute windows, allowed lateness 2 min)::

    batch 0   a@00:10 a@00:20 b@00:30 a@01:05 b@59:00
    batch 1   a@60:30                    stage 1 watermark 60:29.999: minutes up to 59 fire; stage 2's hour 0 fires
    batch 2   b@59:30                    late for minute 59 but within its lateness: minute 59 fires again;
                                         the update reaches stage 2 after its hour 0 fired: late there (side output)
    batch 3   a@62:10
    end       every window fires
"""

from __future__ import annotations

import glob
import json
import os
import time
import uuid
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from chispa import assert_df_equality

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors.delta import DeltaSink
from pyspark_flinkish.datastream.functions import ProcessWindowFunction
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

pytestmark = pytest.mark.spark

MIN = 60_000
HOUR = 60 * MIN

SILVER = Types.ROW_NAMED(["key", "minute", "ts", "cnt", "total"], [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG()])
GOLD = Types.ROW_NAMED(["key", "hour", "cnt", "total"], [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG()])
EVENT = Types.ROW_NAMED(["key", "ts", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])

BATCHES = [
    [("a", 10_000, 1), ("a", 20_000, 2), ("b", 30_000, 5), ("a", MIN + 5_000, 3), ("b", 59 * MIN, 1)],
    [("a", 60 * MIN + 30_000, 4)],
    [("b", 59 * MIN + 30_000, 7)],
    [("a", 62 * MIN + 10_000, 1)],
]


def _strategy() -> WatermarkStrategy:
    return WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)).with_timestamp_assigner(lambda e, _: e[1])


def _source(batches: List[List[Tuple[str, int, int]]] = BATCHES) -> MicroBatchSource:
    return MicroBatchSource([MicroBatch(b) for b in batches])


class PerMinute(ProcessWindowFunction):
    """Stage 1: count and sum per key and minute; ``ts`` (the window's last millisecond) is stage 2's event time."""

    def process(self, key, context, elements):  # type: ignore[no-untyped-def]
        from pyspark.sql import Row

        w = context.window()
        values = [e[2] for e in elements]
        yield Row(key=key, minute=w.start // MIN, ts=w.end - 1, cnt=len(values), total=sum(values))


class PerHour(ProcessWindowFunction):
    """Stage 2: sums of the minute results per key and hour."""

    def process(self, key, context, elements):  # type: ignore[no-untyped-def]
        rows = list(elements)
        yield (key, context.window().start // HOUR, sum(r["cnt"] for r in rows), sum(r["total"] for r in rows))


def _stage1(events: Any) -> Any:
    return (
        events.key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Duration.of_minutes(1)))
        .allowed_lateness(Duration.of_minutes(2))
        .process(PerMinute(), output_type=SILVER)
    )


def _stage2(minutes: Any, late: OutputTag) -> Any:
    return (
        minutes.key_by(lambda r: r["key"])
        .window(TumblingEventTimeWindows.of(Duration.of_hours(1)))
        .side_output_late_data(late)
        .process(PerHour(), output_type=GOLD)
    )


def _rows(spark: Any, path: str, columns: List[str]) -> List[tuple]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).select(*columns).collect())


def _commits(path: str) -> List[Dict[str, Any]]:
    out = []
    for f in sorted(glob.glob(os.path.join(path, "_delta_log", "*.json"))):
        with open(f) as fh:
            for line in fh:
                d = json.loads(line)
                if "commitInfo" in d:
                    out.append(d["commitInfo"])
    return out


def _run(handle: Any) -> None:
    handle.await_termination()


# ------------------------------------------------------------------------------------------------- the writer
def test_writer_replay_of_a_batch_id_is_skipped(spark: Any, tmp_path: Any) -> None:
    """The same (query, sink, batch id) written twice — even with other records — commits once; the next
    batch id commits again; an empty batch commits its watermark."""
    from pyspark_flinkish.spark.delta import DeltaBatchWriter
    from pyspark_flinkish.spark.delta_commits import parse_watermark
    from pyspark_flinkish.spark.sink_frames import SinkFrame

    path = str(tmp_path / "t")
    writer = DeltaBatchWriter(DeltaSink.for_path(path, partition_by=["key"]), EVENT)
    context = {"checkpoint": str(tmp_path / "ck"), "sink_uid": "out", "watermark": 100}
    writer(spark, SinkFrame.of_values(spark, [("a", 1, 1), ("b", 2, 2)], EVENT), 0, context)
    writer(spark, SinkFrame.of_values(spark, [("a", 1, 1), ("zzz", 9, 9)], EVENT), 0, context)  # a replay of batch 0
    writer(spark, SinkFrame.of_values(spark, [], EVENT), 1, {**context, "watermark": 200})
    writer(spark, SinkFrame.of_values(spark, [("c", 3, 3)], EVENT), 2, {**context, "watermark": 300})
    writer(spark, SinkFrame.of_values(spark, [("c", 3, 3)], EVENT), 1, context)  # an older batch id: skipped too
    assert _rows(spark, path, ["key", "ts", "v"]) == [("a", 1, 1), ("b", 2, 2), ("c", 3, 3)]
    commits = _commits(path)
    assert [c["operation"] for c in commits] == ["CREATE TABLE", "WRITE", "WRITE", "WRITE"]
    assert [parse_watermark(c.get("userMetadata")) for c in commits] == [None, 100, 200, 300]
    assert "key" in (spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()["partitionColumns"])
    # a restart: a new writer knows nothing and reads the log; another writer's append in between hides nothing
    spark.createDataFrame([("x", 0, 0)], "key string, ts long, v long").write.format("delta").mode("append").save(path)
    restarted = DeltaBatchWriter(DeltaSink.for_path(path, partition_by=["key"]), EVENT)
    restarted(spark, SinkFrame.of_values(spark, [("c", 3, 3), ("yyy", 8, 8)], EVENT), 2, context)  # the replay of the last batch: skipped
    restarted(spark, SinkFrame.of_values(spark, [("d", 4, 4)], EVENT), 3, context)
    other = DeltaBatchWriter(DeltaSink.for_path(path, partition_by=["key"]), EVENT)
    other(spark, SinkFrame.of_values(spark, [("e", 5, 5)], EVENT), 2, {**context, "sink_uid": "other"})  # another sink (app id): its own batch ids
    assert _rows(spark, path, ["key", "ts", "v"]) == [("a", 1, 1), ("b", 2, 2), ("c", 3, 3), ("d", 4, 4), ("e", 5, 5), ("x", 0, 0)]
    assert (restarted.commits, restarted.skipped, other.commits) == (1, 1, 1)


def test_writer_merge_is_idempotent_and_last_record_of_a_key_wins(spark: Any, tmp_path: Any) -> None:
    from pyspark_flinkish.spark.delta import DeltaBatchWriter
    from pyspark_flinkish.spark.sink_frames import SinkFrame

    path = str(tmp_path / "m")
    writer = DeltaBatchWriter(DeltaSink.for_path(path).with_merge_keys("key"), EVENT)
    context = {"checkpoint": str(tmp_path / "ck"), "sink_uid": "out", "watermark": 5}
    writer(spark, SinkFrame.of_values(spark, [("a", 1, 1), ("b", 1, 10), ("a", 2, 2)], EVENT), 0, context)  # a twice in one batch: the last wins
    writer(spark, SinkFrame.of_values(spark, [("a", 9, 99)], EVENT), 0, context)  # replay of batch 0 with other data: skipped
    writer(spark, SinkFrame.of_values(spark, [("b", 3, 30)], EVENT), 1, context)
    writer(spark, SinkFrame.of_values(spark, [("b", 4, 40)], EVENT), 1, context)  # replay of batch 1: skipped
    assert _rows(spark, path, ["key", "ts", "v"]) == [("a", 2, 2), ("b", 3, 30)]
    assert [c["operation"] for c in _commits(path)] == ["CREATE TABLE", "MERGE", "MERGE"]


def _checkpoint_table(spark: Any, path: str) -> None:
    """A table whose log is checkpointed every 2 commits (the user's property, which the writer keeps)."""
    spark.sql(
        f"CREATE TABLE delta.`{path}` (key STRING, ts BIGINT, v BIGINT) USING delta "
        "TBLPROPERTIES ('delta.checkpointInterval' = '2', 'delta.enableChangeDataFeed' = 'true')"
    )


def _checkpoints(path: str) -> List[int]:
    return sorted(int(os.path.basename(f)[:20]) for f in glob.glob(os.path.join(path, "_delta_log", "*.checkpoint.parquet")))


def test_writer_log_checkpoints_in_the_background_equal_synchronous_ones(spark: Any, tmp_path: Any) -> None:
    """The default writer returns once a batch's commit is in the log and writes Delta's log checkpoint (every
    ``delta.checkpointInterval`` commits) on its background thread: the same commits, rows, checkpoints and
    ``_last_checkpoint`` as a writer doing it inside the batch, and the table's property unchanged."""
    from pyspark_flinkish.spark.delta import DeltaBatchWriter
    from pyspark_flinkish.spark.sink_frames import SinkFrame

    tables = {}
    for name, sink in (("bg", DeltaSink.for_path(str(tmp_path / "bg"))),
                       ("sync", DeltaSink.for_path(str(tmp_path / "sync")).with_background_checkpoints(False))):
        path = str(tmp_path / name)
        _checkpoint_table(spark, path)
        writer = DeltaBatchWriter(sink, EVENT)
        context = {"checkpoint": str(tmp_path / f"ck-{name}"), "sink_uid": "out", "watermark": 7}
        for b in range(5):  # versions 1..5: checkpoints at 2 and 4; batch 2 is empty (still a commit)
            rows = [] if b == 2 else [(f"k{b}", b, i) for i in range(3)]
            writer(spark, SinkFrame.of_values(spark, rows, EVENT), b, context)
            assert len(_rows(spark, path, ["key"])) == 3 * sum(1 for x in range(b + 1) if x != 2)  # in when the batch ends
        writer(spark, SinkFrame.of_values(spark, [("zzz", 9, 9)], EVENT), 4, context)  # a replay: skipped
        assert writer.flush(timeout=120)
        assert (writer.commits, writer.skipped, writer.post_commit_failures) == (5, 1, 0)
        assert writer.background_commits == (0 if name == "sync" else 5)
        with open(os.path.join(path, "_delta_log", "_last_checkpoint")) as f:
            last = json.load(f)["version"]
        props = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()["properties"]
        tables[name] = (_rows(spark, path, ["key", "ts", "v"]), [c["operation"] for c in _commits(path)],
                        _checkpoints(path), last, props.get("delta.checkpointInterval"))
    assert tables["bg"] == tables["sync"]
    assert tables["bg"][2:] == ([2, 4], 4, "2")


def test_the_delta_writers_own_session_reconstructs_snapshots_in_few_partitions(spark: Any) -> None:
    """The suite's sessions give Delta's ``snapshotPartitions`` as a static setting (``tests/conftest.py``), which the
    writer's own session (``spark.newSession()``) inherits: a table's state reconstruction (a MERGE's file list, a
    log checkpoint) in 2 tasks, not Delta's 50. A runtime ``conf.set`` would not reach that session."""
    assert spark.newSession().conf.get("spark.databricks.delta.snapshotPartitions") == "2"


@pytest.mark.timeout(600)
def test_a_crash_while_the_log_checkpoint_is_written_leaves_a_readable_table(
    spark: Any, tmp_path: Any, driver_runs: Any
) -> None:
    """A driver SIGKILLed while its writer's background thread writes the log checkpoint of version 2: the table
    reads back with every committed batch; a restarted writer skips the committed batch, goes on, and Delta writes
    the next checkpoint (version 4)."""
    from pyspark_flinkish.spark.delta import DeltaBatchWriter
    from pyspark_flinkish.spark.sink_frames import SinkFrame
    from pyspark_flinkish.testing.sigkill import DriverRun

    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    job = os.path.join(os.path.dirname(__file__), "delta_checkpoint_crash_job.py")
    run = DriverRun(job, [path, ck], tmp_path / "crash.log")
    driver_runs.append(run)
    rc = run.finish(300)
    assert rc == -9 and any(ln.startswith("SIGKILL during the checkpoint") for ln in run.lines()), run.tail()
    # the module's session (``session()`` here would reset the shared session's shuffle partitions for later tests)
    assert _rows(spark, path, ["key", "ts", "v"]) == [("k0", 0, 0), ("k1", 1, 1)]
    writer = DeltaBatchWriter(DeltaSink.for_path(path), EVENT)
    context = {"checkpoint": ck, "sink_uid": "out", "watermark": 0}
    for b in (1, 2, 3):  # 1: the replay of the last committed batch
        writer(spark, SinkFrame.of_values(spark, [(f"k{b}", b, b)], EVENT), b, context)
    assert writer.flush(timeout=120)
    assert (writer.commits, writer.skipped) == (2, 1)
    assert _rows(spark, path, ["key", "ts", "v"]) == [(f"k{b}", b, b) for b in range(4)]
    assert 4 in _checkpoints(path)


# ------------------------------------------------------------------------------------------------- pipelines
def _expected_chain() -> Tuple[List[tuple], List[tuple], List[tuple]]:
    """The chain as one job on the JVM-free engine: (silver, gold, late) records."""
    env = StreamExecutionEnvironment.get_execution_environment()
    late = OutputTag("late", SILVER)
    silver: List[tuple] = []
    gold: List[tuple] = []
    late_rows: List[tuple] = []
    minutes = _stage1(env.from_source(_source(), _strategy()))
    minutes.add_sink(lambda r: silver.append(tuple(r)))
    hours = _stage2(minutes, late)
    hours.add_sink(lambda r: gold.append(tuple(r)))
    hours.get_side_output(late).add_sink(lambda r: late_rows.append(tuple(r)))
    env.execute("chain")
    return silver, gold, late_rows


def test_from_delta_bounded(spark: Any, tmp_path: Any) -> None:
    """A snapshot as a bounded source: every window fires at the end of input."""
    path = str(tmp_path / "events")
    data = [("a", "2026-01-01 00:00:10", 1), ("a", "2026-01-01 00:00:50", 2), ("b", "2026-01-01 00:01:10", 5)]
    spark.createDataFrame(data, "key string, at string, v long").selectExpr(
        "key", "CAST(at AS timestamp) AS at", "v"
    ).write.format("delta").save(path)
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    sums = (
        env.from_delta(path, timestamp_column="at", bounded=True)
        .key_by(lambda r: r["key"])
        .window(TumblingEventTimeWindows.of(Duration.of_minutes(1)))
        .reduce(lambda x, y: x if x["v"] >= y["v"] else y)  # the largest v per window
        .map(lambda r: (r["key"], r["v"]), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
    )
    assert sorted(sums.execute_and_collect()) == [("a", 2), ("b", 5)]



def driver_result_bytes(spark: Any) -> int:
    """The bytes of task results the driver has received in this session so far: every stage's ``resultSize`` in
    Spark's status store (a ``collect`` of records is paid there), once its listener bus has caught up."""
    sc = spark.sparkContext._jsc.sc()
    sc.listenerBus().waitUntilEmpty()
    gateway = spark.sparkContext._gateway
    stages = sc.statusStore().stageList(None, False, False, gateway.new_array(gateway.jvm.double, 0), None)
    return sum(int(s.resultSize()) for s in gateway.jvm.scala.jdk.javaapi.CollectionConverters.asJava(stages))


def test_bounded_inputs_are_read_by_the_executors_and_the_driver_receives_no_record(spark: Any, tmp_path: Any) -> None:
    """Issue 25: one BATCH job reads a static DataFrame and ``from_delta(bounded=True)`` of a table (the two replay
    sources of one replay file), at 2,000 and then 20,000 rows, each through keyed tumbling windows (5 keys, one window
    each: the same 5 results at both sizes). The task results the driver receives, building the job and running it,
    do not grow with the rows (collected on the driver, 2 x 18,000 more rows added 440 KB); the sums are the rows'."""
    from pyspark_flinkish.datastream import RuntimeExecutionMode

    received: Dict[int, int] = {}
    for n in (2_000, 20_000):
        path = str(tmp_path / f"events{n}")
        rows = spark.range(0, n, numPartitions=2).selectExpr("concat('k', CAST(id % 5 AS string)) AS key", "id * 10 AS at", "id AS v")
        rows.write.format("delta").save(path)
        env = StreamExecutionEnvironment.get_execution_environment(spark)
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
        before = driver_result_bytes(spark)
        sources = {
            "static": env.from_dataframe(spark.read.format("delta").load(path), timestamp_column="at", source_name="static"),
            "from_delta": env.from_delta(path, timestamp_column="at", bounded=True),
        }
        out: Dict[str, List[Any]] = {}
        for form, source in sources.items():
            (
                source.map(lambda r: (r["key"], r["v"]), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
                .key_by(lambda e: e[0])
                .window(TumblingEventTimeWindows.of(Duration.of_hours(1)))
                .reduce(lambda a, b: (a[0], a[1] + b[1]))
                .add_sink(out.setdefault(form, []).append)
            )
        env.execute(f"bounded inputs {n}")
        received[n] = driver_result_bytes(spark) - before
        expected = sorted((f"k{k}", sum(range(k, n, 5))) for k in range(5))
        assert {form: sorted(tuple(r) for r in rows) for form, rows in out.items()} == {f: expected for f in sources}, n
    assert received[20_000] - received[2_000] < 20_000, received


# ------------------------------------------------------------------------------------------------- medallion
def test_medallion_two_queries_equal_one_job(spark: Any, tmp_path: Any) -> None:
    """Stage 1 (per-minute windows) -> Delta -> stage 2 (from_delta, hourly windows, late side output) -> Delta,
    two streaming queries running at the same time, equal the chain run as one job. Stage 2 must take stage 1's
    watermark: with it, the late update of minute 59 reaches stage 2 after its hour 0 fired (late there).

    Also: stage 1 writes the minutes a second time in merge mode (the late firing of minute 59 replaces its
    row), and a restart of stage 1 that replays its last batch adds no commit to either table."""
    silver_expected, gold_expected, late_expected = _expected_chain()
    assert late_expected, "the scenario must make stage 2 see late data"
    silver, merged = str(tmp_path / "silver"), str(tmp_path / "merged")
    gold, late_path = str(tmp_path / "gold"), str(tmp_path / "late")
    ck1 = str(tmp_path / "ck1")

    def stage1_job() -> Any:
        env1 = StreamExecutionEnvironment.get_execution_environment(spark)
        minutes = _stage1(env1.from_source(_source(), _strategy()))
        minutes.sink_to(DeltaSink.for_path(silver)).uid("silver")
        minutes.sink_to(DeltaSink.for_path(merged).with_merge_keys("key", "minute")).uid("merged")
        return env1

    stage1 = stage1_job().execute("silver", checkpoint_location=ck1, trigger={"processingTime": "1 second"})
    deadline = time.time() + 180
    from delta.tables import DeltaTable

    while not DeltaTable.isDeltaTable(spark, silver):
        assert time.time() < deadline, "stage 1 did not create the silver table"
        time.sleep(0.2)

    env2 = StreamExecutionEnvironment.get_execution_environment(spark)
    late = OutputTag("late", SILVER)
    hours = _stage2(env2.from_delta(silver, timestamp_column="ts"), late)
    hours.sink_to(DeltaSink.for_path(gold)).uid("gold")
    hours.get_side_output(late).sink_to(DeltaSink.for_path(late_path)).uid("late")
    stage2 = env2.execute("gold", checkpoint_location=str(tmp_path / "ck2"), trigger={"processingTime": "2 seconds"})
    try:
        stage1.process_all_available()
        stage1.stop()
        stage2.process_all_available()
        stage2_batches = stage2.driver.batches_run  # type: ignore[union-attr]
        watermarks = stage2.watermarks()
    finally:
        stage1.stop()
        stage2.stop()
    silver_columns = ["key", "minute", "ts", "cnt", "total"]
    assert _rows(spark, silver, silver_columns) == sorted(silver_expected)
    assert _rows(spark, gold, ["key", "hour", "cnt", "total"]) == sorted(gold_expected)
    assert _rows(spark, late_path, silver_columns) == sorted(late_expected)
    assert stage2_batches >= 1
    assert max(watermarks.values()) == 2**63 - 1  # stage 1's end of input reached stage 2

    # merge mode: one row per (key, minute), the last firing's (minute 59 of b fired twice)
    last: Dict[Tuple[str, int], tuple] = {}
    for r in silver_expected:
        last[(r[0], r[1])] = r
    assert len(last) < len(silver_expected)
    expected = spark.createDataFrame(sorted(last.values()), "key string, minute long, ts long, cnt long, total long")
    actual = spark.read.format("delta").load(merged).select(*silver_columns)
    assert_df_equality(actual, expected, ignore_nullable=True, ignore_row_order=True)

    # a crash after the sinks committed stage 1's last batch, before Spark did: the restart replays it
    commits_before = len(_commits(silver)), len(_commits(merged))
    spark_commits = os.path.join(ck1, "spark", "commits")
    last_batch = max(int(p) for p in os.listdir(spark_commits) if p.isdigit())
    for name in (str(last_batch), f".{last_batch}.crc"):
        if os.path.exists(os.path.join(spark_commits, name)):
            os.remove(os.path.join(spark_commits, name))
    restarted = stage1_job().execute("silver", checkpoint_location=ck1, trigger={"availableNow": True})
    _run(restarted)
    assert restarted.driver is not None and restarted.driver.batches_run == 1  # the replayed batch ran
    assert (len(_commits(silver)), len(_commits(merged))) == commits_before  # Delta skipped both writes
    assert _rows(spark, silver, silver_columns) == sorted(silver_expected)


def test_delta_sink_on_the_apply_in_pandas_with_state_executor(spark: Any, tmp_path: Any) -> None:
    """The same sink on the other executor: one idempotent commit per batch (no watermark recorded there)."""
    from pyspark_flinkish.spark.delta_commits import parse_watermark

    short = BATCHES[:2]
    local = StreamExecutionEnvironment.get_execution_environment()
    silver_expected: List[tuple] = []
    _stage1(local.from_source(_source(short), _strategy())).add_sink(lambda r: silver_expected.append(tuple(r)))
    local.execute("local")
    env = StreamExecutionEnvironment.get_execution_environment(spark, backend="apply_in_pandas_with_state")
    path = str(tmp_path / "silver")
    _stage1(env.from_source(_source(short), _strategy())).sink_to(DeltaSink.for_path(path)).uid("silver")
    handle = env.execute("stateful-silver", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True})
    listened: List[Any] = []
    handle.on_progress(listened.append)
    _run(handle)
    assert _rows(spark, path, ["key", "minute", "ts", "cnt", "total"]) == sorted(silver_expected)
    # its progress comes from Spark's alone: Spark's watermark of each batch as Flink's, keys in Spark's state store
    progress = handle.recent_progress()
    assert [p["batch_id"] for p in progress] == list(range(len(progress))) and len(progress) >= 4
    ops = [p["operators"]["stateful-0"] for p in progress]
    assert ops[0]["currentOutputWatermark"] == -(2**63) and ops[-1]["currentOutputWatermark"] == 2**63 - 1
    assert ops[0]["numKeys"] == 2 and ops[-1]["numKeys"] == 0  # keys a and b hold windows until the end of input
    assert handle.progress()["spark"]["batchId"] == progress[-1]["batch_id"]
    assert [p["batch_id"] for p in listened] == [p["batch_id"] for p in progress]
    assert [p["operators"] for p in listened] == [p["operators"] for p in progress]
    commits = _commits(path)[1:]
    assert commits and all(parse_watermark(c.get("userMetadata")) is None for c in commits)
    assert all(json.loads(c["userMetadata"])["flinkish"]["app_id"].endswith("-silver") for c in commits)


def test_merge_keys_keep_the_late_firing_on_the_apply_in_pandas_with_state_executor(spark: Any, tmp_path: Any) -> None:
    """Issue 16: minute 0 of key k fires on time (1 element, total 3) and, in the same Spark batch, late (2 elements,
    total 7). A merging DeltaSink keeps the last record per key: Flink's last firing, the late one."""
    batches = [[("k", 1_000, 3)], [("k", MIN + 12_000, 0)], [("k", 5_000, 4)]]
    env = StreamExecutionEnvironment.get_execution_environment(spark, backend="apply_in_pandas_with_state")
    path = str(tmp_path / "silver")
    sink = DeltaSink.for_path(path, merge_keys=("key", "minute"))
    _stage1(env.from_source(_source(batches), _strategy())).sink_to(sink).uid("silver")
    _run(env.execute("stateful-merge", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True}))
    assert _rows(spark, path, ["key", "minute", "ts", "cnt", "total"]) == [
        ("k", 0, MIN - 1, 2, 7),
        ("k", 1, 2 * MIN - 1, 1, 0),
    ]


def test_delta_sinks_are_written_by_the_executors_and_the_driver_collects_no_record(spark: Any, tmp_path: Any) -> None:
    """Issue 25: a keyed window into a DeltaSink partitioned by key, its late data into a second one, a table named in
    the catalog. The driver collects the same few coordination rows (metrics and per-sink counts) for a batch of 10
    records and for one of 3,000, and the tables hold exactly the JVM-free engine's rows (the first partitioned by
    key, one directory per key); each batch's progress names its Spark jobs, one pass over its input."""
    small = [(f"k{i % 5}", 1_000 * i, i) for i in range(10)]
    large = [(f"k{i % 50}", 20_000 + i, i) for i in range(3_000)]
    batches = [small, large, [("k1", 500, -1), ("k2", 40_000, 7)]]  # k1@500: late at watermark 22_999

    def build(env: Any, main: Any, late_sink: Any) -> None:
        late = OutputTag("late", EVENT)
        windows = (
            env.from_source(_source(batches), _strategy(), "events")
            .key_by(lambda e: e[0])
            .window(TumblingEventTimeWindows.of(Duration.of_seconds(10)))
            .side_output_late_data(late)
            .process(PerKey(), output_type=EVENT)
        )
        main(windows)
        late_sink(windows.get_side_output(late))

    expected: Dict[str, List[tuple]] = {"main": [], "late": []}
    local = StreamExecutionEnvironment.get_execution_environment()
    build(local, lambda s: s.add_sink(lambda r: expected["main"].append(tuple(r))),
          lambda s: s.add_sink(lambda r: expected["late"].append(tuple(r))))
    local.execute()
    assert expected["late"] == [("k1", 500, -1)]

    env = StreamExecutionEnvironment.get_execution_environment(spark)
    paths = {name: str(tmp_path / name) for name in ("main", "late")}
    # the late table by its name (created outside the warehouse: the writer's CREATE TABLE IF NOT EXISTS keeps it)
    late_table = f"flinkish_late_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {late_table} (key STRING, ts BIGINT, v BIGINT) USING delta LOCATION '{paths['late']}'")
    build(env, lambda s: s.sink_to(DeltaSink.for_path(paths["main"]).with_partition_columns("key")).uid("main"),
          lambda s: s.sink_to(DeltaSink.for_table(late_table)).uid("late"))
    reported: List[Dict[str, Any]] = []
    try:
        handle = env.execute("executor sinks", checkpoint_location=str(tmp_path / "ck"),
                             trigger={"availableNow": True}, progress=reported.append)
        handle.await_termination()
        late_rows = sorted(tuple(r) for r in spark.table(late_table).select("key", "ts", "v").collect())
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {late_table}")
    assert late_rows == sorted(expected["late"])
    for name, path in paths.items():
        assert _rows(spark, path, ["key", "ts", "v"]) == sorted(expected[name]), name
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{paths['main']}`").first()
    assert list(detail["partitionColumns"]) == ["key"]
    assert {p.name for p in Path(paths["main"]).glob("key=*")} == {f"key={r[0]}" for r in expected["main"]}
    records = [sum(p["input_records"].get("events", {}).values()) for p in reported]
    assert records[:3] == [10, 3_000, 2]
    collected = [p["driver_rows_collected"] for p in reported]
    # 2 state partitions of one keyed operator: 2 metric rows, plus at most one count row per partition and sink
    # and one statistics row per route task (one replay file: one task), whatever the number of records
    assert all(2 <= c <= 2 + 2 * 2 + 1 for c in collected), collected
    assert [p["sink_records"]["late"] for p in reported[:3]] == [0, 0, 1]
    assert sum(p["sink_records"]["main"] for p in reported) == len(expected["main"])
    jobs = reported[1]["spark_jobs"]
    assert jobs is not None and jobs["count"] >= 3, jobs  # the batch's own job, then the two tables' writes
    assert any(phase.startswith("sink main") for phase in jobs["phases"]), jobs
    # one pass over the input (one keyed level): the route runs in the keyed stage's action, no job of its own
    # collects the statistics first (before: "route" 1 job, then "collect" 3); Spark's adaptive execution runs the
    # action as at most 3 jobs (shuffle write, the keyed stage's cache, the collect)
    assert "route" not in jobs["phases"] and 1 <= len(jobs["phases"]["route, keyed stage, collect"]) <= 3, jobs


class PerKey(ProcessWindowFunction):
    """Per key and window: the window's last millisecond and the sum of the values."""

    def process(self, key, context, elements):  # type: ignore[no-untyped-def]
        yield (key, context.window().end - 1, sum(e[2] for e in elements))
