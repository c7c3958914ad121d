"""Processing-time ticks without a JVM (``spark/ticks.py``): which pipelines need them, what a keyed state
partition reports about its pending processing-time timers, and when the driver writes a tick file."""

from __future__ import annotations

import json
import os
import pickle
import time
from pathlib import Path
from typing import Any, List

import pandas as pd
import pytest
from foreach_batch_harness import keyed_task

from pyspark_flinkish.common import Duration, WatermarkStrategy
from pyspark_flinkish.core.errors import StateError
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.window import (
    CountTrigger,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from pyspark_flinkish.spark.keys import encode_key, state_partition
from pyspark_flinkish.spark.plan import ExecPlan
from pyspark_flinkish.spark.rows import dumps
from pyspark_flinkish.spark.ticks import (
    START_TICK,
    TICKS_DIR,
    TickTimer,
    may_register_processing_timers,
    needs_ticks,
    read_due,
    refuse_python_tick_source,
    retry_delay,
    tick_name,
    write_due,
    write_tick,
)

LONG_MIN = -(2**63)


class Remind(KeyedProcessFunction):  # type: ignore[type-arg]
    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 500)
        yield value


def _events(env: Any) -> Any:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
    return env.from_source(MicroBatchSource([MicroBatch([])]), strategy, "events")


def _transformations(build: Any) -> List[Any]:
    env = StreamExecutionEnvironment.get_execution_environment()
    build(_events(env).key_by(lambda e: e[0])).add_sink(lambda v: None)
    return ExecPlan(env._sinks).transformations


def test_which_pipelines_may_register_processing_time_timers() -> None:
    def add(a: Any, b: Any) -> Any:
        return (a[0], a[1] + b[1])

    event = _transformations(lambda k: k.window(TumblingEventTimeWindows.of(Duration.of_millis(10))).reduce(add))
    counted = _transformations(
        lambda k: k.window(TumblingEventTimeWindows.of(Duration.of_millis(10))).trigger(CountTrigger.of(2)).reduce(add)
    )
    processing = _transformations(lambda k: k.window(TumblingProcessingTimeWindows.of(Duration.of_millis(10))).reduce(add))
    process = _transformations(lambda k: k.process(Remind()))
    assert not may_register_processing_timers(event)
    assert not may_register_processing_timers(counted)
    assert may_register_processing_timers(processing)
    assert may_register_processing_timers(process)
    assert needs_ticks(process, manual_clock=False, trigger=None)
    assert needs_ticks(process, manual_clock=False, trigger={"processingTime": "1 second"})
    assert not needs_ticks(process, manual_clock=True, trigger=None)  # replayed batches move a manual clock
    assert not needs_ticks(process, manual_clock=False, trigger={"availableNow": True})
    assert not needs_ticks(event, manual_clock=False, trigger=None)


