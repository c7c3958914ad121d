"""The keyed stage of the foreachBatch executor: one ``applyInPandas`` call per (keyed operator, state partition)
restores the partition's keyed state, processes its records in Flink's order, fires timers and writes the new
state version (:mod:`.state_store`).
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
from . import state_store
from .chain import ChainRunner, FixedClock, KeyedOutput
from .error_transport import reported_to_driver
from .keys import decode_key, encode_key
from .plan import ExecPlan
from .rows import loads, metric_row, row_frame


def run_keyed_partition(
    plan: ExecPlan,
    pdf: Any,
    watermarks_prev: Dict[int, int],
    watermarks_new: Dict[int, int],
    now: int,
    partitions: int,
    state_root: str,
    batch_id: int,
    prev_version: int,
) -> Any:
    """``applyInPandas`` body for one (keyed operator, state partition): restore, process, fire, snapshot; the
    output ends with the partition's ``metric`` row. Its Spark task runs it inside :func:`reported_to_driver`."""
    started = time.perf_counter()
    index = int(pdf["dest"].iloc[0])
    sp = int(pdf["sp"].iloc[0])
    node = plan.nodes[index]
    runner = ChainRunner(plan, watermarks_prev, now, partitions)
    op: KeyedOperator = node.factory()  # type: ignore[assignment,misc]
    out = KeyedOutput(runner, index, op, sp)
    op.open(out, FixedClock(now))
    if node.batched:
        wm_prev, wm_new = watermarks_prev[index], watermarks_new[index]
        metrics = _run_batched(op, out, pdf, wm_prev, wm_new, state_root, node.uid, sp, batch_id, prev_version)
        runner.finish()
        return row_frame([*runner.rows, metric_row(index, sp, metrics)])
    for key_bytes, snapshot in state_store.read(state_root, node.uid, sp, prev_version):
        op.restore_key(decode_key(key_bytes), decode_snapshot(snapshot))
    op.restore_watermark(watermarks_prev[index])

    records = [
        ([int(x) for x in o], v, None if t is None or t != t else int(t))
        for kind, o, v, t in zip(pdf["kind"], pdf["ord"], pdf["value"], pdf["ts"])
        if kind == "rec"
    ]
    records.sort(key=lambda r: r[0])
    early = [r for r in records if r[0][0] == 0]
    late = [r for r in records if r[0][0] != 0]

    def process(batch: List[Tuple[List[int], bytes, Optional[int]]]) -> None:
        for order, value, ts in batch:
            out.base, out.n, out.phase = order, 0, None
            op.process_element(StreamRecord(loads(value), ts))

    process(early)
    out.phase = 0
    op.advance_processing_time(now)
    process(late)
    out.phase = 2
    if watermarks_new[index] > watermarks_prev[index]:
        op.process_watermark(watermarks_new[index])
    op.close()
    runner.finish()

    rows = []
    for key in op.active_keys():
        snap = op.snapshot_key(key)
        if snap is not None:
            rows.append((encode_key(key), encode_snapshot(snap)))
    rows.sort()
    path = state_store.write(state_root, node.uid, sp, batch_id, rows)
    windows = op.open_windows() if hasattr(op, "open_windows") else None
    metrics = partition_metrics(op, len(records), out.emitted, path, started, windows, len(rows))
    return row_frame([*runner.rows, metric_row(index, sp, metrics)])


def _run_batched(
    op: Any,
    out: KeyedOutput,
    pdf: Any,
    wm_prev: int,
    wm_new: int,
    state_root: str,
    uid: str,
    sp: int,
    batch_id: int,
    prev_version: int,
) -> Dict[str, Any]:
    """The keyed stage of a window that :class:`BatchWindowOperator` runs: one accumulator per (key, window)
    in a ``windows`` state file instead of keyed snapshots. Returns the partition's metrics."""
    started = time.perf_counter()
    batch = restore_window_table(op, state_root, uid, sp, prev_version, wm_prev)
    records = sorted(
        (
            ([int(x) for x in o], k, v, None if t is None or t != t else int(t))
            for kind, o, k, v, t in zip(pdf["kind"], pdf["ord"], pdf["key"], pdf["value"], pdf["ts"])
            if kind == "rec"
        ),
        key=lambda r: r[0],
    )
    keys: Dict[bytes, Any] = {}
    for order, kb, value, ts in records:
        out.base, out.n, out.phase = order, 0, None
        key = keys.get(kb)
        if key is None:
            key = keys[kb] = decode_key(kb)
        batch.process_element(key, loads(value), ts)
    out.phase = 2
    batch.advance_watermark(wm_new)
    op.close()
    path = save_window_table(batch, state_root, uid, sp, batch_id)
    return partition_metrics(
        op, len(records), out.emitted, path, started, batch.open_windows(), batch.num_keys()
    )


def restore_window_table(
    op: Any, state_root: str, uid: str, sp: int, version: int, watermark: int
) -> BatchWindowOperator:
    """A :class:`BatchWindowOperator` around the opened ``op`` with one state partition's window table and keyed
    state at ``version`` (see ``state_store.read_windows``) and the operator's watermark."""
    batch = BatchWindowOperator(op)
    table, keyed = [], []
    for k, s, a in state_store.read_windows(state_root, uid, sp, version):
        if s is None:  # the keyed state the window and user functions keep themselves
            keyed.append((decode_key(k), decode_snapshot(a)))
        else:
            table.append((decode_key(k), s, decode_value(json.loads(a))))
    batch.restore(table, watermark, keyed)
    return batch


def save_window_table(batch: BatchWindowOperator, state_root: str, uid: str, sp: int, version: int) -> str:
    """Write the partition's window table and keyed state as ``version``, rows sorted (a replayed batch writes the
    same file); returns the file's path."""
    rows = sorted(
        (encode_key(k), s, json.dumps(encode_value(a), separators=(",", ":")).encode()) for k, s, a in batch.snapshot()
    )
    keyed = sorted((encode_key(k), encode_snapshot(snap)) for k, snap in batch.snapshot_keyed())
    return state_store.write_windows(state_root, uid, sp, version, [(k, None, snap) for k, snap in keyed] + rows)


def keyed_level_function(
    plan: ExecPlan,
    wm_prev: Dict[int, int],
    wm_new: Dict[int, int],
    now: int,
    parts: int,
    state_root: str,
    batch_id: int,
    prev_version: int,
) -> Callable[[Any], Any]:
    """The applyInPandas function of one batch's keyed level, with its arguments bound now (not by loop reference)."""

    def keyed(pdf):  # type: ignore[no-untyped-def]
        with reported_to_driver(plan.nodes[int(pdf["dest"].iloc[0])]):
            return run_keyed_partition(plan, pdf, wm_prev, wm_new, now, parts, state_root, batch_id, prev_version)

    return keyed


__all__ = [
    "keyed_level_function",
    "run_keyed_partition",
    "restore_window_table",
    "save_window_table",
]
