"""``spark/state_reader.py`` without a JVM: which state files make up a committed version of a checkpoint (those the
newest committed driver document's manifests name, never a half-written newer batch's or a torn file), the errors
for a wrong checkpoint, uid or batch, deletions in deltas, checkpoints of the earlier layout (one ``v=``/``w=`` file
per partition and batch), and the decoding of the state files into rows. The checkpoints are written by the
foreachBatch executor's real bodies (``foreach_batch_harness``); what their state must hold is worked out by hand
from the input below. The files' newest rows per key are made up here with pyarrow (``state_cache.latest_rows``, as
the executors' cache is rebuilt); the Spark side (the same merge as a Spark job, ``mapInArrow``, schemas) is tested
in ``tests/spark/test_spark_api.py``."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, List

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from foreach_batch_harness import run_foreach_batch

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.core.codec import dump_document, encode_snapshot, load_document
from pyspark_flinkish.core.errors import InvalidArgumentError, InvalidTypeError, StateError, UnsupportedFeatureError
from pyspark_flinkish.core.state import VOID_NAMESPACE
from pyspark_flinkish.core.state_ttl import TtlValue
from pyspark_flinkish.core.windows import CountWindow, TimeWindow
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor
from pyspark_flinkish.datastream.window import EventTimeSessionWindows, TumblingEventTimeWindows
from pyspark_flinkish.spark import state_store
from pyspark_flinkish.spark.checkpoint import DRIVER_FORMAT, DRIVER_VERSIONS_READ
from pyspark_flinkish.spark.keys import encode_key
from pyspark_flinkish.spark.state_cache import FILE_SCHEMA, latest_rows
from pyspark_flinkish.spark.state_reader import (
    StateVersion,
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


def _latest(version: StateVersion) -> pa.Table:
    """The rows ``latest_frame`` gives (computed by Spark there): per partition, each key's rows of the newest of
    the version's files holding it; deletions dropped."""
    parts = sorted({f.partition for f in version.files})
    tables = [
        latest_rows((f.seq, state_store.read_file(f.path, {"kind": f.kind})) for f in version.files if f.partition == sp)
        for sp in parts
    ]
    table = pa.concat_tables(tables) if tables else latest_rows([])
    return table.filter(pc.invert(pc.and_(pc.is_null(table["value"]), pc.is_null(table["window_start"]))))


def _snapshots(version: StateVersion) -> List[List[Any]]:
    """``snapshot_frame``'s columns: keys, snapshots."""
    t = _latest(version)
    t = t.filter(pc.and_(pc.is_null(t["window_start"]), pc.greater(pc.binary_length(t["key"]), 0)))
    return [t.column("key").to_pylist(), t.column("value").to_pylist()]


def _windows(version: StateVersion) -> List[List[Any]]:
    """``window_frame``'s columns: keys, window starts, accumulators."""
    t = _latest(version)
    t = t.filter(pc.is_valid(t["window_start"]))
    return [t.column(c).to_pylist() for c in ("key", "window_start", "value")]


def _names(version: StateVersion) -> List[str]:
    return [Path(f.path).name for f in version.files]


def test_the_newest_committed_version_is_read_never_a_half_written_newer_one(checkpoint: Path, tmp_path: Path) -> None:
    version = committed_state(str(checkpoint), "keep")
    assert version.batch_id == 1 and version.layout == "snapshots" and not version.batch_wise_windows
    assert {f.partition for f in version.files} == {0, 1} and all(f.kind in ("snapshot", "delta") for f in version.files)
    keys, snapshots = _snapshots(version)
    expected = sorted(state_values(keys, snapshots, "total", "value"))
    # a torn file of batch 2 (a task that died while writing) and a whole one whose batch never committed: named by
    # no manifest, never read
    base = checkpoint / "flinkish" / "state" / "op=keep" / "sp=00000"
    torn, whole = base / f"d={2:012d}-0123456789abcdef.parquet", base / f"d={2:012d}-fedcba9876543210.parquet"
    torn.write_bytes(b"half-written")
    deletions = {f.name: pa.nulls(len(keys), f.type) for f in FILE_SCHEMA}  # every key deleted
    pq.write_table(pa.table({**deletions, "key": pa.array(keys, pa.binary())}, schema=FILE_SCHEMA), whole)
    try:
        again = committed_state(f"file://{checkpoint}", "keep")
        assert again.batch_id == 1 and again.files == version.files and torn.name not in _names(again)
    finally:
        torn.unlink()
        whole.unlink()
    assert committed_state(str(checkpoint), "keep", batch_id=0).batch_id == 0
    tumbling = committed_state(str(checkpoint), "tumbling")
    assert tumbling.layout == "windows" and tumbling.batch_wise_windows  # run batch-wise: window rows

    # batch 2 ran on a copy and wrote its state files, but its driver document (the commit) was not written
    copy = tmp_path / "ck"
    shutil.copytree(checkpoint, copy)
    run_foreach_batch(_build, str(copy), vectorize=True, partitions=2, batches=range(2, 3))
    assert committed_state(str(copy), "keep").batch_id == 2
    (copy / "flinkish" / "driver" / f"b={2:012d}.json").unlink()
    written = {p.name for p in (copy / "flinkish" / "state" / "op=keep").glob("sp=*/*.parquet")}
    stale = committed_state(str(copy), "keep")
    assert stale.batch_id == 1 and _names(stale) == _names(version) and written - set(_names(stale))
    keys, snapshots = _snapshots(stale)
    assert sorted(state_values(keys, snapshots, "total", "value")) == expected == [("a", 10), ("b", 5)]


