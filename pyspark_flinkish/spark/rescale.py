"""Rescaling a checkpoint in place: a job restarted on its own checkpoint with another ``state_partitions``.

Flink restores a retained checkpoint at another parallelism by reassigning key groups to subtasks. Here a key's
state partition is ``crc32(key bytes) % state_partitions``, so before the restarted query's first batch every row
of the state the query resumes from is assigned to its partition among the new number, by the rule a savepoint's
restore uses (``savepoint.split_state``; broadcast state goes to every partition).

The state the query resumes from is that of the last batch committed both by the driver (``driver/b=<batch>.json``)
and by Spark (``spark/commits/<batch>``): a batch the driver committed but Spark did not is run again by Spark,
from the batch before it. The steps:

1. the driver's documents after the base are deleted (Spark runs those batches again);
2. the base batch's state is written as full snapshots (``flinkish/rescale/b=<batch>-<token>/``) and split into the
   new partitions as new files of the base batch (named by no document yet);
3. ``flinkish/rescale/pending.json`` records the new number (:func:`rescale_interrupted`): from here on the base's
   document may name either layout;
4. the base's document is rewritten naming the new files;
5. ``meta.json`` records the new number (the commit point);
6. the older documents, the snapshots and ``pending.json`` are deleted.

A kill at any point leaves a checkpoint that restarts: before step 3 nothing the driver reads has changed (the new
files are named by no document, and the restart deletes them before anything else: :func:`rescale_checkpoint` first
deletes every state file that no driver document names); from step 3 to step 5 the driver rescales
again on every restart while ``pending.json`` is there, whatever number it asks for (the old one too), from the
base's document, whichever layout it names (the split reads every row of every partition it names); after step 5
only the clean-up is left, which the next restart finishes. A checkpoint restored from a savepoint that has
committed no batch yet rescales the restored state (``restored.json``) the same way.

Broadcast state (the empty key) is the same in every partition (each gets every broadcast element): one copy of it
goes to every new partition. Timers live in the rows of their keys and move with them.

A window on Spark's columnar path places its keys by Spark's hash of the key columns
(``pmod(xxhash64(columns), n)``, ``columnar.prepared``): its rows are placed by the same hash, of the columns decoded
from each key's bytes (``savepoint.HashedKeys``).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, Dict, List, Optional

from ..core.codec import dump_document, load_document
from . import state_store, storage
from .checkpoint import (
    DRIVER_FORMAT,
    DRIVER_VERSION,
    committed_batches,
    driver_document_path,
    read_driver_document,
    write_meta,
)
from .savepoint import (
    RESTORED_FILE,
    RESTORED_FORMAT,
    RESTORED_VERSION,
    HashedKeys,
    restored_state,
    snapshot_state,
    split_state,
)

_log = logging.getLogger("pyspark_flinkish.spark")

PENDING_FILE = "pending.json"
"""Under :func:`rescale_dir`: ``{"from", "to", "batch"}``, written once a rescaling's new files are all written,
before the base's document names them (step 3 of the module docstring)."""
PENDING_FORMAT = "pyspark_flinkish.rescale-pending"
PENDING_VERSION = 1


def spark_committed(checkpoint: str) -> int:
    """The last batch of Spark's commit log (``spark/commits``), or -1."""
    names = storage.list_names(storage.join(checkpoint, "spark", "commits"))
    return max((int(n) for n in names if n.isdigit()), default=-1)


def rescale_dir(checkpoint: str) -> str:
    """``<checkpoint>/flinkish/rescale``: a rescaling's snapshots and ``pending.json``, there only while it runs."""
    return storage.join(checkpoint, "flinkish", "rescale")


def rescale_interrupted(checkpoint: str) -> bool:
    """Whether a rescaling of ``checkpoint`` did not finish (its directory is still there): the driver then calls
    :func:`rescale_checkpoint` even when the job asks for the checkpoint's own number of state partitions."""
    return storage.is_dir(rescale_dir(checkpoint))


def _pending(checkpoint: str) -> Optional[Dict[str, Any]]:
    path = storage.join(rescale_dir(checkpoint), PENDING_FILE)
    if not storage.exists(path):
        return None
    return load_document(storage.read_bytes(path), PENDING_FORMAT, PENDING_VERSION, path)


