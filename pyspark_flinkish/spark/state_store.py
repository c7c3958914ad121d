"""Keyed state of the foreachBatch executor, incremental per micro-batch (runs on the executors; the driver keeps
the manifests).

Layout under ``<checkpoint>/flinkish/state``::

    op=<operator uid>/sp=<state partition, 5 digits>/s=<batch id, 12 digits>-<token>.parquet   a full snapshot
    op=<operator uid>/sp=<state partition, 5 digits>/d=<batch id, 12 digits>-<token>.parquet   a delta

Every file has the columns of :data:`~.state_cache.FILE_SCHEMA`, one or more rows per key; a key's rows in a file
replace all of its rows in earlier files, and a row with a null ``value`` and ``window_start`` deletes the key.
Which files make up a partition's state is not read from the file system: the partition's *manifest* lists them
(at most one snapshot, or after a restore or rescaling that split
the state its pieces with disjoint keys, then deltas, oldest first), and the driver records the manifests of every committed batch
in its document ``driver/b=<batch>.json`` (``spark/driver.py``). A file is written once, under a name with a token
no other write uses, and never renamed: a file that a failed or replayed batch left half-written is named by no
manifest, so it is never read, and the driver deletes it (stores without an atomic rename need nothing more).

A micro-batch, per (keyed operator, state partition) (:class:`PartitionStore`):

1. uses the executor's cache (``spark/state_cache.py``) when it holds the manifest of the batch before; when it
   holds another version (a restore, a rescaling, a replay, the partition ran elsewhere), the batch runs on the
   manifest's files instead (``spark/state_files.py``: read with Arrow, the batch's keys filtered out of them), and
   the cache is rebuilt from the files only once :data:`SERVE_FROM_FILES_BATCHES` batches in a row ran so on the
   executor (or at once when the files are of the earlier layout): a restore's first batches do not wait for a
   copy of every key;
2. loads the keys the batch's records touch and the keys that are *due*: an event-time timer at or before the new
   watermark, a processing-time timer or a TTL expiry at or before the batch's processing time
   (``KeyedOperator.due_times``, ``BatchWindowOperator.pending_timer``): every key a timer or the TTL cleanup would
   reach is in memory, so the operator fires and cleans up exactly as with all keys in memory;
3. writes the keys whose state changed as one delta (nothing at all when none did). Trailing deltas of the same
   power-of-two size class or a smaller one are merged into it (so a partition has at most about log2 of the keys
   written since its snapshot deltas, about 20 for a million), and once the deltas since the last snapshot hold
   more keys than half the state, a full snapshot replaces them: bytes written per batch follow the keys touched,
   amortised (each key is rewritten O(log) times), and a cold start reads at most about 1.5 times the state.

``spark/state_reader.py`` reads a committed version back as DataFrames. Checkpoints of the earlier layout (one file
per partition and batch, ``v=<batch>.parquet`` or ``w=<batch>.parquet``) are read through :func:`legacy_manifests`.
"""

from __future__ import annotations

import uuid
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple

import pyarrow as pa

from ..core.errors import StateError
from ..core.javamath import LONG_MIN
from . import storage
from .state_cache import FILE_SCHEMA, KeyState, StateCache, changed_totals, latest_rows, totals_of
from .state_files import FileState

Manifest = Dict[str, Any]
"""``{"token": str, "next_seq": int, "files": [{"kind", "name", "from", "seq", "keys"}, ...], "keys": int,
"windows": int, "bytes": int}``: a partition's files (kind ``snapshot``, ``delta`` or, from the earlier layout,
``legacy-v`` / ``legacy-w``), each with the sequence number it was written as (``seq``), its keys and, for a delta,
the first sequence number whose keys it carries (``from``) and its ``weight`` (the keys written into it, merges
counted); and the partition's totals."""

MAX_DELTAS = 64
"""A partition never has more deltas than this after its snapshot (the merging keeps far fewer)."""

SERVE_FROM_FILES_BATCHES = 32
"""A partition whose executor cache holds another version runs on its files for at most this many batches in a row
on one executor, then the cache is rebuilt. A batch on the files reads the partition's files whole with Arrow
(about 1/100 of the time that copying their rows into the cache takes): the copy is made once the batches on the
files have cost about a third of it, and a partition that moves on after a few batches is never copied."""

