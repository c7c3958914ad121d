"""Savepoints without a JVM (``spark/savepoint.py``): what a finished, unfinished or foreign savepoint reads as, which
jobs a savepoint fits, source positions from Spark's offsets log, the snapshot a partition is written as, and the
refusals that come before any Spark job. The Spark side (stop, write, split into another number of partitions,
restore) runs in ``tests/hdfs/test_savepoints.py``, ``tests/kafka/test_kafka_source.py`` and ``tests/spark/test_source_savepoints.py``."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any, Dict, List

import pyarrow as pa
import pytest

from pyspark_flinkish.core.codec import dump_document
from pyspark_flinkish.core.errors import StateError, UnsupportedFeatureError
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource
from pyspark_flinkish.spark import state_store, storage
from pyspark_flinkish.spark.checkpoint import spark_offsets, write_meta
from pyspark_flinkish.spark.keys import encode_key, state_partition, state_partitions
from pyspark_flinkish.spark.savepoint import (
    METADATA_FILE,
    SAVEPOINT_FORMAT,
    SAVEPOINT_VERSION,
    HashedKeys,
    check_sources,
    compatibility_problems,
    hashed_from_dict,
    hashed_to_dict,
    placed_alike,
    read_savepoint,
    restore_savepoint,
    source_positions,
    split_rows,
)
from pyspark_flinkish.spark.source_logs import SEEDED_FILE, SPARK_LOG, carry, changed, seed
from pyspark_flinkish.spark.source_rows import DataFrameSource, SourceRestart
from pyspark_flinkish.spark.state_cache import FILE_SCHEMA, latest_rows, live_rows, totals_of


def _rows(items: List[Dict[str, Any]]) -> pa.Table:
    cols = {n: [r.get(n) for r in items] for n in FILE_SCHEMA.names}
    return pa.table({n: pa.array(cols[n], FILE_SCHEMA.field(n).type) for n in FILE_SCHEMA.names}, schema=FILE_SCHEMA)


def _metadata(**body: Any) -> bytes:
    doc = {"batch": 3, "state_partitions": 2, "vectorize": True, "signatures": {}, "state": {}, "positions": {}}
    doc.update(body)
    return dump_document(SAVEPOINT_FORMAT, SAVEPOINT_VERSION, doc)


def test_a_snapshot_holds_the_live_rows_with_the_totals_a_cache_reports(tmp_path) -> None:  # type: ignore[no-untyped-def]
    older = _rows([{"key": b"a", "value": b"1", "event_due": 5}, {"key": b"b", "value": b"22"}])
    newer = _rows([
        {"key": b"b", "value": None},  # b deleted
        {"key": b"c", "window_start": 10, "value": b"w10", "windows": 2},
        {"key": b"c", "value": b"snap", "windows": 2},
        {"key": b"c", "window_start": 0, "value": b"w0", "windows": 2},
    ])
    live = live_rows(latest_rows([(1, older), (2, newer)]))
    assert [(r["key"], r["window_start"]) for r in live.to_pylist()] == [(b"a", None), (b"c", None), (b"c", 0), (b"c", 10)]
    assert totals_of(live) == (2, 2, 1 + 1 + (1 + 4) + (1 + 2) + (1 + 3))
    manifest = state_store.write_snapshot(str(tmp_path), "op", 1, 7, live)
    assert manifest is not None and manifest["keys"] == 2 and manifest["windows"] == 2
    assert [f["kind"] for f in manifest["files"]] == ["snapshot"]
    assert manifest["files"][0]["name"].startswith("s=000000000007-")
    back = state_store.manifest_rows(str(tmp_path), "op", 1, manifest)
    assert live_rows(back).equals(live)
    assert state_store.write_snapshot(str(tmp_path), "op", 2, 7, live_rows(_rows([]))) is None  # no state, no file

    # a restore into as many partitions copies the snapshot as it is: the same bytes under a new name and token
    copied = state_store.copy_snapshot(str(tmp_path), str(tmp_path / "ck"), "op", 1, 0, manifest)
    (source, _), (target, _) = (
        state_store.file_paths(root, "op", 1, m)[0] for root, m in ((str(tmp_path), manifest), (str(tmp_path / "ck"), copied))
    )
    assert storage.read_bytes(target) == storage.read_bytes(source)
    assert target.rsplit("/", 1)[1].startswith("s=000000000000-") and copied["token"] != manifest["token"]
    assert {k: v for k, v in copied.items() if k not in ("token", "files")} == {
        k: v for k, v in manifest.items() if k not in ("token", "files")
    }
    assert live_rows(state_store.manifest_rows(str(tmp_path / "ck"), "op", 1, copied)).equals(live)
    delta = {**manifest, "files": [{**manifest["files"][0], "kind": "delta"}]}
    assert not state_store.is_one_snapshot(delta) and state_store.is_one_snapshot(manifest)
    with pytest.raises(StateError, match="is not one full snapshot"):
        state_store.copy_snapshot(str(tmp_path), str(tmp_path / "ck"), "op", 1, 0, delta)


def test_a_restore_copies_an_operators_files_only_where_the_savepoint_places_its_rows_as_the_job_does() -> None:
    """``placed_alike``: into as many state partitions as the savepoint has, every operator placed by the route's
    rule in both jobs, and the window on Spark's columnar path hashed on the same column types in both; not an
    operator whose rule changed (columnar in one job only, or hashed on other types), nor any at another number,
    nor in a savepoint that does not record its rule."""
    window = HashedKeys("sums", ("bigint", "string"), True)
    saved = {"state_partitions": 2, "hashed": hashed_to_dict(window), "state": {"sums": {}, "remind": {}}}
    assert hashed_from_dict(json.loads(json.dumps(saved["hashed"]))) == window
    assert placed_alike(saved, 2, window) == {"sums", "remind"}
    assert placed_alike(saved, 3, window) == set()
    assert placed_alike(saved, 2, None) == {"remind"}  # "sums" is placed by crc32 now
    assert placed_alike(saved, 2, HashedKeys("sums", ("int", "string"), True)) == {"remind"}  # another hash
    assert placed_alike(saved, 2, HashedKeys("remind", ("bigint",), False)) == set()
    plain = {**saved, "hashed": None}
    assert placed_alike(plain, 2, None) == {"sums", "remind"}
    assert placed_alike(plain, 2, window) == {"remind"}
    assert placed_alike({k: v for k, v in saved.items() if k != "hashed"}, 2, window) == set()  # an older savepoint


def test_only_a_finished_savepoint_is_read(tmp_path) -> None:  # type: ignore[no-untyped-def]
    directory = tmp_path / "savepoints"
    path = directory / "savepoint-abcdef-0123456789ab"
    (path / "op=sums" / "sp=00000").mkdir(parents=True)
    with pytest.raises(StateError, match=r"unfinished savepoint.*never restored"):
        read_savepoint(str(path))
    with pytest.raises(StateError, match=r"savepoint directory, not a savepoint: give one of the savepoints in it: .*savepoint-abcdef"):
        read_savepoint(str(directory))
    with pytest.raises(StateError, match="is not a savepoint of a pyspark_flinkish job"):
        read_savepoint(str(tmp_path / "elsewhere"))
    storage.write_bytes(str(path / METADATA_FILE), _metadata())
    assert read_savepoint(str(path))["batch"] == 3
    storage.write_bytes(str(path / METADATA_FILE), b'{"format": "pyspark_flinkish.driver-state", "version": 2}')
    with pytest.raises(StateError, match=r"is not a pyspark_flinkish\.savepoint document"):
        read_savepoint(str(path))


def test_which_jobs_a_savepoint_fits() -> None:
    metadata = {
        "signatures": {"sums": "window:A | key=str", "remind": "keyed_process:-"},
        "state": {"sums": {}, "remind": {}},
        "positions": {"events": {"kind": "replay", "next_batch": 2}},
    }
    sources = {"events": "events"}
    assert compatibility_problems(metadata, {"sums": "window:A | key=str", "remind": "keyed_process:-"}, sources, False) == []
    changed = compatibility_problems(metadata, {"sums": "window:B | key=str", "remind": "keyed_process:-"}, sources, False)
    assert changed == ["operator 'sums': [window:A] -> [window:B]"]
    key_type = compatibility_problems(metadata, {"sums": "window:A | key=int", "remind": "keyed_process:-"}, sources, False)
    assert key_type == ["operator 'sums': key str -> int"]
    missing = compatibility_problems(metadata, {"sums": "window:A"}, {}, False)
    assert [p.split(" has ")[0] for p in missing] == ["operator 'remind'", "source 'events'"]
    assert "allow_non_restored_state=True" in missing[0]
    assert compatibility_problems(metadata, {"sums": "window:A"}, {}, True) == []
    # a new operator of the job starts empty, as in Flink
    assert compatibility_problems(metadata, {"sums": "window:A", "remind": "keyed_process:-", "new": "x"}, sources, False) == []


def _offsets_log(tmp_path, lines: List[str]) -> str:  # type: ignore[no-untyped-def]
    checkpoint = str(tmp_path / "ck")
    storage.write_bytes(storage.join(checkpoint, "spark", "offsets", "4"), "\n".join(lines).encode())
    return checkpoint


def test_kafka_positions_come_from_sparks_offsets_log(tmp_path) -> None:  # type: ignore[no-untyped-def]
    meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}})
    entries = ['{"logOffset":4}', json.dumps({"orders": {"0": 17, "1": 5}}), "-", json.dumps({"users": {"0": 3}})]
    checkpoint = _offsets_log(tmp_path, ["v1", meta, *entries])
    assert spark_offsets(checkpoint, 4) == [{"logOffset": 4}, {"orders": {"0": 17, "1": 5}}, None, {"users": {"0": 3}}]

    def kafka(topic: str) -> DataFrameSource:
        owns = lambda e: isinstance(e, dict) and set(e) == {topic}  # noqa: E731
        return DataFrameSource(None, "t", "p", [], [], restart=SourceRestart("kafka", owns, lambda e: None))

    replay = MicroBatchSource([MicroBatch([1]), MicroBatch([2])])
    plan = _plan([("orders", kafka("orders")), ("users", kafka("users")), ("replayed", replay)])
    document = {"positions": {"uid-replayed": {"replay_batch": 1}}}
    assert source_positions(plan, checkpoint, 4, document) == {
        "uid-orders": {"kind": "kafka", "offsets": {"orders": {"0": 17, "1": 5}}},
        "uid-users": {"kind": "kafka", "offsets": {"users": {"0": 3}}},
        "uid-replayed": {"kind": "replay", "next_batch": 2},
    }
    with pytest.raises(StateError, match="0 entries of Spark's offsets log of batch 4"):
        source_positions(_plan([("gone", kafka("gone"))]), checkpoint, 4, {})
    with pytest.raises(StateError, match="is not a Spark offsets log entry"):
        spark_offsets(_offsets_log(tmp_path, ["garbage"]), 4)


def _plan(sources: List[Any]) -> Any:
    transformations = [SimpleNamespace(kind="source", name=name, source=src) for name, src in sources]
    nodes = [SimpleNamespace(uid=f"uid-{name}") for name, _ in sources]
    return SimpleNamespace(transformations=transformations, nodes=nodes)


class _Seq:
    """A Scala ``Seq`` as py4j shows it."""

    def __init__(self, items: List[Any]) -> None:
        self.items = items

    def size(self) -> int:
        return len(self.items)

    def apply(self, i: int) -> Any:
        return self.items[i]


class _Options:
    def __init__(self, options: Dict[str, str]) -> None:
        self.options = options

    def contains(self, key: str) -> bool:
        return key in self.options

    def get(self, key: str) -> Any:
        return SimpleNamespace(get=lambda: self.options[key])


def _leaf(fmt: str, path: str = "", name: str = "") -> Any:
    """A streaming leaf of an analyzed plan: a V1 ``StreamingRelation`` (``fmt`` its format) or, for ``rate``, V2."""
    if fmt == "rate":
        return SimpleNamespace(nodeName=lambda: "StreamingRelationV2", sourceName=lambda: "rate")
    source = SimpleNamespace(className=lambda: fmt, options=lambda: _Options({"path": path}), paths=lambda: _Seq([]))
    return SimpleNamespace(nodeName=lambda: "StreamingRelation", dataSource=lambda: source, sourceName=lambda: name or fmt)


def _frame(*leaves: Any) -> Any:
    """A DataFrame whose analyzed plan has these streaming leaves."""
    plan = SimpleNamespace(collectLeaves=lambda: _Seq(list(leaves)))
    return SimpleNamespace(_jdf=SimpleNamespace(queryExecution=lambda: SimpleNamespace(analyzed=lambda: plan)))


def _files(path: str) -> Any:
    return _leaf("json", path, f"FileSource[{path}]")


def test_a_source_whose_position_cannot_be_carried_is_refused_up_front() -> None:
    events = ("events", MicroBatchSource([MicroBatch([1])]))
    rate = _plan([("clicks", DataFrameSource(_frame(_leaf("rate")), "t", None, [], [])), events])
    with pytest.raises(UnsupportedFeatureError, match=r"'clicks' reads a rate stream.*restart it from its checkpoint_location"):
        check_sources(rate)
    loader = _plan([("landing", DataFrameSource(_frame(_leaf("cloudFiles", "/in")), "t", None, [], []))])
    with pytest.raises(UnsupportedFeatureError, match=r"'landing' reads Auto Loader \(cloudFiles\).*state store of its own"):
        check_sources(loader)
    connect = _plan([("remote", DataFrameSource(SimpleNamespace(), "t", None, [], []))])
    with pytest.raises(UnsupportedFeatureError, match="Spark Connect"):
        check_sources(connect)
    check_sources(_plan([events]))
    check_sources(_plan([("files", DataFrameSource(_frame(_files("/in")), "t", None, [], [])), events]))
    check_sources(_plan([("table", DataFrameSource(_frame(_leaf("delta", "/t")), "t", None, [], []))]))


def test_file_and_delta_positions_are_carried_and_seeded_at_the_new_querys_places(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The savepoint takes each source's entry of the offsets log and the file stream's metadata log; the restore
    writes them as the new checkpoint's committed batch 0, each at its place in the new query (here after a replay
    stream the old job did not have), ``-`` for the other sources."""
    delta = {"sourceVersion": 1, "reservoirId": "t-1", "reservoirVersion": 7, "index": 2, "isStartingVersion": False}
    meta = {"batchWatermarkMs": 5, "batchTimestampMs": 1, "conf": {"spark.sql.shuffle.partitions": "8"}}
    lines = ["v1", json.dumps(meta), '{"logOffset":2}', json.dumps(delta), "-"]  # the last: the tick source
    old = str(tmp_path / "old")
    storage.write_bytes(storage.join(old, "spark", "offsets", "4"), "\n".join(lines).encode())
    for name in ("0", "1", "2.compact"):
        storage.write_bytes(storage.join(old, "spark", "sources", "0", name), f"log {name}".encode())
    files = DataFrameSource(_frame(_files("/in")), "t", None, [], [])
    table = DataFrameSource(_frame(_leaf("delta", "/t")), "t", None, [], [])
    plan = _plan([("files", files), ("table", table)])
    savepoint = str(tmp_path / "sp")
    carried = carry(plan, False, old, 4, savepoint)
    assert carried["positions"] == {
        "uid-files": {"kind": SPARK_LOG, "leaves": [
            {"kind": "file", "format": "json", "path": "/in", "offset": {"logOffset": 2}, "log": "spark-sources/0"}
        ]},
        "uid-table": {"kind": SPARK_LOG, "leaves": [
            {"kind": "delta", "format": "delta", "path": "/t", "offset": delta, "log": None}
        ]},
    }
    assert storage.list_names(storage.join(savepoint, "spark-sources", "0")) == ["0", "1", "2.compact"]
    # a plan whose sources are not where the log has them is refused
    with pytest.raises(StateError, match=r"line 3 \(\{\"logOffset\":2\}\) is not the offset of delta, the job.s source 0"):
        carry(_plan([("table", table), ("files", files)]), False, old, 4, savepoint)

    new = str(tmp_path / "new")
    replay = MicroBatchSource([MicroBatch([1])])
    new_plan = _plan([("events", replay), ("files", files), ("table", table)])
    stream = _frame(_leaf("parquet", "/ck/flinkish/replay", "FileSource[/ck/flinkish/replay]"), _files("/in"), _leaf("delta", "/t"), _leaf("rate"))
    restored = {"savepoint": savepoint, "positions": carried["positions"], "spark": carried["spark"]}
    conf = SimpleNamespace(get=lambda key, default: {"spark.sql.shuffle.partitions": "3"}.get(key, default))
    with pytest.raises(StateError, match="not in the order the job's plan gives"):  # the replay stream is missing
        seed(SimpleNamespace(conf=conf), _frame(_files("/in"), _leaf("delta", "/t")), new_plan, False, new, restored)
    assert not storage.exists(storage.join(new, "spark", "offsets", "0"))
    seed(SimpleNamespace(conf=conf), stream, new_plan, False, new, restored)
    written = storage.read_bytes(storage.join(new, "spark", "offsets", "0")).decode().splitlines()
    assert written[0] == "v1" and written[2:] == ["-", '{"logOffset":2}', json.dumps(delta, separators=(",", ":")), "-"]
    assert json.loads(written[1])["batchWatermarkMs"] == 0
    assert json.loads(written[1])["conf"] == {"spark.sql.shuffle.partitions": "3"}  # the new session's, not the old
    assert storage.read_bytes(storage.join(new, "spark", "commits", "0")).decode().startswith("v1\n")
    assert storage.list_names(storage.join(new, "spark", "sources", "1")) == ["0", "1", "2.compact"]
    assert json.loads(storage.read_bytes(storage.join(new, "spark", "metadata")))["id"]
    assert storage.exists(storage.join(new, "flinkish", SEEDED_FILE))
    storage.delete(storage.join(new, "spark", "commits", "0"))  # Spark purged it: never seeded again
    seed(SimpleNamespace(conf=conf), stream, new_plan, False, new, restored)
    assert not storage.exists(storage.join(new, "spark", "commits", "0"))


