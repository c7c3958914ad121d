"""The incremental keyed-state store of the foreachBatch executor (``spark/state_store.py``, ``state_cache.py``):
what a batch reads and writes follows the keys it touches and the keys that are due, the files stay few and
bounded, the executor's cache is only ever a copy (stale, deleted or damaged: rebuilt from the files with the same
result), a replayed batch starts from the committed state, files no manifest names are never read and are deleted,
and a checkpoint of the earlier layout resumes with the same results. Through the executor's real bodies
(``foreach_batch_harness``) where the driver is involved, on ``PartitionStore`` directly for the file mechanics."""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pandas as pd
import pytest
from foreach_batch_harness import keyed_task, local_outputs, run_foreach_batch

from pyspark_flinkish.common import Duration, WatermarkStrategy
from pyspark_flinkish.core.javamath import LONG_MIN
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.state import StateTtlConfig, ValueStateDescriptor
from pyspark_flinkish.spark import state_store
from pyspark_flinkish.spark.keys import encode_key, state_partition
from pyspark_flinkish.spark.plan import ExecPlan
from pyspark_flinkish.spark.rows import dumps
from pyspark_flinkish.spark.state_cache import KeyState, StateCache

sys.path.insert(0, str(Path(__file__).resolve().parent))
import state_upgrade_job

CHECKPOINT_V1 = Path(__file__).resolve().parent / "data" / "checkpoint_v1"


# ------------------------------------------------------------------------------------------- PartitionStore


def _state(n: int, due: Optional[int] = None) -> KeyState:
    return KeyState(((None, b"s%d" % n),), due, None, None, None)


def _commit(root: str, manifest: Optional[Dict[str, Any]], version: int, states: Dict[bytes, Optional[KeyState]]) -> Tuple[Dict[str, Any], state_store.PartitionStore]:
    store = state_store.PartitionStore(root, "op", 0, manifest)
    store.load(list(states), LONG_MIN, LONG_MIN)
    return store.commit(version, states), store


def _contents(root: str, manifest: Dict[str, Any]) -> Dict[bytes, bytes]:
    rows = state_store.manifest_rows(root, "op", 0, manifest).to_pylist()
    return {r["key"]: r["value"] for r in rows if r["value"] is not None}


def test_deltas_stay_few_snapshots_are_amortised_and_the_files_always_make_up_the_state(tmp_path: Path) -> None:
    """Random upserts and deletions over 300 batches: the manifest's files give exactly the expected state (checked
    after each of the first 40 batches, every 10th and every snapshot; the key count after every batch); deltas stay at most log2 of the keys written into them; a full snapshot is written only once
    the deltas hold more keys than half the state."""
    root, rng = str(tmp_path), random.Random(7)
    expected: Dict[bytes, bytes] = {}
    manifest, written, snapshots = None, 0, 0
    initial = {b"k%04d" % i: _state(i) for i in range(1_000)}
    manifest, _ = _commit(root, manifest, 0, initial)  # the first batch: a snapshot of 1000 keys
    expected.update({k: s.rows[0][1] for k, s in initial.items()})
    for version in range(1, 301):
        states: Dict[bytes, Optional[KeyState]] = {}
        for _ in range(rng.randint(1, 8)):
            key = b"k%04d" % rng.randrange(1_200)
            if rng.random() < 0.2:
                states[key] = None
                expected.pop(key, None)
            else:
                states[key] = _state(version)
                expected[key] = b"s%d" % version
        before = {f["name"] for f in manifest["files"]}
        manifest, _ = _commit(root, manifest, version, states)
        new = [f for f in manifest["files"] if f["name"] not in before]
        written += sum(f["keys"] for f in new)
        snapshots += sum(f["kind"] == "snapshot" for f in new)
        deltas = [f for f in manifest["files"] if f["kind"] == "delta"]
        assert len(deltas) <= sum(f["weight"] for f in deltas).bit_length(), [f["weight"] for f in deltas]
        if version <= 40 or version % 10 == 0 or (new and new[-1]["kind"] == "snapshot"):  # reading back is the slow part
            assert _contents(root, manifest) == expected, version
        assert manifest["keys"] == len(expected)
    # a snapshot only after more than half the ~1000 keys were rewritten since the last: ~1350 random writes over
    # 1200 keys allow at most 2; the rest is deltas and their merges, O(keys touched x log2(keys written))
    assert 1 <= snapshots <= 2
    assert written < snapshots * 1_200 + 1_350 * 12


