"""Savepoints of the foreachBatch executor: Flink's stop-with-savepoint and restore, with rescaling.

A savepoint is a self-contained copy of a stopped job's keyed state and source positions, under a directory of its
own (on any store ``spark/storage.py`` reaches)::

    <directory>/savepoint-<query id, 6 hex>-<12 hex>/
        op=<operator uid>/sp=<state partition, 5 digits>/s=<batch>-<token>.parquet   one full snapshot per partition
        _metadata.json                                                              written last

The state files are full snapshots (``state_store.write_snapshot``: the columns of ``state_cache.FILE_SCHEMA``, no
deletions), so the savepoint names no file of the checkpoint it was taken from, which may then be deleted.
``_metadata.json`` (:data:`SAVEPOINT_FORMAT`) holds the state's manifests in the layout of a driver document
(``{uid: {"layout", "partitions": {sp: manifest}}}``, so ``read_state`` reads a savepoint as it reads a checkpoint),
the operators' state signatures, the settings that shape the state (state partitions, vectorize, and ``hashed``: the
window on Spark's columnar path, placed by Spark's hash of its key columns, :class:`HashedKeys`) and each source's
position: Kafka's next offsets from Spark's offsets log of the last committed batch, a ``MicroBatchSource``'s next
micro-batch, a file stream's or Delta source's entries of Spark's logs (``spark/source_logs.py``, copied under
``spark-sources/<i>/``). It is written last: a directory without it is an unfinished savepoint and is refused.

Restoring (``execute(..., from_savepoint=...)``) fills a **new** checkpoint location before its query starts: the
signatures are compared with the job's (an incompatible operator is refused, naming it and the change; state of an
operator the job no longer has is refused unless ``allow_non_restored_state``), every row is assigned to its state
partition among the job's ``state_partitions`` by the same rule the route uses (``crc32(key) % partitions``,
``keys.state_partition``; an operator's broadcast state, the empty key, is the same in every partition, and one copy
of it goes to every partition; a window on Spark's columnar path by Spark's hash of its key columns,
:class:`HashedKeys`), in one Spark job whose tasks read each of the savepoint's files once: one task per old
partition writes into each new partition the piece of its rows placed there (:func:`split_pieces`), and a new
partition is made up of its pieces (``state_store.join_pieces``: disjoint keys, together its snapshot; the state never
passes through the driver). Into as many state partitions as the savepoint
has, an operator placed by the same rule as in the job it was taken of (:func:`placed_alike`) already has each row
in its partition: each partition's snapshot is copied as it is, by one task per partition, no row read. The
manifests go to ``flinkish/driver/restored.json``, which the driver reads as the state before the query's first
batch (batch 0, or 1 when the restore seeds Spark's logs with file streams' or Delta sources' positions as committed
batch 0: ``source_logs.seed``, when the query starts); the checkpoint's ``meta.json`` is written last, so an interrupted
restore is simply done again. As in Flink, timers and state are restored and **watermarks are not** (every operator
starts at ``MIN``, spec section 4.5); processing-time timers that are due fire in the first batch.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any, Callable, Collection, Dict, Iterator, List, Optional, Set, Tuple

from ..core.codec import dump_document, load_document
from ..core.errors import StateError, UnsupportedFeatureError
from ..datastream.plan import Transformation
from ..datastream.sources import MicroBatchSource
from . import state_store, storage
from .checkpoint import committed_batches, meta_path, read_driver_document, read_meta, spark_offsets, write_meta
from .session import spark_path
from .signatures import compare_signatures, state_signature
from .source_logs import SPARK_LOG, carried_leaves, carry, changed, uncarried
from .source_rows import DataFrameSource
from .state_cache import FILE_SCHEMA, latest_rows, live_rows

_log = logging.getLogger("pyspark_flinkish.spark")

SAVEPOINT_FORMAT = "pyspark_flinkish.savepoint"
SAVEPOINT_VERSION = 1
METADATA_FILE = "_metadata.json"
RESTORED_FILE = "restored.json"
"""Under ``<checkpoint>/flinkish/driver``: the state a checkpoint restored from a savepoint starts from."""
RESTORED_FORMAT = "pyspark_flinkish.restored-state"
RESTORED_VERSION = 1
FILE_DDL = "key binary, window_start bigint, value binary, event_due bigint, proc_due bigint, ttl_due bigint, windows int"
_RESULT_DDL = "uid string, sp int, manifest string"


@dataclass(frozen=True)
class HashedKeys:
    """A window on Spark's columnar path (``spark/columnar.py``), whose state partition is Spark's
    ``pmod(xxhash64(key columns), n)`` rather than the route's ``crc32(key bytes) % n``: what a split needs to
    place its rows."""

    uid: str
    types: Tuple[str, ...]
    """The Spark types of the key columns (DDL: ``bigint``, ``int``, ``string``, ``boolean``, ...)."""
    is_tuple: bool
    """Whether the key is a tuple of the columns' values (else the one column's value)."""


def columnar_keys(plan: Any, vectorize: bool) -> Optional[HashedKeys]:
    """The job's window on Spark's columnar path as a split places its state (None without one)."""
    from .columnar import detect

    cw = detect(plan, plan.transformations) if vectorize else None
    if cw is None:
        return None
    schema = plan.transformations[cw.source].source.df.schema
    types = tuple(schema[c].dataType.simpleString() for c in cw.key_columns)
    return HashedKeys(str(plan.nodes[cw.window].uid), types, bool(cw.key_is_tuple))


def hashed_to_dict(hashed: Optional[HashedKeys]) -> Optional[Dict[str, Any]]:
    """``hashed`` as a savepoint's ``_metadata.json`` records it (None: no window on the columnar path)."""
    if hashed is None:
        return None
    return {"uid": hashed.uid, "types": list(hashed.types), "is_tuple": hashed.is_tuple}


