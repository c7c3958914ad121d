"""The keyed stage of the foreachBatch executor: one ``applyInPandas`` task body per (keyed operator, state partition)
loads the keys of the partition that the batch needs (the keys its records touch and those with a timer or TTL
expiry due, :class:`~.state_store.PartitionStore`), processes its records in Flink's order, fires timers and writes
the keys whose state changed; its ``metric`` row carries the partition's new manifest to the driver.

A task streams its input: Spark sorts each group's rows by ``ord`` (:func:`in_processing_order`) and hands them
over in Arrow batches (``applyInPandas``' iterator form); :class:`KeyedInput` reads them once (the ``stats`` rows,
the keys to load, the records spilled to a local file) and the task then processes the records chunk by chunk and
hands its output on every :data:`KEYED_CHUNK_ROWS` rows. Its Python worker holds a chunk, the keys the batch
touches and their state, never the partition's whole input.

A broadcast operator (``KeyedBroadcastProcessOperator``) keeps its broadcast state in the same store, as the key
:data:`OPERATOR_STATE_KEY` (no encoded key is empty), loaded in every batch: every state partition is one instance
of the operator, gets every broadcast element and writes its copy with its keyed state, so a replayed batch
restores and rewrites both together (exactly once). Only state partition 0 emits what
``process_broadcast_element`` returns, once per parallel instance of the operator (``core/co_operators.py``): the
state partitions are not Flink's parallel instances (``core/subtasks.py``).
"""

from __future__ import annotations

import json
import os
import pickle
import tempfile
import time
from itertools import chain
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple

from ..core.batch_window import BatchWindowOperator
from ..core.codec import decode_snapshot, decode_value, encode_snapshot, encode_value
from ..core.errors import FlinkishError
from ..core.operators import KeyedOperator
from ..core.records import StreamRecord
from ..monitoring import partition_metrics
from . import storage
from .chain import ChainRunner, FixedClock, KeyedOutput
from .error_transport import reported_steps
from .generators import mid_batch_order
from .keys import decode_key, encode_key
from .plan import ExecPlan
from .record_columns import frame_keys, frame_values
from .rows import metric_row, row_frame
from .state_cache import KeyState
from .state_store import Manifest, PartitionStore
from .watermark_advance import WatermarkAdvance, sorted_stats

OPERATOR_STATE_KEY = b""  # the store's key of an operator's broadcast state (an encoded key is never empty)

Manifests = Dict[str, Dict[int, Manifest]]
"""The manifests of the state partitions of every keyed operator (by uid, then partition) as of a batch."""


KEYED_CHUNK_ROWS = 10_000
"""A keyed task hands its output rows on whenever it holds this many, as the route does (``chain.ROUTE_CHUNK_ROWS``)."""

KEYED_INPUT_COLUMNS = ("kind", "key", "value", "ts")
"""The stage row columns a keyed task reads of its records, besides ``ord`` and their typed columns."""


class OutOfOrderInputError(FlinkishError, RuntimeError):
    """A keyed task's input did not arrive in processing order (``ord``): the keyed stage's plan lost the order
    :func:`in_processing_order` gives it. The task stops rather than process its records in another order."""


def in_processing_order(rows: Any, one_task: bool = False) -> Any:
    """``rows`` (the stage rows of one keyed level, a Spark DataFrame) arranged for the keyed stage: hash-partitioned
    by group (``dest``, ``sp``) and sorted within each partition by group, then by ``ord`` (rows without one, the
    ``stats`` and heartbeat rows, first). ``groupBy("dest", "sp")`` keeps that order (its required clustering and
    ordering are met, so Spark adds no exchange and no sort of its own) and the group's iterator of frames delivers
    the rows so: a keyed task reads its input in Flink's processing order, chunk by chunk, and sorts nothing.

    ``one_task`` (a small batch): all groups in one partition, coalesced without a shuffle instead of hash-partitioned
    (one partition meets any clustering), so that what computes ``rows`` (the route), the keyed groups, one after
    the other, and the collect run in one task of one Spark stage: no shuffle, hence no job of adaptive execution's
    for one."""
    spread = rows.coalesce(1) if one_task else rows.repartition("dest", "sp")
    return spread.sortWithinPartitions("dest", "sp", rows["ord"].asc_nulls_first())


