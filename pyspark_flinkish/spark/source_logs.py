"""Positions that Spark keeps in its own checkpoint, carried by a savepoint: file streams, Delta tables and Kafka
streams read through ``from_dataframe``.

Flink's ``FileSource`` keeps its split assignment (which files are read, which are left) in every checkpoint and
savepoint, and so does every Flink source. Spark keeps a file stream's or Delta source's position only in the
query's checkpoint: its entry of the offsets log (``<checkpoint>/spark/offsets/<batch>``, one line per source of the
query: a file stream's ``{"logOffset": n}``, Delta's ``DeltaSourceOffset``: ``reservoirId``, ``reservoirVersion``,
``index``, ``isStartingVersion``; a Kafka stream's ``{topic: {partition: next offset}}``) and, for a file stream,
its metadata log (``spark/sources/<i>/``, Spark's ``FileStreamSourceLog``: the files of each log batch, the seen-files
list). The first two cannot be translated into source options: a file stream has no option to skip the files it has
seen, and Delta has none to start inside a version (``startingVersion`` starts at a version's first file; an offset
may stand at file ``index`` of it); a Kafka stream's could (``startingOffsets``), but is carried the same way, one
mechanism for every kind. (``from_kafka`` is not among them: its positions are the package's own.) So a savepoint
carries them as Spark wrote them, and a restore *seeds* the new checkpoint's Spark logs with them: the savepoint's
entries become batch 0 of the new checkpoint's offsets log, committed (``commits/0``), and each file stream's metadata
log is copied to its new place. The restored query then starts at batch 1 exactly where the old one stopped (Spark's
restart of a checkpoint: batch 1 reads what came after the committed offsets), whatever the new query's other
sources are (they get no entry: they start as configured).

A query's sources are its plan's streaming leaves in order (Spark numbers ``sources/<i>`` and the offsets log's lines
so): the replay stream of ``MicroBatchSource``s first (when the job has one), then each DataFrame source's leaves in
the plan's order, then the tick source (``spark/ticks.py``); :func:`spark_slots` lists them. Auto Loader
(``cloudFiles``) keeps its discovered files in a state store of its own under ``sources/<i>``, which this package
neither runs nor has verified carrying: it is refused, as is any other kind of streaming source (rate, socket,
memory), naming the alternative.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, Dict, List, Optional, Tuple

from ..core.errors import StateError, UnsupportedFeatureError
from ..datastream.sources import MicroBatchSource
from . import storage
from .source_rows import DataFrameSource

SPARK_LOG = "spark-log"
"""The ``kind`` of a savepoint position carried as Spark's log entries (``{"kind", "leaves": [...]}``)."""
CARRIED_KINDS = ("file", "delta", "kafka")
"""The kinds of streaming leaves whose position a savepoint carries."""
SEEDED_FILE = "spark_seeded.json"
"""Under ``<checkpoint>/flinkish``: written once the restore has seeded Spark's logs (they are never seeded again,
even after Spark purged ``commits/0``)."""
_DELTA_FORMATS = ("delta", "io.delta.sql.deltadatasource")


def streaming_leaves(df: Any) -> List[Dict[str, str]]:
    """The streaming sources a DataFrame reads, in Spark's order: ``{"kind", "format", "path", "name"}`` each
    (``kind``: ``"file"``, ``"delta"``, ``"cloudFiles"``, ``"kafka"`` or ``"other"``).

    Raises:
        UnsupportedFeatureError: a Spark Connect DataFrame (its plan is not readable here).
    """
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        msg = (
            "a savepoint carries a file stream's or Delta source's position from the query's plan, which a Spark "
            "Connect session does not expose: stop the job with stop() and restart it from its checkpoint_location"
        )
        raise UnsupportedFeatureError(msg)
    leaves = jdf.queryExecution().analyzed().collectLeaves()
    out = []
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        node = str(leaf.nodeName())
        if node == "StreamingRelation":
            source = leaf.dataSource()
            fmt = str(source.className())
            options = source.options()
            path = str(options.get("path").get()) if options.contains("path") else ""
            paths = [str(source.paths().apply(j)) for j in range(source.paths().size())]
            path = ",".join(([path] if path else []) + paths)
            name = str(leaf.sourceName())
            if fmt.lower() in _DELTA_FORMATS:
                kind = "delta"
            elif fmt.lower() == "cloudfiles":
                kind = "cloudFiles"
            elif name.startswith("FileSource["):
                kind = "file"
            else:
                kind = "other"
            out.append({"kind": kind, "format": fmt, "path": path.rstrip("/"), "name": name})
        elif node.startswith("StreamingRelation"):  # V2 (Kafka, rate, ...)
            name = str(leaf.sourceName()) if hasattr(leaf, "sourceName") else node
            if name.lower() == "kafka":
                out.append({"kind": "kafka", "format": name, "path": _kafka_subscription(leaf), "name": name})
            else:
                out.append({"kind": "other", "format": name, "path": "", "name": name})
    return out