def hashed_from_dict(data: Optional[Dict[str, Any]]) -> Optional[HashedKeys]:
    """:func:`hashed_to_dict` read back."""
    if data is None:
        return None
    return HashedKeys(str(data["uid"]), tuple(str(t) for t in data["types"]), bool(data["is_tuple"]))


# ------------------------------------------------------------------------------------------- sources


def _source_uid(plan: Any, t: Transformation) -> str:
    return str(plan.nodes[plan.transformations.index(t)].uid)


def check_sources(plan: Any) -> None:
    """Refuse a savepoint of a job with a source whose position cannot be carried to another checkpoint (Auto
    Loader, a rate or socket stream: ``source_logs.uncarried``); file streams and Delta tables are carried."""
    problems = uncarried(plan)
    if problems:
        msg = (
            f"stop_with_savepoint: {'; '.join(problems)}, so a savepoint could not resume it elsewhere; stop the job "
            "with stop() and restart it from its checkpoint_location, or read the input as a file stream of its "
            "format (spark.readStream.json(...), .parquet(...)), with from_kafka or from_delta"
        )
        raise UnsupportedFeatureError(msg)


def source_positions(plan: Any, checkpoint: str, batch: int, document: Dict[str, Any]) -> Dict[str, Any]:
    """``{source uid: position}`` after committed batch ``batch``: ``{"kind": "kafka", "offsets": {topic:
    {partition: next offset}}}`` from Spark's offsets log, ``{"kind": "replay", "next_batch": n}`` from the driver's
    document (``positions``). File streams and Delta tables: ``source_logs.carry``."""
    out: Dict[str, Any] = {}
    recorded = document.get("positions") or {}
    entries: Optional[List[Any]] = None
    for t in plan.transformations:
        if t.kind != "source":
            continue
        uid = _source_uid(plan, t)
        if isinstance(t.source, MicroBatchSource):
            if uid in recorded:
                out[uid] = {"kind": "replay", "next_batch": int(recorded[uid]["replay_batch"]) + 1}
        elif isinstance(t.source, DataFrameSource) and t.source.restart is not None:
            if entries is None:
                entries = spark_offsets(checkpoint, batch)
            mine = [e for e in entries if t.source.restart.owns(e)]
            if len(mine) != 1:
                msg = (
                    f"source {t.name!r}: {len(mine)} entries of Spark's offsets log of batch {batch} in {checkpoint} "
                    "are its own (expected one); the savepoint cannot record its position"
                )
                raise StateError(msg)
            out[uid] = {"kind": t.source.restart.kind, "offsets": mine[0]}
    return out


