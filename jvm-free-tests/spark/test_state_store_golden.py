"""The foreachBatch executor's keyed-state files (``spark/state_store.py``) pinned by golden files: the directory
layout and file names, the Parquet schemas, the manifests, the key encoding (``key`` column) and the state
partition each key lands in (crc32 of the encoded key: a change would look every key up in the wrong file), written
from fixed keys and snapshots. The checked-in rows must also read back through the store and decode to the inputs,
those of the earlier layout (``state_store_files_v1.json``) too. Regenerating deliberately: ``conftest.Golden``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List

import pyarrow as pa
import pyarrow.parquet as pq

from pyspark_flinkish.core.codec import decode_snapshot, decode_value, encode_snapshot, encode_value
from pyspark_flinkish.core.javamath import LONG_MIN
from pyspark_flinkish.core.state import VOID_NAMESPACE
from pyspark_flinkish.core.windows import TimeWindow
from pyspark_flinkish.spark import state_store
from pyspark_flinkish.spark.keys import decode_key, encode_key, state_partition
from pyspark_flinkish.spark.state_cache import KeyState

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
from inputs import KEYS

UID, PARTITIONS, VERSION = "003-operator-Window", 3, 7
WINDOWS_UID = "004-operator-Window"


def _snapshot(n: int) -> Dict[str, Any]:
    """A small keyed snapshot: window contents, a keyed value and an event-time timer."""
    window = TimeWindow(10 * n, 10 * n + 10)
    return {
        "state": {("__window_contents", window): [n, n + 1], ("total", VOID_NAMESPACE): n},
        "event_timers": [(window.max_timestamp(), window)],
        "processing_timers": [],
    }


def _acc(n: int) -> bytes:
    return json.dumps(encode_value(("acc", n)), separators=(",", ":")).encode()


def _write(root: Path) -> Dict[str, Dict[int, Any]]:
    """What the executors write for the fixed keys in one batch: per state partition, the keyed snapshots of an
    operator and the window rows of a batch-wise window (with the key's keyed snapshot); returns the manifests."""
    manifests: Dict[str, Dict[int, Any]] = {UID: {}, WINDOWS_UID: {}}
    for uid in (UID, WINDOWS_UID):
        for sp in range(PARTITIONS):
            store = state_store.PartitionStore(str(root), uid, sp, None)
            store.load([], 0, 0)
            states = {}
            for n, key in enumerate(KEYS.values()):
                k = encode_key(key)
                if state_partition(k, PARTITIONS) != sp:
                    continue
                snap = encode_snapshot(_snapshot(n))
                if uid == UID:
                    states[k] = KeyState(((None, snap),), 10 * n + 9, None, None, 1)
                else:
                    states[k] = KeyState(((None, snap), (10 * n, _acc(n))), 10 * n + 9, None, 1_000 + n, 1)
            manifests[uid][sp] = store.commit(VERSION, states)
    return manifests


def _documents(root: Path, manifests: Dict[str, Dict[int, Any]]) -> Dict[str, Any]:
    """The files (names with their tokens replaced by ``<token>``: every write draws a new one), their schemas
    and rows, and the manifests naming them."""
    tokens = {m["token"] for ops in manifests.values() for m in ops.values()}

    def plain(name: str) -> str:
        for token in tokens:
            name = name.replace(token, "<token>")
        return name

    files = {}
    for path in sorted(p for p in root.rglob("*.parquet")):
        table = pq.read_table(path)
        rows = [
            [v.decode("utf-8") if isinstance(v, bytes) else v for v in row.values()] for row in table.to_pylist()
        ]
        files[plain(path.relative_to(root).as_posix())] = {"schema": [f"{f.name}: {f.type}" for f in table.schema], "rows": rows}
    docs = {uid: {str(sp): json.loads(plain(json.dumps(m))) for sp, m in ops.items()} for uid, ops in manifests.items()}
    keys = {
        name: {"encoded": encode_key(key).decode("utf-8"), "state_partition_of_3": state_partition(encode_key(key), 3),
               "state_partition_of_200": state_partition(encode_key(key), 200)}
        for name, key in KEYS.items()
    }
    return {"keys": keys, "files": files, "manifests": docs}


def _materialize(stored: Dict[str, Any], root: Path, token: str = "") -> None:
    """The checked-in rows as Parquet files with the checked-in schemas (``<token>`` in names as ``token``)."""
    types = {"binary": pa.binary(), "int64": pa.int64(), "int32": pa.int32()}
    for rel, doc in stored["files"].items():
        fields = [(f.split(": ")[0], types[f.split(": ")[1]]) for f in doc["schema"]]
        columns = list(zip(*doc["rows"])) if doc["rows"] else [[] for _ in fields]
        arrays = [
            pa.array([v.encode("utf-8") if t == pa.binary() and v is not None else v for v in col], t)
            for (_, t), col in zip(fields, columns)
        ]
        path = root / rel.replace("<token>", token)
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), path)


