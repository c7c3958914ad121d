"""The last micro-batches' progress as JSON files under a checkpoint (``<checkpoint>/flinkish/progress/``), on any
file system the checkpoint may be on (``spark/storage.py``), and the ``python -m pyspark_flinkish progress`` command
that prints them (or the DEBUG lines of a log file).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Dict, List, Mapping, Optional

from ..core.errors import StateError
from ..monitoring import progress_from_log, progress_line
from . import storage


def progress_dir(checkpoint: str) -> str:
    """Where the foreachBatch driver keeps the last micro-batches' progress as JSON files."""
    return storage.join(checkpoint, "flinkish", "progress")


def read_progress(path: str) -> List[Dict[str, Any]]:
    """The progress dicts of a checkpoint (``<checkpoint>/flinkish/progress/b=<batch>.json``, oldest first) or of a
    log file with DEBUG lines of ``monitoring.log_progress``."""
    if storage.is_local(path) and os.path.isfile(path):
        return list(progress_from_log(path))
    directory = progress_dir(path)
    out = []
    for name in storage.list_names(directory):
        if name.startswith("b=") and name.endswith(".json"):
            try:
                out.append(json.loads(storage.read_bytes(storage.join(directory, name))))
            except (StateError, ValueError):
                continue  # deleted right now
    return out


def write_progress(checkpoint: str, progress: Mapping[str, Any], keep: int = 100) -> None:
    """Save a batch's progress under the checkpoint (replacing a replayed batch's), keeping the last ``keep``."""
    directory = progress_dir(checkpoint)
    batch = int(progress["batch_id"])
    data = json.dumps(progress, default=str, sort_keys=True).encode()
    storage.write_bytes(storage.join(directory, f"b={batch:012d}.json"), data)
    for name in storage.list_names(directory):
        if name.startswith("b=") and name.endswith(".json") and int(name[2:14]) <= batch - keep:
            storage.delete(storage.join(directory, name))


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m pyspark_flinkish progress <checkpoint or log file> [--follow] [--last N] [--json]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m pyspark_flinkish progress",
        description=(
            "Print a pipeline's per-micro-batch progress lines from its checkpoint location (the last 100 batches "
            "are kept there) or from a log with the DEBUG lines of the pyspark_flinkish.progress logger."
        ),
    )
    parser.add_argument("path", help="the checkpoint location given to execute(), or a log file")
    parser.add_argument("--follow", "-f", action="store_true", help="keep printing new batches (Ctrl-C stops)")
    parser.add_argument("--last", "-n", type=int, default=20, help="start with the last N batches (default 20)")
    parser.add_argument("--json", action="store_true", help="print each batch's progress as one JSON line")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between polls with --follow")
    args = parser.parse_args(argv)
    if not storage.exists(args.path):
        parser.error(f"{args.path} does not exist")

    def show(p: Mapping[str, Any]) -> None:
        print(json.dumps(p, sort_keys=True) if args.json else progress_line(p), flush=True)

    seen: Dict[Any, Any] = {}
    batches = read_progress(args.path)
    for p in batches[-args.last :] if args.last > 0 else []:
        show(p)
    seen.update((p.get("batch_id"), p.get("durations_ms")) for p in batches)
    try:
        while args.follow:
            time.sleep(args.interval)
            for p in read_progress(args.path):
                if seen.get(p.get("batch_id"), _NOT_SEEN) != p.get("durations_ms"):
                    seen[p.get("batch_id")] = p.get("durations_ms")
                    show(p)
    except KeyboardInterrupt:
        return 130
    return 0


_NOT_SEEN = object()


__all__ = ["main", "progress_dir", "read_progress", "write_progress"]
