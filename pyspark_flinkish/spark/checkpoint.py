"""The package's files in a checkpoint (``<checkpoint>/flinkish/``) and their formats.

``meta.json`` holds what shapes the checkpoint's state (state partitions, vectorize, the operators' state
signatures); ``driver/b=<batch>.json`` the driver's watermark bookkeeping and the keyed state's manifests after each
batch. Both are documents of
the state codec (``core/codec.py``): a format name and version, then plain data.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional

from ..core.codec import dump_document, load_document
from ..core.errors import StateError
from ..local.executor import LocalExecutor
from . import storage

META_FILE = "meta.json"
META_FORMAT = "pyspark_flinkish.checkpoint-meta"
META_VERSION = 1
DRIVER_FORMAT = "pyspark_flinkish.driver-state"
DRIVER_VERSION = 2
"""Version 2 records the keyed state's manifests (``state``); version 1 (before incremental state) has none, and
its batch's state is one file per partition (``state_store.legacy_manifests``)."""
DRIVER_VERSIONS_READ = (1, 2)
_DRIVER_DOCUMENT = re.compile(r"b=(\d{12})\.json")


def driver_document(
    graph: LocalExecutor,
    batch_id: int,
    state: Optional[Dict[str, Any]] = None,
    positions: Optional[Dict[str, Any]] = None,
) -> bytes:
    """``driver/b=<batch>.json``: the watermark bookkeeping after ``batch_id`` (plain data; only a user's own
    watermark generator would be pickled, under a ``P`` tag) and, under ``state``, the keyed operators' state:
    ``{uid: {"layout": ..., "partitions": {state partition: manifest}}}`` (``spark/state_store.py``). Writing it
    commits the batch's state: its manifests name the files that make it up. ``positions``: each replay source's
    last micro-batch (``{uid: {"replay_batch": i}}``), where a savepoint's restore goes on."""
    doc: Dict[str, Any] = {"batch": batch_id, **graph.watermark_state()}
    if state is not None:
        doc["state"] = state
    if positions:
        doc["positions"] = positions
    return dump_document(DRIVER_FORMAT, DRIVER_VERSION, doc)


def write_atomically(path: str, data: bytes) -> None:
    """Write or replace a document of the checkpoint (``storage.write_bytes``: atomic on every store)."""
    storage.write_bytes(path, data)


def meta_path(checkpoint: str) -> str:
    return storage.join(checkpoint, "flinkish", META_FILE)


def spark_query_id(checkpoint: str) -> str:
    """Spark's query id, from ``<checkpoint>/spark/metadata`` (stable across restarts of one checkpoint; "" before
    the query wrote it)."""
    try:
        first = storage.read_bytes(storage.join(checkpoint, "spark", "metadata")).decode("utf-8").split("\n", 1)[0]
        return str(json.loads(first).get("id") or "")
    except (StateError, ValueError, UnicodeDecodeError):
        return ""


def read_meta(checkpoint: str) -> Dict[str, Any]:
    """``<checkpoint>/flinkish/meta.json`` (a :class:`StateError` naming it when it is missing or not such a document)."""
    path = meta_path(checkpoint)
    return load_document(storage.read_bytes(path), META_FORMAT, META_VERSION, path)


def driver_document_path(checkpoint: str, batch_id: int) -> str:
    """``<checkpoint>/flinkish/driver/b=<batch>.json``."""
    return storage.join(checkpoint, "flinkish", "driver", f"b={batch_id:012d}.json")


def committed_batches(checkpoint: str) -> List[int]:
    """The committed batches whose driver documents the checkpoint keeps, oldest first (JSON documents only: the
    driver converts pickles of older versions when it opens the checkpoint)."""
    names = storage.list_names(storage.join(checkpoint, "flinkish", "driver"))
    return sorted(int(m.group(1)) for m in map(_DRIVER_DOCUMENT.fullmatch, names) if m)


def read_driver_document(checkpoint: str, batch_id: int) -> Dict[str, Any]:
    """The driver's document of committed batch ``batch_id``."""
    path = driver_document_path(checkpoint, batch_id)
    return load_document(storage.read_bytes(path), DRIVER_FORMAT, DRIVER_VERSIONS_READ, path)


def write_meta(checkpoint: str, meta: Dict[str, Any]) -> None:
    """Write ``<checkpoint>/flinkish/meta.json``."""
    write_atomically(meta_path(checkpoint), dump_document(META_FORMAT, META_VERSION, meta))


def spark_offsets(checkpoint: str, batch: int) -> List[Any]:
    """The entries of Spark's offsets log for ``batch`` (one per source of the query, parsed JSON; None for a
    source without an offset)."""
    path = storage.join(checkpoint, "spark", "offsets", str(batch))
    lines = storage.read_bytes(path).decode("utf-8").splitlines()
    if not lines or not lines[0].startswith("v"):
        msg = f"{path} is not a Spark offsets log entry"
        raise StateError(msg)
    out: List[Any] = []
    for line in lines[2:]:  # the version, the batch's metadata, then one line per source
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            out.append(None)
    return out


__all__ = [
    "META_FILE",
    "META_FORMAT",
    "META_VERSION",
    "DRIVER_FORMAT",
    "DRIVER_VERSION",
    "DRIVER_VERSIONS_READ",
    "committed_batches",
    "driver_document",
    "driver_document_path",
    "meta_path",
    "read_driver_document",
    "read_meta",
    "spark_offsets",
    "spark_query_id",
    "write_atomically",
    "write_meta",
]
