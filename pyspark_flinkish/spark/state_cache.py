"""An executor's local copy of one state partition (SQLite on the executor's local disk), so that a micro-batch
reads only the keys it needs.

The durable state of a partition is the files its manifest names (``spark/state_store.py``); this cache holds the
same state as of one manifest, identified by the manifest's ``token``. A task whose cache holds another token (the
partition last ran on another executor, the batch is replayed after a failure, the job restarted on another
machine, or the cache was lost) rebuilds it from the files first. Nothing here is ever the only copy: a cache can
be deleted at any time (a damaged one is deleted and rebuilt).

Tables: ``rows(key, window_start, value)``: a key's rows, as in the state files; ``keys(key, event_due, proc_due,
ttl_due, windows, bytes, seq, deleted)``: per key when it is next due, its open windows, its size, the sequence number of
the state file that last wrote it, and whether that write deleted it (kept until the next full snapshot, so a
merged delta still carries the deletion); ``meta``: the token and totals.

Where: ``$PYSPARK_FLINKISH_STATE_CACHE`` if set, else the first of Spark's local directories for the executor (a
standalone executor's ``SPARK_EXECUTOR_DIRS``, removed with the application; YARN's ``LOCAL_DIRS``, removed with the
container; ``SPARK_LOCAL_DIRS``), else the system's temporary directory; under ``pyspark_flinkish-state-cache/``,
one file per state partition directory.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc

CACHE_DIR_ENV = "PYSPARK_FLINKISH_STATE_CACHE"

FILE_SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("window_start", pa.int64()),
        ("value", pa.binary()),
        ("event_due", pa.int64()),
        ("proc_due", pa.int64()),
        ("ttl_due", pa.int64()),
        ("windows", pa.int32()),
    ]
)
"""The columns of every state file: one or more rows per key. ``window_start`` null: the row holds the key's
keyed snapshot (``core/codec.py``); else one open window of a window run batch-wise (``value``: its accumulator as
encoded JSON). ``value`` null (with a null ``window_start``): the key was deleted. ``event_due``, ``proc_due``,
``ttl_due``: the key's earliest event-time timer, processing-time timer and TTL expiry (``KeyedOperator.due_times``;
null: none); ``windows``: its open windows; these are the same on each of the key's rows."""


_TABLES = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value);
CREATE TABLE IF NOT EXISTS keys (key BLOB PRIMARY KEY, event_due INTEGER, proc_due INTEGER,
    ttl_due INTEGER, windows INTEGER, bytes INTEGER, seq INTEGER, deleted INTEGER) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rows (key BLOB, window_start INTEGER, value BLOB);
"""
_INDEXES = """
CREATE INDEX IF NOT EXISTS keys_event ON keys(event_due) WHERE event_due IS NOT NULL;
CREATE INDEX IF NOT EXISTS keys_proc ON keys(proc_due) WHERE proc_due IS NOT NULL;
CREATE INDEX IF NOT EXISTS keys_ttl ON keys(ttl_due) WHERE ttl_due IS NOT NULL;
CREATE INDEX IF NOT EXISTS keys_seq ON keys(seq);
CREATE INDEX IF NOT EXISTS rows_key ON rows(key, window_start);
"""
_INDEX_NAMES = ("keys_event", "keys_proc", "keys_ttl", "keys_seq", "rows_key")


@dataclass(frozen=True)
class KeyState:
    """One key's rows in a state partition, and what the store needs to know of it without decoding them."""

    rows: Tuple[Tuple[Optional[int], bytes], ...]
    """``(window start or None, value)``, ordered as written."""
    event_due: Optional[int]
    proc_due: Optional[int]
    ttl_due: Optional[int]
    windows: Optional[int]

    @property
    def size(self) -> int:
        return sum(len(v) for _, v in self.rows)


def cache_root() -> str:
    """The directory the executors keep their caches in (see the module docstring)."""
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return explicit
    # Spark's own order (Utils.getConfiguredLocalDirs): a standalone executor's application directories (deleted
    # when the application ends), YARN's container directories, then SPARK_LOCAL_DIRS
    for var, sep in (("SPARK_EXECUTOR_DIRS", os.pathsep), ("LOCAL_DIRS", ","), ("SPARK_LOCAL_DIRS", ",")):
        dirs = [d for d in os.environ.get(var, "").split(sep) if d]
        if dirs:
            return os.path.join(dirs[0], "pyspark_flinkish-state-cache")
    return os.path.join(tempfile.gettempdir(), "pyspark_flinkish-state-cache")