def _kafka_subscription(leaf: Any) -> str:
    """What a Kafka stream reads, as its options say (``subscribe=a,b``, ``subscribePattern=…`` or ``assign=…``): a
    restore into a query that reads other topics is a changed source."""
    options = leaf.extraOptions()
    for key in ("subscribe", "subscribePattern", "assign"):
        value = options.get(key)
        if value is not None:
            return f"{key}={value}"
    return ""


def _is_offset(kind: str, entry: Dict[str, Any]) -> bool:
    """Whether an offsets-log entry has the shape of a ``kind`` leaf's offset (Kafka's: topic -> partition -> offset)."""
    if kind == "file":
        return "logOffset" in entry
    if kind == "delta":
        return "reservoirId" in entry
    return all(isinstance(v, dict) for v in entry.values())


def _uid(plan: Any, t: Any) -> str:
    return str(plan.nodes[plan.transformations.index(t)].uid)


def spark_slots(plan: Any, columnar: bool) -> List[Tuple[Optional[str], int, Dict[str, str]]]:
    """The query's sources in Spark's order, as far as the plan decides them (the tick source, when the query has
    one, comes after these): ``(source uid, leaf index within the source, leaf)``, the replay stream as ``(None, 0,
    {"kind": "replay"})``. ``columnar``: the query reads the columnar window's one source only."""
    sources = [t for t in plan.transformations if t.kind == "source"]
    slots: List[Tuple[Optional[str], int, Dict[str, str]]] = []
    if not columnar and any(isinstance(t.source, MicroBatchSource) for t in sources):
        slots.append((None, 0, {"kind": "replay", "format": "parquet", "path": "", "name": "replay"}))
    for t in sources:
        if isinstance(t.source, DataFrameSource):
            for k, leaf in enumerate(streaming_leaves(t.source.df)):
                slots.append((_uid(plan, t), k, leaf))
    return slots


def carried_leaves(plan: Any) -> Dict[str, List[Dict[str, str]]]:
    """``{uid: leaves}`` of the job's DataFrame sources whose position Spark alone keeps (no ``SourceRestart``)."""
    return {
        _uid(plan, t): streaming_leaves(t.source.df)
        for t in plan.transformations
        if t.kind == "source" and isinstance(t.source, DataFrameSource) and t.source.restart is None
    }


def uncarried(plan: Any) -> List[str]:
    """Why a savepoint cannot carry the position of some of the job's sources (empty when it can carry all)."""
    problems = []
    for t in plan.transformations:
        if t.kind != "source" or not isinstance(t.source, DataFrameSource) or t.source.restart is not None:
            continue
        for leaf in streaming_leaves(t.source.df):
            if leaf["kind"] == "cloudFiles":
                problems.append(
                    f"source {t.name!r} reads Auto Loader (cloudFiles), which keeps its discovered files in a state "
                    "store of its own under Spark's checkpoint that a savepoint does not carry"
                )
            elif leaf["kind"] not in CARRIED_KINDS:
                problems.append(
                    f"source {t.name!r} reads a {leaf['name']} stream, whose position only Spark's checkpoint keeps "
                    "(a savepoint carries file streams, Delta tables, Kafka and MicroBatchSource positions)"
                )
    return problems


def _log_text(path: str) -> List[str]:
    return storage.read_bytes(path).decode("utf-8").splitlines()


def carry(plan: Any, columnar: bool, checkpoint: str, batch: int, savepoint: str) -> Dict[str, Any]:
    """The positions after committed ``batch`` of the job's sources that Spark alone keeps, as a savepoint records
    them (``{uid: {"kind": SPARK_LOG, "leaves": [{"kind", "format", "path", "offset", "log"}]}}``, ``offset`` the
    leaf's entry of Spark's offsets log, ``log`` where its metadata log was copied under ``savepoint``, or None),
    and the batch's offsets-log metadata line (``"spark"``). A source without an entry (it had no data yet) has
    offset None: it starts as configured.

    Raises:
        StateError: the offsets log does not have the sources the plan expects (the message names the batch).
    """
    carried = carried_leaves(plan)
    if not carried:
        return {}
    path = storage.join(checkpoint, "spark", "offsets", str(batch))
    lines = _log_text(path)
    entries = lines[2:]
    slots = spark_slots(plan, columnar)
    if len(entries) < len(slots):
        msg = f"{path} has {len(entries)} sources, the job {len(slots)}: the savepoint cannot place their positions"
        raise StateError(msg)
    out: Dict[str, Any] = {}
    for i, (uid, _k, leaf) in enumerate(slots):
        if uid is None or uid not in carried:
            continue
        entry = None if entries[i].strip() == "-" else json.loads(entries[i])
        if entry is not None and not _is_offset(leaf["kind"], entry):
            msg = f"{path}: line {i + 3} ({entries[i][:80]}) is not the offset of {leaf['name']}, the job's source {i}"
            raise StateError(msg)
        log = None
        directory = storage.join(checkpoint, "spark", "sources", str(i))
        names = [n for n in storage.list_names(directory) if not n.startswith(".")]
        if names:
            log = f"spark-sources/{i}"
            for name in names:
                storage.write_bytes(storage.join(savepoint, log, name), storage.read_bytes(storage.join(directory, name)))
        position = out.setdefault(uid, {"kind": SPARK_LOG, "leaves": []})
        position["leaves"].append({**{k: leaf[k] for k in ("kind", "format", "path")}, "offset": entry, "log": log})
    out_meta = {"version": lines[0], "metadata": json.loads(lines[1])}
    return {"positions": out, "spark": out_meta}