class KeyedInput:
    """One keyed group's input of a batch (its operator's state partition), read once as the group's frames
    arrive (:func:`in_processing_order`): the route's ``stats`` rows, the keys its records touch, how many crossed as
    columns, and its ``rec``/``wm`` rows spilled chunk by chunk to a local temporary file (the executor's Spark local
    directory), which :meth:`chunks` reads back in order. The task so holds one chunk of its input, not all of it: the
    state it loads needs every key the batch touches before the first record is processed, and a batch's watermarks
    need every ``stats`` row.

    Raises :class:`OutOfOrderInputError` when a record's ``ord`` is below the one before it."""

    def __init__(self, plan: ExecPlan, frames: Iterable[Any]) -> None:
        frames = iter(frames)
        first = next(frames)  # Spark calls a group's function only for a group with rows
        self.dest, self.sp = int(first["dest"].iloc[0]), int(first["sp"].iloc[0])
        node = plan.nodes[self.dest]
        key_layout = plan.key_columns.get(self.dest)
        typed = [layout for layout in (plan.record_columns.get(self.dest), key_layout) if layout is not None]
        self.columns = [*KEYED_INPUT_COLUMNS, *(c for layout in typed for c in layout.columns)]
        self.stats: List[bytes] = []
        """The route tasks' ``stats`` rows (the one-pass path)."""
        self.keys: Set[bytes] = set()
        """The encoded keys of the group's records (a broadcast element has none)."""
        self.received = 0
        self.crossed = {"numRecordsInAsColumns": 0, "numKeysInAsColumns": 0}
        self._file: Any = tempfile.TemporaryFile(dir=_local_dir())
        self._last: Optional[List[int]] = None
        try:
            for pdf in chain([first], frames):
                self._read(pdf, key_layout, node.key_type)
        except BaseException:
            self._file.close()
            raise

    def _read(self, pdf: Any, key_layout: Any, key_type: Any) -> None:
        kinds = pdf["kind"].tolist()
        self.stats.extend(bytes(v) for kind, v in zip(kinds, pdf["value"].tolist()) if kind == "stats")
        wanted = [i for i, kind in enumerate(kinds) if kind in ("rec", "wm")]
        if not wanted:
            return
        rows = pdf.iloc[wanted] if len(wanted) < len(kinds) else pdf
        orders = [o.tolist() if hasattr(o, "tolist") else [int(x) for x in o] for o in rows["ord"].tolist()]
        self._check_order(orders)
        keys = frame_keys(rows, key_layout, key_type)
        kinds = rows["kind"].tolist()
        self.keys.update(kb for kind, (kb, _) in zip(kinds, keys) if kind == "rec" and kb)
        self.received += sum(1 for kind in kinds if kind == "rec")
        self.crossed["numRecordsInAsColumns"] += sum(
            1 for kind, v in zip(kinds, rows["value"].tolist()) if kind == "rec" and v is None
        )
        self.crossed["numKeysInAsColumns"] += sum(1 for _, key in keys if key is not None)
        pickle.dump((orders, {c: rows[c].tolist() for c in self.columns}), self._file, protocol=pickle.HIGHEST_PROTOCOL)

    def _check_order(self, orders: List[List[int]]) -> None:
        previous = self._last
        for order in orders:
            if previous is not None and order < previous:
                msg = (
                    f"keyed task ({self.dest}, {self.sp}): its input arrived out of processing order "
                    f"(ord {order} after {previous}); the keyed stage's plan must keep in_processing_order's sort"
                )
                raise OutOfOrderInputError(msg)
            previous = order
        self._last = previous

    def chunks(self) -> Iterator[Tuple[List[List[int]], Any]]:
        """The spilled ``rec``/``wm`` rows in processing order, chunk by chunk: each chunk's ``ord``s (as lists) and
        a frame of :attr:`columns` (object columns holding the values Spark's conversion gave), closing the file
        at the end."""
        import pandas as pd

        f, self._file = self._file, None
        if f is None:
            return
        with f:
            f.seek(0)
            while True:
                try:
                    orders, columns = pickle.load(f)
                except EOFError:
                    return
                yield orders, pd.DataFrame({c: pd.Series(v, dtype=object) for c, v in columns.items()})


def _local_dir() -> Optional[str]:
    """The first of Spark's local directories, which Spark gives its Python workers (``SPARK_LOCAL_DIRS``); else
    the system's temporary directory."""
    return os.environ.get("SPARK_LOCAL_DIRS", "").split(",")[0] or None


