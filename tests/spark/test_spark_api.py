"""The same pipeline code on Spark: the README example, typed DataFrame sinks, DataFrame sources with
per-partition watermarks — each compared with the JVM-free engine; the per-batch metrics of a pipeline with
known late records and firings (``docs/operations.md#metrics``)."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyspark_flinkish.common import Duration, Time, TimestampAssigner, Types, Watermark, WatermarkGenerator, WatermarkStrategy
from pyspark_flinkish.core.errors import StateError, UnsupportedFeatureError
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import KeyedProcessFunction, ProcessWindowFunction
from pyspark_flinkish.datastream.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows
from pyspark_flinkish.spark import read_state, read_timers, read_windows
from pyspark_flinkish.spark.keys import encode_key
from pyspark_flinkish.spark.state_cache import FILE_SCHEMA
from pyspark_flinkish.spark.state_reader import committed_state

pytestmark = pytest.mark.spark
CASES_DIR = Path(__file__).resolve().parents[2] / "jvm-free-tests" / "datastream"
sys.path.insert(0, str(CASES_DIR))
import print_subtask_cases  # noqa: E402

sys.path.remove(str(CASES_DIR))

from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(print_subtask_cases)  # Spark's Python workers cannot import it
API = SimpleNamespace(Types=Types)
TOTAL = ValueStateDescriptor("total", Types.LONG())
VALUES = ListStateDescriptor("values", Types.LONG())
AT = MapStateDescriptor("at", Types.LONG(), Types.LONG())
EVENT = Types.ROW_NAMED(["k", "t", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])
ROOT = Path(__file__).resolve().parents[2]


def test_readme_example_runs_on_spark_with_only_the_environment_line_changed(spark, capsys) -> None:  # type: ignore[no-untyped-def]
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Example", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    expected = re.search(r"```text\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    line = "env = StreamExecutionEnvironment.get_execution_environment()"
    assert code.count(line) == 1
    spark_code = code.replace(line, "env = StreamExecutionEnvironment.get_execution_environment(spark)")
    exec(compile(spark_code, "README.md (on Spark)", "exec"), {"__name__": "readme_on_spark", "spark": spark})
    printed = capsys.readouterr().out
    assert sorted(printed.splitlines()) == sorted(expected.splitlines())
    # rows arrive in Flink's emission order; the late line is delivered with its batch
    rows = [ln for ln in printed.splitlines() if not ln.startswith("late:")]
    assert rows == [ln for ln in expected.splitlines() if not ln.startswith("late:")]

    # print() at parallelism 3 (Spark's driver-side print), in one job: each line begins with the sink subtask that
    # prints it in Flink (the key's, computed in the keyed tasks; every broadcast instance's), as PyFlink 2.3.0's
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    names = ["keyed p3 id", "window p3 id", "broadcast p3 id"]
    for name in names:
        print_subtask_cases.job(API, env.set_parallelism, name)  # set_parallelism returns the environment
    env.execute("print-subtasks")
    recorded = print_subtask_cases.recorded()
    assert sorted(capsys.readouterr().out.splitlines()) == sorted(line for name in names for line in recorded[name])


class Alert(KeyedProcessFunction):  # type: ignore[type-arg]
    """Sums values per key and emits the sum 5 ms (event time) after the key's first event; keeps the values
    (list state) and the value per timestamp (map state) until then, for ``read_state``."""

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        self.total = runtime_context.get_state(TOTAL)
        self.values = runtime_context.get_list_state(VALUES)
        self.at = runtime_context.get_map_state(AT)

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        if self.total.value() is None:
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 5)
        self.total.update((self.total.value() or 0) + value["v"])
        self.values.add(value["v"])
        self.at.put(value["t"], value["v"])
        if value["v"] < 0:
            yield OutputTag("negative"), value

    def on_timer(self, timestamp, ctx):  # type: ignore[no-untyped-def]
        yield {"key": ctx.get_current_key(), "at": timestamp, "total": self.total.value()}
        for state in (self.total, self.values, self.at):
            state.clear()


def _pipeline(env):  # type: ignore[no-untyped-def]
    batches = [
        MicroBatch([{"k": "a", "t": 1, "v": 1}, {"k": "b", "t": 2, "v": 2}, {"k": "a", "t": 3, "v": -3}], partitions=[0, 1, 0]),
        MicroBatch([{"k": "a", "t": 9, "v": 4}, {"k": "b", "t": 4, "v": 5}], partitions=[0, 1]),
        MicroBatch([{"k": "c", "t": 30, "v": 6}], partitions=[1]),
        MicroBatch([{"k": "a", "t": 1, "v": 8}], partitions=[0]),  # late for 5 ms windows (watermark 6)
    ]
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(2)).with_timestamp_assigner(lambda e, _: e["t"])
    events = env.from_source(MicroBatchSource(batches, partitions=[0, 1]), strategy, "events")
    alerts = events.key_by(lambda e: e["k"]).process(
        Alert(), output_type=Types.ROW_NAMED(["key", "at", "total"], [Types.STRING(), Types.LONG(), Types.LONG()])
    ).uid("alerts")
    sums = (
        events.key_by(lambda e: e["k"])
        .window(TumblingEventTimeWindows.of(Duration.of_millis(10)))
        .reduce(lambda a, b: {"k": a["k"], "t": a["t"], "v": a["v"] + b["v"]})
        .map(lambda e: (e["k"], e["v"]), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
    )
    # two 5 ms windows for the metrics: one sends late records to a side output, the other drops them
    def add(a, b):  # type: ignore[no-untyped-def]
        return {"k": a["k"], "t": a["t"], "v": a["v"] + b["v"]}

    w5 = events.key_by(lambda e: e["k"]).window(TumblingEventTimeWindows.of(Duration.of_millis(5)))
    w5 = w5.side_output_late_data(OutputTag("late")).reduce(add).uid("w5-side")
    w5d = events.key_by(lambda e: e["k"]).window(TumblingEventTimeWindows.of(Duration.of_millis(5))).reduce(add)
    return alerts, alerts.get_side_output(OutputTag("negative")), sums, w5, w5.get_side_output(OutputTag("late")), w5d.uid("w5-drop")


def test_keyed_process_function_timers_side_outputs_and_typed_dataframe_sink(spark, tmp_path, caplog) -> None:  # type: ignore[no-untyped-def]
    local = StreamExecutionEnvironment.get_execution_environment()
    la, ln, ls, lw5, llate, lw5d = _pipeline(local)
    expected_alerts, expected_neg, expected_sums, expected_late = [], [], [], []
    la.add_sink(expected_alerts.append)
    ln.add_sink(expected_neg.append)
    ls.add_sink(expected_sums.append)
    llate.add_sink(expected_late.append)
    for s in (lw5, lw5d):
        s.add_sink(lambda v: None)
    local.execute()
    assert expected_alerts and expected_neg and expected_sums and expected_late

    env = StreamExecutionEnvironment.get_execution_environment(spark)
    alerts, negative, sums, w5, late, w5d = _pipeline(env)
    got_alerts, got_neg, got_late, frames, reported = [], [], [], [], []
    alerts.foreach_batch(lambda df, batch_id: got_alerts.extend(r.asDict() for r in df.collect()))
    negative.add_sink(got_neg.append)
    late.add_sink(got_late.append)
    for s in (w5, w5d):
        s.add_sink(lambda v: None)
    sums.foreach_batch(lambda df, batch_id: frames.append((batch_id, df.columns, [tuple(r) for r in df.collect()])))
    checkpoint = tmp_path / "ck"
    caplog.set_level(logging.INFO, logger="pyspark_flinkish.progress")
    handle = env.execute("api", checkpoint_location=str(checkpoint), trigger={"availableNow": True}, progress=reported.append)
    listened: list = []
    handle.on_progress(listened.append)  # a StreamingQueryListener: Spark's progress with the package's metrics
    handle.await_termination()
    assert got_alerts == [r.as_dict() for r in expected_alerts]  # the local engine hands on Rows (a ROW type)
    assert got_neg == expected_neg
    assert got_late == expected_late == [{"k": "a", "t": 1, "v": 8}]
    assert all(cols == ["f0", "f1"] for _, cols, _ in frames)
    assert [row for _, _, rows in frames for row in rows] == expected_sums

    # the metrics of each micro-batch (batch 4: the end of input), worked out by hand from the batches above:
    # per-partition watermarks max_ts - 3; 5 ms windows [0,5) of a and b fire at watermark 6 (batch 2); the late
    # a@1 (batch 3) goes to the side output of one 5 ms window and is dropped by the other
    assert [p["batch_id"] for p in reported] == [0, 1, 2, 3, 4]
    assert [{k: v["currentWatermark"] for k, v in p["sources"]["events"].items()} for p in reported] == [
        {"0": 0, "1": -1}, {"0": 6, "1": 1}, {"0": 6, "1": 27}, {"0": 6, "1": 27}, {"0": 6, "1": 27}
    ]
    assert [{k: v["numRecordsIn"] for k, v in p["sources"]["events"].items()} for p in reported] == [
        {"0": 2, "1": 1}, {"0": 1, "1": 1}, {"0": 0, "1": 1}, {"0": 1, "1": 0}, {"0": 0, "1": 0}
    ]
    side = [p["operators"]["w5-side"] for p in reported]
    drop = [p["operators"]["w5-drop"] for p in reported]
    assert [o["currentOutputWatermark"] for o in side] == [-1, 1, 6, 6, 2**63 - 1]  # end of input
    # watermark lag: the driver's processing time after the batch minus the watermark (none after the end of input)
    assert all(abs(p["processing_time"] - time.time() * 1000) < 600_000 for p in reported)
    assert [o["watermarkLag"] for o in side] == [p["processing_time"] - wm for p, wm in zip(reported, (-1, 1, 6, 6))] + [None]
    assert [o["numRecordsIn"] for o in side] == [3, 2, 1, 1, 0]
    assert [o["numWindowsFired"] for o in side] == [0, 0, 2, 0, 2]
    assert [o["openWindows"] for o in side] == [2, 3, 2, 2, 0]
    assert [o["numKeys"] for o in side] == [2, 2, 2, 2, 0]
    assert [o["numLateRecordsToSideOutput"] for o in side] == [0, 0, 0, 1, 0]
    assert [o["numLateRecordsDropped"] for o in side] == [0, 0, 0, 0, 0]
    assert [o["numLateRecordsDropped"] for o in drop] == [0, 0, 0, 1, 0]
    assert [o["numLateRecordsToSideOutput"] for o in drop] == [0, 0, 0, 0, 0]
    assert [o["numRecordsOut"] for o in side] == [0, 0, 2, 1, 2]  # fired windows and the side output
    # the keyed process function (general keyed path): keys with state or timers after each batch
    alert = next(o for uid, o in reported[0]["operators"].items() if o["name"].startswith("KeyedProcess"))
    assert alert["openWindows"] is None and alert["numWindowsFired"] == 0
    assert [next(o for o in p["operators"].values() if o["name"] == alert["name"])["numKeys"] for p in reported] == [
        2, 2, 2, 3, 0
    ]
    # state bytes: the keys and values the batch's committed files make up (batches 2-4 are kept); bytes written:
    # the files its manifests add to the batch before's
    from pyspark_flinkish.spark.state_store import manifest_rows

    def committed(batch: int) -> Dict[str, Any]:
        document = json.loads((checkpoint / "flinkish" / "driver" / f"b={batch:012d}.json").read_text())
        return document["state"]["w5-side"]["partitions"]  # type: ignore[no-any-return]

    state_root = str(checkpoint / "flinkish" / "state")
    for batch in (3, 4):
        manifests, before = committed(batch), committed(batch - 1)
        size = 0
        for sp, manifest in manifests.items():
            rows = manifest_rows(state_root, "w5-side", int(sp), manifest).to_pylist()
            size += sum(len(r["key"]) + len(r["value"]) for r in rows if r["value"] is not None)
        w5 = reported[batch]["operators"]["w5-side"]
        assert w5["stateSizeBytes"] == size and (size > 0) == (batch == 3)  # batch 4 (end of input) empties it
        old = {f["name"] for m in before.values() for f in m["files"]}
        added = [f"sp={int(sp):05d}/{f['name']}" for sp, m in manifests.items() for f in m["files"] if f["name"] not in old]
        assert w5["stateBytesWritten"] == sum((checkpoint / "flinkish" / "state" / "op=w5-side" / a).stat().st_size for a in added)

    # the same progress on the handle (with Spark's of the same batch), in the checkpoint and in the log
    combined = handle.recent_progress()
    assert [p["batch_id"] for p in combined] == [0, 1, 2, 3, 4]
    assert all(p["spark"]["batchId"] == p["batch_id"] for p in combined)
    assert handle.progress()["operators"] == reported[-1]["operators"]
    assert handle.progress(3)["spark"]["batchId"] == 3 and handle.progress(3)["input_records"] == {"events": {"0": 1}}
    stored = sorted(os.listdir(checkpoint / "flinkish" / "progress"))
    assert stored == [f"b={b:012d}.json" for b in range(5)]
    assert json.loads((checkpoint / "flinkish" / "progress" / stored[3]).read_text())["operators"] == json.loads(
        json.dumps(reported[3]["operators"])
    )
    assert [p["batch_id"] for p in listened] == [0, 1, 2, 3, 4] and not handle._listeners
    assert all(p["spark"]["batchId"] == p["batch_id"] and p["operators"] == r["operators"] for p, r in zip(listened, reported))
    lines = [r.getMessage() for r in caplog.records if r.name == "pyspark_flinkish.progress"]
    assert len(lines) == 5 and lines[3].split()[0] == "3" and "late=1+1" in lines[3], lines
    assert re.search(r" wm=6 lag=\d+d\d\dh ", lines[3]), lines  # wall clock minus watermark 6 (ms since 1970)

    # read_state (docs/state-snapshots.md#reading-state-as-tables), worked out by hand from the batches above.
    # After batch 3 (watermark 6): a's timer at 6 fired in batch 2 and cleared its state, then a@1 v=8 came (a new
    # timer at 6, not fired: the watermark did not advance); b holds 2@2 and 5@4 (timer at 7); c holds 6@30 (35)
    ck, key = str(checkpoint), Types.STRING()
    assert sorted(tuple(r) for r in read_state(spark, ck, "alerts", TOTAL, key_type=key, batch_id=3).collect()) == [
        ("a", 8), ("b", 7), ("c", 6)
    ]
    assert sorted(tuple(r) for r in read_state(spark, ck, "alerts", VALUES, key_type=key, batch_id=3).collect()) == [
        ("a", 8), ("b", 2), ("b", 5), ("c", 6)
    ]
    lists = read_state(spark, ck, "alerts", VALUES, key_type=key, batch_id=3, flatten=False)
    assert lists.columns == ["key", "values"] and sorted(map(tuple, lists.collect())) == [("a", [8]), ("b", [2, 5]), ("c", [6])]
    entries = read_state(spark, ck, "alerts", AT, key_type=key, batch_id=3)
    assert entries.columns == ["key", "map_key", "value"]
    assert sorted(map(tuple, entries.collect())) == [("a", 1, 8), ("b", 2, 2), ("b", 4, 5), ("c", 30, 6)]
    timers = read_timers(spark, ck, "alerts", key_type=key, batch_id=3)
    assert sorted(map(tuple, timers.collect())) == [
        ("a", 6, "event", None, None), ("b", 7, "event", None, None), ("c", 35, "event", None, None)
    ]
    # w5-side (batch-wise, 5 ms): [0, 5) of a and b fired and were cleaned up at watermark 6; a@9 and c@30 are open
    windows = read_windows(spark, ck, "w5-side", EVENT, key_type=key, batch_id=3)
    assert sorted(map(tuple, windows.collect())) == [("a", 5, 10, ("a", 9, 4)), ("c", 30, 35, ("c", 30, 6))]
    # the incremental store (spark/state_store.py; 2 state partitions: a and c in 0, b in 1): after batch 3, a's
    # rows are in a delta of batch 3 over partition 0's snapshot of batch 2, which holds c (touched in batch 2 only;
    # a was deleted then); b (touched in batches 0 and 1 only) is in partition 1's snapshot of batch 1
    version = committed_state(ck, "alerts", batch_id=3)
    assert sorted((f.partition, Path(f.path).name[:14], f.kind) for f in version.files) == [
        (0, f"d={3:012d}", "delta"), (0, f"s={2:012d}", "snapshot"), (1, f"s={1:012d}", "snapshot")
    ]
    # after batch 2: a's timer fired and cleared its state (the key is gone); b and c as after batch 3
    assert sorted(tuple(r) for r in read_state(spark, ck, "alerts", TOTAL, key_type=key, batch_id=2).collect()) == [
        ("b", 7), ("c", 6)
    ]
    # the newest committed batch (4, the end of input) fired every timer: no state left (no files at all); a
    # half-written newer version (a torn delta and a whole one deleting b, no driver commit) is never read
    base = checkpoint / "flinkish" / "state" / "op=alerts" / "sp=00001"
    (base / f"d={5:012d}-{'1' * 16}.parquet").write_bytes(b"half-written")
    pq.write_table(_deletion(["b"]), base / f"d={5:012d}-{'2' * 16}.parquet")
    assert read_state(spark, ck, "alerts", TOTAL, key_type=key).count() == 0
    assert read_windows(spark, ck, "w5-side", EVENT, key_type=key).count() == 0
    with pytest.raises(StateError, match=r"no state named 'sum'.*'at', 'total', 'values'"):
        read_state(spark, ck, "alerts", ValueStateDescriptor("sum", Types.LONG()), key_type=key)
    assert sorted(tuple(r) for r in read_state(spark, ck, "alerts", TOTAL, key_type=key, batch_id=3).collect()) == [
        ("a", 8), ("b", 7), ("c", 6)
    ]
    # a deletion in a delta hides the key's rows in older files: on a copy of the checkpoint's files, a batch 5
    # committed as the driver would, partition 0's files of batch 3 and a delta deleting c
    copy = tmp_path / "copy"
    shutil.copytree(checkpoint / "flinkish", copy / "flinkish")
    doc = json.loads((copy / "flinkish" / "driver" / f"b={3:012d}.json").read_text())
    part = doc["state"]["alerts"]["partitions"]["0"]
    name = f"d={5:012d}-{'3' * 16}.parquet"
    pq.write_table(_deletion(["c"]), copy / "flinkish" / "state" / "op=alerts" / "sp=00000" / name)
    seq = part["next_seq"]
    part["files"].append({"kind": "delta", "name": name, "from": seq, "seq": seq, "keys": 1, "weight": 1})
    part.update(token="3" * 16, next_seq=seq + 1)
    (copy / "flinkish" / "driver" / f"b={5:012d}.json").write_text(json.dumps({**doc, "batch": 5}))
    assert sorted(tuple(r) for r in read_state(spark, str(copy), "alerts", TOTAL, key_type=key).collect()) == [
        ("a", 8), ("b", 7)
    ]
    assert sorted(map(tuple, read_state(spark, str(copy), "alerts", VALUES, key_type=key, flatten=False).collect())) == [
        ("a", [8]), ("b", [2, 5])
    ]
    assert sorted(map(tuple, read_timers(spark, str(copy), "alerts", key_type=key).collect())) == [
        ("a", 6, "event", None, None), ("b", 7, "event", None, None)
    ]


def _deletion(keys):  # type: ignore[no-untyped-def]
    """A state file's rows deleting ``keys`` (``state_cache.FILE_SCHEMA``: a null value and window start)."""
    columns = {f.name: pa.nulls(len(keys), f.type) for f in FILE_SCHEMA}
    return pa.table({**columns, "key": pa.array([encode_key(k) for k in keys], pa.binary())}, schema=FILE_SCHEMA)