def test_small_state_is_snapshotted_and_deletions_are_carried_until_then(tmp_path: Path) -> None:
    root = str(tmp_path)
    manifest, _ = _commit(root, None, 0, {b"a": _state(1), b"b": _state(2), b"c": _state(3)})
    assert [f["kind"] for f in manifest["files"]] == ["snapshot"]
    manifest, _ = _commit(root, manifest, 1, {b"a": None})  # 1 of 2 keys: a delta with the deletion
    assert [f["kind"] for f in manifest["files"]] == ["snapshot", "delta"]
    assert _contents(root, manifest) == {b"b": b"s2", b"c": b"s3"}
    manifest, _ = _commit(root, manifest, 2, {b"b": _state(9)})  # deltas now hold 2 keys of 2: a snapshot
    assert [f["kind"] for f in manifest["files"]] == ["snapshot"]
    assert _contents(root, manifest) == {b"b": b"s9", b"c": b"s3"}
    manifest, _ = _commit(root, manifest, 3, {b"b": None, b"c": None})
    assert manifest["files"] == [] and manifest["keys"] == 0 and _contents(root, manifest) == {}


def test_nothing_is_written_when_nothing_changed(tmp_path: Path) -> None:
    root = str(tmp_path)
    manifest, _ = _commit(root, None, 0, {b"a": _state(1)})
    files = sorted(p.name for p in tmp_path.rglob("*.parquet"))
    again, _ = _commit(root, manifest, 1, {b"a": _state(1)})  # loaded and written back unchanged
    assert again == manifest and sorted(p.name for p in tmp_path.rglob("*.parquet")) == files


@pytest.mark.parametrize("served", ["files", "rebuilt-cache"])
def test_a_stale_deleted_or_damaged_cache_is_never_read_the_batch_gets_the_files_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, served: str
) -> None:
    """A cache holding another version (a replay), deleted or damaged: the batch runs on the files (or, once
    ``SERVE_FROM_FILES_BATCHES`` batches did so, on the cache rebuilt from them) with the files' state."""
    if served == "rebuilt-cache":
        monkeypatch.setattr(state_store, "SERVE_FROM_FILES_BATCHES", 0)
    root = str(tmp_path)
    m0, _ = _commit(root, None, 0, {b"k%02d" % i: _state(i, due=100 * i) for i in range(20)})
    m1, store = _commit(root, m0, 1, {b"k01": _state(50), b"k02": None})
    assert not store.rebuilt and store.files is None  # the same executor ran batch 0: its cache is current
    # a replay of batch 1 (its attempt above reported m1, but the driver never committed it): from m0 again
    replay = state_store.PartitionStore(root, "op", 0, m0)
    assert (replay.files is not None, replay.rebuilt) == ((True, False) if served == "files" else (False, True))
    assert replay.load([b"k01", b"k02"], LONG_MIN, LONG_MIN) == {b"k01": _state(1, 100), b"k02": _state(2, 200)}
    m1b = replay.commit(1, {b"k01": _state(60), b"k02": _state(2, 200)})
    assert m1b["token"] != m1["token"]
    # due keys: timers at or before the watermark
    for damage in ("delete", "garbage"):
        cache = StateCache(state_store.partition_dir(root, "op", 0))
        cache.close()
        if damage == "delete":
            Path(cache.path).unlink()
        else:
            Path(cache.path).write_bytes(b"not a database" * 100)
            for suffix in ("-wal", "-shm"):
                Path(cache.path + suffix).unlink(missing_ok=True)
        store = state_store.PartitionStore(root, "op", 0, m1b)
        assert (store.files is not None, store.rebuilt) == ((True, False) if served == "files" else (False, True))
        loaded = store.load([], 350, LONG_MIN)
        assert loaded == {b"k00": _state(0, 0), b"k02": _state(2, 200), b"k03": _state(3, 300)}  # due at 350
        store.cache.close()