def test_a_changed_file_or_delta_source_is_refused_unless_its_position_may_be_dropped() -> None:
    position = {"kind": SPARK_LOG, "leaves": [{"kind": "file", "format": "json", "path": "/in", "offset": None}]}
    metadata = {"signatures": {}, "state": {}, "positions": {"files": position}}
    same = [{"kind": "file", "format": "json", "path": "/in", "name": "FileSource[/in]"}]
    moved = [{"kind": "file", "format": "json", "path": "/elsewhere", "name": "FileSource[/elsewhere]"}]
    sources, kinds = {"files": "files"}, {"files": SPARK_LOG}
    assert compatibility_problems(metadata, {}, sources, False, kinds, {"files": same}) == []
    (problem,) = compatibility_problems(metadata, {}, sources, False, kinds, {"files": moved})
    assert problem.startswith("source 'files' changed: it read [('file', 'json', '/in')]")
    assert "reads [('file', 'json', '/elsewhere')] now" in problem and "allow_non_restored_state=True" in problem
    assert compatibility_problems(metadata, {}, sources, True, kinds, {"files": moved}) == []
    (kind,) = compatibility_problems(metadata, {}, sources, False, {"files": "kafka"}, {})
    assert kind.startswith("source 'files' has a spark-log position in the savepoint but is a kafka source")
    assert changed(position, same) is None