def test_dataframe_source_per_partition_watermarks(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A lagging partition's events are on time in Flink (per-partition watermarks); Spark's global
    watermark would have dropped them. Results equal the JVM-free engine's."""
    src = tmp_path / "in"
    src.mkdir()
    files = [
        [{"p": 0, "off": 0, "k": "x", "t": 100, "v": 1}, {"p": 1, "off": 0, "k": "y", "t": 5, "v": 10}],
        [{"p": 0, "off": 1, "k": "x", "t": 200, "v": 2}, {"p": 1, "off": 1, "k": "y", "t": 8, "v": 20}],
        [{"p": 0, "off": 2, "k": "x", "t": 300, "v": 3}, {"p": 1, "off": 2, "k": "y", "t": 300, "v": 30}],
    ]
    for i, rows in enumerate(files):
        path = src / f"part-{i}.json"
        path.write_text("\n".join(json.dumps(r) for r in rows))
        os.utime(path, (1_000 + i, 1_000 + i))
    df = spark.readStream.schema("p long, off long, k string, t long, v long").option("maxFilesPerTrigger", 1).json(str(src))
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
    static = spark.read.schema("p long, off long, k string, t long, v long").json(str(src))
    with pytest.raises(UnsupportedFeatureError, match=r"streaming DataFrame.*spark.readStream"):  # not at execute()
        env.from_dataframe(static, strategy, timestamp_column="t")
    stream = env.from_dataframe(
        df, strategy, timestamp_column="t", partition_column="p", order_columns=["p", "off"], partitions=["0", "1"]
    )
    out: list = []
    (
        stream.key_by(lambda r: r.k)
        .window(TumblingEventTimeWindows.of(Duration.of_millis(50)))
        .reduce(lambda a, b: a.__class__(**{**a.asDict(), "v": a.v + b.v}))
        .map(lambda r: (r.k, r.v))
        .add_sink(out.append)
    )
    # Spark's own URI form with one slash: the local directory tmp_path/ck, never <cwd>/file:/...
    handle = env.execute("partitions", checkpoint_location=f"file:{tmp_path / 'ck'}", trigger={"availableNow": True})
    handle.await_termination()
    assert (tmp_path / "ck" / "flinkish" / "meta.json").exists() and (tmp_path / "ck" / "spark").is_dir()
    # partition 1 lags (t=5, 8) while partition 0 is at 100-200: its events are still on time
    assert ("y", 30) in out
    assert ("x", 1) in out and ("x", 2) in out
    # the Spark jobs of each batch's one pass (named in its progress): one. A batch this small (Spark's estimate
    # below ``batch_input.SPREAD_MIN_BYTES``) runs its route, its keyed groups and the collect in one task, with no
    # shuffle (``keyed_partition.in_processing_order``'s ``one_task``), so adaptive execution adds no job for one
    # (2 before: the route's shuffle write, then the keyed stage with the collect); order columns would let a large
    # batch spread over all cores (``batch_input.spread_route_input``). Its only sink is driver-side, so nothing reads
    # the keyed stage's output again: not cached, no job of its own
    passes = [p["spark_jobs"]["phases"].get("route, keyed stage, collect") for p in handle.recent_progress()]
    assert len(passes) == 3 and all(jobs is not None and len(jobs) == 1 for jobs in passes), passes


class ProcessingTimeEcho(KeyedProcessFunction):  # type: ignore[type-arg]
    """A processing-time timer 30 ms after each element, reporting the clock when it fires; the key's previous
    value, kept with a 50 ms processing-time TTL."""

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        from pyspark_flinkish.datastream.state import StateTtlConfig, ValueStateDescriptor

        descriptor = ValueStateDescriptor("previous")
        descriptor.enable_time_to_live(StateTtlConfig.new_builder(Duration.of_millis(50)).build())
        self.previous = runtime_context.get_state(descriptor)

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 30)
        yield ("in", value[0], value[1], ctx.timer_service().current_processing_time(), self.previous.value())
        self.previous.update(value[1])

    def on_timer(self, timestamp, ctx):  # type: ignore[no-untyped-def]
        yield ("timer", ctx.get_current_key(), timestamp, ctx.timer_service().current_processing_time())


