"""The foreachBatch executor's keyed-state files (``spark/state_store.py``) pinned by a golden file: the
directory layout and file names, the Parquet schemas, the key encoding (``key`` column) and the state partition
each key lands in (crc32 of the encoded key: a change would look every key up in the wrong file), written from
fixed keys and snapshots. The checked-in rows must also read back through the store and decode to the inputs.
Regenerating deliberately: ``conftest.Golden``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List

import pyarrow as pa
import pyarrow.parquet as pq

from pyspark_flinkish.core.codec import decode_snapshot, decode_value, encode_snapshot, encode_value
from pyspark_flinkish.core.state import VOID_NAMESPACE
from pyspark_flinkish.core.windows import TimeWindow
from pyspark_flinkish.spark import state_store
from pyspark_flinkish.spark.keys import decode_key, encode_key, state_partition

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
from inputs import KEYS

UID, PARTITIONS, VERSION = "003-operator-Window", 3, 7


def _snapshot(n: int) -> Dict[str, Any]:
    """A small keyed snapshot: window contents, a keyed value and an event-time timer."""
    window = TimeWindow(10 * n, 10 * n + 10)
    return {
        "state": {("__window_contents", window): [n, n + 1], ("total", VOID_NAMESPACE): n},
        "event_timers": [(window.max_timestamp(), window)],
        "processing_timers": [],
    }


def _write(root: Path) -> None:
    """What the executors write for the fixed keys: rows sorted, one snapshot file and one window-table file per
    state partition (empty ones too)."""
    by_sp: Dict[int, List[Any]] = {sp: [] for sp in range(PARTITIONS)}
    windows: Dict[int, List[Any]] = {sp: [] for sp in range(PARTITIONS)}
    for n, key in enumerate(KEYS.values()):
        k = encode_key(key)
        sp = state_partition(k, PARTITIONS)
        by_sp[sp].append((k, encode_snapshot(_snapshot(n))))
        windows[sp].append((k, 10 * n, json.dumps(encode_value(("acc", n)), separators=(",", ":")).encode()))
    for sp in range(PARTITIONS):
        state_store.write(str(root), UID, sp, VERSION, sorted(by_sp[sp]))
        state_store.write_windows(str(root), UID, sp, VERSION, sorted(windows[sp]))


def _documents(root: Path) -> Dict[str, Any]:
    files = {}
    for path in sorted(p for p in root.rglob("*.parquet")):
        table = pq.read_table(path)
        rows = [
            [v.decode("utf-8") if isinstance(v, bytes) else v for v in row.values()] for row in table.to_pylist()
        ]
        files[path.relative_to(root).as_posix()] = {"schema": [f"{f.name}: {f.type}" for f in table.schema], "rows": rows}
    keys = {
        name: {"encoded": encode_key(key).decode("utf-8"), "state_partition_of_3": state_partition(encode_key(key), 3),
               "state_partition_of_200": state_partition(encode_key(key), 200)}
        for name, key in KEYS.items()
    }
    return {"keys": keys, "files": files}


def test_state_files_match_the_golden_file(tmp_path: Path, golden) -> None:  # type: ignore[no-untyped-def]
    _write(tmp_path)
    golden("state_store_files", _documents(tmp_path), expand=4)


def test_golden_state_files_read_back_and_decode(tmp_path: Path, golden) -> None:  # type: ignore[no-untyped-def]
    """The checked-in rows as Parquet files with the checked-in schemas, read through the store's own readers."""
    stored = golden.load("state_store_files")
    for name, key in KEYS.items():
        assert decode_key(stored["keys"][name]["encoded"].encode("utf-8")) == key
    types = {"binary": pa.binary(), "int64": pa.int64()}
    for rel, doc in stored["files"].items():
        fields = [(f.split(": ")[0], types[f.split(": ")[1]]) for f in doc["schema"]]
        columns = list(zip(*doc["rows"])) if doc["rows"] else [[] for _ in fields]
        arrays = [
            pa.array([v.encode("utf-8") if t == pa.binary() else v for v in col], t) for (_, t), col in zip(fields, columns)
        ]
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), tmp_path / rel)
    snapshots, windows = {}, {}
    for sp in range(PARTITIONS):
        for k, snap in state_store.read(str(tmp_path), UID, sp, VERSION):
            snapshots[decode_key(k)] = decode_snapshot(snap)
        for k, start, acc in state_store.read_windows(str(tmp_path), UID, sp, VERSION):
            windows[decode_key(k)] = (start, decode_value(json.loads(acc)))
    assert snapshots == {key: _snapshot(n) for n, key in enumerate(KEYS.values())}
    assert windows == {key: (10 * n, ("acc", n)) for n, key in enumerate(KEYS.values())}