def test_a_savepoint_is_restored_only_into_a_new_checkpoint(tmp_path) -> None:  # type: ignore[no-untyped-def]
    savepoint = str(tmp_path / "sp")
    storage.write_bytes(storage.join(savepoint, METADATA_FILE), _metadata())
    used = str(tmp_path / "used")
    write_meta(used, {"state_partitions": 2, "vectorize": True})
    with pytest.raises(StateError, match="already holds a job's state; a savepoint is restored into a new checkpoint"):
        restore_savepoint(None, savepoint, used, [], 2)
    # the same savepoint restored before: a restart after a failure resumes the checkpoint as it is
    write_meta(used, {"state_partitions": 2, "vectorize": True, "restored_from": savepoint})
    assert restore_savepoint(None, savepoint, used, [], 2) is None
    spark_only = str(tmp_path / "spark-only")
    storage.write_bytes(storage.join(spark_only, "spark", "offsets", "0"), b"v1\n{}\n")
    with pytest.raises(StateError, match="holds a Spark query's offsets"):
        restore_savepoint(None, savepoint, spark_only, [], 2)


def test_a_split_partition_holds_the_keys_the_route_places_there_and_one_copy_of_broadcast_state() -> None:
    """``split_rows``: two partitions' snapshots (keys with window rows, broadcast state in both) split into 3: every
    key's rows land, in order, in the one partition ``keys.state_partition`` (the route's rule) names, and each
    partition holds one copy of the broadcast state."""
    keys = [encode_key(f"k{i}") for i in range(60)]
    rows = [
        {"key": k, "window_start": start, "value": b"v%d" % i, "windows": 2, "event_due": 5 * i}
        for i, k in enumerate(keys)
        for start in (None, 1_000, 2_000)
    ]
    broadcast = {"key": b"", "value": b"rules"}
    old = [live_rows(_rows([r for r in rows if state_partition(r["key"], 2) == sp] + [broadcast])) for sp in (0, 1)]
    parts = [split_rows(old, sp, 3) for sp in range(3)]
    for sp, part in enumerate(parts):
        assert part.equals(live_rows(part))  # a snapshot: ordered by key and window start
        got = part.to_pylist()
        assert [r for r in got if r["key"] == b""] == _rows([broadcast]).to_pylist()
        assert {state_partition(r["key"], 3) for r in got if r["key"]} == {sp}
    every = [r for part in parts for r in part.to_pylist() if r["key"]]
    assert sorted(every, key=lambda r: (r["key"], r["window_start"] or 0)) == sorted(
        _rows(rows).to_pylist(), key=lambda r: (r["key"], r["window_start"] or 0)
    )
    assert all(len(p) > 30 for p in parts)  # 60 keys, 3 rows each: every partition got some


def test_the_splits_vectorised_crc32_places_every_key_as_the_route_does() -> None:
    """``keys.state_partitions`` (the split's CRC-32 over all keys at once) against ``keys.state_partition`` (the
    route's rule, zlib's CRC-32) on random bytes of every length up to 40 (the empty key too), on a slice of an
    array and on a chunked one, at several numbers of partitions."""
    import random

    rng = random.Random(3)
    keys = [bytes(rng.randrange(256) for _ in range(rng.randrange(41))) for _ in range(5_000)] + [b""]
    keys += [encode_key(k) for k in (0, -1, 2**63 - 1, "a", "ü", (1, "x"))]
    array = pa.array(keys, pa.binary())
    for n in (1, 2, 3, 7, 128, 1_000_003):
        assert state_partitions(array, n).tolist() == [state_partition(k, n) for k in keys], n
    assert state_partitions(array.slice(100, 500), 5).tolist() == [state_partition(k, 5) for k in keys[100:600]]
    chunked = pa.chunked_array([array.slice(0, 10), array.slice(10)])
    assert state_partitions(chunked, 3).tolist() == [state_partition(k, 3) for k in keys]
    assert state_partitions(pa.array([], pa.binary()), 3).tolist() == []