def _timestamp(t: Any) -> Optional[int]:
    return None if t is None or t != t else int(t)


def store_metrics(
    metrics: Dict[str, Any], store: PartitionStore, manifest: Manifest, windows: bool, keys_offset: int = 0
) -> Dict[str, Any]:
    """Add the partition's state gauges (keys, open windows, bytes: the totals of its whole state, not only of the
    keys loaded), its new manifest (``stateManifest``, for the driver), whether its cache was rebuilt and whether the batch ran on
    the partition's files instead of the cache."""
    metrics["numKeys"] = manifest["keys"] - keys_offset
    metrics["openWindows"] = manifest["windows"] if windows else None
    metrics["stateSizeBytes"] = manifest["bytes"]
    metrics["numKeysLoaded"] = len(store.loaded)
    metrics["stateBytesWritten"] = store.bytes_written
    metrics["stateCacheRebuilds"] = int(store.rebuilt)
    metrics["stateServedFromFiles"] = int(store.files is not None)
    metrics["stateManifest"] = manifest
    metrics["statePartition"] = store.sp
    metrics["nextProcessingTimer"] = store.next_processing_timer
    return metrics


def run_keyed_partition(
    plan: ExecPlan,
    group: KeyedInput,
    watermarks_prev: Dict[int, int],
    watermarks_new: Dict[int, int],
    now: int,
    partitions: int,
    state_root: str,
    batch_id: int,
    manifests: Manifests,
) -> Iterator[Any]:
    """The body for one (keyed operator, state partition): load, process, fire, write, over ``group`` (its input
    read once, :class:`KeyedInput`); yields its output frames every :data:`KEYED_CHUNK_ROWS` rows, the last one
    ending with the partition's ``metric`` row. Its Spark task runs it inside :func:`reported_steps`."""
    started = time.perf_counter()
    storage.configure(plan.storage_options)
    index, sp = group.dest, group.sp
    node = plan.nodes[index]
    runner = ChainRunner(plan, watermarks_prev, now, partitions)
    op: KeyedOperator = node.factory()  # type: ignore[assignment,misc]
    out = KeyedOutput(runner, index, op, sp)
    op.open(out, FixedClock(now))
    store = PartitionStore(state_root, node.uid, sp, manifests.get(node.uid, {}).get(sp))
    layout = plan.record_columns.get(index)  # its records may cross as columns (``spark/record_columns.py``)
    if node.batched:
        wm_prev, wm_new = watermarks_prev[index], watermarks_new[index]
        metrics = yield from _run_batched(plan, op, out, group, wm_prev, wm_new, now, store, batch_id)
        metrics.update(group.crossed)
        runner.finish()
        yield row_frame([*runner.output_rows(), metric_row(index, sp, metrics)], plan.typed_columns())
        return
    broadcast = hasattr(op, "snapshot_broadcast_state")
    wanted = sorted(group.keys) + ([OPERATOR_STATE_KEY] if broadcast else [])
    for key_bytes, state in store.load(wanted, watermarks_new[index], now).items():
        snapshot = decode_snapshot(state.rows[0][1])
        if broadcast and key_bytes == OPERATOR_STATE_KEY:
            op.restore_broadcast_state(snapshot)  # type: ignore[attr-defined]
        else:
            op.restore_key(decode_key(key_bytes), snapshot)
    op.restore_watermark(watermarks_prev[index])
    if broadcast:
        if sp != 0:  # partition 0 sends what process_broadcast_element emits, once per parallel instance
            op.broadcast_copies = 0  # type: ignore[attr-defined]

    # records, and the watermarks a custom generator emitted within the batch (``spark/generators.py``), in order:
    # the processing-time timers due at ``now`` fire after the records ordered before them (``ord[0] == 0``)
    fired = False
    for orders, pdf in group.chunks():
        for order, kind, value, t in zip(orders, pdf["kind"].tolist(), frame_values(pdf, layout), pdf["ts"].tolist()):
            if not fired and order[0] != 0:
                out.phase, fired = 0, True
                op.advance_processing_time(now)
            out.base, out.n, out.phase = order, 0, None
            ts = _timestamp(t)
            if kind == "wm":
                if ts > op.current_watermark:  # type: ignore[operator]
                    op.process_watermark(ts)  # type: ignore[arg-type]  # timers' outputs ordered here
                    runner.forward_watermark(index, ts, mid_batch_order(order))  # type: ignore[arg-type]
            elif node.two_input:
                channel, element = value
                op.process_input(channel, StreamRecord(element, ts))  # type: ignore[attr-defined]
            else:
                op.process_element(StreamRecord(value, ts))
            if len(runner.rows) >= KEYED_CHUNK_ROWS:
                yield _taken_frame(runner)
    if not fired:
        out.phase = 0
        op.advance_processing_time(now)
    out.phase = 2
    if watermarks_new[index] > op.current_watermark:
        op.process_watermark(watermarks_new[index])
    op.close()
    runner.finish()

    windows = hasattr(op, "open_windows")
    states: Dict[bytes, Optional[KeyState]] = dict.fromkeys(store.loaded)
    for key in op.active_keys():
        snap = op.snapshot_key(key)  # drops expired TTL entries first
        if snap is not None:
            event_due, proc_due, ttl_due = op.due_times(key)
            count = op.open_windows([key]) if windows else None  # type: ignore[attr-defined]
            states[encode_key(key)] = KeyState(((None, encode_snapshot(snap)),), event_due, proc_due, ttl_due, count)
    if broadcast:
        snap = encode_snapshot(op.snapshot_broadcast_state())  # type: ignore[attr-defined]
        states[OPERATOR_STATE_KEY] = KeyState(((None, snap),), None, None, None, None)
    manifest = store.commit(batch_id, states)
    metrics = partition_metrics(op, group.received, out.emitted, started)
    metrics = store_metrics(metrics, store, manifest, windows, 1 if broadcast else 0)
    metrics.update(group.crossed)
    yield row_frame([*runner.output_rows(), metric_row(index, sp, metrics)], plan.typed_columns())


