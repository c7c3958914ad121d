"""The watermark bookkeeping as plain JSON data (``to_dict`` / ``from_dict`` in ``core.watermarks`` and
``core.watermark_alignment``, ``LocalExecutor.watermark_state``): what the Spark driver checkpoints after every
micro-batch. Built-in generators are data; only a user's own generator is pickled, and only read back where its
strategy has one."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest
import test_local_engine as engine  # the JVM-free engine's scenarios, rerun here with restores

from pyspark_flinkish.common import Watermark, WatermarkGenerator
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.core.errors import StateError
from pyspark_flinkish.core.javamath import LONG_MIN
from pyspark_flinkish.core.watermark_alignment import SplitWatermarks, StatusWatermarkValve
from pyspark_flinkish.core.watermarks import (
    AscendingTimestampsWatermarks,
    BoundedOutOfOrdernessWatermarks,
    NoWatermarksGenerator,
    WatermarkStrategy,
    WatermarksWithIdleness,
    generator_from_dict,
    generator_to_dict,
)
from pyspark_flinkish.datastream.connectors.kafka import KafkaTopicPartition
from pyspark_flinkish.local import executor


def through_json(data: Any) -> Any:
    return json.loads(json.dumps(data, allow_nan=False))


class EveryThird(WatermarkGenerator):
    """A user generator with state of its own: emits the max timestamp on every third event."""

    def __init__(self) -> None:
        self.seen = 0
        self.max_ts = LONG_MIN

    def on_event(self, event: Any, event_timestamp: int, output: Any) -> None:
        self.seen += 1
        self.max_ts = max(self.max_ts, event_timestamp)
        if self.seen % 3 == 0:
            output.emit_watermark(Watermark(self.max_ts))

    def on_periodic_emit(self, output: Any) -> None:
        return None


class Recorder:
    def __init__(self) -> None:
        self.marks: List[Any] = []

    def emit_watermark(self, watermark: Any) -> None:
        self.marks.append(watermark.timestamp)

    def mark_idle(self) -> None:
        self.marks.append("idle")

    def mark_active(self) -> None:
        self.marks.append("active")


def test_built_in_generators_are_plain_data_and_restore_on_the_new_clock() -> None:
    old_clock, new_clock = ManualClock(0), ManualClock(0)
    gen = WatermarksWithIdleness(BoundedOutOfOrdernessWatermarks(5), 100, old_clock)
    out = Recorder()
    gen.on_event(None, 1000, out)
    gen.on_periodic_emit(out)
    gen.on_periodic_emit(out)  # quiet: the idleness timer starts at 0
    data = through_json(generator_to_dict(gen, allow_pickle=False))
    assert data == {
        "kind": "idleness",
        "timer": {"timeout": 100, "counter": 1, "last_counter": 1, "start_of_inactivity": 0},
        "is_idle_now": False,
        "generator": {"kind": "bounded_out_of_orderness", "bound": 5, "max_timestamp": 1000},
    }
    restored = generator_from_dict(data, new_clock)
    assert isinstance(restored, WatermarksWithIdleness) and restored.timer.clock is new_clock
    old_clock.set(500)  # the old clock no longer matters
    new_clock.set(101)
    out = Recorder()
    restored.on_periodic_emit(out)
    assert out.marks == ["idle"]
    for g in (AscendingTimestampsWatermarks(), NoWatermarksGenerator(), BoundedOutOfOrdernessWatermarks(7)):
        back = generator_from_dict(through_json(generator_to_dict(g, allow_pickle=False)), new_clock)
        assert type(back) is type(g) and vars(back) == vars(g)


def test_user_generator_is_pickled_under_p_and_read_only_when_allowed() -> None:
    gen = EveryThird()
    out = Recorder()
    for ts in (10, 30, 20, 40):
        gen.on_event(None, ts, out)
    assert out.marks == [30]
    data = through_json(generator_to_dict(WatermarksWithIdleness(gen, 50, ManualClock(0))))
    inner = data["generator"]
    assert inner["kind"] == "user" and inner["class"].endswith("EveryThird") and set(inner["object"]) == {"P"}
    restored = generator_from_dict(data, ManualClock(0), allow_pickle=True)
    assert isinstance(restored.generator, EveryThird)  # type: ignore[attr-defined]
    assert (restored.generator.seen, restored.generator.max_ts) == (4, 40)  # type: ignore[attr-defined]
    out = Recorder()
    restored.on_event(None, 35, out)
    restored.on_event(None, 50, out)
    assert out.marks == [50]  # its sixth event
    with pytest.raises(StateError, match="refusing to unpickle"):
        generator_from_dict(data, ManualClock(0), allow_pickle=False)
    with pytest.raises(StateError, match="user class"):
        generator_to_dict(EveryThird(), allow_pickle=False)


def test_unknown_generator_kind_is_an_error() -> None:
    with pytest.raises(StateError, match="unknown watermark generator kind 'mystery'"):
        generator_from_dict({"kind": "mystery"}, ManualClock(0))


def test_split_watermarks_keep_partitions_json_cannot_express() -> None:
    """Kafka partitions (``KafkaTopicPartition``, a NamedTuple) are stored by repr and found again among
    the partitions the restored source declares; JSON-like partitions are stored as values."""
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(0).with_idleness(100)
    clock = ManualClock(0)
    tp0, tp1 = KafkaTopicPartition("events", 0), KafkaTopicPartition("events", 1)
    splits = SplitWatermarks(strategy, clock)
    for p in (tp0, tp1, ("a", 1), "late-partition"):
        splits.add_partition(p)
    splits.on_event(tp0, None, 500)
    splits.on_event(("a", 1), None, 700)
    splits.on_event("late-partition", None, 900)
    assert splits.on_periodic_emit() is None  # tp1 has no data and holds the watermark back
    data = through_json(splits.to_dict(allow_pickle=False))
    fresh = SplitWatermarks(strategy, ManualClock(0))
    fresh.add_partition(tp1)
    fresh.add_partition(tp0)  # declared in another order: the stored order wins
    fresh.restore(data)
    assert list(fresh.generators) == [tp0, tp1, ("a", 1), "late-partition"]
    assert fresh.partition_watermarks() == splits.partition_watermarks()
    fresh.clock.set(101)  # type: ignore[attr-defined]
    # tp1, quiet since the check at 0, is idle and leaves the minimum; the others start their quiet time
    assert fresh.on_periodic_emit() == 499 and not fresh.idle
    fresh.clock.set(250)  # type: ignore[attr-defined]
    assert fresh.on_periodic_emit() is None and fresh.idle  # every partition is quiet > 100 ms now
    unknown = SplitWatermarks(strategy, ManualClock(0))
    with pytest.raises(StateError, match="KafkaTopicPartition"):
        unknown.restore(data)


def test_valve_round_trip() -> None:
    valve = StatusWatermarkValve(3)
    valve.input_watermark(0, 10)
    valve.input_watermark(1, 20)
    valve.input_idle(2, True)
    back = StatusWatermarkValve.from_dict(through_json(valve.to_dict()))
    assert vars(back) == vars(valve)
    with pytest.raises(StateError, match="malformed watermark valve state"):
        StatusWatermarkValve.from_dict({"watermarks": ["x"]})


SCENARIOS = [
    "test_lagging_partition_events_are_not_late",
    "test_idleness_driven_by_batch_processing_time",
    "test_idleness_boundary_is_strict",
    "test_union_is_min_over_inputs_and_idle_input_leaves_the_min",
    "test_union_without_idleness_waits_for_slowest_input",
    "test_assign_timestamps_and_watermarks_drops_upstream_watermarks_except_max",
    "test_assign_timestamps_punctuated_watermark_follows_its_record",
    "test_chained_windows_second_fires_from_first_output_watermark",
]


@pytest.mark.parametrize("name", SCENARIOS)
def test_engine_scenarios_hold_when_watermarks_go_through_json_every_batch(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The JVM-free engine's watermark scenarios (idleness, per-partition, union, assign_timestamps with a
    user generator) give the same results when the whole watermark bookkeeping is replaced by its JSON
    encoding after every micro-batch, as the Spark driver does between batches."""
    documents: List[Dict[str, Any]] = []
    init, state = executor.LocalExecutor.__init__, executor.LocalExecutor.watermark_state

    def restoring_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **{**kwargs, "restore_every_batch": True})

    def recording_state(self: Any) -> Dict[str, Any]:
        documents.append(state(self))
        return documents[-1]

    monkeypatch.setattr(executor.LocalExecutor, "__init__", restoring_init)
    monkeypatch.setattr(executor.LocalExecutor, "watermark_state", recording_state)
    getattr(engine, name)()
    assert documents, "the scenario never restored its watermarks"
    text = json.dumps(documents)
    assert ('"P"' in text) == (name == "test_assign_timestamps_punctuated_watermark_follows_its_record")