# ------------------------------------------------------------------------------------------- taking one


def take_savepoint(
    spark: Any, checkpoint: str, plan: Any, directory: str, query_id: str, columnar: bool = False
) -> str:
    """Write a savepoint of the (stopped) job's last committed batch under ``directory``; returns its path.
    ``columnar``: the job ran a window on Spark's columnar path (its query read that window's source only).

    Raises:
        UnsupportedFeatureError: a source's position cannot be carried (:func:`check_sources`).
        StateError: the checkpoint's files cannot be read, or the savepoint cannot be written (the message names
            the URI and the cause; an unfinished savepoint has no ``_metadata.json`` and is never restored).
    """
    check_sources(plan)
    meta = read_meta(checkpoint)
    partitions = int(meta["state_partitions"])
    state_root = storage.join(checkpoint, "flinkish", "state")
    committed = committed_batches(checkpoint)
    path = storage.join(directory, f"savepoint-{query_id.replace('-', '')[:6]}-{uuid.uuid4().hex[:12]}")
    batch, operators, positions, spark_log = -1, {}, {}, None
    if committed:  # else nothing was committed: the sources start as configured, no state
        batch = committed[-1]
        document = read_driver_document(checkpoint, batch)
        operators = state_store.operators_of(document, state_root, batch, partitions)
        positions = source_positions(plan, checkpoint, batch, document)
        logs = carry(plan, columnar, checkpoint, batch, path)  # file streams, Delta: Spark's log entries
        if logs:
            positions.update(logs["positions"])
            spark_log = logs["spark"]
    state = snapshot_state(spark, state_root, operators, batch, path)
    hashed = columnar_keys(plan, bool(meta["vectorize"])) if columnar else None
    body = {
        "batch": batch,
        "checkpoint": checkpoint,
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z",
        "state_partitions": partitions,
        "vectorize": bool(meta["vectorize"]),
        "hashed": hashed_to_dict(hashed),
        "signatures": meta.get("operators") or {},
        "state": state,
        "positions": positions,
        "spark_offsets": spark_log,
    }
    storage.write_bytes(storage.join(path, METADATA_FILE), dump_document(SAVEPOINT_FORMAT, SAVEPOINT_VERSION, body))
    return path


def snapshot_state(
    spark: Any, state_root: str, operators: Dict[str, Dict[str, Any]], batch: int, path: str
) -> Dict[str, Dict[str, Any]]:
    """Write the live rows of every operator's state partition (``operators``: manifests under ``state_root``) as one
    full snapshot each under ``path`` (one Spark task per partition); returns their manifests."""
    tasks = [
        (uid, int(sp), json.dumps(m))
        for uid, op in operators.items()
        for sp, m in op["partitions"].items()
        if m["files"]
    ]
    state: Dict[str, Dict[str, Any]] = {uid: {"layout": op["layout"], "partitions": {}} for uid, op in operators.items()}

    def copy_partition(uid: str, sp: int, manifest: str) -> Any:
        return state_store.write_snapshot(
            path, uid, sp, batch, live_rows(state_store.manifest_rows(state_root, uid, sp, json.loads(manifest)))
        )

    for uid, sp, written in _write_per_task(spark, tasks, copy_partition):
        state[uid]["partitions"][str(sp)] = written
    return state


# ------------------------------------------------------------------------------------------- reading one