def _taken_frame(runner: ChainRunner) -> Any:
    """The output rows ``runner`` holds now, as a frame (taken from it; its ``count`` rows come at the end)."""
    rows, runner.rows = runner.rows, []
    return row_frame(rows, runner.plan.typed_columns())


def _run_batched(
    plan: ExecPlan,
    op: Any,
    out: KeyedOutput,
    group: KeyedInput,
    wm_prev: int,
    wm_new: int,
    now: int,
    store: PartitionStore,
    batch_id: int,
) -> Iterator[Any]:
    """The keyed stage of a window that :class:`BatchWindowOperator` runs: one accumulator per (key, window)
    in the store instead of keyed snapshots. Yields output frames as :func:`run_keyed_partition` does; returns the
    partition's metrics."""
    started = time.perf_counter()
    batch = restore_window_table(op, store, sorted(group.keys), wm_prev, wm_new, now)
    layout, key_layout = plan.record_columns.get(out.index), plan.key_columns.get(out.index)
    key_type = plan.nodes[out.index].key_type
    decoded: Dict[bytes, Any] = {}
    for orders, pdf in group.chunks():
        keys = frame_keys(pdf, key_layout, key_type)
        for order, kind, (kb, rebuilt), value, t in zip(
            orders, pdf["kind"].tolist(), keys, frame_values(pdf, layout), pdf["ts"].tolist()
        ):
            out.base, out.n, out.phase = order, 0, None
            ts = _timestamp(t)
            if kind == "wm":  # a custom generator's mid-batch watermark (``spark/generators.py``)
                if ts > op.current_watermark:
                    batch.advance_watermark(ts)  # type: ignore[arg-type]
                    out.runner.forward_watermark(out.index, ts, mid_batch_order(order))  # type: ignore[arg-type]
                continue
            key = decoded.get(kb)  # type: ignore[arg-type]
            if key is None:  # a key that crossed as columns is the one its bytes decode to
                key = decoded[kb] = decode_key(kb) if rebuilt is None else rebuilt  # type: ignore[index,arg-type]
            batch.process_element(key, value, ts)
            if len(out.runner.rows) >= KEYED_CHUNK_ROWS:
                yield _taken_frame(out.runner)
    out.phase = 2
    batch.advance_watermark(wm_new)
    op.close()
    manifest = save_window_table(batch, store, batch_id)
    return store_metrics(partition_metrics(op, group.received, out.emitted, started), store, manifest, True)


