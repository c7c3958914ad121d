"""A state partition served straight from its files, without the executor's cache: what a batch runs on while the
executor's cache of the partition holds another version (the first batches after a restore from a savepoint, a
rescaling, a replay or a move to another executor), so that a batch that needs ten keys of a million does not
first copy the million into the cache (``spark/state_cache.py``).

The manifest's files (``spark/state_store.py``: a snapshot, then deltas) are read once, with Arrow. A batch's keys
are picked out by filtering the files' ``key`` column (the keys its records touch) and their due columns (the keys
due at the watermark or processing time, the rule of :meth:`StateCache.due_keys`), each key from the newest file
holding it (``latest_rows``). A commit's files are made from the files' rows and the batch's changes, as the cache
would make them: a delta from the rows of the deltas it replaces, a full snapshot from every row; in the same
order, with the same rows.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from .state_cache import FILE_SCHEMA, KeyState, latest_rows, live_rows

Changes = Dict[bytes, Optional[KeyState]]
"""A batch's changed keys: their new state, or None (deleted)."""


def due_mask(table: pa.Table, watermark: int, now: int) -> pa.ChunkedArray:
    """Per row of ``table`` (``FILE_SCHEMA``'s columns): whether its key has an event-time timer at or before
    ``watermark``, or a processing-time timer or TTL expiry at or before ``now`` (null: none)."""
    due = pc.or_kleene(
        pc.less_equal(table["event_due"], watermark),
        pc.or_kleene(pc.less_equal(table["proc_due"], now), pc.less_equal(table["ttl_due"], now)),
    )
    return pc.fill_null(due, False)


def _is_in(table: pa.Table, keys: Iterable[bytes]) -> pa.ChunkedArray:
    return pc.is_in(table["key"], value_set=pa.array(list(keys), pa.binary()))


def key_states(live: pa.Table) -> Dict[bytes, KeyState]:
    """The states of the keys of ``live`` (``live_rows``: ordered by key and window start, no deletions), in key
    order: what :meth:`StateCache.load` gives for them."""
    keys = live["key"].to_pylist()
    starts, values = live["window_start"].to_pylist(), live["value"].to_pylist()
    event, proc, ttl, windows = (live[c].to_pylist() for c in ("event_due", "proc_due", "ttl_due", "windows"))
    rows: Dict[bytes, List[Tuple[Optional[int], bytes]]] = {}
    first: Dict[bytes, int] = {}
    for i, key in enumerate(keys):
        if key not in rows:
            rows[key], first[key] = [], i
        rows[key].append((starts[i], values[i]))
    return {
        k: KeyState(tuple(r), event[first[k]], proc[first[k]], ttl[first[k]], windows[first[k]]) for k, r in rows.items()
    }


def change_rows(seq: int, changes: Changes) -> pa.Table:
    """``changes`` as a state file's rows (a deleted key: one row with a null ``value`` and ``window_start``), with
    a ``seq`` column ``seq``."""
    cols: Dict[str, list] = {name: [] for name in FILE_SCHEMA.names}  # type: ignore[type-arg]
    for key, state in changes.items():
        if state is None:
            rows: Tuple[Tuple[Optional[int], Optional[bytes]], ...] = ((None, None),)
            dues: Tuple[Optional[int], ...] = (None, None, None, None)
        else:
            rows, dues = state.rows, (state.event_due, state.proc_due, state.ttl_due, state.windows)
        for start, value in rows:
            for name, v in zip(FILE_SCHEMA.names, (key, start, value, *dues)):
                cols[name].append(v)
    table = pa.table({n: pa.array(cols[n], FILE_SCHEMA.field(n).type) for n in FILE_SCHEMA.names}, schema=FILE_SCHEMA)
    return table.append_column("seq", pa.array([seq] * len(table), pa.int64()))


