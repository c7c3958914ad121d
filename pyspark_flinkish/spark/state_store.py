"""Versioned keyed state of the foreachBatch executor, as Parquet files (runs on the executors).

Layout under ``<checkpoint>/flinkish/state``::

    op=<operator uid>/sp=<state partition, 5 digits>/v=<batch id, 12 digits>.parquet

Each file holds every key of one state partition after one micro-batch: columns ``key`` (the key encoded
with :mod:`pyspark_flinkish.core.codec`, UTF-8 JSON) and ``snapshot`` (the key's encoded keyed snapshot).
A file is written for every partition and batch, even when empty, so a missing file is corruption, never
"no state". Batch ``N`` reads version ``N-1``'s files and writes version ``N``: replaying ``N`` after a crash
starts from the same state and rewrites the same files. ``spark/state_reader.py`` reads these files back as
DataFrames (``read_state``); its ``committed_state``, ``snapshot_frame`` and ``window_frame`` follow this layout.
"""

from __future__ import annotations

import os
import uuid
from typing import Iterator, List, Optional, Tuple

import pyarrow as pa
import pyarrow.parquet as pq

from ..core.errors import StateError

SCHEMA = pa.schema([("key", pa.binary()), ("snapshot", pa.binary())])
# Windows run batch-wise (core/batch_window.py) keep one row per (key, window) instead of keyed snapshots, in
# files named ``w=<batch id>.parquet`` beside the snapshot files: ``key`` (encoded as above), ``window_start``
# (ms) and ``acc`` (the window's accumulator or reduced value, encoded with core.codec.encode_value as JSON); rows
# with a null ``window_start`` hold a key's keyed snapshot instead (the state the window function keeps itself).
WINDOWS_SCHEMA = pa.schema([("key", pa.binary()), ("window_start", pa.int64()), ("acc", pa.binary())])


def partition_dir(root: str, op_uid: str, sp: int) -> str:
    return os.path.join(root, f"op={op_uid}", f"sp={sp:05d}")


def version_path(root: str, op_uid: str, sp: int, version: int) -> str:
    return os.path.join(partition_dir(root, op_uid, sp), f"v={version:012d}.parquet")


def windows_path(root: str, op_uid: str, sp: int, version: int) -> str:
    return os.path.join(partition_dir(root, op_uid, sp), f"w={version:012d}.parquet")


def has_snapshots(root: str, op_uid: str) -> bool:
    """Whether an operator's state is kept as keyed snapshots (``v=`` files) in this checkpoint."""
    base = os.path.join(root, f"op={op_uid}")
    if not os.path.isdir(base):
        return False
    return any(name.startswith("v=") for sp in os.listdir(base) for name in os.listdir(os.path.join(base, sp)))


def _missing(path: str) -> StateError:
    msg = (
        f"keyed state file {path} is missing: the checkpoint's state is incomplete "
        "(was the checkpoint directory copied partially, or the number of state partitions changed?)"
    )
    return StateError(msg)


def read_windows(root: str, op_uid: str, sp: int, version: int) -> Iterator[Tuple[bytes, Optional[int], bytes]]:
    """The (key, window start, accumulator) rows of one partition at ``version`` (nothing for version < 0); a
    ``None`` window start marks a row holding the key's keyed snapshot."""
    if version < 0:
        return iter(())
    path = windows_path(root, op_uid, sp, version)
    if not os.path.exists(path):
        raise _missing(path)
    table = pq.read_table(path)
    return zip(table.column("key").to_pylist(), table.column("window_start").to_pylist(), table.column("acc").to_pylist())


def write_windows(root: str, op_uid: str, sp: int, version: int, rows: List[Tuple[bytes, Optional[int], bytes]]) -> str:
    """Atomically write one partition's window table at ``version``."""
    table = pa.Table.from_arrays(
        [pa.array([r[0] for r in rows], pa.binary()), pa.array([r[1] for r in rows], pa.int64()),
         pa.array([r[2] for r in rows], pa.binary())],
        schema=WINDOWS_SCHEMA,
    )
    return _write_table(windows_path(root, op_uid, sp, version), table)


def _write_table(path: str, table: pa.Table) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    return path


def read(root: str, op_uid: str, sp: int, version: int) -> Iterator[Tuple[bytes, bytes]]:
    """The (key, snapshot) pairs of one partition at ``version`` (nothing for version < 0)."""
    if version < 0:
        return iter(())
    path = version_path(root, op_uid, sp, version)
    if not os.path.exists(path):
        raise _missing(path)
    table = pq.read_table(path)
    return zip(table.column("key").to_pylist(), table.column("snapshot").to_pylist())


def write(root: str, op_uid: str, sp: int, version: int, rows: List[Tuple[bytes, bytes]]) -> str:
    """Atomically write one partition's state at ``version`` (write to a temporary file, then rename)."""
    table = pa.Table.from_arrays(
        [pa.array([k for k, _ in rows], pa.binary()), pa.array([s for _, s in rows], pa.binary())], schema=SCHEMA
    )
    return _write_table(version_path(root, op_uid, sp, version), table)


def prune(root: str, keep_from_version: int) -> int:
    """Delete state versions older than ``keep_from_version``; returns how many files were removed."""
    removed = 0
    if not os.path.isdir(root):
        return 0
    for op in os.listdir(root):
        for sp in os.listdir(os.path.join(root, op)):
            d = os.path.join(root, op, sp)
            for name in os.listdir(d):
                if name[:2] in ("v=", "w=") and name.endswith(".parquet") and int(name[2:14]) < keep_from_version:
                    os.remove(os.path.join(d, name))
                    removed += 1
    return removed


__all__ = [
    "SCHEMA",
    "WINDOWS_SCHEMA",
    "partition_dir",
    "version_path",
    "windows_path",
    "read_windows",
    "write_windows",
    "read",
    "write",
    "prune",
]