def _replayed_processing_time(env):  # type: ignore[no-untyped-def]
    from pyspark_flinkish.datastream.window import ContinuousProcessingTimeTrigger, GlobalWindows

    env.set_manual_clock(0)
    batches = [
        MicroBatch([("a", 1), ("b", 2)], processing_time=10),
        MicroBatch([("a", 3)], processing_time=45),
        MicroBatch([], processing_time=120),
        MicroBatch([("b", 4)], processing_time=130),
        MicroBatch([], processing_time=260),
    ]
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
    events = env.from_source(MicroBatchSource(batches), strategy, "events")
    sums = (
        events.key_by(lambda e: e[0])
        .window(GlobalWindows.create())
        .trigger(ContinuousProcessingTimeTrigger.of(Duration.of_millis(100)))
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )
    echoes = events.key_by(lambda e: e[0]).process(ProcessingTimeEcho())
    return sums, echoes


def test_replayed_processing_time_drives_triggers_and_timers_as_on_the_local_engine(spark, tmp_path):  # type: ignore[no-untyped-def]
    """``MicroBatch.processing_time`` sets the clock of a replayed batch on Spark by the local engine's rule:
    a ``ContinuousProcessingTimeTrigger`` and processing-time timers fire in the same batches as locally."""
    local = StreamExecutionEnvironment.get_execution_environment()
    sums, echoes = _replayed_processing_time(local)
    expected_sums: list = []
    expected_echoes: list = []
    sums.add_sink(expected_sums.append)
    echoes.add_sink(expected_echoes.append)
    local.execute()
    assert expected_sums == [("a", 4), ("b", 2), ("a", 4), ("b", 6)]  # fired at processing time 120 and 260
    assert ("timer", "a", 75, 120) in expected_echoes
    assert ("in", "a", 3, 45, 1) in expected_echoes and ("in", "b", 4, 130, None) in expected_echoes  # TTL 50 ms

    env = StreamExecutionEnvironment.get_execution_environment(spark)
    sums, echoes = _replayed_processing_time(env)
    got_sums: list = []
    got_echoes: list = []
    sums.add_sink(got_sums.append)
    echoes.add_sink(got_echoes.append)
    env.execute("replayed-pt", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True}).await_termination()
    assert got_sums == expected_sums
    assert got_echoes == expected_echoes