def read_savepoint(path: str) -> Dict[str, Any]:
    """The savepoint's ``_metadata.json``.

    Raises:
        StateError: ``path`` is not a finished savepoint: the message says whether it is an unfinished one (state
            files, no metadata), a directory of savepoints (naming them) or something else.
    """
    metadata = storage.join(path, METADATA_FILE)
    if storage.exists(metadata):
        return load_document(storage.read_bytes(metadata), SAVEPOINT_FORMAT, SAVEPOINT_VERSION, metadata)
    dirs = storage.list_dirs(path) if storage.is_dir(path) else []
    if any(d.startswith("op=") for d in dirs):
        msg = (
            f"{path} is an unfinished savepoint: it has state files but no {METADATA_FILE}, which is written last (the "
            "job or its driver stopped while the savepoint was written); it is never restored: take another savepoint"
        )
    elif any(d.startswith("savepoint-") for d in dirs):
        found = ", ".join(storage.join(path, d) for d in sorted(dirs) if d.startswith("savepoint-"))
        msg = f"{path} is a savepoint directory, not a savepoint: give one of the savepoints in it: {found}"
    else:
        msg = f"{path} is not a savepoint of a pyspark_flinkish job: {metadata} is missing"
    raise StateError(msg)


def restored_state(checkpoint: str) -> Optional[Dict[str, Any]]:
    """What a checkpoint restored from a savepoint starts from (``{"savepoint", "state", "positions"}``), or None."""
    path = storage.join(checkpoint, "flinkish", "driver", RESTORED_FILE)
    if not storage.exists(path):
        return None
    return load_document(storage.read_bytes(path), RESTORED_FORMAT, RESTORED_VERSION, path)


# ------------------------------------------------------------------------------------------- restoring one


def compatibility_problems(
    metadata: Dict[str, Any],
    current: Dict[str, str],
    sources: Dict[str, str],
    allow_non_restored_state: bool,
    source_kinds: Optional[Dict[str, str]] = None,
    leaves: Optional[Dict[str, List[Dict[str, str]]]] = None,
) -> List[str]:
    """Why the savepoint cannot be restored into a job whose keyed operators have the state signatures ``current``
    (uid -> signature) and whose sources are ``sources`` (uid -> name), of kinds ``source_kinds`` (uid -> the kind
    of position it takes: ``"kafka"``, ``"replay"``, ``SPARK_LOG``), those Spark alone keeps reading ``leaves``
    (``source_logs.carried_leaves``): incompatible operators (the change named), and, unless
    ``allow_non_restored_state``, operators and sources of the savepoint the job does not have, and sources whose
    kind, number, formats or paths of streams changed (Flink's source state of a uid belongs to that source)."""
    problems, _ = compare_signatures(metadata.get("signatures") or {}, current)
    if not allow_non_restored_state:
        for uid, position in sorted((metadata.get("positions") or {}).items()):
            if uid not in sources or source_kinds is None:
                continue
            hint = "(restore the source as it was, or pass allow_non_restored_state=True to start it as configured)"
            if source_kinds.get(uid) != position["kind"]:
                problems.append(
                    f"source {uid!r} has a {position['kind']} position in the savepoint but is a "
                    f"{source_kinds.get(uid)} source in this job {hint}"
                )
            elif position["kind"] == SPARK_LOG:
                change = changed(position, (leaves or {}).get(uid, []))
                if change is not None:
                    problems.append(f"source {uid!r} changed: {change} {hint}")
        for uid in sorted(metadata["state"]):
            if uid not in current:
                problems.append(
                    f"operator {uid!r} has state in the savepoint but is not a keyed operator of this job (set the "
                    "uid() it had, or pass allow_non_restored_state=True to drop its state)"
                )
        for uid in sorted(metadata.get("positions") or {}):
            if uid not in sources:
                problems.append(
                    f"source {uid!r} has a position in the savepoint but is not a source of this job (set the uid() "
                    "it had, or pass allow_non_restored_state=True to drop it)"
                )
    return problems