def rescale_checkpoint(
    spark: Any, checkpoint: str, meta: Dict[str, Any], partitions: int, columnar: Optional[HashedKeys] = None
) -> Dict[str, Any]:
    """Reassign the keyed state ``checkpoint`` resumes from to ``partitions`` state partitions (see the module
    docstring), or finish an interrupted rescaling; returns the new ``meta.json``. ``columnar``: the job's window on
    Spark's columnar path (``savepoint.columnar_keys``).

    Raises:
        StateError: the checkpoint's files cannot be read or written (the message names the URI).
    """
    old = int(meta["state_partitions"])
    state_root = storage.join(checkpoint, "flinkish", "state")
    documents = committed_batches(checkpoint)
    _prune_unnamed(checkpoint, state_root, documents, old)  # a kill before step 3 left files named by nothing
    base = max((b for b in documents if b <= spark_committed(checkpoint)), default=None)
    pending = _pending(checkpoint)
    # the base's document names the layout of meta.json unless a rescaling was interrupted between pending.json and
    # meta.json (``to`` differs from ``from``, and meta.json still records ``from``; with equal numbers, either)
    finished = pending is None or (pending["to"] == old and pending["from"] != old)
    if partitions == old and finished:
        _log.info("checkpoint %s: finishing the clean-up of an interrupted rescaling", checkpoint)
        _clean_up(checkpoint, documents, base)
        return meta
    document: Dict[str, Any] = {}
    operators: Dict[str, Dict[str, Any]] = {}
    restored = restored_state(checkpoint) if base is None else None  # restored from a savepoint, no batch yet
    if base is not None:
        document = read_driver_document(checkpoint, base)
        operators = state_store.operators_of(document, state_root, base, old)
    elif restored is not None:
        operators = restored["state"]
    _log.info("checkpoint %s: rescaling its keyed state from %d to %d state partitions", checkpoint, old, partitions)
    for b in documents:  # 1. batches Spark runs again (from the base): their documents are written again
        if base is None or b > base:
            storage.delete(driver_document_path(checkpoint, b))
    if operators:
        batch = base if base is not None else 0
        scratch = storage.join(rescale_dir(checkpoint), f"b={batch}-{uuid.uuid4().hex[:8]}")
        snapshots = snapshot_state(spark, state_root, operators, batch, scratch)  # 2.
        state = split_state(spark, scratch, checkpoint, snapshots, partitions, batch=batch, hashed=columnar)
        for uid, op in operators.items():  # operators without rows keep their layout, with no partitions
            state.setdefault(uid, {"layout": op["layout"], "partitions": {}})
        marker = {"from": old, "to": partitions, "batch": base}
        storage.write_bytes(  # 3.
            storage.join(rescale_dir(checkpoint), PENDING_FILE), dump_document(PENDING_FORMAT, PENDING_VERSION, marker)
        )
        if base is not None:  # 4.
            body = {k: v for k, v in document.items() if k != "version"}
            body["state"] = state
            data = dump_document(DRIVER_FORMAT, DRIVER_VERSION, body)
            storage.write_bytes(driver_document_path(checkpoint, base), data)
        elif restored is not None:
            path = storage.join(checkpoint, "flinkish", "driver", RESTORED_FILE)
            storage.write_bytes(path, dump_document(RESTORED_FORMAT, RESTORED_VERSION, {**restored, "state": state}))
    new_meta = {**meta, "state_partitions": partitions}
    write_meta(checkpoint, new_meta)  # 5.
    _clean_up(checkpoint, documents, base)  # 6.
    return new_meta


def _prune_unnamed(checkpoint: str, state_root: str, documents: List[int], partitions: int) -> None:
    """Delete the state files that neither a driver document nor ``restored.json`` names: those of a rescaling
    killed before ``pending.json`` (and of batches that failed before a restart), which the driver would otherwise
    delete only when its first batch runs. Nothing when a driver document of an older version (a pickle, converted
    later) is there: the files it names are not known here."""
    names = storage.list_names(storage.join(checkpoint, "flinkish", "driver"))
    if any(n.endswith(".pkl") for n in names):
        return
    states = [
        state_store.operators_of(read_driver_document(checkpoint, b), state_root, b, partitions) for b in documents
    ]
    restored = restored_state(checkpoint)
    if restored is not None:
        states.append(restored["state"])
    removed = state_store.prune(state_root, state_store.referenced(states))
    if removed:
        _log.info("checkpoint %s: deleted %d state files that no driver document names", checkpoint, removed)


def _clean_up(checkpoint: str, documents: List[int], base: Optional[int]) -> None:
    """Delete the driver's documents before the base (they name the old layout) and the rescaling's directory."""
    if base is not None:
        for b in documents:
            if b < base:
                storage.delete(driver_document_path(checkpoint, b))
    storage.delete_tree(rescale_dir(checkpoint))


__all__ = [
    "PENDING_FILE",
    "PENDING_FORMAT",
    "PENDING_VERSION",
    "rescale_checkpoint",
    "rescale_dir",
    "rescale_interrupted",
    "spark_committed",
]