def test_a_file_named_by_the_manifest_but_missing_is_a_clear_error(checkpoint: Path, tmp_path: Path) -> None:
    copy = tmp_path / "ck"
    shutil.copytree(checkpoint, copy)
    Path(committed_state(str(copy), "keep").files[0].path).unlink()
    with pytest.raises(StateError, match=r"keyed state of operator 'keep' after batch 1 is missing: .*copied partially"):
        committed_state(str(copy), "keep")


def test_keyed_state_timers_and_windows_decode_to_what_the_input_leaves(checkpoint: Path) -> None:
    keep = committed_state(str(checkpoint), "keep")
    keys, snapshots = _snapshots(keep)
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
    keys, snapshots = _snapshots(sessions)
    assert sorted(window_values(keys, snapshots)) == [("a", 1, 70, ("a", 10)), ("b", 2, 52, ("b", 5))]
    assert sorted(timer_values(keys, snapshots)) == [("a", 69, "event", 1, 70), ("b", 51, "event", 2, 52)]

    # tumbling 10 ms, batch-wise: [0, 10) of a and b fired and were cleaned up at watermark 19; a's [20, 30) is open
    tumbling = committed_state(str(checkpoint), "tumbling")
    assert batch_window_size(tumbling.signature) == 10
    keys, starts, accs = _windows(tumbling)
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


class Count(KeyedProcessFunction):  # type: ignore[type-arg]
    """Counts each key's elements; a negative value clears the key's state (the key is deleted)."""

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        if value[1] < 0:
            self.count.clear()
        else:
            self.count.update((self.count.value() or 0) + 1)
        return []


KEYS = [f"k{i:02d}" for i in range(20)]
COUNT_BATCHES = [
    MicroBatch([(k, 1) for k in KEYS]),  # every key: a full snapshot per partition
    MicroBatch([("k00", 1)]),  # one key of about ten in its partition changed: a delta
    MicroBatch([("k01", -1), ("k02", 1)]),  # k01 deleted: a deletion in a delta
    MicroBatch([("k03", 1)]),
]


def _build_count(env: Any) -> None:
    events = env.from_source(MicroBatchSource(COUNT_BATCHES), WatermarkStrategy.no_watermarks(), "events")
    events.key_by(lambda e: e[0]).process(Count()).uid("count").add_sink(lambda v: None)


def _counts(version: StateVersion) -> List[Any]:
    return sorted(state_values(*_snapshots(version), "count", "value"))


def test_deltas_replace_a_keys_older_rows_and_a_deletion_hides_them(tmp_path: Path) -> None:
    """Keys touched only in the first batch are read from its snapshot, changed ones from the newer deltas; a key
    whose state was cleared later (a deletion in a delta) is not read back, though the snapshot still holds it."""
    ck = str(tmp_path / "ck")
    run_foreach_batch(_build_count, ck, vectorize=False, partitions=2, batches=range(4))
    version = committed_state(ck, "count")
    assert version.batch_id == 3
    kinds = [f.kind for f in version.files]
    assert kinds.count("snapshot") == 2 and "delta" in kinds  # the incremental store's files, not one per batch
    # the snapshot of batch 0 still holds k01; a delta holds its deletion (a row with a null value)
    holding = [
        (f.kind, v)
        for f in version.files
        for k, v in zip(*(state_store.read_file(f.path, {"kind": f.kind}).column(c).to_pylist() for c in ("key", "value")))
        if k == encode_key("k01")
    ]
    assert sorted(holding, key=lambda kv: kv[0] == "delta")[0][0] == "snapshot" and ("delta", None) in holding
    expected = [(k, 2 if k in ("k00", "k02", "k03") else 1) for k in KEYS if k != "k01"]
    assert _counts(version) == expected
    # the earlier committed versions are kept: k01 is there before its deletion, k03 not yet counted twice
    assert _counts(committed_state(ck, "count", batch_id=1)) == [(k, 2 if k == "k00" else 1) for k in KEYS]
    before = committed_state(ck, "count", batch_id=2)
    assert _counts(before) == [(k, 1 if k == "k03" else n) for k, n in expected]