class Remind(KeyedProcessFunction):  # type: ignore[type-arg]
    """A processing-time timer 1.5 s after a key's element; the timer reports its key."""

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 1500)
        return iter(())

    def on_timer(self, timestamp, ctx):  # type: ignore[no-untyped-def]
        yield ("timer", ctx.get_current_key())


def test_processing_time_timers_and_windows_fire_on_an_idle_stream(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Flink fires processing-time timers on the wall clock: on Spark the driver runs the micro-batches that fire
    them though the source has no new data (``spark/ticks.py``)."""
    import time

    from pyspark_flinkish.datastream.window import TumblingProcessingTimeWindows

    src = tmp_path / "in"
    src.mkdir()
    (src / "part-0.json").write_text("\n".join(json.dumps({"k": k, "v": v}) for k, v in [("a", 1), ("b", 2), ("a", 3)]))
    df = spark.readStream.schema("k string, v long").json(str(src))
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    stream = env.from_dataframe(df, WatermarkStrategy.no_watermarks())
    timers: list = []
    windows: list = []
    stream.key_by(lambda r: r.k).process(Remind()).add_sink(lambda v: timers.append((time.time(), v)))
    (
        stream.map(lambda r: (r.k, r.v))
        .key_by(lambda e: e[0])
        .window(TumblingProcessingTimeWindows.of(Duration.of_seconds(2)))
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .add_sink(lambda v: windows.append((time.time(), v)))
    )
    handle = env.execute("idle", checkpoint_location=str(tmp_path / "ck"))
    try:
        while not handle.driver.history and handle.is_active:  # the first batch: the file's three records
            time.sleep(0.1)
        first_done = time.time()
        while (len(timers) < 2 or len(windows) < 2) and time.time() < first_done + 40 and handle.is_active:
            time.sleep(0.1)
        handle.driver.raise_if_failed()
        assert sorted(v for _, v in timers) == [("timer", "a"), ("timer", "b")]
        assert sorted(v for _, v in windows) == [("a", 4), ("b", 2)]
        # due within 2 s; each batch that fires takes a few seconds on a busy 2-core machine
        assert max(t for t, _ in timers + windows) < first_done + 30
        # no new input after the first batch: the ticks alone ran the batches that fired them. A batch delivers its
        # sinks' records before its progress is recorded (the driver's history, then Spark's), so wait for both.
        while (len(handle.driver.history) < 2 or len(handle.query.recentProgress) < 2) and time.time() < first_done + 60:
            time.sleep(0.1)
        progress = [p if isinstance(p, dict) else json.loads(p.json) for p in handle.query.recentProgress]
        file_rows = [
            sum(s["numInputRows"] for s in p["sources"] if "FileStream" in s["description"] and "/flinkish/ticks" not in s["description"])
            for p in progress
        ]
        assert file_rows[0] == 3 and not any(file_rows[1:])
        assert len(handle.driver.history) > 1
    finally:
        handle.stop()


class RemindLater(Remind):
    """A processing-time timer 40 s after a key's element: due after the job is stopped, even on a loaded machine."""

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 40_000)
        return iter(())