def _ordered(table: pa.Table) -> pa.Table:
    """``table``'s rows with ``FILE_SCHEMA``'s columns, ordered by key then window start (a key's snapshot row or
    deletion, with no window start, first): the order of the cache's tables."""
    table = table.select(FILE_SCHEMA.names).cast(FILE_SCHEMA)
    first = pc.fill_null(table["window_start"], -(2**63))
    order = pc.sort_indices(table.append_column("__first", first), [("key", "ascending"), ("__first", "ascending")])
    return table.take(order)


class FileState:
    """One state partition's rows as its manifest's files hold them (``files``: ``(sequence number, rows with
    FILE_SCHEMA's columns)``, oldest first), for one batch: :meth:`load`, then the tables :meth:`PartitionStore.commit
    <pyspark_flinkish.spark.state_store.PartitionStore.commit>` writes."""

    def __init__(self, files: List[Tuple[int, pa.Table]], disjoint: bool = False) -> None:
        self.files = files
        self.disjoint = disjoint
        """Whether no key is in two of the files (one snapshot, or its pieces: ``state_store.join_pieces``)."""
        self._latest: Optional[pa.Table] = None

    def latest(self) -> pa.Table:
        """Every key's rows from the newest file holding it, deletions included (``latest_rows``), computed once."""
        if self._latest is None:
            if len(self.files) == 1 or self.disjoint:  # every row is its key's newest
                self._latest = pa.concat_tables(
                    [t.append_column("seq", pa.array([seq] * len(t), pa.int64())) for seq, t in self.files]
                )
            else:
                self._latest = latest_rows(self.files)
        return self._latest

    def load(self, keys: Iterable[bytes], watermark: int, now: int) -> Dict[bytes, KeyState]:
        """The states of ``keys`` and of the keys due at ``watermark`` / ``now`` that the partition holds, in key
        order: what :meth:`StateCache.load` gives for ``keys`` and :meth:`StateCache.due_keys`."""
        wanted = set(keys)
        candidates = set(wanted)
        for _, table in self.files:  # a key due in an older file may not be due in its newest: checked below
            candidates.update(table.filter(due_mask(table, watermark, now))["key"].to_pylist())
        picked = latest_rows((seq, t.filter(_is_in(t, candidates))) for seq, t in self.files)
        live = live_rows(picked)
        live = live.filter(pc.or_(_is_in(live, wanted), due_mask(live, watermark, now)))
        return key_states(live)

    def _with(self, rows: pa.Table, seq: int, changes: Changes) -> pa.Table:
        kept = rows.filter(pc.invert(_is_in(rows, changes))) if changes else rows
        return pa.concat_tables([kept.select([*FILE_SCHEMA.names, "seq"]), change_rows(seq, changes)])

    def table_since(self, start: int, seq: int, changes: Changes) -> pa.Table:
        """The state of every key that a file ``>= start`` or the changes (written as file ``seq``) wrote,
        deletions included, as a state file's rows: what :meth:`StateCache.table_since` gives after the changes."""
        recent = latest_rows((s, t) for s, t in self.files if s >= start)
        return _ordered(self._with(recent, seq, changes))

    def live_table(self, seq: int, changes: Changes) -> pa.Table:
        """Every key the partition holds after the changes, as a state file's rows: a full snapshot
        (:meth:`StateCache.live_table`)."""
        return live_rows(self._with(self.latest(), seq, changes))

    def next_processing_timer(self, changes: Changes) -> Optional[int]:
        """The earliest processing-time timer of any key after the changes (:meth:`StateCache.next_processing_timer`)."""
        latest = self.latest()
        proc = latest["proc_due"]
        if proc.null_count < len(proc) and changes:  # a changed key's timer is its new state's
            proc = proc.filter(pc.invert(_is_in(latest, changes)))
        times = [t for t in (pc.min(proc).as_py(),) if t is not None]
        times.extend(s.proc_due for s in changes.values() if s is not None and s.proc_due is not None)
        return min(times) if times else None


__all__ = ["Changes", "FileState", "change_rows", "due_mask", "key_states"]
