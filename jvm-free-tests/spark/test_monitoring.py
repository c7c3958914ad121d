"""Per-batch metrics without a JVM: the keyed stage's metric row (run_keyed_partition on pandas frames, as an
applyInPandas task would), merging, the one-line rendering, the progress files and the CLI."""

from __future__ import annotations

import datetime
import json
import logging
import os
from pathlib import Path
from typing import Any, Dict, List

import pandas as pd
import pytest
from foreach_batch_harness import keyed_task

from pyspark_flinkish import monitoring
from pyspark_flinkish.common import Duration, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows
from pyspark_flinkish.spark import progress_files
from pyspark_flinkish.spark.keys import encode_key, state_partition
from pyspark_flinkish.spark.plan import ExecPlan
from pyspark_flinkish.spark.rows import dumps
from pyspark_flinkish.spark.state_store import manifest_rows

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def _plan(late_tag: bool, vectorize: bool) -> ExecPlan:
    env = StreamExecutionEnvironment.get_execution_environment()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e["t"])
    events = env.from_source(MicroBatchSource([MicroBatch([])]), strategy, "events")
    windowed = events.key_by(lambda e: e["k"]).window(TumblingEventTimeWindows.of(Duration.of_millis(10)))
    if late_tag:
        windowed = windowed.side_output_late_data(OutputTag("late"))
    sums = windowed.reduce(lambda a, b: {"k": a["k"], "t": a["t"], "v": a["v"] + b["v"]}).uid("sums")
    sums.add_sink(lambda v: None)
    if late_tag:
        sums.get_side_output(OutputTag("late")).add_sink(lambda v: None)
    return ExecPlan(env._sinks, vectorize=vectorize)


def _frame(plan: ExecPlan, window: int, records: List[Dict[str, Any]], sp: int) -> pd.DataFrame:
    rows = [
        {"kind": "rec", "dest": window, "sp": sp, "key": encode_key(r["k"]), "value": dumps(r), "ts": r["t"], "ord": [1, i]}
        for i, r in enumerate(records)
    ] or [{"kind": "hb", "dest": window, "sp": sp, "key": None, "value": None, "ts": None, "ord": None}]
    frame = pd.DataFrame(rows)
    frame["ts"] = frame["ts"].astype("Int64")
    return frame


def _metrics(out: pd.DataFrame) -> Dict[str, Any]:
    rows = out[out["kind"] == "metric"]
    assert len(rows) == 1
    return json.loads(rows["value"].iloc[0])  # type: ignore[no-any-return]


@pytest.mark.parametrize("vectorize", [True, False], ids=["batch-wise", "general"])
@pytest.mark.parametrize("late_tag", [True, False], ids=["side-output", "dropped"])
def test_keyed_stage_reports_exact_metrics(tmp_path: Path, vectorize: bool, late_tag: bool) -> None:
    plan = _plan(late_tag, vectorize)
    window = next(n.index for n in plan.nodes if n.keyed)
    assert plan.nodes[window].batched == vectorize
    sp = state_partition(encode_key("a"), 1)
    root = str(tmp_path / "state")
    # batch 0 at watermark LONG_MIN -> 15: a@1, a@3 and b@12 open [0,10) of a and [10,20) of b; [0,10) fires
    batch0 = [{"k": "a", "t": 1, "v": 1}, {"k": "a", "t": 3, "v": 2}, {"k": "b", "t": 12, "v": 5}]
    out = keyed_task(plan, _frame(plan, window, batch0, sp), {window: LONG_MIN}, {window: 15}, 0, 1, root, 0, {})
    m = _metrics(out)
    uid = plan.nodes[window].uid
    manifest = m.pop("stateManifest")
    assert {k: m[k] for k in m if k != "busyTimeMs" and k != "stateSizeBytes"} == {
        "numRecordsIn": 3,
        "numRecordsOut": 1,
        "numLateRecordsDropped": 0,
        "numLateRecordsToSideOutput": 0,
        "numWindowsFired": 1,
        "numWindowsCleaned": 1,
        "openWindows": 1,
        "numKeys": 1,
        "nextProcessingTimer": None,  # an event-time window registers no processing-time timers
        "numKeysLoaded": 0,  # both keys are new
        "stateCacheRebuilds": 1,  # this executor had no cache of the partition (and the partition no files)
        "stateServedFromFiles": 0,
        "stateBytesWritten": sum(p.stat().st_size for p in tmp_path.rglob("*.parquet")),
        "statePartition": sp,
        "numRecordsInAsColumns": 0,  # pickled records, keys as bytes (an undeclared type and key)
        "numKeysInAsColumns": 0,
    }
    # the state's size: the bytes of the keys and values that make it up (b's open window)
    rows = manifest_rows(root, uid, sp, manifest)
    assert m["stateSizeBytes"] == sum(len(k) + len(v) for k, v in zip(rows["key"].to_pylist(), rows["value"].to_pylist())) > 0
    assert m["busyTimeMs"] >= 0
    # batch 1 at watermark 15: a@4 is late (its window was cleaned up), b@19 is on time; nothing fires
    batch1 = [{"k": "a", "t": 4, "v": 9}, {"k": "b", "t": 19, "v": 1}]
    out = keyed_task(plan, _frame(plan, window, batch1, sp), {window: 15}, {window: 15}, 0, 1, root, 1, {uid: {sp: manifest}})
    m = _metrics(out)
    manifest = m["stateManifest"]
    assert (m["numRecordsIn"], m["numWindowsFired"], m["openWindows"], m["numKeys"]) == (2, 0, 1, 1)
    # b (a holds nothing); the cache was current
    assert (m["numKeysLoaded"], m["stateCacheRebuilds"], m["stateServedFromFiles"]) == (1, 0, 0)
    assert (m["numLateRecordsToSideOutput"], m["numLateRecordsDropped"]) == ((1, 0) if late_tag else (0, 1))
    assert m["numRecordsOut"] == (1 if late_tag else 0)  # the side output's record
    # batch 2, no records (a heartbeat): the end of input fires [10,20) of b and empties the state
    out = keyed_task(plan, _frame(plan, window, [], sp), {window: 15}, {window: LONG_MAX}, 0, 1, root, 2, {uid: {sp: manifest}})
    m = _metrics(out)
    assert m["numKeysLoaded"] == 1  # no record: b is loaded because its window's timer is due
    assert (m["numRecordsIn"], m["numWindowsFired"], m["openWindows"], m["numKeys"], m["numRecordsOut"]) == (0, 1, 0, 0, 1)


