"""``spark/state_reader.py`` without a JVM: which state version of a checkpoint is read (the newest committed one,
never a half-written newer one), the errors for a wrong checkpoint, uid or batch, and the decoding of the state
files into rows. The checkpoint is written by the foreachBatch executor's real bodies (``foreach_batch_harness``);
what its state must hold is worked out by hand from the input below. The Spark side (``mapInArrow``, schemas) is
tested in ``tests/spark/test_spark_api.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Tuple

import pyarrow.parquet as pq
import pytest
from foreach_batch_harness import run_foreach_batch

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.core.codec import encode_snapshot
from pyspark_flinkish.core.errors import InvalidArgumentError, InvalidTypeError, StateError, UnsupportedFeatureError
from pyspark_flinkish.core.state import VOID_NAMESPACE
from pyspark_flinkish.core.state_ttl import TtlValue
from pyspark_flinkish.core.windows import CountWindow, TimeWindow
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor
from pyspark_flinkish.datastream.window import EventTimeSessionWindows, TumblingEventTimeWindows
from pyspark_flinkish.spark.keys import encode_key
from pyspark_flinkish.spark.state_reader import (
    batch_window_size,
    batch_window_values,
    committed_state,
    declared_key_type,
    declared_states,
    read_state,
    read_timers,
    read_windows,
    state_names,
    state_values,
    timer_values,
    window_values,
)


class Keep(KeyedProcessFunction):  # type: ignore[type-arg]
    """Keeps the sum, the values and the value per timestamp of each key; an event-time timer 100 ms after each
    element (never fired here)."""

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))
        self.values = runtime_context.get_list_state(ListStateDescriptor("values", Types.LONG()))
        self.at = runtime_context.get_map_state(MapStateDescriptor("at", Types.LONG(), Types.LONG()))

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        self.total.update((self.total.value() or 0) + value[2])
        self.values.add(value[2])
        self.at.put(value[1], value[2])
        ctx.timer_service().register_event_time_timer(value[1] + 100)
        return []


# (key, timestamp, value); one source partition, watermark = max timestamp - 1
BATCHES = [
    MicroBatch([("a", 1, 1), ("a", 3, 2), ("b", 2, 5)]),
    MicroBatch([("a", 20, 4), ("a", 9, 3)]),  # watermark 19 afterwards
    MicroBatch([("c", 200, 1)]),  # watermark 199: every timer of a and b fires
]


def _build(env: Any) -> None:
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
    strategy = strategy.with_timestamp_assigner(lambda e, _: e[1])
    events = env.from_source(MicroBatchSource(BATCHES), strategy, "events")
    keep = events.key_by(lambda e: e[0]).process(Keep()).uid("keep")
    pairs = events.map(lambda e: (e[0], e[2]))
    sessions = pairs.key_by(lambda p: p[0]).window(EventTimeSessionWindows.with_gap(Duration.of_millis(50)))
    tumbling = pairs.key_by(lambda p: p[0]).window(TumblingEventTimeWindows.of(Duration.of_millis(10)))
    for stream in (keep, sessions.reduce(lambda x, y: (x[0], x[1] + y[1])).uid("sessions"),
                   tumbling.reduce(lambda x, y: (x[0], x[1] + y[1])).uid("tumbling")):
        stream.add_sink(lambda v: None)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: Any) -> Path:
    """Batches 0 and 1 run (a query stopped before batch 2): state as after batch 1, watermark 19."""
    ck = tmp_path_factory.mktemp("state-reader") / "ck"
    run_foreach_batch(_build, str(ck), vectorize=True, partitions=2, batches=range(2))
    return ck


def _columns(files: Tuple[str, ...], *names: str) -> List[List[Any]]:
    tables = [pq.read_table(f) for f in files]
    return [[v for t in tables for v in t.column(n).to_pylist()] for n in names]


def test_the_newest_committed_version_is_read_never_a_half_written_newer_one(checkpoint: Path) -> None:
    version = committed_state(str(checkpoint), "keep")
    assert version.batch_id == 1 and len(version.snapshot_files) == 2 and not version.window_files
    # batch 2 was running: some partitions' state files written, the driver's commit not yet
    stray = checkpoint / "flinkish" / "state" / "op=keep" / "sp=00000" / f"v={2:012d}.parquet"
    stray.write_bytes(b"half-written")
    try:
        assert committed_state(f"file://{checkpoint}", "keep").batch_id == 1
    finally:
        stray.unlink()
    assert committed_state(str(checkpoint), "keep", batch_id=0).batch_id == 0
    assert committed_state(str(checkpoint), "tumbling").window_files  # run batch-wise: window tables


def test_a_wrong_checkpoint_uid_or_batch_is_a_clear_error(checkpoint: Path, tmp_path: Path) -> None:
    with pytest.raises(StateError, match=r"not a checkpoint of a pyspark_flinkish job"):
        committed_state(str(tmp_path), "keep")
    (checkpoint / "spark").mkdir(exist_ok=True)  # where the job keeps Spark's own checkpoint
    with pytest.raises(StateError, match=r"Spark's part of a job's checkpoint; give its parent"):
        committed_state(str(checkpoint / "spark"), "keep")
    (tmp_path / "offsets").mkdir()
    with pytest.raises(StateError, match=r"apply_in_pandas_with_state.*spark.read.format\('statestore'\)"):
        committed_state(str(tmp_path), "keep")
    with pytest.raises(StateError, match=r"uid 'kept'; operators with keyed state: 'keep', 'sessions', 'tumbling'"):
        committed_state(str(checkpoint), "kept")
    with pytest.raises(StateError, match=r"batch 7 .* committed versions kept: 0, 1 "):
        committed_state(str(checkpoint), "keep", batch_id=7)


def test_keyed_state_timers_and_windows_decode_to_what_the_input_leaves(checkpoint: Path) -> None:
    keep = committed_state(str(checkpoint), "keep")
    keys, snapshots = _columns(keep.snapshot_files, "key", "snapshot")
    assert state_names(snapshots) == {"total", "values", "at"}
    assert declared_states(keep.signature) == {"at": "map", "total": "value", "values": "list"}
    assert sorted(state_values(keys, snapshots, "total", "value")) == [("a", 10), ("b", 5)]
    assert sorted(state_values(keys, snapshots, "values", "list")) == [("a", 1), ("a", 2), ("a", 3), ("a", 4), ("b", 5)]
    # one row per key: the list in the order of the elements
    assert sorted(state_values(keys, snapshots, "values", "list", flatten=False)) == [("a", [1, 2, 4, 3]), ("b", [5])]
    assert sorted(state_values(keys, snapshots, "at", "map")) == [("a", 1, 1), ("a", 3, 2), ("a", 9, 3), ("a", 20, 4), ("b", 2, 5)]
    assert sorted(state_values(keys, snapshots, "at", "map", flatten=False), key=lambda r: r[0]) == [
        ("a", {1: 1, 3: 2, 20: 4, 9: 3}), ("b", {2: 5})
    ]
    assert state_values(keys, snapshots, "missing", "value") == []
    assert sorted(timer_values(keys, snapshots)) == [
        ("a", 101, "event", None, None), ("a", 103, "event", None, None), ("a", 109, "event", None, None),
        ("a", 120, "event", None, None), ("b", 102, "event", None, None),
    ]

    # sessions (gap 50): a's elements at 1, 3, 20, 9 merged into [1, 70) (its contents kept under the state window
    # of the first, [1, 51)); b's [2, 52); nothing fired at watermark 19. Timers: each window's end - 1
    sessions = committed_state(str(checkpoint), "sessions")
    keys, snapshots = _columns(sessions.snapshot_files, "key", "snapshot")
    assert sorted(window_values(keys, snapshots)) == [("a", 1, 70, ("a", 10)), ("b", 2, 52, ("b", 5))]
    assert sorted(timer_values(keys, snapshots)) == [("a", 69, "event", 1, 70), ("b", 51, "event", 2, 52)]

    # tumbling 10 ms, batch-wise: [0, 10) of a and b fired and were cleaned up at watermark 19; a's [20, 30) is open
    tumbling = committed_state(str(checkpoint), "tumbling")
    assert batch_window_size(tumbling.signature) == 10
    keys, starts, accs = _columns(tumbling.window_files, "key", "window_start", "acc")
    assert batch_window_values(keys, starts, accs, 10) == [("a", 20, 30, ("a", 4))]


def test_processing_timers_ttl_values_and_count_windows() -> None:
    snap = {
        "state": {("seen", VOID_NAMESPACE): TtlValue(3, 17), ("tags", VOID_NAMESPACE): [TtlValue("x", 1), TtlValue("y", 2)]},
        "event_timers": [],
        "processing_timers": [(1000, VOID_NAMESPACE)],
    }
    keys, snapshots = [encode_key(("k", 1))], [encode_snapshot(snap)]
    assert state_values(keys, snapshots, "seen", "value") == [(("k", 1), 3)]  # the value, not its TTL timestamp
    assert state_values(keys, snapshots, "tags", "list", flatten=False) == [(("k", 1), ["x", "y"])]
    assert timer_values(keys, snapshots) == [(("k", 1), 1000, "processing", None, None)]
    counted = {"state": {("__window_contents", CountWindow(0)): [1, 2]}, "event_timers": [], "processing_timers": []}
    with pytest.raises(UnsupportedFeatureError, match="CountWindow have no start and end"):
        window_values(keys, [encode_snapshot(counted)])
    timed = {"state": {("__window_contents", TimeWindow(0, 5)): [1, 2]}, "event_timers": [], "processing_timers": []}
    assert window_values(keys, [encode_snapshot(timed)]) == [(("k", 1), 0, 5, [1, 2])]


def test_signature_parts() -> None:
    sig = "keyed_process:- | key=STRING | state=[at:map:MAP(LONG, LONG),row:value:ROW(a: INT, b: LONG),total:value:LONG]"
    assert declared_states(sig) == {"at": "map", "row": "value", "total": "value"}
    assert declared_key_type(sig) == Types.STRING()
    assert declared_key_type("keyed_process:- | key=ROW(a: INT)") is None and declared_states("keyed_process:-") is None
    assert batch_window_size("window:SlidingEventTimeWindows(10, 5, 0) EventTimeTrigger() None") == 10
    with pytest.raises(StateError, match="window size"):
        batch_window_size("window:EventTimeSessionWindows(50) EventTimeTrigger()")


def test_what_cannot_be_read_as_asked_is_refused_before_any_spark_job(checkpoint: Path) -> None:
    """These refusals come from the checkpoint's files and the arguments alone (no session is needed to raise)."""
    ck, key = str(checkpoint), Types.STRING()
    with pytest.raises(InvalidTypeError, match=r"state 'total' of operator 'keep' is value state; read it with a value"):
        read_state(None, ck, "keep", ListStateDescriptor("total", Types.LONG()), key_type=key)
    with pytest.raises(InvalidTypeError, match=r"key type of operator 'keep' is not recorded .* key_type="):
        read_state(None, ck, "keep", ValueStateDescriptor("total", Types.LONG()))
    with pytest.raises(InvalidTypeError, match=r"ValueStateDescriptor\('total'\) has no type information"):
        read_state(None, ck, "keep", ValueStateDescriptor("total"), key_type=key)
    with pytest.raises(InvalidTypeError, match=r"map keys of MapStateDescriptor\('at'\) has no type information"):
        read_state(None, ck, "keep", MapStateDescriptor("at", None, Types.LONG()), key_type=key)
    with pytest.raises(InvalidArgumentError, match=r"needs a state descriptor"):
        read_state(None, ck, "keep", "total", key_type=key)  # type: ignore[arg-type]
    with pytest.raises(UnsupportedFeatureError, match=r"'tumbling' is a window run batch-wise: it keeps no timers.*read_windows"):
        read_timers(None, ck, "tumbling", key_type=key)
    with pytest.raises(InvalidArgumentError, match=r"'keep' is not a window operator; read its state with read_state"):
        read_windows(None, ck, "keep", Types.LONG(), key_type=key)