def changed(saved: Dict[str, Any], leaves: List[Dict[str, str]]) -> Optional[str]:
    """How a source's streaming leaves differ from those its savepoint position was taken of (None: the same)."""
    then = [(x["kind"], x["format"], x["path"]) for x in saved["leaves"]]
    now = [(x["kind"], x["format"], x["path"]) for x in leaves]
    if then == now:
        return None
    return f"it read {then} when the savepoint was taken and reads {now} now"


def _same_leaf(leaf: Dict[str, str], slot: Dict[str, str]) -> bool:
    """Whether the query's leaf is the plan's slot (the replay stream: a Parquet file stream under the checkpoint)."""
    if slot["kind"] == "replay":
        return leaf["kind"] == "file"
    return leaf["name"] == slot["name"]


def seed(spark: Any, stream: Any, plan: Any, columnar: bool, checkpoint: str, restored: Dict[str, Any]) -> None:
    """Seed the new ``checkpoint``'s Spark logs with the savepoint's positions of ``restored`` (``restored.json``):
    ``offsets/0`` (the carried entries at the new query's places, ``-`` for every other source), each file stream's
    metadata log under ``sources/<i>``, the query's ``metadata`` (a new query id), then ``commits/0``, then
    :data:`SEEDED_FILE`; the query ``stream`` starts at
    batch 1. Done again by the next ``execute`` when interrupted before its end; never after.

    Raises:
        StateError: the query's sources are not where the plan puts them (nothing is started).
    """
    marker = storage.join(checkpoint, "flinkish", SEEDED_FILE)
    if storage.exists(marker):
        return
    leaves = streaming_leaves(stream)
    slots = spark_slots(plan, columnar)
    if len(leaves) < len(slots) or not all(_same_leaf(leaves[i], s[2]) for i, s in enumerate(slots)):
        msg = (
            f"from_savepoint: the query's sources {[x['name'] for x in leaves]} are not in the order the job's plan "
            f"gives {[s[2]['name'] for s in slots]}: the savepoint's positions cannot be placed"
        )
        raise StateError(msg)
    savepoint = restored["savepoint"]
    entries = ["-"] * len(leaves)
    for i, (uid, k, _leaf) in enumerate(slots):
        position = restored["positions"].get(uid) if uid is not None else None
        if position is None or position["kind"] != SPARK_LOG:
            continue
        leaf = position["leaves"][k]
        if leaf["offset"] is not None:
            entries[i] = json.dumps(leaf["offset"], separators=(",", ":"))
        if leaf["log"] is not None:
            directory = storage.join(savepoint, leaf["log"])
            for name in storage.list_names(directory):
                data = storage.read_bytes(storage.join(directory, name))
                storage.write_bytes(storage.join(checkpoint, "spark", "sources", str(i), name), data)
    meta = restored["spark"]
    metadata = dict(meta["metadata"])
    conf = {key: spark.conf.get(key, value) for key, value in (metadata.get("conf") or {}).items()}
    metadata.update({"batchWatermarkMs": 0, "batchTimestampMs": int(time.time() * 1000), "conf": conf})
    text = "\n".join([meta["version"], json.dumps(metadata, separators=(",", ":")), *entries])
    # a new query id, as a restored Flink job has a new job id (Spark refuses logs without the metadata file)
    query = json.dumps({"id": str(uuid.uuid4())}).encode("utf-8")
    storage.write_bytes(storage.join(checkpoint, "spark", "metadata"), query)
    storage.write_bytes(storage.join(checkpoint, "spark", "offsets", "0"), text.encode("utf-8"))
    storage.write_bytes(storage.join(checkpoint, "spark", "commits", "0"), b'v1\n{"nextBatchWatermarkMs":0}')
    storage.write_bytes(marker, json.dumps({"savepoint": savepoint, "entries": entries}).encode("utf-8"))


__all__ = [
    "CARRIED_KINDS",
    "SEEDED_FILE",
    "SPARK_LOG",
    "carried_leaves",
    "carry",
    "changed",
    "seed",
    "spark_slots",
    "streaming_leaves",
    "uncarried",
]
