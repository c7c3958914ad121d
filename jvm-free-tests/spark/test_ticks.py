"""Processing-time ticks without a JVM (``spark/ticks.py``): which pipelines need them, what a keyed state
partition reports about its pending processing-time timers, and when the tick source has a new tick."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List

import pandas as pd
from foreach_batch_harness import keyed_task

from pyspark_flinkish.common import Duration, WatermarkStrategy
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
from pyspark_flinkish.spark.ticks import may_register_processing_timers, needs_ticks, read_due, tick_due, write_due

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


def test_the_tick_source_ticks_once_per_recorded_batch_when_its_timer_is_overdue(tmp_path: Path) -> None:
    d = str(tmp_path)
    assert read_due(d) == (-1, None)
    assert tick_due(d, -1, 10**13) is None  # nothing recorded yet
    write_due(d, 3, 1_000)
    assert tick_due(d, -1, 1_000) is None  # the timer fires once the clock has passed it
    assert tick_due(d, -1, 1_001) == 3
    assert tick_due(d, 3, 5_000) is None  # batch 3's timer has had its tick
    write_due(d, 4, None)  # the tick's batch fired it: nothing pending
    assert tick_due(d, 3, 5_000) is None
    write_due(d, 5, 2_000)
    assert tick_due(d, 3, 2_001) == 5