def test_a_partition_runs_on_its_files_until_the_cache_is_worth_rebuilding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stale cache is rebuilt only after ``SERVE_FROM_FILES_BATCHES`` batches in a row ran on the files on that
    executor; from then on the batches use the cache again."""
    monkeypatch.setattr(state_store, "SERVE_FROM_FILES_BATCHES", 3)
    monkeypatch.setenv("PYSPARK_FLINKISH_STATE_CACHE", str(tmp_path / "first-executor"))
    root = str(tmp_path / "state")
    manifest, _ = _commit(root, None, 0, {b"k%02d" % i: _state(i) for i in range(20)})
    monkeypatch.setenv("PYSPARK_FLINKISH_STATE_CACHE", str(tmp_path / "second-executor"))
    _commit(root, None, 0, {b"other": _state(1)})  # this executor's cache holds another version
    served = []
    for version in range(1, 7):
        manifest, store = _commit(root, manifest, version, {b"k%02d" % version: _state(100 + version)})
        served.append("files" if store.files is not None else "rebuilt" if store.rebuilt else "cache")
    assert served == ["files", "files", "files", "rebuilt", "cache", "cache"]
    assert _contents(root, manifest) == {b"k%02d" % i: b"s%d" % (100 + i if 1 <= i <= 6 else i) for i in range(20)}


def _random_state(rng: random.Random, version: int) -> KeyState:
    """A key's state with 0-2 open windows and random due times (some null)."""
    windows = sorted(rng.sample(range(0, 10_000, 1_000), rng.randint(0, 2)))
    rows = ((None, b"s%d-%d" % (version, rng.randrange(1000))), *((w, b"w%d" % w) for w in windows))

    def due() -> Optional[int]:
        return rng.randrange(2_000) if rng.random() < 0.3 else None

    return KeyState(rows, due(), due(), due(), len(windows) or None)