def test_merge_partitions_sums_and_keeps_missing_as_none() -> None:
    parts = [
        {"numRecordsIn": 2, "numWindowsFired": 1, "openWindows": None, "numKeys": 3, "busyTimeMs": 1.25},
        {"numRecordsIn": 5, "numWindowsFired": 0, "openWindows": None, "numKeys": 1, "busyTimeMs": 2.0},
    ]
    merged = monitoring.merge_partitions(parts)
    assert merged["numRecordsIn"] == 7 and merged["numWindowsFired"] == 1 and merged["numKeys"] == 4
    assert merged["openWindows"] is None and merged["stateSizeBytes"] is None
    assert merged["busyTimeMs"] == 3.2  # rounded to 0.1 ms
    assert monitoring.merge_partitions([]) == dict.fromkeys((*monitoring.OPERATOR_COUNTERS, *monitoring.OPERATOR_GAUGES))


def _progress(**extra: Any) -> Dict[str, Any]:
    op = {"keyed": True, "currentOutputWatermark": 1_700_000_000_000, "numWindowsFired": 3, "openWindows": 40,
          "numKeys": 12, "stateSizeBytes": 8300, "numLateRecordsDropped": 1, "numLateRecordsToSideOutput": 2}
    return {
        "batch_id": 12,
        "input_records": {"kafka": {"events-0": 400, "events-1": 200}},
        "source_watermarks": {"kafka": {"events-0": 1_700_000_005_000, "events-1": None}},
        "watermarks": {"1:Window": 1_700_000_000_000},
        "operators": {
            "w": op,
            "other": {**op, "currentOutputWatermark": 1_700_000_060_000, "openWindows": None, "numWindowsFired": 0},
            "map": {"keyed": False, "currentOutputWatermark": LONG_MIN},
        },
        "durations_ms": {"total": 1923.4},
        **extra,
    }


def test_progress_line_renders_every_field() -> None:
    assert monitoring.progress_line(_progress()) == (
        "   12 in=600 src[p0=22:13:25.000 p1=idle] wm=22:13:20.000 fired=3 late=2+4 open=40 keys=24 "
        "state=16.2KiB took=1.92s"
    )
    spark = {"inputRowsPerSecond": 310.44, "processedRowsPerSecond": 1200.0}
    line = monitoring.progress_line(_progress(dead_letters={"kafka": 2, "other": 1}, future_records=4, spark=spark))
    assert line.endswith("state=16.2KiB dead=3 future=4 in/s=310 done/s=1200 took=1.92s")
    assert monitoring.progress_line({"batch_id": 0}) == "    0"
    minutes = monitoring.progress_line(_progress(), time_format=lambda ms: "idle" if ms is None else f"{ms // 60000}m")
    assert "src[p0=28333333m p1=idle] wm=28333333m" in minutes


def test_format_time() -> None:
    assert [monitoring.format_time(v) for v in (None, LONG_MIN, LONG_MAX, 42, -5, 1_700_000_000_123)] == [
        "idle", "-", "end", "42", "-5", "22:13:20.123"
    ]