LAYOUT_SNAPSHOTS = "snapshots"
"""An operator whose keys hold keyed snapshots (one row per key)."""
LAYOUT_WINDOWS = "windows"
"""A window run batch-wise (``core/batch_window.py``): one row per open window, and one for its keyed snapshot."""


def empty_manifest() -> Manifest:
    return {"token": "", "next_seq": 1, "files": [], "keys": 0, "windows": 0, "bytes": 0}


def partition_dir(root: str, op_uid: str, sp: int) -> str:
    return storage.join(root, f"op={op_uid}", f"sp={sp:05d}")


def file_paths(root: str, op_uid: str, sp: int, manifest: Optional[Manifest]) -> List[Tuple[str, Dict[str, Any]]]:
    """``(path, entry)`` of each file of a partition's manifest, oldest first."""
    base = partition_dir(root, op_uid, sp)
    return [(storage.join(base, f["name"]), f) for f in (manifest or empty_manifest())["files"]]


FILE_COLUMNS: Dict[str, Tuple[str, Optional[str], str]] = {
    "snapshot": ("key", "window_start", "value"),
    "delta": ("key", "window_start", "value"),
    "legacy-v": ("key", None, "snapshot"),
    "legacy-w": ("key", "window_start", "acc"),
}
"""Per kind of file, its columns holding ``FILE_SCHEMA``'s ``key``, ``window_start`` (None: the kind has none, every
row holds a keyed snapshot) and ``value``: the earlier layout's ``v=`` and ``w=`` files name them otherwise."""


def read_file(path: str, entry: Dict[str, Any]) -> pa.Table:
    """A state file's rows with the columns of ``FILE_SCHEMA`` (a file of the earlier layout too: its keys are
    due at once, so that the first batch after the upgrade loads them all and writes them in this layout)."""
    if entry["kind"] in ("snapshot", "delta"):
        return storage.read_table(path).select(FILE_SCHEMA.names).cast(FILE_SCHEMA)
    old = storage.read_table(path)
    n = len(old)
    key, start, value = FILE_COLUMNS[entry["kind"]]
    return pa.table(
        {
            "key": old.column(key),
            "window_start": old.column(start) if start is not None else pa.nulls(n, pa.int64()),
            "value": old.column(value),
            "event_due": pa.array([LONG_MIN] * n, pa.int64()),
            "proc_due": pa.array([LONG_MIN] * n, pa.int64()),
            "ttl_due": pa.nulls(n, pa.int64()),
            "windows": pa.nulls(n, pa.int32()),
        },
        schema=FILE_SCHEMA,
    )


def manifest_rows(root: str, op_uid: str, sp: int, manifest: Optional[Manifest]) -> pa.Table:
    """The partition's state as its manifest's files make it up (``latest_rows``)."""
    return latest_rows((entry["seq"], read_file(path, entry)) for path, entry in file_paths(root, op_uid, sp, manifest))


def write_snapshot(root: str, op_uid: str, sp: int, version: int, live: pa.Table) -> Optional[Manifest]:
    """Write ``live`` (``state_cache.live_rows``: a partition's whole state, no deletions) as the partition's only
    file, a full snapshot named for state version ``version``; returns the manifest of a partition made up of it
    alone (None when ``live`` is empty: a partition without state has no file). What a savepoint holds per
    partition, and what a restore starts each partition from (``spark/savepoint.py``)."""
    if not len(live):
        return None
    keys, windows, size = totals_of(live)
    name = _snapshot_name(version)
    storage.write_table(storage.join(partition_dir(root, op_uid, sp), name), live)
    entry = {"kind": "snapshot", "name": name, "from": 1, "seq": 1, "keys": keys}
    return {"token": name[15:-8], "next_seq": 2, "files": [entry], "keys": keys, "windows": windows, "bytes": size}


def _snapshot_name(version: int) -> str:
    return f"s={max(version, 0):012d}-{uuid.uuid4().hex[:16]}.parquet"


def is_one_snapshot(manifest: Optional[Manifest]) -> bool:
    """Whether the partition is made up of one full snapshot alone (as :func:`write_snapshot` writes it: a
    savepoint's partitions), which :func:`copy_snapshot` copies."""
    files = (manifest or empty_manifest())["files"]
    return len(files) == 1 and files[0]["kind"] == "snapshot"


