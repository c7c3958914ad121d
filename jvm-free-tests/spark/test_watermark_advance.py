"""The watermark advance of a micro-batch (``spark/watermark_advance.py``): one implementation, which the driver runs
on its own graph and the one-pass path's keyed tasks run on a shipped copy. The copy, restored as of the batch start
on a clock fixed at the batch's processing time, must reach exactly the driver's state: idleness, per-partition
generators, a re-stamping operator, replay batch indices and the end of input included. JVM-free."""

from __future__ import annotations

import json
import pickle
import random
from pathlib import Path
from typing import Any, Dict, List

from pyspark import cloudpickle

from pyspark_flinkish.common import Duration, WatermarkStrategy
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.core.javamath import LONG_MAX
from pyspark_flinkish.spark.driver import ForeachBatchDriver
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment
from pyspark_flinkish.spark.rows import stats_rows
from pyspark_flinkish.spark.watermark_advance import advance_watermarks, graph_watermarks, sorted_stats

BATCHES = 3


def _driver(checkpoint: Path, clock: ManualClock, levels: int = 1) -> ForeachBatchDriver:
    """Two replay sources (two partitions with idleness; one monotonous) unioned, re-stamped, then ``levels`` keyed
    operators."""
    env = SparkStreamExecutionEnvironment(None, clock=clock, state_partitions=2)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5)).with_idleness(Duration.of_millis(100))
    a = env.from_micro_batches([[1]] * BATCHES, strategy.with_timestamp_assigner(lambda v: v), partitions=["p0", "p1"])
    b = env.from_micro_batches(
        [[2]] * BATCHES, WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v: v)
    )
    stream = a.union(b).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)).with_timestamp_assigner(lambda v: v)
    )
    for _ in range(levels):
        stream = stream.key_by(lambda v: v % 2).reduce(lambda x, y: x + y)
    stream.add_sink(lambda v: None)
    return ForeachBatchDriver(env, env._sinks, str(checkpoint), None)


def _stats(d: ForeachBatchDriver, batch: int, rng: random.Random) -> List[Dict[str, Any]]:
    """A batch's statistics rows as route tasks send them: some partitions quiet (idleness), the replay index."""
    plan = d.plan.transformations
    first = next(i for i, t in enumerate(plan) if t.kind == "source" and len(t.source.partitions) == 2)
    second = next(i for i, t in enumerate(plan) if t.kind == "source" and i != first)
    restamp = next(i for i, t in enumerate(plan) if t.name == "Timestamps/Watermarks")
    rows = [{"kind": "stat", "dest": second, "sp": -1, "part": None, "stat_max": -(2**63), "stat_count": 0, "stat_batch": batch}]
    if rng.random() < 0.7:
        rows.append({"kind": "stat", "dest": first, "sp": -1, "part": "p0", "stat_max": 1000 + batch, "stat_count": 2, "stat_batch": batch})
    if rng.random() < 0.5:
        rows.append({"kind": "stat", "dest": second, "sp": -1, "part": "0", "stat_max": 700 + batch, "stat_count": 1, "stat_batch": batch})
    rows.append({"kind": "stat", "dest": restamp, "sp": -1, "part": "", "stat_max": 650 + batch, "stat_count": 3, "stat_batch": -1})
    return rows


def _state(graph_state: Dict[str, Any]) -> Any:
    return json.loads(json.dumps(graph_state))


def test_the_shipped_advance_reaches_the_drivers_state(tmp_path: Path) -> None:
    """Batch by batch to the end of input, the clock moving past the idleness timeout between some batches: the
    copy a keyed task runs (pickled as Spark ships it) and the driver's own graph advanced on the same statistics
    agree on every operator's watermark and on the whole state; the replay index and input counts too."""
    rng = random.Random(7)
    clock = ManualClock(0)
    d = _driver(tmp_path, clock)
    assert d._one_pass
    watermarks = []
    for batch in range(BATCHES + 1):  # the batch after the last: end of input
        d._open(batch)
        now = clock.now()
        advance = pickle.loads(cloudpickle.dumps(d.advance_of_batch(now)))
        stats = _stats(d, batch, rng)
        shipped = advance.run(stats)
        seen = advance_watermarks(d.watermark_graph, stats)
        assert shipped.watermarks == graph_watermarks(d.watermark_graph)
        assert _state(shipped.state) == _state(d.watermark_graph.watermark_state())
        assert (shipped.seen.batch_index, shipped.seen.input_counts) == (seen.batch_index, seen.input_counts) == (
            batch, seen.input_counts
        )
        watermarks.append(shipped.watermarks)
        d._commit(batch)
        clock.set(now + rng.choice([0, 150]))
    assert len({json.dumps(w, sort_keys=True) for w in watermarks}) > 1  # the watermarks moved
    assert all(wm == LONG_MAX for wm in watermarks[-1].values())  # end of input


def test_the_driver_takes_the_tasks_result(tmp_path: Path) -> None:
    """``take_statistics``: the driver's graph after a one-pass batch is the state the tasks computed, from the
    statistics in whatever order the route tasks' rows arrived."""
    rng = random.Random(3)
    clock = ManualClock(0)
    d, reference = _driver(tmp_path / "a", clock), _driver(tmp_path / "b", clock)
    for batch in range(BATCHES + 1):
        d._open(batch)
        reference._open(batch)
        stats = _stats(d, batch, rng)
        tasks = [stats_rows(stats[:1], [(4, 0)])[0]["value"], stats_rows(stats[1:], [(4, 0)])[0]["value"]]
        rng.shuffle(tasks)
        advance = d.advance_of_batch(clock.now())
        assert advance is not None
        assert d.take_statistics(tasks, 0, clock.now(), advance) == batch
        reference._advance_watermarks(stats)
        assert _state(d.watermark_graph.watermark_state()) == _state(reference.watermark_graph.watermark_state())
        assert d.input_counts == reference.input_counts
        d._commit(batch)
        reference._commit(batch)
        clock.set(clock.now() + 150)


def test_stats_rows_are_read_in_one_order() -> None:
    a = [{"kind": "stat", "dest": 0, "part": "x", "stat_max": 5, "stat_count": 1, "stat_batch": -1}]
    b = [{"kind": "count", "dest": 3, "stat_count": 7}, {"kind": "gen", "dest": 1, "value": b"\x00"}]
    blobs = [stats_rows(rows, [(2, 0), (2, 1)]) for rows in (a, b)]
    assert [len(x) for x in blobs] == [2, 2] and blobs[0][0]["value"] == blobs[0][1]["value"]
    assert stats_rows([], [(2, 0)]) == []
    first = sorted_stats([blobs[0][0]["value"], blobs[1][0]["value"]])
    assert first == sorted_stats([blobs[1][1]["value"], blobs[0][1]["value"]])
    assert len(first) == 3 and all(set(r) >= {"kind", "dest", "ts", "ord", "value"} for r in first)


def test_only_one_keyed_level_takes_the_one_pass_path(tmp_path: Path) -> None:
    """A later keyed level needs the earlier one's output (and watermarks) first: two levels keep the driver's
    advance between the route and the keyed stages."""
    assert _driver(tmp_path / "one", ManualClock(0)).advance_of_batch(0) is not None
    assert _driver(tmp_path / "two", ManualClock(0), levels=2).advance_of_batch(0) is None