def restore_savepoint(
    spark: Any,
    path: str,
    checkpoint: str,
    sinks: List[Transformation],
    partitions: int,
    allow_non_restored_state: bool = False,
) -> Optional[Dict[str, Any]]:
    """Fill the new ``checkpoint`` with the savepoint's state in ``partitions`` state partitions and start the job's
    Kafka sources at its positions; returns the restored state (None when ``checkpoint`` was already restored from
    this savepoint: a restart after a failure resumes the checkpoint).

    Raises:
        StateError: not a finished savepoint, a checkpoint that already holds a job's state, or an incompatible job
            (every operator and change named).
    """
    from .plan import ExecPlan, keep_state_layouts

    metadata = read_savepoint(path)
    if storage.exists(meta_path(checkpoint)):
        existing = read_meta(checkpoint)
        if existing.get("restored_from") == path:
            _log.info("checkpoint %s was restored from savepoint %s: resuming the checkpoint", checkpoint, path)
            return None
        msg = (
            f"from_savepoint: checkpoint {checkpoint} already holds a job's state; a savepoint is restored into a new "
            "checkpoint_location (or drop from_savepoint to resume this checkpoint)"
        )
        raise StateError(msg)
    if storage.is_dir(storage.join(checkpoint, "spark", "offsets")):
        msg = f"from_savepoint: {checkpoint} holds a Spark query's offsets; give a new checkpoint_location"
        raise StateError(msg)
    vectorize = bool(metadata["vectorize"])
    plan = ExecPlan(sinks, vectorize=vectorize)
    keep_state_layouts(plan, {uid: op["layout"] for uid, op in metadata["state"].items()})
    current = {}
    for node in plan.nodes:
        sig = state_signature(plan.transformations[node.index])
        if sig is not None:
            current[node.uid] = sig
    sources = {_source_uid(plan, t): t.name for t in plan.transformations if t.kind == "source"}
    kinds = {_source_uid(plan, t): _position_kind(t) for t in plan.transformations if t.kind == "source"}
    leaves = carried_leaves(plan) if any(p["kind"] == SPARK_LOG for p in (metadata.get("positions") or {}).values()) else {}
    problems = compatibility_problems(metadata, current, sources, allow_non_restored_state, kinds, leaves)
    if problems:
        msg = f"savepoint {path} does not fit this job: {'; '.join(problems)}"
        raise StateError(msg)
    state = {uid: op for uid, op in metadata["state"].items() if uid in current}
    # a window on Spark's columnar path places its keys by Spark's hash of the key columns, at any number
    hashed = columnar_keys(plan, vectorize)
    copied = placed_alike(metadata, partitions, hashed)  # in their partitions already: copied as they are
    restored = split_state(spark, path, checkpoint, state, partitions, hashed=hashed, copied=copied)
    positions = {
        uid: p
        for uid, p in (metadata.get("positions") or {}).items()
        if uid in sources
        and kinds[uid] == p["kind"]
        and (p["kind"] != SPARK_LOG or changed(p, leaves.get(uid, [])) is None)
    }  # with allow_non_restored_state, a changed source starts as configured
    for t in plan.transformations:  # Kafka: start at the savepoint's offsets (Spark reads them in a new checkpoint)
        position = positions.get(_source_uid(plan, t))
        if position is not None and position["kind"] not in ("replay", SPARK_LOG):
            t.source = replace(t.source, df=t.source.restart.frame_at(position["offsets"]))
    # file streams, Delta: their Spark log entries become the new checkpoint's batch 0 (source_logs.seed), so the
    # restored query's first batch is 1
    seeded = any(p["kind"] == SPARK_LOG for p in positions.values())
    body = {
        "savepoint": path,
        "batch": metadata["batch"],
        "state": restored,
        "positions": positions,
        "spark": metadata.get("spark_offsets"),
        "first_batch": 1 if seeded else 0,
    }
    storage.write_bytes(
        storage.join(checkpoint, "flinkish", "driver", RESTORED_FILE),
        dump_document(RESTORED_FORMAT, RESTORED_VERSION, body),
    )
    _, merged = compare_signatures(metadata.get("signatures") or {}, current)
    signatures = {uid: s for uid, s in merged.items() if uid in current}
    write_meta(
        checkpoint,
        {"state_partitions": partitions, "vectorize": vectorize, "operators": signatures, "restored_from": path},
    )
    return body


