"""The keyed stage of the foreachBatch executor: one ``applyInPandas`` call per (keyed operator, state partition)
loads the keys of the partition that the batch needs (the keys its records touch and those with a timer or TTL
expiry due, :class:`~.state_store.PartitionStore`), processes its records in Flink's order, fires timers and writes
the keys whose state changed; its ``metric`` row carries the partition's new manifest to the driver.

A broadcast operator (``KeyedBroadcastProcessOperator``) keeps its broadcast state in the same store, as the key
:data:`OPERATOR_STATE_KEY` (no encoded key is empty), loaded in every batch: every state partition is one instance
of the operator, gets every broadcast element and writes its copy with its keyed state, so a replayed batch
restores and rewrites both together (exactly once). Only state partition 0 emits what
``process_broadcast_element`` returns, once per parallel instance of the operator (``core/co_operators.py``): the
state partitions are not Flink's parallel instances (``core/subtasks.py``).
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..core.batch_window import BatchWindowOperator
from ..core.codec import decode_snapshot, decode_value, encode_snapshot, encode_value
from ..core.operators import KeyedOperator
from ..core.records import StreamRecord
from ..monitoring import partition_metrics
from . import storage
from .chain import ChainRunner, FixedClock, KeyedOutput
from .error_transport import reported_to_driver
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


def _record_keys(pdf: Any, keys: List[Tuple[Optional[bytes], Any]]) -> List[bytes]:
    """The encoded keys of the partition's records (``keys``: :func:`~.record_columns.frame_keys` of ``pdf``; a
    broadcast element has none: ``keys.NO_KEY``)."""
    return [kb for kind, (kb, _) in zip(pdf["kind"], keys) if kind == "rec" and kb]


def _crossed_as_columns(pdf: Any, keys: List[Tuple[Optional[bytes], Any]]) -> Dict[str, int]:
    """How many of the partition's records crossed into it as typed columns rather than pickled
    (``numRecordsInAsColumns``), and how many keys rather than as their bytes (``numKeysInAsColumns``)."""
    records = sum(1 for kind, v in zip(pdf["kind"], pdf["value"]) if kind == "rec" and v is None)
    return {"numRecordsInAsColumns": records, "numKeysInAsColumns": sum(1 for _, key in keys if key is not None)}


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
    pdf: Any,
    watermarks_prev: Dict[int, int],
    watermarks_new: Dict[int, int],
    now: int,
    partitions: int,
    state_root: str,
    batch_id: int,
    manifests: Manifests,
) -> Any:
    """``applyInPandas`` body for one (keyed operator, state partition): load, process, fire, write; the output
    ends with the partition's ``metric`` row. Its Spark task runs it inside :func:`reported_to_driver`."""
    started = time.perf_counter()
    storage.configure(plan.storage_options)
    index = int(pdf["dest"].iloc[0])
    sp = int(pdf["sp"].iloc[0])
    node = plan.nodes[index]
    runner = ChainRunner(plan, watermarks_prev, now, partitions)
    op: KeyedOperator = node.factory()  # type: ignore[assignment,misc]
    out = KeyedOutput(runner, index, op, sp)
    op.open(out, FixedClock(now))
    store = PartitionStore(state_root, node.uid, sp, manifests.get(node.uid, {}).get(sp))
    layout = plan.record_columns.get(index)  # its records may cross as columns (``spark/record_columns.py``)
    keys = frame_keys(pdf, plan.key_columns.get(index), node.key_type)  # and its keys
    if node.batched:
        wm_prev, wm_new = watermarks_prev[index], watermarks_new[index]
        elements = frame_values(pdf, layout)
        metrics = _run_batched(op, out, pdf, elements, keys, wm_prev, wm_new, now, store, batch_id)
        metrics.update(_crossed_as_columns(pdf, keys))
        runner.finish()
        return row_frame([*runner.output_rows(), metric_row(index, sp, metrics)], plan.typed_columns())
    broadcast = hasattr(op, "snapshot_broadcast_state")
    wanted = _record_keys(pdf, keys) + ([OPERATOR_STATE_KEY] if broadcast else [])
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

    # records, and the watermarks a custom generator emitted within the batch (``spark/generators.py``), in order
    records = [
        ([int(x) for x in o], kind, v, None if t is None or t != t else int(t))
        for kind, o, v, t in zip(pdf["kind"], pdf["ord"], frame_values(pdf, layout), pdf["ts"])
        if kind in ("rec", "wm")
    ]
    records.sort(key=lambda r: r[0])
    early = [r for r in records if r[0][0] == 0]
    late = [r for r in records if r[0][0] != 0]

    def process(batch: List[Tuple[List[int], str, Any, Optional[int]]]) -> None:
        for order, kind, value, ts in batch:
            out.base, out.n, out.phase = order, 0, None
            if kind == "wm":
                if ts > op.current_watermark:  # type: ignore[operator]
                    op.process_watermark(ts)  # type: ignore[arg-type]  # timers' outputs ordered here
                    runner.forward_watermark(index, ts, mid_batch_order(order))  # type: ignore[arg-type]
            elif node.two_input:
                channel, element = value
                op.process_input(channel, StreamRecord(element, ts))  # type: ignore[attr-defined]
            else:
                op.process_element(StreamRecord(value, ts))

    process(early)
    out.phase = 0
    op.advance_processing_time(now)
    process(late)
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
    received = sum(1 for r in records if r[1] == "rec")
    metrics = partition_metrics(op, received, out.emitted, started)
    metrics = store_metrics(metrics, store, manifest, windows, 1 if broadcast else 0)
    metrics.update(_crossed_as_columns(pdf, keys))
    return row_frame([*runner.output_rows(), metric_row(index, sp, metrics)], plan.typed_columns())