def join_pieces(pieces: List[Manifest]) -> Manifest:
    """The manifest of a partition made up of ``pieces``: manifests of one full snapshot each (:func:`write_snapshot`)
    whose keys are disjoint (a restore's or a rescaling's split writes one piece per old partition into each new
    one), oldest first. The pieces together are the partition's snapshot (the base later deltas go on); a key is in
    one piece only, so reading them is reading one snapshot, and the partition's totals are their sums."""
    if len(pieces) == 1:
        return pieces[0]
    files = [{**m["files"][0], "from": i + 1, "seq": i + 1} for i, m in enumerate(pieces)]
    totals = {t: sum(int(m[t]) for m in pieces) for t in ("keys", "windows", "bytes")}
    return {"token": uuid.uuid4().hex[:16], "next_seq": len(files) + 1, "files": files, **totals}


def copy_snapshot(source: str, root: str, op_uid: str, sp: int, version: int, manifest: Manifest) -> Manifest:
    """Copy a partition made up of one full snapshot (:func:`is_one_snapshot`; ``manifest``, its files under
    ``source``) into ``root``, the file as it is (no row decoded), as the partition's only file named for state
    version ``version``; returns the manifest of the copy (its totals unchanged, a new token): what
    :func:`write_snapshot` of its rows would give, without reading them."""
    if not is_one_snapshot(manifest):
        msg = f"state partition {sp} of operator {op_uid!r} under {source} is not one full snapshot: {manifest['files']}"
        raise StateError(msg)
    ((path, entry),) = file_paths(source, op_uid, sp, manifest)
    name = _snapshot_name(version)
    storage.copy_file(path, storage.join(partition_dir(root, op_uid, sp), name))
    return {**manifest, "token": name[15:-8], "files": [{**entry, "name": name}]}


def _size_class(weight: int) -> int:
    """The power of two a delta's weight (keys written into it, merges counted) falls in: a new delta absorbs the
    trailing deltas of its class or below, so the classes of a partition's deltas strictly decrease, there are at
    most log2(the weight written since the snapshot) + 1 of them, and a key is rewritten at most that often."""
    return max(int(weight), 1).bit_length()


