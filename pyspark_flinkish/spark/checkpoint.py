"""The package's files in a checkpoint (``<checkpoint>/flinkish/``) and their formats.

``meta.json`` holds what shapes the checkpoint's state (state partitions, vectorize, the operators' state
signatures); ``driver/b=<batch>.json`` the driver's watermark bookkeeping and the keyed state's manifests after each
batch. Both are documents of
the state codec (``core/codec.py``): a format name and version, then plain data.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

from ..core.codec import dump_document
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


def write_meta(checkpoint: str, meta: Dict[str, Any]) -> None:
    """Write ``<checkpoint>/flinkish/meta.json``."""
    write_atomically(meta_path(checkpoint), dump_document(META_FORMAT, META_VERSION, meta))


__all__ = [
    "META_FILE",
    "META_FORMAT",
    "META_VERSION",
    "DRIVER_FORMAT",
    "DRIVER_VERSION",
    "DRIVER_VERSIONS_READ",
    "driver_document",
    "meta_path",
    "spark_query_id",
    "write_atomically",
    "write_meta",
]