def test_a_keyed_partition_reports_its_earliest_processing_time_timer(tmp_path: Path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    _events(env).key_by(lambda e: e[0]).process(Remind()).add_sink(lambda v: None)
    plan = ExecPlan(env._sinks)
    node = next(n.index for n in plan.nodes if n.keyed)
    rows = [
        {"kind": "rec", "dest": node, "sp": state_partition(encode_key(k), 1), "key": encode_key(k),
         "value": dumps((k, t)), "ts": t, "ord": [1, i]}
        for i, (k, t) in enumerate([("a", 1), ("b", 2)])
    ]
    frame = pd.DataFrame(rows)
    out = keyed_task(plan, frame, {node: LONG_MIN}, {node: 2}, 1_000, 1, str(tmp_path), 0, {})
    metrics = json.loads(out[out["kind"] == "metric"]["value"].iloc[0])
    assert metrics["nextProcessingTimer"] == 1_500
    manifests = {plan.nodes[node].uid: {0: metrics["stateManifest"]}}
    # a batch that touches neither key and comes before the timers are due still reports them (from the store:
    # the keys are not in memory)
    heartbeat = pd.DataFrame([{"kind": "hb", "dest": node, "sp": 0, "key": None, "value": None, "ts": None, "ord": None}])
    out = keyed_task(plan, heartbeat, {node: 2}, {node: 2}, 1_200, 1, str(tmp_path), 1, manifests)
    metrics = json.loads(out[out["kind"] == "metric"]["value"].iloc[0])
    assert (metrics["nextProcessingTimer"], metrics["numKeysLoaded"]) == (1_500, 0)
    # at 1_501 both timers have fired (a timer fires once the clock has passed it): nothing is pending
    out = keyed_task(plan, heartbeat, {node: 2}, {node: 2}, 1_501, 1, str(tmp_path), 2, manifests)
    metrics = json.loads(out[out["kind"] == "metric"]["value"].iloc[0])
    assert (metrics["nextProcessingTimer"], metrics["numKeysLoaded"]) == (None, 2)


def _ticks(d: str) -> List[str]:
    return sorted(p.name for p in Path(d, TICKS_DIR).iterdir()) if Path(d, TICKS_DIR).exists() else []


def test_the_timer_writes_a_recorded_batchs_tick_once_its_timer_is_overdue(tmp_path: Path) -> None:
    d = str(tmp_path)
    assert read_due(d) == (-1, None)
    timer = TickTimer(d)
    now = int(time.time() * 1000)
    timer.arm(3, now + 300)
    time.sleep(0.1)
    assert _ticks(d) == []  # not due yet
    time.sleep(0.5)
    assert _ticks(d) == [tick_name(3)] and timer.written == [3]  # the timer fires once the clock has passed it
    assert Path(d, TICKS_DIR, tick_name(3)).read_text() == tick_name(3) + "\n"  # one line: one row of the text stream
    timer.arm(4, None)  # the tick's batch fired it: nothing pending, no tick
    timer.arm(5, now - 1)  # overdue already: at once
    time.sleep(0.3)
    assert _ticks(d) == [tick_name(3), tick_name(5)]
    # a batch cancels the pending tick (it fires what is due itself); a newer record replaces an older one
    timer.arm(6, int(time.time() * 1000) + 200)
    timer.cancel()
    timer.arm(7, int(time.time() * 1000) + 200)
    timer.arm(8, int(time.time() * 1000) + 200)
    time.sleep(0.6)
    assert _ticks(d) == [tick_name(3), tick_name(5), tick_name(8)]
    assert not [p for p in Path(d, TICKS_DIR).iterdir() if p.name.startswith(".")]  # no hidden part left


def test_the_timer_retries_a_failed_write_until_the_storage_is_back(tmp_path: Path, monkeypatch: Any) -> None:
    """Storage unreachable for longer than a few retries (here 14 failed writes): the tick is still written once it is
    back, without a batch or a restart to arm it again; the waits double up to a cap."""
    from pyspark_flinkish.spark import ticks

    assert [retry_delay(a) for a in range(8)] == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert retry_delay(10_000) == 30.0
    failures = {"left": 14}
    real_write = ticks.write_tick

    def flaky(directory: str, batch: Any) -> bool:
        if failures["left"] > 0:
            failures["left"] -= 1
            msg = "storage unreachable"
            raise OSError(msg)
        return real_write(directory, batch)

    monkeypatch.setattr(ticks, "write_tick", flaky)
    monkeypatch.setattr(ticks, "FIRST_RETRY_S", 0.001)
    monkeypatch.setattr(ticks, "MAX_RETRY_S", 0.02)
    d = str(tmp_path)
    timer = TickTimer(d)
    timer.arm(4, int(time.time() * 1000) - 1)
    deadline = time.time() + 5
    while not timer.written and time.time() < deadline:
        time.sleep(0.02)
    assert failures["left"] == 0 and timer.written == [4] and _ticks(d) == [tick_name(4)]
    failures["left"] = 1_000_000  # a batch replacing the pending tick stops the retries of the old one
    timer.arm(5, int(time.time() * 1000) - 1)
    time.sleep(0.1)
    timer.cancel()  # under the timer's lock: no write attempt after it returns
    left = failures["left"]
    time.sleep(0.1)
    assert left < 1_000_000 and failures["left"] == left and timer.written == [4]


def test_a_tick_file_is_written_once_per_recorded_batch(tmp_path: Path) -> None:
    d = str(tmp_path)
    assert write_tick(d, 3)
    os.utime(Path(d, TICKS_DIR, tick_name(3)), (1, 1))
    assert not write_tick(d, 3)  # a rewrite after a crash leaves the tick Spark may have read as it is
    assert Path(d, TICKS_DIR, tick_name(3)).stat().st_mtime == 1
    assert tick_name(12) > tick_name(9)  # names sort by batch


def test_a_query_start_ticks_at_once_without_a_record_and_arms_the_recorded_timer(tmp_path: Path) -> None:
    fresh = str(tmp_path / "fresh")
    TickTimer(fresh).resume()  # a new job, or one restored from a savepoint: its first batch runs and fires what is due
    assert _ticks(fresh) == [START_TICK]
    d = str(tmp_path / "restarted")
    write_due(d, 3, int(time.time() * 1000) - 1)  # overdue when the job stopped
    write_due(str(tmp_path / "idle"), 3, None)
    TickTimer(str(tmp_path / "idle")).resume()
    timer = TickTimer(d)
    timer.resume()
    time.sleep(0.3)
    assert _ticks(d) == [tick_name(3)] and _ticks(str(tmp_path / "idle")) == []
    again = TickTimer(d)  # started again before the tick was read: the same file, not another
    again.resume()
    time.sleep(0.3)
    assert _ticks(d) == [tick_name(3)] and again.written == []


def test_a_timer_pickles_without_its_thread(tmp_path: Path) -> None:
    timer = TickTimer(str(tmp_path))
    timer.arm(1, int(time.time() * 1000) + 60_000)
    copy = pickle.loads(pickle.dumps(timer))  # the driver shipped to a Spark Connect server
    timer.cancel()
    copy.arm(2, int(time.time() * 1000) - 1)
    time.sleep(0.3)
    assert _ticks(str(tmp_path)) == [tick_name(2)]


def test_a_checkpoint_of_the_python_tick_source_is_refused_naming_the_way_through_a_savepoint(tmp_path: Path) -> None:
    spark = str(tmp_path / "spark")
    refuse_python_tick_source(spark)  # no offsets yet
    meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}})
    Path(spark, "offsets").mkdir(parents=True)
    Path(spark, "offsets", "4").write_text("\n".join(["v1", meta, '{"logOffset":2}', '{"batch":3}']))
    Path(spark, "offsets", "5").write_text("\n".join(["v1", meta, '{"logOffset":2}', '{"logOffset":0}']))
    refuse_python_tick_source(spark)  # the latest entry is the file stream's
    Path(spark, "offsets", "12").write_text("\n".join(["v1", meta, '{"logOffset":2}', '{"batch":-1}']))
    with pytest.raises(StateError, match=r"offsets/12: source 1 is the processing-time tick source .*from_savepoint"):
        refuse_python_tick_source(spark)
    Path(spark, "offsets", "13").write_text("\n".join(["v1", meta, '{"batch":{"0":5}}', "-"]))  # a Kafka topic "batch"
    refuse_python_tick_source(spark)