def restore_window_table(
    op: Any, store: PartitionStore, keys: List[bytes], wm_prev: int, wm_new: int, now: int
) -> BatchWindowOperator:
    """A :class:`BatchWindowOperator` around the opened ``op`` with the windows and keyed state of ``keys`` and of
    the keys due at ``wm_new`` / ``now`` in one state partition (``store``), and the operator's watermark
    ``wm_prev``."""
    batch = BatchWindowOperator(op)
    table, keyed = [], []
    for kb, state in store.load(keys, wm_new, now).items():
        key = decode_key(kb)
        for start, value in state.rows:
            if start is None:  # the keyed state the window and user functions keep themselves
                keyed.append((key, decode_snapshot(value)))
            else:
                table.append((key, start, decode_value(json.loads(value))))
    batch.restore(table, wm_prev, keyed)
    return batch


def save_window_table(batch: BatchWindowOperator, store: PartitionStore, version: int) -> Manifest:
    """Write the windows and keyed state of the keys the batch loaded or created as state ``version``; returns the
    partition's new manifest."""
    op = batch.op
    by_key = batch.windows_by_key()
    keyed = dict(batch.snapshot_keyed())
    states: Dict[bytes, Optional[KeyState]] = dict.fromkeys(store.loaded)
    for key in {**by_key, **keyed}:
        rows: List[Tuple[Optional[int], bytes]] = []
        event_due, proc_due, ttl_due = op.due_times(key) if key in keyed else (None, None, None)
        if key in keyed:
            rows.append((None, encode_snapshot(keyed[key])))
        windows = sorted(by_key.get(key, ()), key=lambda w: w[0])
        for start, acc in windows:
            rows.append((start, json.dumps(encode_value(acc), separators=(",", ":")).encode()))
            pending = batch.pending_timer(start)
            if pending is not None and (event_due is None or pending < event_due):
                event_due = pending
        states[encode_key(key)] = KeyState(tuple(rows), event_due, proc_due, ttl_due, len(windows))
    return store.commit(version, states)


def keyed_level_function(
    plan: ExecPlan,
    wm_prev: Dict[int, int],
    wm_new: Dict[int, int],
    now: int,
    parts: int,
    state_root: str,
    batch_id: int,
    manifests: Manifests,
    advance: Optional[WatermarkAdvance] = None,
    reporter: Optional[Tuple[int, int]] = None,
) -> Callable[[Any], Iterator[Any]]:
    """The function of one batch's keyed level for ``applyInPandas`` in its iterator form (typed so: pyspark picks
    the form from the type hints), with its arguments bound now (not by loop reference): it takes a group's frames
    in processing order (:func:`in_processing_order`) and yields its output frames.

    On the one-pass path (``advance`` given, ``wm_new`` unused) each group computes the batch's new watermarks from
    the route tasks' ``stats`` rows it received (every group receives all of them), and the group ``reporter``
    (``(dest, sp)``) passes those rows on to the driver, which runs the same advance on them."""
    import pandas as pd

    def keyed(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        first = next(frames)  # Spark calls it only for a group with rows
        dest, sp = int(first["dest"].iloc[0]), int(first["sp"].iloc[0])
        pending: List[Any] = []
        stats: List[bytes] = []

        def steps() -> Iterator[bool]:
            group = KeyedInput(plan, chain([first], frames))
            stats.extend(group.stats)
            watermarks = wm_new if advance is None else advance.run(sorted_stats(group.stats)).watermarks
            for frame in run_keyed_partition(plan, group, wm_prev, watermarks, now, parts, state_root, batch_id, manifests):
                pending.append(frame)
                yield True

        for _ in reported_steps(steps(), plan.nodes[dest]):
            yield pending.pop()
        if advance is not None and (dest, sp) == reporter and stats:
            yield row_frame([{"kind": "stats", "dest": dest, "sp": sp, "value": b} for b in stats], plan.typed_columns())

    keyed.__annotations__ = {"frames": Iterator[pd.DataFrame], "return": Iterator[pd.DataFrame]}  # the iterator form
    return keyed


__all__ = [
    "KEYED_CHUNK_ROWS",
    "KeyedInput",
    "Manifests",
    "OPERATOR_STATE_KEY",
    "OutOfOrderInputError",
    "in_processing_order",
    "keyed_level_function",
    "run_keyed_partition",
    "restore_window_table",
    "save_window_table",
    "store_metrics",
]