def latest_rows(files: Iterable[Tuple[int, pa.Table]]) -> pa.Table:
    """The rows of each key from the newest of ``files`` (``(sequence number, table)``, any order) holding it,
    with a ``seq`` column: the partition's state as the files make it up (a key's rows in a later file replace all
    of its rows in earlier ones; deletions are kept, as rows with a null ``value`` and ``window_start``)."""
    tables = [
        t.select(FILE_SCHEMA.names).cast(FILE_SCHEMA).append_column("seq", pa.array([seq] * len(t), pa.int64()))
        for seq, t in files
    ]
    if not tables:
        return FILE_SCHEMA.empty_table().append_column("seq", pa.array([], pa.int64()))
    table = pa.concat_tables(tables)
    newest = table.group_by("key").aggregate([("seq", "max")]).rename_columns(["key", "newest"])
    table = table.join(newest, "key")
    return table.filter(pc.equal(table["seq"], table["newest"])).drop_columns(["newest"])


def live_rows(table: pa.Table) -> pa.Table:
    """The rows of ``table`` (a state file's, or :func:`latest_rows`) without deletions, ordered by key and window
    start (a key's snapshot row first), with the columns of ``FILE_SCHEMA``: a full snapshot of the state they make
    up, in the order of :meth:`StateCache.live_table`."""
    deleted = pc.and_(pc.is_null(table["value"]), pc.is_null(table["window_start"]))
    live = table.filter(pc.invert(deleted)).select(FILE_SCHEMA.names).cast(FILE_SCHEMA)
    first = pc.fill_null(live["window_start"], -(2**63))  # a key's snapshot row (no window start) first
    order = pc.sort_indices(live.append_column("__first", first), [("key", "ascending"), ("__first", "ascending")])
    return live.take(order)


def totals_of(live: pa.Table) -> Tuple[int, int, int]:
    """(keys, open windows, bytes) of live rows (no deletions): a partition's totals, as its manifest and its cache
    keep them (bytes: of every row its key and value)."""
    if not len(live):
        return 0, 0, 0
    per_key = live.group_by("key").aggregate([("windows", "max")])
    windows = pc.sum(per_key["windows_max"]).as_py() or 0
    size = pc.sum(pc.add(pc.binary_length(live["value"]).fill_null(0), pc.binary_length(live["key"]))).as_py() or 0
    return len(per_key), int(windows), int(size)


def changed_totals(
    totals: Tuple[int, int, int], changes: Dict[bytes, Optional[KeyState]], previous: Dict[bytes, KeyState]
) -> Tuple[int, int, int]:
    """A partition's totals (keys, open windows, bytes) after ``changes`` (a key's new state, or None: deleted),
    from its totals before and ``previous``: the states of the changed keys it held."""
    keys, windows, size = totals
    for k, s in changes.items():
        old = previous.get(k)
        if old is not None:
            keys, windows, size = keys - 1, windows - (old.windows or 0), size - len(k) - old.size
        if s is not None:
            keys, windows, size = keys + 1, windows + (s.windows or 0), size + len(k) + s.size
    return keys, windows, size