def _ticked_job(spark, src, timers):  # type: ignore[no-untyped-def]
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    df = spark.readStream.schema("k string, v long").json(str(src))
    env.from_dataframe(df, WatermarkStrategy.no_watermarks()).key_by(lambda r: r.k).process(RemindLater()).add_sink(
        timers.append
    )
    return env


def test_the_tick_source_is_a_jvm_file_stream_and_a_restart_ticks_a_timer_due_while_stopped(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The tick source starts no Python process with the query: it is Spark's file stream over the checkpoint's
    tick directory (``spark/ticks.py``; the Python data source it replaced started Spark's Python runner for its
    reader at every query start). A timer that falls due while the job is stopped fires after the restart without
    input: the driver arms its tick from ``ticks.json`` when the query starts."""
    import time

    src = tmp_path / "in"
    src.mkdir()
    (src / "part-0.json").write_text("\n".join(json.dumps({"k": k, "v": v}) for k, v in [("a", 1), ("b", 2)]))
    ck = str(tmp_path / "ck")
    timers: list = []
    handle = _ticked_job(spark, src, timers).execute("jvm-ticks", checkpoint_location=ck)
    try:
        while not handle.query.recentProgress and handle.is_active:  # the first batch: the file's two records
            time.sleep(0.05)
        handle.driver.raise_if_failed()
        first = handle.query.recentProgress[0]
        first = first if isinstance(first, dict) else json.loads(first.json)
    finally:
        handle.stop()
    descriptions = [s["description"] for s in first["sources"]]
    assert len(descriptions) == 2, descriptions
    assert all(d.startswith("FileStreamSource[") for d in descriptions), descriptions  # no Python data source
    assert [d for d in descriptions if d.rstrip("]").endswith("/flinkish/ticks")], descriptions
    batch, due = json.loads(Path(ck, "flinkish", "ticks.json").read_text()).values()
    assert batch == 0 and timers == []  # stopped before the timers (40 s after the elements) were due
    assert time.time() * 1000 < due and [p.name for p in Path(ck, "flinkish", "ticks").iterdir()] == ["tick-start"]
    time.sleep(max(0.0, (due - time.time() * 1000) / 1000) + 0.2)
    restarted = _ticked_job(spark, src, timers).execute("jvm-ticks", checkpoint_location=ck)
    try:
        deadline = time.time() + 60
        while len(timers) < 2 and time.time() < deadline and restarted.is_active:
            time.sleep(0.1)
        restarted.driver.raise_if_failed()
        assert sorted(timers) == [("timer", "a"), ("timer", "b")]
    finally:
        restarted.stop()


class PerElementWatermarkGenerator(WatermarkGenerator):
    """Flink's ``PerElementWatermarkGenerator`` (PyFlink's tests): a watermark at every element's timestamp."""

    def on_event(self, event, event_timestamp, output):  # type: ignore[no-untyped-def]
        output.emit_watermark(Watermark(event_timestamp))

    def on_periodic_emit(self, output):  # type: ignore[no-untyped-def]
        return None