def _to_earlier_layout(ck: Path, partitions: int) -> None:
    """Rewrite ``ck`` as the layout before the incremental store wrote it: for each committed batch kept, one file
    per partition with every key (``v=<batch>.parquet``: key, snapshot; a batch-wise window's ``w=<batch>.parquet``:
    key, window_start, acc; see ``golden/state_store_files_v1.json``), and driver documents of version 1 (no
    ``state``)."""
    flinkish = ck / "flinkish"
    root = flinkish / "state"
    for path in sorted((flinkish / "driver").glob("b=*.json")):
        doc = load_document(path.read_bytes(), DRIVER_FORMAT, DRIVER_VERSIONS_READ, str(path))
        batch = doc["batch"]
        for uid, op in doc.pop("state").items():
            for sp in range(partitions):
                t = state_store.manifest_rows(str(root), uid, sp, op["partitions"].get(str(sp)))
                t = t.filter(pc.is_valid(t["value"]))
                if op["layout"] == "windows":
                    old = pa.table({"key": t["key"], "window_start": t["window_start"], "acc": t["value"]})
                    name = f"w={batch:012d}.parquet"
                else:
                    old = pa.table({"key": t["key"], "snapshot": t["value"]})
                    name = f"v={batch:012d}.parquet"
                pq.write_table(old, Path(state_store.partition_dir(str(root), uid, sp)) / name)
        del doc["version"]
        path.write_bytes(dump_document(DRIVER_FORMAT, 1, doc))
    for path in root.glob("op=*/sp=*/[sd]=*.parquet"):
        path.unlink()


def test_a_checkpoint_of_the_earlier_layout_reads_as_it_was_written(checkpoint: Path, tmp_path: Path) -> None:
    ck = tmp_path / "ck"
    shutil.copytree(checkpoint, ck)
    _to_earlier_layout(ck, partitions=2)
    keep = committed_state(str(ck), "keep")
    assert keep.batch_id == 1 and keep.layout == "snapshots"
    assert sorted((f.partition, Path(f.path).name, f.kind) for f in keep.files) == [
        (0, f"v={1:012d}.parquet", "legacy-v"), (1, f"v={1:012d}.parquet", "legacy-v")
    ]
    keys, snapshots = _snapshots(keep)
    assert sorted(state_values(keys, snapshots, "total", "value")) == [("a", 10), ("b", 5)]
    assert sorted(state_values(*_snapshots(committed_state(str(ck), "keep", batch_id=0)), "total", "value")) == [
        ("a", 3), ("b", 5)
    ]
    sessions = committed_state(str(ck), "sessions")
    assert sorted(window_values(*_snapshots(sessions))) == [("a", 1, 70, ("a", 10)), ("b", 2, 52, ("b", 5))]
    tumbling = committed_state(str(ck), "tumbling")
    assert tumbling.batch_wise_windows and {f.kind for f in tumbling.files} == {"legacy-w"}
    assert batch_window_values(*_windows(tumbling), 10) == [("a", 20, 30, ("a", 4))]
    with pytest.raises(StateError, match=r"uid 'kept' after batch 1; operators with keyed state: 'keep', 'sessions', 'tumbling'"):
        committed_state(str(ck), "kept")


CHECKPOINT_V1 = Path(__file__).resolve().parent / "data" / "checkpoint_v1"


def test_a_checkpoint_written_by_the_previous_release_reads() -> None:
    """``data/checkpoint_v1`` (``state_upgrade_job.py`` after batches 0-2, written by the release before incremental
    state): driver documents of version 1, one ``v=``/``w=`` file per partition and batch."""
    ck = str(CHECKPOINT_V1)
    remind = committed_state(ck, "remind")
    assert remind.batch_id == 2 and {f.kind for f in remind.files} == {"legacy-v"} and len(remind.files) == 2
    # counts: every key once in batch 0, k00-k03 in batch 1, k00 and k05 in batch 2
    counts = {k: 1 + (k in ("k00", "k01", "k02", "k03")) + (k in ("k00", "k05")) for k in (f"k{i:02d}" for i in range(12))}
    assert sorted(state_values(*_snapshots(remind), "count", "value")) == sorted(counts.items())
    before = committed_state(ck, "remind", batch_id=0)
    assert sorted(state_values(*_snapshots(before), "count", "value")) == [(k, 1) for k in sorted(counts)]
    # 2 s tumbling windows at watermark 4099: [0, 2000) and [2000, 4000) fired and were cleaned up
    sums = committed_state(ck, "sums")
    assert sums.batch_wise_windows and {f.kind for f in sums.files} == {"legacy-w"}
    assert sorted(batch_window_values(*_windows(sums), 2000)) == [
        ("k00", 4000, 6000, ("k00", 4100, 5)), ("k05", 4000, 6000, ("k05", 4200, 2))
    ]
    with pytest.raises(StateError, match=r"uid 'keep' after batch 2; operators with keyed state: 'remind', 'sums'"):
        committed_state(ck, "keep")