class StateCache:
    """One state partition's cache (see the module docstring). Changes are made in a transaction that
    :meth:`commit` ends, after the durable file was written: a task that fails leaves the cache as it was."""

    def __init__(self, partition_dir: str) -> None:
        root = cache_root()
        os.makedirs(root, exist_ok=True)
        name = hashlib.sha1(partition_dir.encode("utf-8")).hexdigest()[:24]
        self.path = os.path.join(root, f"{name}.sqlite")
        try:
            self.db = self._connect()
        except sqlite3.DatabaseError:  # a damaged cache: it is only a copy
            self._remove()
            self.db = self._connect()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, timeout=600)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_TABLES + _INDEXES)
        db.execute("SELECT count(*) FROM meta").fetchone()  # raises on a damaged file
        return db

    def _remove(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            try:
                os.remove(self.path + suffix)
            except FileNotFoundError:
                pass

    def close(self) -> None:
        self.db.close()

    # -- identity
    @property
    def token(self) -> Optional[str]:
        row = self.db.execute("SELECT value FROM meta WHERE name = 'token'").fetchone()
        return None if row is None else str(row[0])

    def begin(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def commit(self, token: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('token', ?)", (token,))
        self.db.execute("DELETE FROM meta WHERE name = 'served_from_files'")
        self.db.execute("COMMIT")

    def rollback(self) -> None:
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")

    # -- contents
    def rebuild(self, token: str, table: pa.Table) -> None:
        """Replace the contents with ``table`` (:func:`latest_rows` of a manifest's files) as of ``token``.

        A bulk load: the secondary indexes are dropped and made again after the rows are in, and rows and keys go
        in in key order (SQLite's B-trees are appended to, not split at random places: a restored partition's
        files, split by a hash of the key, are in no order), all in one transaction."""
        self.begin()
        try:
            db = self.db
            for index in _INDEX_NAMES:
                db.execute(f"DROP INDEX IF EXISTS {index}")
            db.execute("DELETE FROM rows")
            db.execute("DELETE FROM keys")
            db.execute("DELETE FROM meta")
            deleted = pc.and_(pc.is_null(table["value"]), pc.is_null(table["window_start"]))
            live = live_rows(table)
            db.executemany(
                "INSERT INTO rows VALUES (?, ?, ?)",
                zip(live["key"].to_pylist(), live["window_start"].to_pylist(), live["value"].to_pylist()),
            )
            sizes = pc.add(pc.binary_length(table["value"]).fill_null(0), pc.binary_length(table["key"]))
            per_key = (
                table.append_column("bytes", sizes)
                .append_column("deleted", pc.cast(deleted, pa.int8()))
                .group_by("key")
                .aggregate(
                    [
                        ("event_due", "min"), ("proc_due", "min"), ("ttl_due", "min"), ("windows", "max"), ("bytes", "sum"),
                        ("seq", "max"), ("deleted", "max"),
                    ]
                )
            )
            per_key = per_key.take(pc.sort_indices(per_key, [("key", "ascending")]))
            cols = ["key", "event_due_min", "proc_due_min", "ttl_due_min", "windows_max", "bytes_sum", "seq_max", "deleted_max"]
            db.executemany("INSERT INTO keys VALUES (?, ?, ?, ?, ?, ?, ?, ?)", zip(*(per_key[c].to_pylist() for c in cols)))
            for statement in filter(None, (s.strip() for s in _INDEXES.split(";"))):
                db.execute(statement)
            self._set_totals(*totals_of(live))
            self.commit(token)
        except BaseException:
            self.rollback()
            raise

    def served_from_files(self) -> int:
        """Batches run on the partition's files (``spark/state_files.py``) since this cache last held a current
        version (the version it holds is another)."""
        row = self.db.execute("SELECT value FROM meta WHERE name = 'served_from_files'").fetchone()
        return 0 if row is None else int(row[0])

    def note_served_from_files(self) -> None:
        """Count one more batch run on the files (outside any transaction; a rebuild resets the count)."""
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('served_from_files', ?)", (self.served_from_files() + 1,))

    def due_keys(self, watermark: int, now: int) -> List[bytes]:
        """Keys with an event-time timer at or before ``watermark``, or a processing-time timer or TTL expiry at or
        before ``now``."""
        rows = self.db.execute(
            "SELECT key FROM keys WHERE event_due <= ? UNION SELECT key FROM keys WHERE proc_due <= ? "
            "UNION SELECT key FROM keys WHERE ttl_due <= ?",
            (watermark, now, now),
        )
        return [bytes(r[0]) for r in rows]

    def next_processing_timer(self) -> Optional[int]:
        """The earliest processing-time timer of any key (from the index, not a scan)."""
        row = self.db.execute("SELECT min(proc_due) FROM keys WHERE proc_due IS NOT NULL").fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def load(self, keys: Iterable[bytes]) -> Dict[bytes, KeyState]:
        """The states of those of ``keys`` the partition holds."""
        db = self.db
        db.execute("CREATE TEMP TABLE IF NOT EXISTS wanted (key BLOB PRIMARY KEY) WITHOUT ROWID")
        db.execute("DELETE FROM temp.wanted")
        db.executemany("INSERT OR IGNORE INTO temp.wanted VALUES (?)", ((k,) for k in keys))
        rows: Dict[bytes, List[Tuple[Optional[int], bytes]]] = {}
        for key, start, value in db.execute(
            "SELECT r.key, r.window_start, r.value FROM rows r JOIN temp.wanted w ON r.key = w.key ORDER BY r.key, r.window_start"
        ):
            rows.setdefault(bytes(key), []).append((start, bytes(value)))
        out = {}
        for key, event_due, proc_due, ttl_due, windows in db.execute(
            "SELECT k.key, k.event_due, k.proc_due, k.ttl_due, k.windows FROM keys k JOIN temp.wanted w ON k.key = w.key "
            "WHERE k.deleted = 0 ORDER BY k.key"
        ):
            key = bytes(key)
            out[key] = KeyState(tuple(rows.get(key, ())), event_due, proc_due, ttl_due, windows)
        return out

    def apply(self, seq: int, changes: Dict[bytes, Optional[KeyState]], previous: Dict[bytes, KeyState]) -> None:
        """Write ``changes`` (a key's new state, or None: deleted) as written by state file ``seq``; inside a
        transaction (:meth:`begin`). ``previous``: the states :meth:`load` gave, which hold every changed key the
        partition held (a batch changes only keys it loaded, or new ones)."""
        db = self.db
        self._set_totals(*changed_totals(self.totals(), changes, previous))
        db.executemany("DELETE FROM rows WHERE key = ?", ((k,) for k in changes))
        db.executemany(
            "INSERT INTO rows VALUES (?, ?, ?)",
            ((k, start, value) for k, s in changes.items() if s is not None for start, value in s.rows),
        )
        db.executemany(
            "INSERT OR REPLACE INTO keys VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                (k, None, None, None, None, len(k), seq, 1)
                if s is None
                else (k, s.event_due, s.proc_due, s.ttl_due, s.windows, len(k) + s.size, seq, 0)
                for k, s in changes.items()
            ),
        )

    def table_since(self, seq: int) -> pa.Table:
        """The state of every key that a state file ``>= seq`` wrote (deletions included), as a state file's rows:
        what a delta replacing those files holds."""
        return self._table("k.seq >= ?", (seq,))

    def live_table(self) -> pa.Table:
        """Every key the partition holds, as a state file's rows: a full snapshot."""
        return self._table("k.deleted = 0", ())

    def _table(self, where: str, args: Tuple[int, ...]) -> pa.Table:
        cols: Dict[str, list] = {name: [] for name in FILE_SCHEMA.names}  # type: ignore[type-arg]
        query = (
            "SELECT k.key, r.window_start, r.value, k.event_due, k.proc_due, k.ttl_due, k.windows FROM keys k "
            f"LEFT JOIN rows r ON r.key = k.key WHERE {where} ORDER BY k.key, r.window_start"
        )
        for row in self.db.execute(query, args):
            for name, v in zip(FILE_SCHEMA.names, row):
                cols[name].append(v)
        return pa.table({n: pa.array(cols[n], FILE_SCHEMA.field(n).type) for n in FILE_SCHEMA.names}, schema=FILE_SCHEMA)

    def forget_deletions(self) -> None:
        """After a full snapshot: deletions need not be carried further."""
        self.db.execute("DELETE FROM keys WHERE deleted = 1")

    def totals(self) -> Tuple[int, int, int]:
        """(keys, open windows, bytes) of the keys the partition holds (kept in ``meta``, not counted each time)."""
        got = dict(self.db.execute("SELECT name, value FROM meta WHERE name IN ('keys', 'windows', 'bytes')").fetchall())
        return int(got.get("keys", 0)), int(got.get("windows", 0)), int(got.get("bytes", 0))

    def _set_totals(self, keys: int, windows: int, size: int) -> None:
        self.db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", (("keys", keys), ("windows", windows), ("bytes", size)))


__all__ = [
    "CACHE_DIR_ENV",
    "FILE_SCHEMA",
    "KeyState",
    "StateCache",
    "cache_root",
    "changed_totals",
    "latest_rows",
    "live_rows",
    "totals_of",
]
