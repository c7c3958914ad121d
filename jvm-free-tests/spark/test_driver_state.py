"""The foreachBatch driver's own files under ``<checkpoint>/flinkish`` (``meta.json``, ``driver/b=<batch>.json``):
versioned JSON, never unpickled for built-in watermark strategies; checkpoints of older versions (pickles) are
converted once. JVM-free: the driver's save/restore functions need no SparkSession."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any, Dict, List

import pytest

from pyspark_flinkish.common import Duration, WatermarkStrategy
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.core.errors import StateError
from pyspark_flinkish.core.operators import TimestampsAndWatermarksOperator
from pyspark_flinkish.datastream.connectors.kafka import KafkaTopicPartition
from pyspark_flinkish.spark.driver import ForeachBatchDriver
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment

BATCHES = 4  # replay files per source; the tests advance through fewer, so no source reaches its end of input


def driver(checkpoint: Path, clock: ManualClock) -> ForeachBatchDriver:
    """Two sources (Kafka-like partitions, with idleness) unioned, re-stamped downstream: every kind of driver state."""
    env = SparkStreamExecutionEnvironment(None, clock=clock, state_partitions=2)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5)).with_idleness(Duration.of_millis(100))
    a = env.from_micro_batches(
        [[1]] * BATCHES,
        strategy.with_timestamp_assigner(lambda v: v),
        partitions=[KafkaTopicPartition("t", 0), KafkaTopicPartition("t", 1)],
    )
    b = env.from_micro_batches(
        [[2]] * BATCHES, WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v: v)
    )
    restamped = a.union(b).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)).with_timestamp_assigner(lambda v: v)
    )
    restamped.key_by(lambda v: v % 2).reduce(lambda x, y: x + y).add_sink(lambda v: None)
    return ForeachBatchDriver(env, env._sinks, str(checkpoint), None)


def stat(dest: int, batch: int, part: Any, count: int, latest: int) -> Dict[str, Any]:
    """One ``stat`` row as the executors send it (``spark/plan.py``): per plan node and source partition."""
    return {"kind": "stat", "dest": dest, "sp": -1, "part": part, "stat_max": latest, "stat_count": count, "stat_batch": batch}


def advance(d: ForeachBatchDriver, clock: ManualClock, batch: int) -> None:
    """The driver's own watermark step (``_advance_watermarks``) on replay batch ``batch``'s statistics: events
    on one Kafka partition of the first source, on the second source, and at the re-stamping operator; then
    the processing time moves past the idleness timeout."""
    plan = d.plan.transformations
    first = next(i for i, t in enumerate(plan) if t.kind == "source" and len(t.source.partitions) == 2)
    second = next(i for i, t in enumerate(plan) if t.kind == "source" and i != first)
    restamp = next(i for i, t in enumerate(plan) if t.name == "Timestamps/Watermarks")
    stats = [
        stat(first, batch, repr(KafkaTopicPartition("t", 0)), 1, 1000 + batch),
        stat(second, batch, "0", 1, 700 + batch),
        stat(restamp, batch, None, 2, 650 + batch),
    ]
    assert d._advance_watermarks(stats) == batch
    clock.set(clock.now() + 150)


def snapshot(d: ForeachBatchDriver) -> Any:
    return json.loads(json.dumps(d.watermark_graph.watermark_state()))


def test_driver_state_is_versioned_json_and_restores(tmp_path: Path) -> None:
    clock = ManualClock(0)
    d = driver(tmp_path, clock)
    for batch in range(3):
        assert d._open(batch) == batch - 1
        advance(d, clock, batch)
        # re-stamped with bound 0 after the latest timestamp 650 + batch: the keyed operator's watermark
        assert d.operator_watermarks()["4:KeyedProcess"] == 650 + batch - 1
        d._commit(batch)
    flinkish = tmp_path / "flinkish"
    assert sorted(os.listdir(flinkish / "driver")) == [f"b={b:012d}.json" for b in range(3)]
    meta = json.loads((flinkish / "meta.json").read_text())
    assert meta["format"] == "pyspark_flinkish.checkpoint-meta" and meta["version"] == 1
    assert meta["state_partitions"] == 2 and meta["vectorize"] is True and len(meta["operators"]) == 1
    doc = json.loads((flinkish / "driver" / f"b={2:012d}.json").read_text())
    assert (doc["format"], doc["version"], doc["batch"]) == ("pyspark_flinkish.driver-state", 2, 2)
    text = json.dumps(doc)
    assert '"P"' not in text and "KafkaTopicPartition(topic='t', partition=0)" in text
    before = snapshot(d)

    restarted = driver(tmp_path, ManualClock(clock.now()))  # a new process: a fresh graph, then batch 3 opens
    assert restarted._open(3) == 2
    assert snapshot(restarted) == before
    assert restarted.operator_watermarks() == d.operator_watermarks()
    assert any(wm > -(2**63) for wm in restarted.operator_watermarks().values())


GOLDEN_LAST = f"driver/b={2:012d}.json"


def _checkpoint_documents(tmp_path: Path) -> Dict[str, Any]:
    """The files under ``<checkpoint>/flinkish`` after three batches of the fixed pipeline, parsed."""
    clock = ManualClock(0)
    d = driver(tmp_path, clock)
    for batch in range(3):
        d._open(batch)
        advance(d, clock, batch)
        d._commit(batch)
    flinkish = tmp_path / "flinkish"
    files = sorted(p.relative_to(flinkish).as_posix() for p in flinkish.rglob("*") if p.is_file())
    return {
        "files": files,
        "meta.json": json.loads((flinkish / "meta.json").read_text()),
        GOLDEN_LAST: json.loads((flinkish / GOLDEN_LAST).read_text()),
    }


def test_checkpoint_documents_match_the_golden_file(tmp_path: Path, golden) -> None:  # type: ignore[no-untyped-def]
    """meta.json (checkpoint metadata) and driver/b=<batch>.json (the JSON driver state) as written from fixed
    input: a renamed field, tag or file fails here (regenerating deliberately: ``conftest.Golden``)."""
    golden("checkpoint_documents", _checkpoint_documents(tmp_path), expand=3)


def test_golden_checkpoint_documents_restore(tmp_path: Path, golden) -> None:  # type: ignore[no-untyped-def]
    """The checked-in documents, as a checkpoint of an earlier run: the driver opens them and holds exactly the
    state they describe (the keyed operator's watermark 651: batch 2's latest timestamp 652, bound 0)."""
    stored = golden.load("checkpoint_documents")
    flinkish = tmp_path / "flinkish"
    (flinkish / "driver").mkdir(parents=True)
    (flinkish / "meta.json").write_text(json.dumps(stored["meta.json"]))
    (flinkish / GOLDEN_LAST).write_text(json.dumps(stored[GOLDEN_LAST]))
    restarted = driver(tmp_path, ManualClock(450))
    assert restarted._open(3) == 2
    assert restarted.partitions == stored["meta.json"]["state_partitions"]
    body = {k: v for k, v in stored[GOLDEN_LAST].items() if k not in ("format", "version", "batch", "state")}
    assert snapshot(restarted) == body
    assert restarted.op_state == stored[GOLDEN_LAST]["state"]
    assert restarted.operator_watermarks()["4:KeyedProcess"] == 651


def test_unknown_versions_and_formats_are_refused(tmp_path: Path) -> None:
    clock = ManualClock(0)
    d = driver(tmp_path, clock)
    advance(d, clock, 0)
    d._commit(0)
    path = tmp_path / "flinkish" / "driver" / f"b={0:012d}.json"
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "version": 99}))
    with pytest.raises(StateError, match=r"version 99.*reads version 1.*refusing to reset state silently"):
        driver(tmp_path, clock)._open(1)
    path.write_text(json.dumps({**doc, "format": "something-else"}))
    with pytest.raises(StateError, match=r"not a pyspark_flinkish\.driver-state document"):
        driver(tmp_path, clock)._open(1)
    path.write_bytes(pickle.dumps(doc))
    with pytest.raises(StateError, match="not a valid"):
        driver(tmp_path, clock)._open(1)
    meta = tmp_path / "flinkish" / "meta.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "version": 2}))
    with pytest.raises(StateError, match=r"meta\.json has pyspark_flinkish\.checkpoint-meta version 2"):
        driver(tmp_path, clock)


def test_a_forged_pickle_in_driver_state_is_not_run_for_built_in_strategies(tmp_path: Path) -> None:
    """Driver state of built-in strategies never unpickles: a ``user`` generator entry is refused."""
    clock = ManualClock(0)
    d = driver(tmp_path, clock)
    advance(d, clock, 0)
    d._commit(0)
    path = tmp_path / "flinkish" / "driver" / f"b={0:012d}.json"
    doc = json.loads(path.read_text())
    marker = tmp_path / "pwned"
    payload = {"P": __import__("base64").b64encode(pickle.dumps(_Touch(str(marker)))).decode()}
    doc["sources"][0][1]["splits"]["partitions"][0][1] = {"kind": "user", "class": "x.Evil", "object": payload}
    path.write_text(json.dumps(doc))
    with pytest.raises(StateError, match="refusing to unpickle"):
        driver(tmp_path, clock)._open(1)
    assert not marker.exists()


class _Touch:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        return (open, (self.path, "w"))


def _legacy_graph_state(d: ForeachBatchDriver) -> Any:
    """What the previous version pickled (cloudpickle) as ``driver/b=<batch>.pkl``: the objects themselves."""
    g = d.watermark_graph
    nodes = {}
    for i, t in enumerate(g.order):
        n = g.nodes[t.id]
        op_state = None
        if n.operator is not None:
            op = n.operator
            op_state = {"wm": op.current_watermark}
            if isinstance(op, TimestampsAndWatermarksOperator):
                op_state.update(generator=op.generator, current=op.wm_output.current, idle=op.wm_output.idle)
        nodes[i] = {"valve": n.valve, "op": op_state}
    position = {t.id: i for i, t in enumerate(g.order)}
    runners = {
        position[tid]: {"splits": r.splits, "current": r.current, "idle": r.idle, "finished": r.finished}
        for tid, r in g.runners.items()
    }
    return {"nodes": nodes, "runners": runners, "keys": "position"}


def test_pickled_checkpoints_of_the_previous_version_are_converted_once(tmp_path: Path) -> None:
    from pyspark import cloudpickle

    clock = ManualClock(0)
    d = driver(tmp_path, clock)
    flinkish = tmp_path / "flinkish"
    meta = json.loads((flinkish / "meta.json").read_text())
    (flinkish / "meta.json").unlink()
    legacy_meta = {"state_partitions": meta["state_partitions"], "format": 1, "operators": meta["operators"]}
    (flinkish / "meta.pkl").write_bytes(pickle.dumps(legacy_meta))  # before batch-wise windows: no "vectorize"
    (flinkish / "driver").mkdir()
    states: List[Any] = []
    for batch in range(2):
        advance(d, clock, batch)
        states.append(snapshot(d))
        (flinkish / "driver" / f"b={batch:012d}.pkl").write_bytes(cloudpickle.dumps(_legacy_graph_state(d), protocol=4))

    restarted = driver(tmp_path, ManualClock(clock.now()))
    assert sorted(os.listdir(flinkish)) == ["driver", "meta.json"]
    assert sorted(os.listdir(flinkish / "driver")) == [f"b={b:012d}.json" for b in range(2)]
    converted = json.loads((flinkish / "meta.json").read_text())
    assert converted["vectorize"] is False and converted["operators"] == meta["operators"]
    assert restarted.partitions == 2
    assert restarted._open(2) == 1
    assert snapshot(restarted) == states[1]
    # the restored idleness timers read the new run's clock, not the pickled one
    runner = next(iter(restarted.watermark_graph.runners.values()))
    assert all(gen.timer.clock is restarted.env.clock for gen in runner.splits.generators.values())  # type: ignore[attr-defined]


def test_classes_pickled_under_the_module_they_have_left_still_load(tmp_path: Path) -> None:
    """An older version pickled the watermark valve and per-split outputs as ``pyspark_flinkish.core.watermarks.*``;
    they live in ``core.watermark_alignment`` now, and the migration still finds them."""
    from pyspark_flinkish.core.watermark_alignment import SplitWatermarks, StatusWatermarkValve
    from pyspark_flinkish.spark.checkpoint_migration import load_legacy_pickle

    valve = StatusWatermarkValve(2)
    valve.input_watermark(0, 7)
    valve.input_idle(1, True)
    splits = SplitWatermarks(WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)), ManualClock(0))
    splits.on_event("p0", "x", 12)
    splits.on_periodic_emit()
    data = pickle.dumps({"valve": valve, "outputs": splits.outputs}, protocol=0)  # text: module names as lines
    new, old = b"pyspark_flinkish.core.watermark_alignment\n", b"pyspark_flinkish.core.watermarks\n"
    assert data.count(new) == 2
    (tmp_path / "old.pkl").write_bytes(data.replace(new, old))
    with pytest.raises(AttributeError):
        pickle.loads(data.replace(new, old))  # the plain unpickler no longer finds them there
    loaded = load_legacy_pickle(str(tmp_path / "old.pkl"))
    assert type(loaded["valve"]) is StatusWatermarkValve and loaded["valve"].to_dict() == valve.to_dict()
    assert [(p, type(o).__name__, o.watermark, o.idle) for p, o in loaded["outputs"].items()] == [
        ("p0", "_PartialWatermark", 11, False)
    ]


def test_a_replay_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    """The apply_in_pandas_with_state backend replays a MicroBatchSource from pickled elements under the
    temporary directory: a directory there that others can write is never read."""
    from pyspark_flinkish.spark.stateful import _check_private

    mine = tmp_path / "flinkish-replay-mine"
    mine.mkdir(mode=0o700)
    _check_private(str(mine))
    shared = tmp_path / "flinkish-replay-shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(StateError, match="writable by others: refusing to read it"):
        _check_private(str(shared))