def test_a_batch_on_the_files_loads_and_writes_what_a_batch_on_the_cache_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two copies of a partition take the same 150 random batches (upserts with window rows, deletions, due
    timers and TTL expiries at random watermarks and times), one always on its executor's current cache, the other
    always on its files (its executor's cache never current): they load the same keys, write the same files
    (snapshot or delta, the same rows in the same order), the same totals and the same next processing-time
    timer."""
    import pyarrow.parquet as pq

    rng = random.Random(11)
    roots = {"cache": str(tmp_path / "cache-run"), "files": str(tmp_path / "files-run")}
    manifests: Dict[str, Optional[Dict[str, Any]]] = {"cache": None, "files": None}
    held: set = set()  # type: ignore[type-arg]
    served = 0
    for version in range(150):
        keys = [b"k%03d" % rng.randrange(400) for _ in range(rng.choice([1, 5, 40, 200] if version else [300]))]
        watermark, now = rng.randrange(-100, 2_000), rng.randrange(-100, 2_000)
        got = {}
        for run in ("cache", "files"):
            cache_dir = "cache" if run == "cache" else f"files-{version}"  # a new executor every batch
            monkeypatch.setenv("PYSPARK_FLINKISH_STATE_CACHE", str(tmp_path / cache_dir))
            store = state_store.PartitionStore(roots[run], "op", 0, manifests[run])
            loaded = store.load(keys, watermark, now)
            assert list(loaded) == sorted(loaded)  # key order
            state = random.Random(version)  # the same new states in both runs
            states: Dict[bytes, Optional[KeyState]] = dict.fromkeys(loaded)
            for k in sorted(set(keys) | set(loaded)):
                states[k] = None if state.random() < 0.15 else _random_state(state, version)
            for k in list(states)[: len(states) // 3]:  # some keys written back unchanged
                if k in loaded:
                    states[k] = loaded[k]
            manifest = store.commit(version, states)
            served += store.files is not None
            newest = manifest["files"][-1] if manifest["files"] else None
            table = pq.read_table(Path(state_store.partition_dir(roots[run], "op", 0)) / newest["name"]) if newest else None
            got[run] = (loaded, manifest, table, store.next_processing_timer)
            manifests[run] = manifest
        (l_c, m_c, t_c, n_c), (l_f, m_f, t_f, n_f) = got["cache"], got["files"]
        assert l_f == l_c, version
        assert {k: m_f[k] for k in ("keys", "windows", "bytes", "next_seq")} == {k: m_c[k] for k in ("keys", "windows", "bytes", "next_seq")}
        strip = [{k: v for k, v in f.items() if k != "name"} for f in m_c["files"]]
        assert [{k: v for k, v in f.items() if k != "name"} for f in m_f["files"]] == strip, version
        assert (t_f is None) == (t_c is None) and (t_f is None or t_f.equals(t_c)), version
        assert n_f == n_c, version
        held = set(_contents(roots["cache"], m_c))
    assert served >= 149 and len(held) > 100
    assert _contents(roots["files"], manifests["files"]) == _contents(roots["cache"], manifests["cache"])


def test_a_rebuild_from_rows_in_no_order_holds_what_the_files_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bulk rebuild (indexes made after the rows, rows sorted by key first) from a restored partition's rows in
    hash order, with window rows and a deletion, over a cache that held other keys: the same keys, rows, due keys,
    totals and full snapshot as the files."""
    import pyarrow as pa

    from pyspark_flinkish.spark.state_cache import FILE_SCHEMA, latest_rows, live_rows, totals_of

    monkeypatch.setenv("PYSPARK_FLINKISH_STATE_CACHE", str(tmp_path / "caches"))
    rng = random.Random(7)
    keys = [b"k%03d" % i for i in range(300)]
    rng.shuffle(keys)
    rows: Dict[str, List[Any]] = {name: [] for name in FILE_SCHEMA.names}
    for i, k in enumerate(keys):
        windows = [7_000 - 1_000 * j for j in range(i % 3)]  # in no order either
        for start, value in [(None, b"s%d" % i)] + [(w, b"w%d" % w) for w in windows]:
            for name, v in zip(FILE_SCHEMA.names, (k, start, value, 10 * i if i % 4 else None, None, None, len(windows))):
                rows[name].append(v)
    table = pa.table({n: pa.array(v, FILE_SCHEMA.field(n).type) for n, v in rows.items()}, schema=FILE_SCHEMA)
    deletion = pa.table({"key": [keys[5]], "window_start": pa.array([None], pa.int64()), "value": pa.array([None], pa.binary()),
                         "event_due": pa.array([None], pa.int64()), "proc_due": pa.array([None], pa.int64()),
                         "ttl_due": pa.array([None], pa.int64()), "windows": pa.array([None], pa.int32())})
    files = latest_rows([(1, table), (2, deletion)])
    cache = StateCache("/somewhere/op=x/sp=00000")
    cache.rebuild("old", latest_rows([(1, table.slice(0, 40))]))
    cache.rebuild("new", files)
    assert cache.token == "new"
    live = live_rows(files)
    assert cache.live_table().equals(live)
    assert cache.totals() == totals_of(live)
    assert sorted(cache.due_keys(1_000, LONG_MIN)) == sorted(
        {k for k, d in zip(live["key"].to_pylist(), live["event_due"].to_pylist()) if d is not None and d <= 1_000}
    )
    loaded = cache.load([keys[0], keys[5], keys[8]])
    assert set(loaded) == {keys[0], keys[8]}  # keys[5] is deleted
    assert [v for _, v in loaded[keys[8]].rows] == [b"s8", b"w6000", b"w7000"]  # snapshot row, then windows in order
    cache.close()


def test_a_file_no_manifest_names_is_never_read_and_is_deleted(tmp_path: Path) -> None:
    root = str(tmp_path)
    m0, _ = _commit(root, None, 0, {b"a": _state(1), b"b": _state(2)})
    torn = Path(state_store.partition_dir(root, "op", 0)) / "d=000000000001-0123456789abcdef.parquet"
    torn.write_bytes(b"PAR1 half a file")  # a batch that died while writing
    m1, _ = _commit(root, m0, 1, {b"a": _state(3)})
    assert _contents(root, m1) == {b"a": b"s3", b"b": b"s2"}
    keep = state_store.referenced([{"op": {"layout": "snapshots", "partitions": {"0": m1}}}])
    assert state_store.prune(root, keep) == 1 and not torn.exists()
    assert _contents(root, m1) == {b"a": b"s3", b"b": b"s2"}


# ------------------------------------------------------------------------------------------- the executor's bodies


class FarReminder(KeyedProcessFunction):  # type: ignore[misc]
    """Counts a key's events and reminds 1000 s of event time after its first one."""

    def open(self, ctx: Any) -> None:
        self.count = ctx.get_state(ValueStateDescriptor("count", None))

    def process_element(self, value: Any, ctx: Any) -> Any:
        if self.count.value() is None:
            ctx.timer_service().register_event_time_timer(value[1] + 1_000_000)
        self.count.update((self.count.value() or 0) + 1)
        return []

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield (ctx.get_current_key(), timestamp, self.count.value())
        self.count.clear()


IDLE_KEYS = 400


def _idle_keys_job(out: List[Any]) -> Any:
    batches = [
        [(f"k{i:03d}", i) for i in range(IDLE_KEYS)],  # every key: state and a timer at 1_000_000 + i
        [("k001", 500), ("k002", 600)],
        [("k003", 700)],
        [("k399", 1_000_100)],  # the watermark passes the timers of k000..k099 (+ k399's own event)
        [],
    ]

    def build(env: Any) -> None:
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
        source = MicroBatchSource([MicroBatch(b) for b in batches], end_of_input=False)
        env.from_source(source, strategy, "events").key_by(lambda e: e[0]).process(FarReminder()).uid("far").add_sink(out.append)

    return build


def _rows_written(ck: Path, batch: int) -> int:
    """State rows in the files batch ``batch`` added (its manifests against the batch before's)."""
    docs = {b: json.loads((ck / "flinkish" / "driver" / f"b={b:012d}.json").read_text()) for b in (batch - 1, batch)}
    before = {f["name"] for m in docs[batch - 1]["state"]["far"]["partitions"].values() for f in m["files"]}
    return sum(f["keys"] for m in docs[batch]["state"]["far"]["partitions"].values() for f in m["files"] if f["name"] not in before)


def test_a_batch_writes_the_keys_it_touches_and_timers_reach_keys_no_record_touches(tmp_path: Path) -> None:
    ck = tmp_path / "ck"
    got: List[Any] = []
    run_foreach_batch(_idle_keys_job(got), str(ck), vectorize=True, partitions=2, batches=range(0, 2))
    assert _rows_written(ck, 1) == 2  # k001, k002: not the 400 keys held
    run_foreach_batch(_idle_keys_job(got), str(ck), vectorize=True, partitions=2, batches=range(2, 3))
    assert _rows_written(ck, 2) <= 3  # k003, and an earlier delta of its partition merged into its own
    assert got == []
    run_foreach_batch(_idle_keys_job(got), str(ck), vectorize=True, partitions=2, batches=range(3, 4))
    # the watermark 1_000_099 (monotonous: max - 1) fires the timers of k000..k099 (no record touched them): 100
    # reminders, whose keys are cleared (deleted), and k399 is updated
    assert sorted(got) == sorted((f"k{i:03d}", 1_000_000 + i, 1 + (1 <= i <= 3)) for i in range(100))
    assert 101 <= _rows_written(ck, 3) <= 110
    want: List[Any] = []
    local_outputs(_idle_keys_job(want))
    assert sorted(got) == sorted(want)


def test_a_replayed_batch_starts_from_the_committed_state_on_any_executor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batch 1 runs, its driver dies before committing; the restart replays batch 1 (its executor's cache holds the
    uncommitted version: rebuilt) and then batch 2 on an executor with no cache at all: the results are those of
    an uninterrupted run."""
    import pyspark_flinkish.spark.driver as driver_module

    ck, got = tmp_path / "ck", []
    run_foreach_batch(_idle_keys_job(got), str(ck), vectorize=True, partitions=2, batches=range(0, 1))

    def crash(self: Any, batch_id: int) -> None:
        msg = "the driver died before committing"
        raise RuntimeError(msg)

    with monkeypatch.context() as m:
        m.setattr(driver_module.ForeachBatchDriver, "_commit", crash)
        with pytest.raises(RuntimeError):
            run_foreach_batch(_idle_keys_job(got), str(ck), vectorize=True, partitions=2, batches=range(1, 2))
    run_foreach_batch(_idle_keys_job(got), str(ck), vectorize=True, partitions=2, batches=range(1, 3))
    monkeypatch.setenv("PYSPARK_FLINKISH_STATE_CACHE", str(tmp_path / "another-executor"))
    run_foreach_batch(_idle_keys_job(got), str(ck), vectorize=True, partitions=2, batches=range(3, 5))
    want: List[Any] = []
    local_outputs(_idle_keys_job(want))
    assert sorted(got) == sorted(want) and len(want) == 100
    # the uncommitted attempt's files are named by no manifest: deleted when the restarted driver opened
    names = {f["name"] for p in json.loads((ck / "flinkish" / "driver" / f"b={4:012d}.json").read_text())["state"]["far"]["partitions"].values() for f in p["files"]}
    on_disk = {p.name for p in (ck / "flinkish" / "state").rglob("*.parquet")}
    assert names <= on_disk


class Expiring(KeyedProcessFunction):  # type: ignore[misc]
    def open(self, ctx: Any) -> None:
        desc = ValueStateDescriptor("last", None)
        desc.enable_time_to_live(StateTtlConfig.new_builder(Duration.of_millis(2_500)).build())
        self.last = ctx.get_state(desc)

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.last.update(value[1])
        return []


def test_ttl_state_of_keys_no_record_touches_is_dropped_once_it_expires(tmp_path: Path) -> None:
    """Expired entries are dropped from the state (Flink's cleanup) in the batch whose processing time reaches
    their expiry, whether or not a record touches their key: the key is loaded for it."""
    from pyspark_flinkish.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
    env.from_source(MicroBatchSource([MicroBatch([("a", 1)])]), strategy, "e").key_by(lambda e: e[0]).process(Expiring()).add_sink(print)
    plan = ExecPlan(env._sinks)
    node = next(n.index for n in plan.nodes if n.keyed)
    uid = plan.nodes[node].uid
    keys = ["a", "b", "c"]
    rows = [
        {"kind": "rec", "dest": node, "sp": 0, "key": encode_key(k), "value": dumps((k, i)), "ts": i, "ord": [1, i]}
        for i, k in enumerate(keys)
    ]
    assert {state_partition(encode_key(k), 1) for k in keys} == {0}

    def metrics(frame: pd.DataFrame) -> Dict[str, Any]:
        return json.loads(frame[frame["kind"] == "metric"]["value"].iloc[0])  # type: ignore[no-any-return]

    heartbeat = pd.DataFrame([{"kind": "hb", "dest": node, "sp": 0, "key": None, "value": None, "ts": None, "ord": None}])
    m = metrics(keyed_task(plan, pd.DataFrame(rows), {node: LONG_MIN}, {node: 2}, 1_000, 1, str(tmp_path), 0, {}))
    assert (m["numKeys"], m["numKeysLoaded"]) == (3, 0)
    manifests = {uid: {0: m["stateManifest"]}}
    m = metrics(keyed_task(plan, heartbeat, {node: 2}, {node: 2}, 3_499, 1, str(tmp_path), 1, manifests))
    assert (m["numKeys"], m["numKeysLoaded"]) == (3, 0)  # nothing expires before 1_000 + 2_500
    manifests = {uid: {0: m["stateManifest"]}}
    m = metrics(keyed_task(plan, heartbeat, {node: 2}, {node: 2}, 3_500, 1, str(tmp_path), 2, manifests))
    assert (m["numKeys"], m["numKeysLoaded"]) == (0, 3)


# ------------------------------------------------------------------------------------------- the earlier layout


def test_a_checkpoint_of_the_earlier_layout_resumes_with_the_same_results(tmp_path: Path) -> None:
    """``data/checkpoint_v1`` was written by the release before incremental state (one ``v=``/``w=`` file per
    partition and batch, driver documents of version 1) after batches 0-2. Resumed here, batches 3-6 give what
    the same restart gives on a checkpoint this version wrote, the whole output is the JVM-free engine's, and once
    the earlier batches are no longer kept their files are gone."""
    upgraded, reference = tmp_path / "upgraded", tmp_path / "reference"
    shutil.copytree(CHECKPOINT_V1, upgraded)
    after_upgrade: List[Any] = []
    driver = run_foreach_batch(lambda env: state_upgrade_job.build(env, after_upgrade), str(upgraded), vectorize=True, partitions=2, batches=range(3, 7))
    before, after = [], []  # type: ignore[var-annotated]
    run_foreach_batch(lambda env: state_upgrade_job.build(env, before), str(reference), vectorize=True, partitions=2, batches=range(0, 3))
    run_foreach_batch(lambda env: state_upgrade_job.build(env, after), str(reference), vectorize=True, partitions=2, batches=range(3, 7))
    assert after_upgrade == after and after
    everything: List[Any] = []
    local_outputs(lambda env: state_upgrade_job.build(env, everything))
    assert sorted(map(repr, before + after)) == sorted(map(repr, everything))
    assert {uid: op["layout"] for uid, op in driver.op_state.items()} == {"remind": "snapshots", "sums": "windows"}
    names = {p.name for p in (upgraded / "flinkish" / "state").rglob("*.parquet")}
    assert not [n for n in names if n[:2] in ("v=", "w=")], names


class Counting(KeyedProcessFunction):  # type: ignore[misc]
    def open(self, ctx: Any) -> None:
        self.count = ctx.get_state(ValueStateDescriptor("count", None))

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.count.update((self.count.value() or 0) + 1)
        yield (value[0], self.count.value())


def test_a_batch_mode_job_runs_on_the_stores_keyed_stage(tmp_path: Path) -> None:
    """BATCH runtime mode wraps keyed operators (``core/batch_execution.py``); the keyed stage asks the wrapper for
    each key's due times and open windows like any keyed operator's: the job gives the JVM-free engine's results."""
    from pyspark_flinkish.datastream import RuntimeExecutionMode
    from pyspark_flinkish.datastream.runtime_mode import batch_plan
    from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

    events = [(f"k{i % 3}", 100 * i, i) for i in range(30)]

    def build(out: List[Any], on_spark: bool) -> Any:
        def job(env: Any) -> None:
            env.set_runtime_mode(RuntimeExecutionMode.BATCH)
            strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
            keyed = env.from_source(MicroBatchSource([MicroBatch(events)]), strategy, "e").key_by(lambda e: e[0])
            windows = keyed.window(TumblingEventTimeWindows.of(Duration.of_millis(1_000)))
            windows.reduce(lambda a, b: (a[0], max(a[1], b[1]), a[2] + b[2])).add_sink(out.append)
            keyed.process(Counting()).add_sink(out.append)  # keeps state after the batch: snapshot, due times, windows
            if on_spark:  # what SparkStreamExecutionEnvironment._start does for a BATCH job
                env._sinks = batch_plan(env._sinks)

        return job

    got: List[Any] = []
    run_foreach_batch(build(got, True), str(tmp_path / "ck"), vectorize=True, partitions=2)
    want: List[Any] = []
    local_outputs(build(want, False))
    assert sorted(got) == sorted(want) and len(want) == 3 * 3 + 30


def test_a_partition_made_of_a_splits_pieces_runs_as_the_same_rows_in_one_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restore's split writes each new partition as one piece per old partition (``savepoint.split_pieces``,
    ``state_store.join_pieces``): 300 keys with windows and timers, and broadcast state, in 2 partitions split into
    3. Each new partition, against the same rows written as one snapshot, over 30 random batches on its files (a
    new executor every batch) and then on a rebuilt cache: the same keys loaded, the same totals, the same next
    processing-time timer and the same state; the pieces stay the base (the first small batch writes a delta after
    them, not a snapshot of everything)."""
    import pyarrow as pa

    from pyspark_flinkish.spark.savepoint import split_pieces
    from pyspark_flinkish.spark.state_cache import live_rows

    rng = random.Random(5)
    monkeypatch.setenv("PYSPARK_FLINKISH_STATE_CACHE", str(tmp_path / "cache-0"))
    states: Dict[bytes, Optional[KeyState]] = {b"k%03d" % i: _random_state(rng, 0) for i in range(300)}
    states[b""] = KeyState(((None, b"broadcast rules"),), None, None, None, None)
    whole, _ = _commit(str(tmp_path / "whole"), None, 0, states)
    rows = live_rows(state_store.manifest_rows(str(tmp_path / "whole"), "op", 0, whole))
    placed = [state_partition(k, 2) if k else -1 for k in rows["key"].to_pylist()]
    old = [rows.filter(pa.array([p in (sp, -1) for p in placed])) for sp in (0, 1)]  # broadcast state in both
    roots = {"pieces": str(tmp_path / "pieces"), "one": str(tmp_path / "one")}
    for sp in range(3):
        parts = [split_pieces(t, 3, i == 0)[sp] for i, t in enumerate(old)]
        manifests: Dict[str, Any] = {
            "pieces": state_store.join_pieces([state_store.write_snapshot(roots["pieces"], "op", sp, 0, p) for p in parts]),
            "one": state_store.write_snapshot(roots["one"], "op", sp, 0, live_rows(pa.concat_tables(parts))),
        }
        assert [f["kind"] for f in manifests["pieces"]["files"]] == ["snapshot", "snapshot"]
        assert {k: manifests["pieces"][k] for k in ("keys", "windows", "bytes")} == {
            k: manifests["one"][k] for k in ("keys", "windows", "bytes")
        }
        on_pieces = 0  # batches that wrote a delta on the pieces
        for version in range(1, 31):
            keys = [b"k%03d" % rng.randrange(300) for _ in range(rng.choice([1, 5, 40]))]
            watermark, now = rng.randrange(-100, 2_000), rng.randrange(-100, 2_000)
            got = {}
            for run in ("pieces", "one"):
                monkeypatch.setenv("PYSPARK_FLINKISH_STATE_CACHE", str(tmp_path / f"cache-{run}-{sp}-{version}"))
                store = state_store.PartitionStore(roots[run], "op", sp, manifests[run])
                assert store.files is not None
                loaded = store.load(keys, watermark, now)
                new = random.Random(version * 10 + sp)
                changes: Dict[bytes, Optional[KeyState]] = dict(loaded)  # due keys: unchanged
                for k in sorted(set(keys)):
                    changes[k] = None if new.random() < 0.15 else _random_state(new, version)
                manifests[run] = store.commit(version, changes)
                got[run] = (loaded, store.next_processing_timer)
            assert got["pieces"] == got["one"], (sp, version)
            totals = ("keys", "windows", "bytes")
            assert {k: manifests["pieces"][k] for k in totals} == {k: manifests["one"][k] for k in totals}
            kinds = {run: [f["kind"] for f in m["files"]] for run, m in manifests.items()}
            if kinds["pieces"][:2] == ["snapshot", "snapshot"]:  # the pieces still the base: one file more
                assert kinds["pieces"][1:] == kinds["one"], (sp, version)
                on_pieces += kinds["pieces"][-1] == "delta"
            else:  # a full snapshot replaced them, as it replaced the one snapshot
                assert kinds["pieces"] == kinds["one"], (sp, version)
        assert on_pieces >= 1
        held = {run: live_rows(state_store.manifest_rows(roots[run], "op", sp, m)) for run, m in manifests.items()}
        assert held["pieces"].equals(held["one"]) and len(held["one"]) > 50
        monkeypatch.setattr(state_store, "SERVE_FROM_FILES_BATCHES", 0)  # the cache rebuilt from the files
        loaded = {}
        for run in ("pieces", "one"):
            monkeypatch.setenv("PYSPARK_FLINKISH_STATE_CACHE", str(tmp_path / f"cache-{run}-{sp}-rebuilt"))
            store = state_store.PartitionStore(roots[run], "op", sp, manifests[run])
            assert store.rebuilt
            loaded[run] = store.load([b"k%03d" % i for i in range(300)] + [b""], 1_000, 1_000)
            store.cache.close()
        assert loaded["pieces"] == loaded["one"] and len(loaded["one"]) > 50
        monkeypatch.setattr(state_store, "SERVE_FROM_FILES_BATCHES", 32)
