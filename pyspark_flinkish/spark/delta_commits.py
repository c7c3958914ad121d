"""The package's Delta commits and the table's log: what each commit records (``userMetadata``) and how it is
read back (the newest batch of a writer, the watermark recorded with a commit).

Each commit's ``userMetadata`` holds ``{"flinkish": {"watermark": W, "batch_id": N, "app_id": A}}``: ``A`` =
:func:`app_id` (the Spark query id stored in the checkpoint, plus the sink's uid), ``N`` the Spark batch id, ``W``
the watermark of the stream feeding the sink after batch ``N``. The writer (:mod:`.delta`) uses it to write each
batch once; ``from_delta`` (:mod:`.delta_source`) to replay the writing job's watermarks.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..core.errors import StateError
from . import storage
from .checkpoint import spark_query_id

METADATA_KEY = "flinkish"


def app_id(checkpoint: str, sink_uid: str) -> str:
    """The app id of one sink of one query in its commits' metadata: ``flinkish-<query id>-<sink uid>``.

    The query id is the one Spark keeps in ``<checkpoint>/spark/metadata`` (stable across restarts of the same
    checkpoint, new for a new checkpoint); without it (never with a started query) a hash of the checkpoint's
    absolute path stands in. The sink uid is ``DataStreamSink.uid(...)`` if given, else the sink's position in
    the plan (give a uid if the pipeline may change while a batch is uncommitted).
    """
    query = spark_query_id(checkpoint)
    if not query:
        query = hashlib.sha256(storage.abspath(checkpoint).encode("utf-8")).hexdigest()[:32]
    return f"flinkish-{query}-{sink_uid}"


def commit_metadata(watermark: Optional[int], batch_id: int, app: str) -> str:
    """The ``userMetadata`` of a sink's commit."""
    return json.dumps({METADATA_KEY: {"watermark": watermark, "batch_id": batch_id, "app_id": app}}, sort_keys=True)


def parse_watermark(user_metadata: Optional[str]) -> Optional[int]:
    """The watermark recorded by :func:`commit_metadata`, or None (another writer's commit, or none recorded)."""
    if not user_metadata:
        return None
    try:
        data = json.loads(user_metadata)
    except ValueError:
        return None
    entry = data.get(METADATA_KEY) if isinstance(data, dict) else None
    wm = entry.get("watermark") if isinstance(entry, dict) else None
    return int(wm) if isinstance(wm, int) else None


def parse_commit(user_metadata: Optional[str]) -> Optional[Tuple[str, int]]:
    """``(app id, batch id)`` of a commit made by :class:`DeltaBatchWriter`, or None (another writer's commit)."""
    if not user_metadata or METADATA_KEY not in user_metadata:
        return None
    try:
        entry = json.loads(user_metadata).get(METADATA_KEY)
    except (ValueError, AttributeError):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("batch_id"), int) or not isinstance(entry.get("app_id"), str):
        return None
    return entry["app_id"], entry["batch_id"]


def local_path(path: Optional[str]) -> Optional[str]:
    """The local file-system path of a table location, or None (an object store or other remote file system)."""
    if path is None:
        return None
    return path.removeprefix("file:") if "://" not in path or path.startswith("file:") else None


def table_identifier(path: Optional[str], table: Optional[str]) -> str:
    """A Delta table in SQL: ``delta.`<path>``` for a path, else the table's name as given."""
    if path is not None:
        return "delta.`" + path.replace("`", "``") + "`"
    return str(table)


def table_detail(spark: Any, path: str) -> Any:
    """``DESCRIBE DETAIL`` of the Delta table at ``path`` (a ``Row``: ``id``, ``properties``, ...), or None when no
    Delta table is there. SQL, so that it works on a Spark Connect session without Delta Connect."""
    from pyspark.errors import AnalysisException

    try:
        detail = spark.sql(f"DESCRIBE DETAIL {table_identifier(path, None)}").first()
    except AnalysisException as exc:
        if _missing_table(exc):
            return None
        raise
    return detail if detail is not None and str(detail["format"]).lower() == "delta" else None


def _missing_table(exc: Exception) -> bool:
    """True for Delta's and Spark's "no (Delta) table there" errors (not for, e.g., a permission error)."""
    condition = str(getattr(exc, "getCondition", lambda: None)() or "")
    if condition in ("DELTA_MISSING_DELTA_TABLE", "DELTA_TABLE_NOT_FOUND", "DELTA_PATH_DOES_NOT_EXIST", "PATH_NOT_FOUND"):
        return True
    text = str(exc)
    return "is not a Delta table" in text or "doesn't exist" in text or "does not exist" in text