class PartitionStore:
    """One (keyed operator, state partition) for one micro-batch: :meth:`load` what the batch needs, then
    :meth:`commit` the keys' new states; the returned manifest is the partition's state after the batch."""

    def __init__(self, root: str, op_uid: str, sp: int, manifest: Optional[Manifest]) -> None:
        self.root, self.uid, self.sp = root, op_uid, sp
        self.dir = partition_dir(root, op_uid, sp)
        self.manifest = manifest or empty_manifest()
        self.cache = StateCache(self.dir)
        self.rebuilt = False
        """Whether the cache had to be rebuilt from the files (a metric: ``stateCacheRebuilds``)."""
        self.files: Optional[FileState] = None
        """The manifest's files, when this batch runs on them instead of the cache (a metric:
        ``stateServedFromFiles``)."""
        self.loaded: Dict[bytes, KeyState] = {}
        self.bytes_written = 0
        """Bytes of the files :meth:`commit` wrote."""
        self.next_processing_timer: Optional[int] = None
        """After :meth:`commit`: the partition's earliest processing-time timer (of all its keys)."""
        if self.cache.token != self.manifest["token"]:
            entries = file_paths(root, op_uid, sp, self.manifest)
            current = all(e["kind"] in ("snapshot", "delta") for _, e in entries)
            if entries and current and self.cache.served_from_files() < SERVE_FROM_FILES_BATCHES:
                pieces = all(e["kind"] == "snapshot" for _, e in entries)  # one snapshot or its disjoint pieces
                self.files = FileState([(e["seq"], read_file(path, e)) for path, e in entries], disjoint=pieces)
            else:
                self.cache.rebuild(self.manifest["token"], manifest_rows(root, op_uid, sp, self.manifest))
                self.rebuilt = True

    def load(self, keys: Iterable[bytes], watermark: int, now: int) -> Dict[bytes, KeyState]:
        """The states of ``keys`` and of the keys due at ``watermark`` / ``now`` that the partition holds, in key
        order (the order the earlier layout restored keys in: timer ties fire in it)."""
        wanted: Set[bytes] = set(keys)
        if self.files is not None:
            self.loaded = self.files.load(wanted, watermark, now)
            return self.loaded
        wanted.update(self.cache.due_keys(watermark, now))
        self.loaded = self.cache.load(wanted)
        return self.loaded

    def commit(self, version: int, states: Dict[bytes, Optional[KeyState]]) -> Manifest:
        """Write the new states of the loaded keys and of new ones (None: the key holds nothing now) as state
        version ``version`` (the Spark batch id); returns the new manifest. Keys whose state did not change are
        not written; with no change at all nothing is."""
        changes = {k: s for k, s in states.items() if self.loaded.get(k) != s}
        try:
            if self.files is not None:
                manifest = self._commit_from_files(version, changes)
                self.cache.note_served_from_files()
                return manifest
            if not changes:
                self.next_processing_timer = self.cache.next_processing_timer()
                return self.manifest
            m, cache = self.manifest, self.cache
            seq, token = int(m["next_seq"]), uuid.uuid4().hex[:16]
            cache.begin()
            try:
                cache.apply(seq, changes, self.loaded)
                keys, windows, size = cache.totals()
                files = self._write(version, seq, token, keys, len(changes), cache.live_table, cache.table_since)
                if not files or files[-1]["kind"] == "snapshot":
                    cache.forget_deletions()
                self.manifest = {
                    "token": token, "next_seq": seq + 1, "files": files, "keys": keys, "windows": windows, "bytes": size,
                }
                self.next_processing_timer = cache.next_processing_timer()
                cache.commit(token)
            except BaseException:
                cache.rollback()
                raise
            return self.manifest
        finally:
            self.cache.close()

    def _commit_from_files(self, version: int, changes: Dict[bytes, Optional[KeyState]]) -> Manifest:
        """:meth:`commit` on the manifest's files (:attr:`files`): the same files, the cache left as it is."""
        f, m = self.files, self.manifest
        assert f is not None
        if not changes:
            self.next_processing_timer = f.next_processing_timer({})
            return m
        seq, token = int(m["next_seq"]), uuid.uuid4().hex[:16]
        keys, windows, size = changed_totals((int(m["keys"]), int(m["windows"]), int(m["bytes"])), changes, self.loaded)
        files = self._write(
            version, seq, token, keys, len(changes), lambda: f.live_table(seq, changes),
            lambda start: f.table_since(start, seq, changes),
        )
        self.manifest = {"token": token, "next_seq": seq + 1, "files": files, "keys": keys, "windows": windows, "bytes": size}
        self.next_processing_timer = f.next_processing_timer(changes)
        return self.manifest

    def _write(
        self,
        version: int,
        seq: int,
        token: str,
        keys: int,
        changed: int,
        live_table: Callable[[], pa.Table],
        table_since: Callable[[int], pa.Table],
    ) -> List[Dict[str, Any]]:
        """Write the batch's file (state file ``seq``, ``changed`` keys changed, ``keys`` held after it): a delta
        merging the trailing deltas of its size class or below (``table_since(first seq)``: their keys' state
        after the batch), or, once the deltas would hold more keys than half the state, a full snapshot
        (``live_table()``; none for an empty state). Returns the manifest's new list of files."""
        files = list(self.manifest["files"])
        n = 0  # the base: the snapshot, or its disjoint pieces (join_pieces), or a file of the earlier layout
        while n < len(files) and files[n]["kind"] != "delta":
            n += 1
        base = files[:n]
        deltas = files[len(base) :]
        if 2 * (sum(d["keys"] for d in deltas) + changed) > keys or len(deltas) >= MAX_DELTAS:
            if not keys:
                return []
            name = f"s={version:012d}-{token}.parquet"
            self.bytes_written += storage.write_table(storage.join(self.dir, name), live_table())
            return [{"kind": "snapshot", "name": name, "from": seq, "seq": seq, "keys": keys}]
        start, weight = seq, changed
        while deltas and _size_class(deltas[-1]["weight"]) <= _size_class(weight):
            merged = deltas.pop()
            start, weight = merged["from"], weight + merged["weight"]
        table = table_since(start)
        name = f"d={version:012d}-{token}.parquet"
        self.bytes_written += storage.write_table(storage.join(self.dir, name), table)
        n = len(set(table.column("key").to_pylist()))
        entry = {"kind": "delta", "name": name, "from": start, "seq": seq, "keys": n, "weight": weight}
        return [*base, *deltas, entry]


# ------------------------------------------------------------------------------------------- the driver's side