def _run_batched(
    op: Any,
    out: KeyedOutput,
    pdf: Any,
    elements: List[Any],
    keys: List[Tuple[Optional[bytes], Any]],
    wm_prev: int,
    wm_new: int,
    now: int,
    store: PartitionStore,
    batch_id: int,
) -> Dict[str, Any]:
    """The keyed stage of a window that :class:`BatchWindowOperator` runs: one accumulator per (key, window)
    in the store instead of keyed snapshots (``elements``: the element of each ``rec`` row of ``pdf``; ``keys``:
    their keys, :func:`~.record_columns.frame_keys`). Returns the partition's metrics."""
    started = time.perf_counter()
    batch = restore_window_table(op, store, _record_keys(pdf, keys), wm_prev, wm_new, now)
    records = sorted(
        (
            ([int(x) for x in o], kind, k, v, None if t is None or t != t else int(t))
            for kind, o, k, v, t in zip(pdf["kind"], pdf["ord"], keys, elements, pdf["ts"])
            if kind in ("rec", "wm")
        ),
        key=lambda r: r[0],
    )
    decoded: Dict[bytes, Any] = {}
    received = 0
    for order, kind, (kb, rebuilt), value, ts in records:
        out.base, out.n, out.phase = order, 0, None
        if kind == "wm":  # a custom generator's mid-batch watermark (``spark/generators.py``)
            if ts > op.current_watermark:
                batch.advance_watermark(ts)
                out.runner.forward_watermark(out.index, ts, mid_batch_order(order))
            continue
        received += 1
        key = decoded.get(kb)  # type: ignore[arg-type]
        if key is None:  # a key that crossed as columns is the one its bytes decode to
            key = decoded[kb] = decode_key(kb) if rebuilt is None else rebuilt  # type: ignore[index]
        batch.process_element(key, value, ts)
    out.phase = 2
    batch.advance_watermark(wm_new)
    op.close()
    manifest = save_window_table(batch, store, batch_id)
    return store_metrics(partition_metrics(op, received, out.emitted, started), store, manifest, True)


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
) -> Callable[[Any], Any]:
    """The applyInPandas function of one batch's keyed level, with its arguments bound now (not by loop reference).

    On the one-pass path (``advance`` given, ``wm_new`` unused) each group computes the batch's new watermarks from
    the route tasks' ``stats`` rows it received (every group receives all of them), and the group ``reporter``
    (``(dest, sp)``) passes those rows on to the driver, which runs the same advance on them."""

    def keyed(pdf):  # type: ignore[no-untyped-def]
        dest, sp = int(pdf["dest"].iloc[0]), int(pdf["sp"].iloc[0])
        with reported_to_driver(plan.nodes[dest]):
            if advance is None:
                return run_keyed_partition(plan, pdf, wm_prev, wm_new, now, parts, state_root, batch_id, manifests)
            import pandas as pd

            blobs = [bytes(v) for kind, v in zip(pdf["kind"], pdf["value"]) if kind == "stats"]
            watermarks = advance.run(sorted_stats(blobs)).watermarks
            out = run_keyed_partition(plan, pdf, wm_prev, watermarks, now, parts, state_root, batch_id, manifests)
            if (dest, sp) != reporter or not blobs:
                return out
            passed = row_frame([{"kind": "stats", "dest": dest, "sp": sp, "value": b} for b in blobs], plan.typed_columns())
            return pd.concat([out, passed], ignore_index=True)

    return keyed


__all__ = [
    "Manifests",
    "OPERATOR_STATE_KEY",
    "keyed_level_function",
    "run_keyed_partition",
    "restore_window_table",
    "save_window_table",
    "store_metrics",
]