def placed_alike(metadata: Dict[str, Any], partitions: int, hashed: Optional[HashedKeys]) -> Set[str]:
    """The operators of the savepoint (``metadata``) whose every row already sits in the state partition a job with
    ``partitions`` partitions and the window ``hashed`` on Spark's columnar path places it in: all of them when the
    savepoint has ``partitions`` partitions, except an operator placed by another rule than in the job the
    savepoint was taken of (the route's ``crc32`` of the key's bytes there and Spark's hash of the key columns here,
    or the reverse, or the hash of other column types). None for a savepoint that does not record its rule
    (written before ``hashed`` was recorded) or has another number of partitions."""
    if int(metadata["state_partitions"]) != partitions or "hashed" not in metadata:
        return set()
    before = hashed_from_dict(metadata["hashed"])

    def rule(uid: str, window: Optional[HashedKeys]) -> Optional[HashedKeys]:
        return window if window is not None and window.uid == uid else None

    return {uid for uid in metadata["state"] if rule(uid, before) == rule(uid, hashed)}


def _position_kind(t: Transformation) -> str:
    """The kind of savepoint position source ``t`` takes."""
    if isinstance(t.source, MicroBatchSource):
        return "replay"
    if isinstance(t.source, DataFrameSource) and t.source.restart is not None:
        return str(t.source.restart.kind)
    return SPARK_LOG


def split_state(
    spark: Any,
    path: str,
    checkpoint: str,
    state: Dict[str, Dict[str, Any]],
    partitions: int,
    batch: int = 0,
    hashed: Optional[HashedKeys] = None,
    copied: Collection[str] = (),
) -> Dict[str, Dict[str, Any]]:
    """Write each operator's rows of full snapshots (``state``: manifests under ``path``, a savepoint's layout) into
    the checkpoint's state, as state version ``batch`` of ``partitions`` state partitions; returns the manifests.
    One Spark job, the executors read and write the files, each file read once: one task per (operator, old
    partition), which writes into each new partition the piece of its rows that the route's rule places there
    (:func:`split_pieces`); a new partition is made up of its pieces from every old one (their keys are disjoint:
    ``state_store.join_pieces``). ``hashed``: the window on Spark's columnar path, whose rows Spark places by its
    hash of their key columns (decoded from the key's bytes); ``copied``: operators whose rows already sit in their
    partitions among ``partitions`` (:func:`placed_alike`), whose snapshots are copied as they are
    (``state_store.copy_snapshot``, in the same job)."""
    out: Dict[str, Dict[str, Any]] = {uid: {"layout": op["layout"], "partitions": {}} for uid, op in state.items()}
    copy = {
        uid: op
        for uid, op in state.items()
        if uid in copied and all(state_store.is_one_snapshot(m) for m in op["partitions"].values())
    }
    if copy:
        _log.info("operators %s: their state copied as it is into %d state partitions", sorted(copy), partitions)
    tasks = [(uid, int(sp), json.dumps({"copy": m})) for uid, op in copy.items() for sp, m in op["partitions"].items()]
    for uid, op in state.items():
        if uid in copy or (hashed is not None and uid == hashed.uid):
            continue
        old = sorted((int(sp), m) for sp, m in op["partitions"].items() if m and m["files"])
        # broadcast state (the empty key) is the same in every old partition: the first one's goes to every new one
        tasks.extend(
            (uid, sp, json.dumps({"split": state_store.file_paths(path, uid, sp, m), "broadcast": i == 0}))
            for i, (sp, m) in enumerate(old)
        )
    root = storage.join(checkpoint, "flinkish", "state")

    def write_partition(uid: str, sp: int, payload: str) -> Any:
        task = json.loads(payload)
        if "copy" in task:
            return state_store.copy_snapshot(path, root, uid, sp, batch, task["copy"])
        files = task["split"]
        if len(files) == 1 and files[0][1]["kind"] == "snapshot":  # a full snapshot: its rows are live, in order
            rows = state_store.read_file(*files[0])
        else:
            rows = live_rows(latest_rows((entry["seq"], state_store.read_file(p, entry)) for p, entry in files))
        return {
            str(new): state_store.write_snapshot(root, uid, new, batch, piece)
            for new, piece in enumerate(split_pieces(rows, partitions, task["broadcast"]))
        }

    pieces: Dict[Tuple[str, int], List[Any]] = {}
    for uid, sp, result in _write_per_task(spark, tasks, write_partition):
        if uid in copy:
            out[uid]["partitions"][str(sp)] = result
            continue
        for new, manifest in result.items():  # the old partitions in order (their tasks' order)
            if manifest is not None:
                pieces.setdefault((uid, int(new)), []).append((sp, manifest))
    for (uid, new), written in sorted(pieces.items()):
        out[uid]["partitions"][str(new)] = state_store.join_pieces([m for _, m in sorted(written, key=lambda p: p[0])])
    if hashed is not None and hashed.uid in state and hashed.uid not in copy:
        _split_hashed(spark, path, checkpoint, {hashed.uid: state[hashed.uid]}, partitions, batch, hashed, out)
    return out