def _decoded(rows: List[Dict[str, Any]]) -> Dict[Any, Any]:
    out: Dict[Any, Any] = {}
    for r in rows:
        key = decode_key(r["key"])
        if r["window_start"] is None:
            out.setdefault(key, {})["snapshot"] = decode_snapshot(r["value"])
        else:
            out.setdefault(key, {})["window"] = (r["window_start"], decode_value(json.loads(r["value"])))
    return out


def test_state_files_match_the_golden_file(tmp_path: Path, golden) -> None:  # type: ignore[no-untyped-def]
    """The layout this version writes (``state_store`` files and manifests), pinned."""
    manifests = _write(tmp_path)
    golden("state_store_files_v2", _documents(tmp_path, manifests), expand=4)


def test_golden_state_files_read_back_and_decode(tmp_path: Path, golden) -> None:  # type: ignore[no-untyped-def]
    """The checked-in files and manifests read back through the store and decode to the inputs."""
    stored = golden.load("state_store_files_v2")
    for name, key in KEYS.items():
        assert decode_key(stored["keys"][name]["encoded"].encode("utf-8")) == key
    _materialize(stored, tmp_path, "0123456789abcdef")
    decoded: Dict[str, Dict[Any, Any]] = {UID: {}, WINDOWS_UID: {}}
    for uid, ops in stored["manifests"].items():
        for sp, manifest in ops.items():
            manifest = json.loads(json.dumps(manifest).replace("<token>", "0123456789abcdef"))
            decoded[uid].update(_decoded(state_store.manifest_rows(str(tmp_path), uid, int(sp), manifest).to_pylist()))
    assert decoded[UID] == {key: {"snapshot": _snapshot(n)} for n, key in enumerate(KEYS.values())}
    assert decoded[WINDOWS_UID] == {
        key: {"snapshot": _snapshot(n), "window": (10 * n, ("acc", n))} for n, key in enumerate(KEYS.values())
    }


def test_golden_state_files_of_the_earlier_layout_read_back_and_decode(tmp_path: Path, golden) -> None:  # type: ignore[no-untyped-def]
    """Checkpoints written before incremental state (one ``v=``/``w=`` file per partition and batch, pinned in
    ``state_store_files_v1.json``) stay readable: the store reads them as they are, as the state of the batch."""
    stored = golden.load("state_store_files_v1")
    _materialize(stored, tmp_path)
    legacy = state_store.legacy_manifests(str(tmp_path), VERSION, PARTITIONS)
    assert legacy[UID]["layout"] == state_store.LAYOUT_SNAPSHOTS  # both kinds under one uid: v= first, as before
    snapshots, windows = {}, {}
    for sp in range(PARTITIONS):
        base = tmp_path / f"op={UID}" / f"sp={sp:05d}"
        for kind, name in (("legacy-v", f"v={VERSION:012d}.parquet"), ("legacy-w", f"w={VERSION:012d}.parquet")):
            entry = {"kind": kind, "name": name, "from": 0, "seq": 0, "keys": 0}
            rows = state_store.read_file(str(base / name), entry).to_pylist()
            assert all(r["event_due"] == LONG_MIN for r in rows)  # due at once: the next batch loads every key
            for key, value in _decoded(rows).items():
                (snapshots if kind == "legacy-v" else windows)[key] = value
    assert snapshots == {key: {"snapshot": _snapshot(n)} for n, key in enumerate(KEYS.values())}
    assert windows == {key: {"window": (10 * n, ("acc", n))} for n, key in enumerate(KEYS.values())}