def referenced(manifests: Iterable[Dict[str, Dict[str, Any]]]) -> Set[str]:
    """The paths (relative to the state root) of every file that the given operators' state names
    (``{uid: {"layout": ..., "partitions": {sp: manifest}}}``, one per kept batch)."""
    out = set()
    for ops in manifests:
        for uid, op in ops.items():
            for sp, m in op["partitions"].items():
                for f in m["files"]:
                    out.add(f"op={uid}/sp={int(sp):05d}/{f['name']}")
    return out


def prune(root: str, keep: Set[str], candidates: Optional[Iterable[str]] = None) -> int:
    """Delete the state files under ``root`` that ``keep`` (see :func:`referenced`) does not name: of
    ``candidates`` (relative paths), or of every file when None (a sweep, listing every partition's directory).
    Returns how many were deleted."""
    if candidates is None:
        candidates = list(_all_files(root))
    removed = 0
    for rel in candidates:
        if rel not in keep:
            storage.delete(storage.join(root, rel))
            removed += 1
    return removed


def _all_files(root: str) -> Iterator[str]:
    for op in storage.list_dirs(root):
        if not op.startswith("op="):
            continue
        for sp in storage.list_dirs(storage.join(root, op)):
            for name in storage.list_names(storage.join(root, op, sp)):
                if name[:2] in ("s=", "d=", "v=", "w=") and name.endswith(".parquet"):
                    yield f"{op}/{sp}/{name}"


def operators_of(document: Dict[str, Any], root: str, batch: int, partitions: int) -> Dict[str, Dict[str, Any]]:
    """``{uid: {"layout", "partitions": {sp: manifest}}}``: the keyed state that the driver's document of committed
    batch ``batch`` names (its ``state``). A document of the earlier layout (version 1, or converted from pickles)
    has none: that batch's ``v=``/``w=`` files, one per partition, are its state (:func:`legacy_manifests`)."""
    if "state" in document:
        return document["state"]  # type: ignore[no-any-return]
    return legacy_manifests(root, batch, partitions)


def has_state(root: str) -> bool:
    """Whether any operator's state directory exists under ``root``."""
    return any(op.startswith("op=") for op in storage.list_dirs(root))


def legacy_manifests(root: str, batch_id: int, partitions: int) -> Dict[str, Dict[str, Any]]:
    """The operators' state of a checkpoint in the earlier layout (every key of a partition in
    ``v=<batch>.parquet``, or a batch-wise window's in ``w=<batch>.parquet``) after committed batch ``batch_id``, as
    manifests naming those files (empty when the checkpoint has none).

    Raises:
        StateError: a partition's file of that batch is missing.
    """
    out: Dict[str, Dict[str, Any]] = {}
    for op in storage.list_dirs(root):
        if not op.startswith("op="):
            continue
        uid = op[3:]
        parts: Dict[str, Manifest] = {}
        layout = None
        for sp in range(partitions):
            base = partition_dir(root, uid, sp)
            names = set(storage.list_names(base))
            for kind, prefix, lay in (("legacy-v", "v", LAYOUT_SNAPSHOTS), ("legacy-w", "w", LAYOUT_WINDOWS)):
                name = f"{prefix}={batch_id:012d}.parquet"
                if name in names:
                    layout = lay
                    rows = storage.num_rows(storage.join(base, name))
                    m = empty_manifest()
                    m.update(token=f"legacy-{batch_id}", files=[{"kind": kind, "name": name, "from": 0, "seq": 0, "keys": rows}])
                    m["keys"] = rows
                    parts[str(sp)] = m
                    break
            else:
                msg = (
                    f"keyed state of operator {uid!r} after batch {batch_id} is missing in {base} (the checkpoint's "
                    "state is incomplete: was the checkpoint directory copied partially, or the number of state "
                    "partitions changed?)"
                )
                raise StateError(msg)
        out[uid] = {"layout": layout, "partitions": parts}
    return out


__all__ = [
    "FILE_COLUMNS",
    "LAYOUT_SNAPSHOTS",
    "LAYOUT_WINDOWS",
    "MAX_DELTAS",
    "Manifest",
    "PartitionStore",
    "SERVE_FROM_FILES_BATCHES",
    "copy_snapshot",
    "empty_manifest",
    "file_paths",
    "has_state",
    "is_one_snapshot",
    "join_pieces",
    "legacy_manifests",
    "manifest_rows",
    "operators_of",
    "partition_dir",
    "prune",
    "read_file",
    "referenced",
    "write_snapshot",
]