def test_progress_files_log_lines_and_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    checkpoint = tmp_path / "ck"
    for batch in range(5):
        progress_files.write_progress(str(checkpoint), {**_progress(), "batch_id": batch}, keep=3)
    assert sorted(os.listdir(checkpoint / "flinkish" / "progress")) == [f"b={b:012d}.json" for b in (2, 3, 4)]
    assert [p["batch_id"] for p in progress_files.read_progress(str(checkpoint))] == [2, 3, 4]

    from pyspark_flinkish.__main__ import main

    assert main(["progress", str(checkpoint), "--last", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out] == ["3", "4"] and "late=2+4" in out[0]
    assert main(["progress", str(checkpoint), "--json", "-n", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["batch_id"] == 4

    # a log with the DEBUG lines: the same progress back
    log_file = tmp_path / "job.log"
    handler = logging.FileHandler(log_file)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logger = logging.getLogger("pyspark_flinkish.progress")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        monitoring.log_progress({**_progress(), "batch_id": 7})
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
        handler.close()
    text = log_file.read_text().splitlines()
    assert len(text) == 2 and text[0].endswith(monitoring.progress_line({**_progress(), "batch_id": 7}))
    assert progress_files.read_progress(str(log_file)) == [json.loads(json.dumps({**_progress(), "batch_id": 7}))]
    assert main(["progress", str(log_file)]) == 0
    assert capsys.readouterr().out.split()[0] == "7"
    assert main(["nonsense"]) == 2


def test_stateful_backend_progress_from_sparks() -> None:
    from pyspark_flinkish.spark.stateful import SHIFT
    from pyspark_flinkish.spark.stateful_progress import stateful_progress

    shifted = 5_000 + SHIFT
    text = datetime.datetime.fromtimestamp(shifted / 1000, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    spark = {
        "batchId": 3,
        "numInputRows": 10,
        "eventTime": {"watermark": text},
        "stateOperators": [{"operatorName": "applyInPandasWithState", "numRowsTotal": 4, "memoryUsedBytes": 2048,
                            "numRowsUpdated": 2}],
        "durationMs": {"triggerExecution": 812},
    }
    p = stateful_progress(spark, delay=3)
    assert p["batch_id"] == 3 and p["input_records"] == 10 and p["spark"] is spark
    assert p["operators"]["stateful-0"] == {
        "name": "applyInPandasWithState", "keyed": True, "currentOutputWatermark": 5_000, "watermarkLag": None,
        "numKeys": 4, "stateSizeBytes": 2048, "numRecordsOut": 2,
    }
    assert monitoring.progress_line(p) == "    3 in=10 wm=5000 keys=4 state=2.0KiB took=0.81s"
    # with Spark's batch start time: the watermark's lag behind it
    p = stateful_progress({**spark, "timestamp": "1970-01-01T00:00:12.500Z"}, delay=3)
    assert p["processing_time"] == 12_500 and p["operators"]["stateful-0"]["watermarkLag"] == 7_500
    assert monitoring.progress_line(p) == "    3 in=10 wm=5000 lag=7.5s keys=4 state=2.0KiB took=0.81s"


def test_watermark_lag_is_processing_time_minus_the_watermark() -> None:
    lag = monitoring.watermark_lag
    assert [lag(10_000, 4_000), lag(10_000, 12_000), lag(10_000, LONG_MIN), lag(10_000, LONG_MAX)] == [6_000, -2_000, None, None]
    assert lag(10_000, None) is None and lag(None, 4_000) is None
    assert [monitoring.format_lag(ms) for ms in (850, 12_340, 303_000, 7_500_000, 273_600_000, -2_000)] == [
        "850ms", "12.3s", "5m03s", "2h05m", "3d04h", "-2.0s"
    ]


def test_progress_line_shows_the_largest_lag_of_the_operators_it_takes_the_watermark_from() -> None:
    p = _progress()
    p["operators"]["w"]["watermarkLag"] = 125_000  # the lowest watermark: the largest lag
    p["operators"]["other"]["watermarkLag"] = 65_000
    p["operators"]["map"]["watermarkLag"] = None  # no watermark yet; not keyed anyway
    assert monitoring.progress_line(p).startswith("   12 in=600 src[p0=22:13:25.000 p1=idle] wm=22:13:20.000 lag=2m05s fired=3")


def test_the_local_engine_reports_each_operators_watermark_lag() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_manual_clock(0)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(10)).with_timestamp_assigner(lambda e, _: e[1])
    batches = [MicroBatch([("a", t)], processing_time=p) for t, p in ((100, 1_000), (400, 2_000), (700, 3_000))]
    (
        env.from_source(MicroBatchSource(batches), strategy, "events")
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Duration.of_millis(50)))
        .reduce(lambda a, b: a)
        .add_sink(lambda v: None)
    )
    reported: List[Any] = []
    env.execute(progress=reported.append)
    window = [name for name in reported[0].operator_watermarks if "Window" in name]
    assert len(window) == 1
    assert [p.processing_time for p in reported[:2]] == [1_000, 2_000]
    assert [p.watermark_lags[window[0]] for p in reported[:2]] == [1_000 - 89, 2_000 - 389]  # watermark max_ts - 10 - 1
    assert reported[-1].watermark_lags[window[0]] is None  # end of input