class SecondColumnTimestampAssigner(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):  # type: ignore[no-untyped-def]
        return int(value[1])


class CountWindowProcessFunction(ProcessWindowFunction):  # type: ignore[type-arg]
    def process(self, key, context, elements):  # type: ignore[no-untyped-def]
        return [(key, context.window().start, context.window().end, len([e for e in elements]))]


def test_pyflink_side_output_late_data_with_a_per_element_generator(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """PyFlink's own ``test_side_output_late_data``, unmodified but for the environment line and the generator (Flink's
    Java ``PerElementWatermarkGenerator`` as a Python ``WatermarkGenerator``): the watermark the generator emits at
    ('a', 8) makes ('a', 4), later in the same micro-batch, late (``spark/generators.py``)."""
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    env.set_parallelism(1)
    watermark_strategy = WatermarkStrategy.for_generator(PerElementWatermarkGenerator).with_timestamp_assigner(
        SecondColumnTimestampAssigner()
    )
    tag = OutputTag("late-data", type_info=Types.ROW([Types.STRING(), Types.INT()]))
    ds1 = env.from_collection([("a", 0), ("a", 8), ("a", 4), ("a", 6)], type_info=Types.ROW([Types.STRING(), Types.INT()]))
    ds2 = (
        ds1.assign_timestamps_and_watermarks(watermark_strategy)
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(5)))
        .allowed_lateness(0)
        .side_output_late_data(tag)
        .process(CountWindowProcessFunction(), Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG(), Types.INT()]))
    )
    main: list = []
    side: list = []
    ds2.add_sink(main.append)
    ds2.get_side_output(tag).add_sink(side.append)
    env.execute("test_side_output_late_data", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True}).await_termination()
    assert sorted(main) == [("a", 0, 5, 1), ("a", 5, 10, 2)]  # Flink: (a,0,5,1), (a,5,10,2)
    assert [tuple(r) for r in side] == [("a", 4)]  # Flink: +I[a, 4]
