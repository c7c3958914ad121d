"""The package's files in a checkpoint (``<checkpoint>/flinkish/``) and their formats.

``meta.json`` holds what shapes the checkpoint's state (state partitions, vectorize, the operators' state
signatures); ``driver/b=<batch>.json`` the driver's watermark bookkeeping and the keyed state's manifests after each
batch. Both are documents of
the state codec (``core/codec.py``): a format name and version, then plain data.
"""

from __future__ import annotations

import os
import uuid
from typing import Any, Dict, Optional

from ..core.codec import dump_document
from ..local.executor import LocalExecutor

META_FILE = "meta.json"
META_FORMAT = "pyspark_flinkish.checkpoint-meta"
META_VERSION = 1
DRIVER_FORMAT = "pyspark_flinkish.driver-state"
DRIVER_VERSION = 2
"""Version 2 records the keyed state's manifests (``state``); version 1 (before incremental state) has none, and
its batch's state is one file per partition (``state_store.legacy_manifests``)."""
DRIVER_VERSIONS_READ = (1, 2)


def driver_document(graph: LocalExecutor, batch_id: int, state: Optional[Dict[str, Any]] = None) -> bytes:
    """``driver/b=<batch>.json``: the watermark bookkeeping after ``batch_id`` (plain data; only a user's own
    watermark generator would be pickled, under a ``P`` tag) and, under ``state``, the keyed operators' state:
    ``{uid: {"layout": ..., "partitions": {state partition: manifest}}}`` (``spark/state_store.py``). Writing it
    commits the batch's state: its manifests name the files that make it up."""
    doc: Dict[str, Any] = {"batch": batch_id, **graph.watermark_state()}
    if state is not None:
        doc["state"] = state
    return dump_document(DRIVER_FORMAT, DRIVER_VERSION, doc)


def write_atomically(path: str, data: bytes) -> None:
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def write_meta(checkpoint: str, meta: Dict[str, Any]) -> None:
    """Write ``<checkpoint>/flinkish/meta.json``."""
    path = os.path.join(checkpoint, "flinkish", META_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomically(path, dump_document(META_FORMAT, META_VERSION, meta))


__all__ = [
    "META_FILE",
    "META_FORMAT",
    "META_VERSION",
    "DRIVER_FORMAT",
    "DRIVER_VERSION",
    "DRIVER_VERSIONS_READ",
    "driver_document",
    "write_atomically",
    "write_meta",
]