def history(spark: Any, path: Optional[str], table: Optional[str], limit: Optional[int] = None) -> List[Any]:
    """``(version, userMetadata)`` rows of a Delta table's ``DESCRIBE HISTORY``, newest first (the newest ``limit``)."""
    sql = f"DESCRIBE HISTORY {table_identifier(path, table)}" + (f" LIMIT {int(limit)}" if limit is not None else "")
    return spark.sql(sql).select("version", "userMetadata").orderBy("version", ascending=False).collect()  # type: ignore[no-any-return]


def last_committed_batch(spark: Any, path: Optional[str], table: Optional[str], app: str) -> Optional[int]:
    """The batch id of the newest commit of ``app`` in a Delta table (None: none, or no table yet).

    Reads the commit files of a local table directly, newest first, stopping at the first commit of ``app``;
    other tables through ``DESCRIBE HISTORY`` (the commit infos, read on the driver; SQL, so that a Spark Connect
    session needs no Delta Connect). A commit file removed by Delta's log clean-up (``delta.logRetentionDuration``,
    30 days by default) is not seen: a batch left uncommitted that long before a restart would be written again.
    """
    local = local_path(path)
    if local is not None:
        log_dir = os.path.join(local, "_delta_log")
        try:
            names = os.listdir(log_dir)
        except FileNotFoundError:
            return None
        versions = sorted((int(n[:20]) for n in names if len(n) == 25 and n.endswith(".json") and n[:20].isdigit()), reverse=True)
        for v in versions:
            try:
                with open(os.path.join(log_dir, f"{v:020d}.json"), encoding="utf-8") as f:
                    info = next((json.loads(line)["commitInfo"] for line in f if '"commitInfo"' in line), {})
            except FileNotFoundError:
                continue  # cleaned up while listing
            found = parse_commit(info.get("userMetadata"))
            if found is not None and found[0] == app:
                return found[1]
        return None
    if table is not None:
        if not spark.catalog.tableExists(table):
            return None
    elif path is None or table_detail(spark, path) is None:
        return None
    for limit in (16, None):  # the newest commits first: usually the newest one is this app's
        rows = history(spark, path, table, limit)
        for row in rows:
            found = parse_commit(row["userMetadata"])
            if found is not None and found[0] == app:
                return found[1]
        if limit is not None and len(rows) < limit:
            return None  # that was the whole history
    return None


def log_versions(log_dir: str) -> List[int]:
    """The versions of the commit files (``<version>.json``) in a table's ``_delta_log`` at ``log_dir`` (any location
    :mod:`.storage` reaches), ascending; none when the directory does not exist."""
    names = storage.list_names(log_dir)
    return sorted(int(n[:20]) for n in names if len(n) == 25 and n.endswith(".json") and n[:20].isdigit())


def find_commit(log_dir: str, first: int, app: str, batch_id: int) -> Tuple[Optional[int], int]:
    """Look for the commit of ``(app, batch_id)`` in the log at ``log_dir`` from version ``first`` on, version by
    version while the commit files exist: ``(its version or None, the first version not read)``. A commit file
    appears whole (Delta writes it with a rename or a single PUT), so once it is found the commit is durable."""
    v = first
    while True:
        try:
            text = storage.read_bytes(storage.join(log_dir, f"{v:020d}.json")).decode("utf-8")
        except StateError:  # not (yet) there
            return None, v
        info = next((json.loads(line)["commitInfo"] for line in text.splitlines() if '"commitInfo"' in line), {})
        v += 1
        if parse_commit(info.get("userMetadata")) == (app, batch_id):
            return v - 1, v


def commit_watermarks(spark: Any, path: str, versions: Sequence[int]) -> Dict[int, Optional[int]]:
    """The watermark recorded with each commit (None where none is): from ``_delta_log`` when the table is on a
    local path, else from the table's history (``DESCRIBE HISTORY``)."""
    if not versions:
        return {}
    out: Dict[int, Optional[int]] = {}
    local = local_path(path)
    missing = list(versions)
    if local is not None:
        missing = []
        for v in versions:
            try:
                with open(os.path.join(local, "_delta_log", f"{v:020d}.json"), encoding="utf-8") as f:
                    info = next((json.loads(line)["commitInfo"] for line in f if '"commitInfo"' in line), {})
                out[v] = parse_watermark(info.get("userMetadata"))
            except OSError:
                missing.append(v)
    if missing:
        recorded = {int(r["version"]): parse_watermark(r["userMetadata"]) for r in history(spark, path, None)}
        out.update({v: recorded.get(v) for v in missing})
    return out


__all__ = [
    "METADATA_KEY",
    "app_id",
    "commit_metadata",
    "parse_watermark",
    "parse_commit",
    "local_path",
    "table_identifier",
    "table_detail",
    "history",
    "last_committed_batch",
    "log_versions",
    "find_commit",
    "commit_watermarks",
]