def split_pieces(rows: Any, partitions: int, broadcast: bool) -> List[Any]:
    """The rows of one old state partition's full snapshot (``rows``: ``FILE_SCHEMA``'s columns, ``live_rows``'
    order) as one piece per new state partition of ``partitions``, in the same order: those whose key's bytes the
    route's rule (``keys.state_partition``, ``crc32(key) % partitions``, here ``keys.state_partitions`` on all keys
    at once) places there, and, when ``broadcast`` (the first old partition), its broadcast state (the empty key,
    the same in every old partition, as each got every broadcast element) in every piece: one copy into every new
    partition."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .keys import state_partitions

    keys = rows["key"]
    placed = pa.array(state_partitions(keys, partitions))
    empty = pc.equal(pc.binary_length(keys), 0)
    out = []
    for sp in range(partitions):
        mine = pc.and_(pc.equal(placed, sp), pc.invert(empty))
        out.append(rows.filter(pc.or_(mine, empty) if broadcast else mine))
    return out


def split_rows(tables: List[Any], sp: int, partitions: int) -> Any:
    """The rows of ``tables`` (one operator's full snapshots, one per old partition, ``FILE_SCHEMA``'s columns)
    that state partition ``sp`` of ``partitions`` holds, as one snapshot (``live_rows``): its pieces of every old
    partition (:func:`split_pieces`; the first table's broadcast state), together."""
    if not tables:
        return live_rows(FILE_SCHEMA.empty_table())
    import pyarrow as pa

    return live_rows(pa.concat_tables([split_pieces(t, partitions, i == 0)[sp] for i, t in enumerate(tables)]))


def _write_per_task(
    spark: Any, tasks: List[Tuple[str, int, str]], write: Callable[[str, int, str], Any]
) -> Iterator[Tuple[str, int, Any]]:
    """One Spark task per ``(uid, state partition, payload)`` of ``tasks``: ``write`` runs on the executor (with the
    driver's storage options) and returns what it wrote as JSON (the partition's new manifest; a split's task the
    manifests of its pieces); yields ``(uid, sp, result)`` for each result that is not None. One stage: the tasks
    are the partitions of ``spark.range``, one row each (the row's number picks the task from ``tasks``, which the
    function carries), so no shuffle places them."""
    if not tasks:
        return
    options = storage.current_options()

    def run(batches: Any) -> Any:
        import pyarrow as pa

        storage.configure(options)
        schema = pa.schema([("uid", pa.string()), ("sp", pa.int32()), ("manifest", pa.string())])
        for b in batches:
            out = []
            for i in b.column("id").to_pylist():
                uid, sp, payload = tasks[i]
                out.append({"uid": uid, "sp": sp, "manifest": json.dumps(write(uid, sp, payload))})
            yield pa.RecordBatch.from_pylist(out, schema=schema)

    frame = spark.range(0, len(tasks), 1, len(tasks))  # row i in partition i
    for row in frame.mapInArrow(run, _RESULT_DDL).collect():
        manifest = json.loads(row["manifest"])
        if manifest is not None:
            yield row["uid"], row["sp"], manifest


def _split_hashed(
    spark: Any,
    path: str,
    checkpoint: str,
    state: Dict[str, Dict[str, Any]],
    partitions: int,
    batch: int,
    hashed: HashedKeys,
    out: Dict[str, Dict[str, Any]],
) -> None:
    """:func:`split_state` for the window on Spark's columnar path: Spark reads its rows, places them by its hash of
    the key columns (:func:`_hashed_partitions`; broadcast state has no such operator) and the executors write one
    snapshot per group."""
    from pyspark.sql import functions as F

    files = [
        spark_path(file_path)
        for uid, op in state.items()
        for sp, m in op["partitions"].items()
        for file_path, _ in state_store.file_paths(path, uid, int(sp), m)
    ]
    if not files:
        return
    rows = spark.read.schema(FILE_DDL).parquet(*files).withColumn("uid", F.lit(hashed.uid))
    rows = _hashed_partitions(rows, hashed, partitions)
    root = storage.join(checkpoint, "flinkish", "state")
    options = storage.current_options()

    def write_partition(table: Any) -> Any:
        import pyarrow as pa

        storage.configure(options)
        uid, sp = table.column("uid")[0].as_py(), int(table.column("sp")[0].as_py())
        written = state_store.write_snapshot(root, uid, sp, batch, live_rows(table.select(FILE_SCHEMA.names)))
        return pa.table({"uid": [uid], "sp": pa.array([sp], pa.int32()), "manifest": [json.dumps(written)]})

    for row in rows.groupBy("uid", "sp").applyInArrow(write_partition, _RESULT_DDL).collect():
        written = json.loads(row["manifest"])
        if written is not None:
            out[row["uid"]]["partitions"][str(row["sp"])] = written


def key_columns_as_text(keys: List[bytes], hashed: HashedKeys) -> List[List[Optional[str]]]:
    """Per key column, the values of the keys (``keys.encode_key`` bytes) as text Spark casts back to the column's
    type (``true``/``false`` for booleans; None for null): the columns ``columnar.prepared`` hashed."""
    from .keys import decode_key

    def text(v: Any) -> Optional[str]:
        if v is None:
            return None
        if isinstance(v, bool):
            return "true" if v else "false"
        return str(v)

    values = [decode_key(k) for k in keys]
    rows = [list(v) if hashed.is_tuple else [v] for v in values]
    return [[text(r[i]) for r in rows] for i in range(len(hashed.types))]


def _hashed_partitions(rows: Any, hashed: HashedKeys, partitions: int) -> Any:
    """``rows`` (one operator's, ``FILE_DDL`` and ``uid``) with ``sp``: ``pmod(xxhash64(key columns), partitions)``, the
    key columns decoded from the key's bytes on the executors and cast to their types by Spark."""
    from pyspark.sql import functions as F

    names = [f"__k{i}" for i in range(len(hashed.types))]

    def decode(batches: Any) -> Any:
        import pyarrow as pa

        for b in batches:
            table = pa.Table.from_batches([b])
            for name, values in zip(names, key_columns_as_text(table.column("key").to_pylist(), hashed)):
                table = table.append_column(name, pa.array(values, pa.string()))
            yield from table.to_batches()

    ddl = f"{FILE_DDL}, uid string, " + ", ".join(f"{n} string" for n in names)
    hash_ = F.xxhash64(*[F.col(n).cast(t) for n, t in zip(names, hashed.types)])
    return rows.mapInArrow(decode, ddl).withColumn("sp", F.pmod(hash_, F.lit(partitions)).cast("int")).drop(*names)


__all__ = [
    "HashedKeys",
    "METADATA_FILE",
    "RESTORED_FILE",
    "RESTORED_FORMAT",
    "RESTORED_VERSION",
    "SAVEPOINT_FORMAT",
    "SAVEPOINT_VERSION",
    "check_sources",
    "columnar_keys",
    "compatibility_problems",
    "hashed_from_dict",
    "hashed_to_dict",
    "key_columns_as_text",
    "placed_alike",
    "read_savepoint",
    "restore_savepoint",
    "restored_state",
    "snapshot_state",
    "source_positions",
    "split_pieces",
    "split_rows",
    "split_state",
    "take_savepoint",
]
