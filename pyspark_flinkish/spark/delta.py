"""Delta Lake on the Spark executors: the exactly-once batch writer behind ``DeltaSink`` and ``env.from_delta``.

Writing (``DeltaBatchWriter``)
------------------------------
Every micro-batch of a sink becomes exactly one Delta commit. Each commit's ``userMetadata`` holds
``{"flinkish": {"watermark": W, "batch_id": N, "app_id": A}}``: ``A`` = :func:`app_id` (the Spark query id stored
in the checkpoint, plus the sink's uid), ``N`` the Spark batch id, ``W`` the watermark of the stream feeding the
sink after batch ``N``. The metadata is in the same atomic commit as the records (no extra rows or columns in
the user's table, no second table to keep consistent) and visible in ``DESCRIBE HISTORY``.

That record makes the writes idempotent: before its first write (and again after a write that failed, whose
commit may or may not have happened), the writer reads the table's log back to the newest commit of its app id
(:func:`last_committed_batch`); it skips a batch id not above the newest one it knows. Spark replays an
uncommitted batch with the same id, so a batch whose commit succeeded before a crash is not written again. After
that first read no read is needed: this writer is the only one of its app id (one query per checkpoint). This
replaces Delta's ``txnAppId``/``txnVersion`` write options, which give the same guarantee but make every commit
look its transaction up in a reconstruction of the table's state: three Spark jobs per commit, which tripled the
per-batch cost of a small micro-batch (``docs/benchmarks.md``, part 4). A MERGE (``merge_keys``) takes no write
options: its ``userMetadata`` is set with Delta's session setting
``spark.databricks.delta.commitInfo.userMetadata`` on a session of its own.
An empty batch is committed too (an empty append): it carries the watermark.

Reading (``from_delta``)
------------------------
Streaming with upstream watermarks reads the table's change data feed (the writer enables it on the tables it
creates), whose rows carry their ``_commit_version``. Per Spark batch the driver learns from the query's offset
log (``<checkpoint>/spark/offsets/<batch>``: Delta's ``reservoirVersion``/``index``) which commits are complete
after the batch, and processes the batch as one Flink micro-batch per group of commits: the rows of a commit,
then the watermark recorded with it. Commits without rows only advance the watermark, and merge into the step
before them (firing timers up to ``W1`` then up to ``W2`` with nothing in between is firing up to ``W2``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..core.errors import InvalidArgumentError, InvalidTypeError, UnsupportedFeatureError
from ..core.watermarks import WatermarkStrategy
from ..datastream.data_stream import DataStream
from ..datastream.plan import DeltaSinkSpec, Transformation
from ..datastream.sources import MicroBatch, MicroBatchSource
from .source_rows import DataFrameSource, epoch_millis

_log = logging.getLogger("pyspark_flinkish.spark.delta")
METADATA_KEY = "flinkish"
CDF_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
_END_INDEX_MIN = 2**62  # Delta's "version complete" index sentinels are near Long.MaxValue


# ---------------------------------------------------------------------------------------------- pure helpers
def app_id(checkpoint: str, sink_uid: str) -> str:
    """The app id of one sink of one query in its commits' metadata: ``flinkish-<query id>-<sink uid>``.

    The query id is the one Spark keeps in ``<checkpoint>/spark/metadata`` (stable across restarts of the same
    checkpoint, new for a new checkpoint); without it (never with a started query) a hash of the checkpoint's
    absolute path stands in. The sink uid is ``DataStreamSink.uid(...)`` if given, else the sink's position in
    the plan (give a uid if the pipeline may change while a batch is uncommitted).
    """
    query = None
    try:
        with open(os.path.join(checkpoint, "spark", "metadata"), encoding="utf-8") as f:
            query = json.loads(f.readline()).get("id")
    except (OSError, ValueError):
        pass
    if not query:
        query = hashlib.sha256(os.path.abspath(checkpoint).encode("utf-8")).hexdigest()[:32]
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


def _local_path(path: Optional[str]) -> Optional[str]:
    """The local file-system path of a table location, or None (an object store or other remote file system)."""
    if path is None:
        return None
    return path.removeprefix("file:") if "://" not in path or path.startswith("file:") else None


def last_committed_batch(spark: Any, path: Optional[str], table: Optional[str], app: str) -> Optional[int]:
    """The batch id of the newest commit of ``app`` in a Delta table (None: none, or no table yet).

    Reads the commit files of a local table directly, newest first, stopping at the first commit of ``app``;
    other tables through ``DeltaTable.history()`` (the commit infos, read on the driver). A commit file removed
    by Delta's log clean-up (``delta.logRetentionDuration``, 30 days by default) is not seen: a batch left
    uncommitted that long before a restart would be written again.
    """
    local = _local_path(path)
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
    from delta.tables import DeltaTable

    if table is not None:
        if not spark.catalog.tableExists(table):
            return None
        delta_table = DeltaTable.forName(spark, table)
    else:
        if not DeltaTable.isDeltaTable(spark, path):
            return None
        delta_table = DeltaTable.forPath(spark, path)
    for limit in (16, None):  # the newest commits first: usually the newest one is this app's
        history = delta_table.history(limit) if limit is not None else delta_table.history()
        rows = history.select("version", "userMetadata").orderBy("version", ascending=False).collect()
        for row in rows:
            found = parse_commit(row["userMetadata"])
            if found is not None and found[0] == app:
                return found[1]
        if limit is not None and len(rows) < limit:
            return None  # that was the whole history
    return None


def consumed_through(offset: Dict[str, Any]) -> int:
    """The last table version a Delta streaming offset has *completely* consumed.

    ``(v, index)``: files up to ``index`` of version ``v`` are consumed; a negative index (Delta's base index)
    means none of ``v``; an index near ``Long.MaxValue`` (Delta's end index) means all of ``v``. A partly
    consumed version counts as not consumed: its watermark waits for the batch that completes it.
    """
    version, index = int(offset["reservoirVersion"]), int(offset["index"])
    if offset.get("isStartingVersion") or offset.get("isInitialSnapshot"):
        return version - 1 if index < _END_INDEX_MIN else version
    return version if index >= _END_INDEX_MIN else version - 1


def read_offset(checkpoint: str, batch_id: int, table_id: str) -> Optional[Dict[str, Any]]:
    """The end offset of ``table_id``'s Delta source in Spark's offset log for ``batch_id`` (None if absent)."""
    path = os.path.join(checkpoint, "spark", "offsets", str(batch_id))
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines[2:]:  # "v1", the batch metadata, then one offset per source
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("reservoirId") == table_id:
            return data
    return None


def plan_steps(
    prev_through: int, cur_through: int, row_versions: Sequence[int], watermarks: Dict[int, Optional[int]]
) -> List[Tuple[List[int], Optional[int]]]:
    """Group one Spark batch's commits into Flink micro-batches: ``(versions whose rows go in, watermark after)``.

    A commit with rows starts a new step once the current one has a watermark; a commit without rows only
    raises the current step's watermark. Versions after ``cur_through`` (partly consumed) get no watermark yet.

    Example:
        >>> plan_steps(1, 4, [2, 3, 5], {2: 10, 3: None, 4: 30})
        [([2], 10), ([3, 4], 30), ([5], None)]
    """
    rows = set(row_versions)
    steps: List[Tuple[List[int], Optional[int]]] = []
    versions: List[int] = []
    wm: Optional[int] = None
    for v in sorted(set(range(prev_through + 1, cur_through + 1)) | rows):
        if v in rows and wm is not None:
            steps.append((versions, wm))
            versions, wm = [], None
        versions.append(v)
        w = watermarks.get(v) if v <= cur_through else None
        if w is not None:
            wm = w if wm is None else max(wm, w)
    if versions or not steps:
        steps.append((versions, wm))
    return steps


def _last_wins(rows: List[tuple], names: Sequence[str], keys: Sequence[str]) -> List[tuple]:  # type: ignore[type-arg]
    """One row per merge key: the last in emission order."""
    idx = [list(names).index(k) for k in keys]
    latest: Dict[tuple, tuple] = {}  # type: ignore[type-arg]
    for r in rows:
        k = tuple(r[i] for i in idx)
        latest.pop(k, None)
        latest[k] = r
    return list(latest.values())


# ---------------------------------------------------------------------------------------------- writer
class DeltaBatchWriter:
    """Writes one sink's micro-batches to a Delta table, exactly once per (query, sink, batch id).

    Called on the driver by both executors with the batch's values in Flink's order and a context
    (``checkpoint``, ``sink_uid``, ``watermark``). Lifecycle: one instance per sink of a pipeline; the table is
    created (with the change data feed on) at the first batch if it does not exist.
    """

    def __init__(self, sink: Any, output_type: Any) -> None:
        self.sink = sink
        self.output_type = output_type
        self._session: Any = None
        self._table_ready = False
        self._lock = threading.Lock()
        self._last: Dict[str, Optional[int]] = {}  # app id -> the newest batch id of it in the table (None: none)
        self.commits = 0  # commits made by this instance
        self.skipped = 0  # replayed batches found already committed and not written again

    def _own_session(self, spark: Any) -> Any:
        # MERGE takes its transaction id from session settings: a session of its own keeps them from other queries
        if self._session is None:
            self._session = spark.newSession()
            # an empty batch is still a commit: it carries the watermark (Delta elides empty commits by default)
            self._session.conf.set("spark.databricks.delta.skipRecordingEmptyCommits", "false")
        return self._session

    def _ensure_table(self, spark: Any, schema: Any) -> None:
        if self._table_ready:
            return
        from delta.tables import DeltaTable

        builder = DeltaTable.createIfNotExists(spark)
        builder = builder.location(self.sink.path) if self.sink.path is not None else builder.tableName(self.sink.table)
        builder = builder.addColumns(schema)
        if self.sink.partition_by:
            builder = builder.partitionedBy(*self.sink.partition_by)
        builder.property("delta.enableChangeDataFeed", "true").execute()
        self._table_ready = True

    def _table(self, spark: Any) -> Any:
        from delta.tables import DeltaTable

        if self.sink.path is not None:
            return DeltaTable.forPath(spark, self.sink.path)
        return DeltaTable.forName(spark, self.sink.table)

    def __call__(self, spark: Any, values: List[Any], batch_id: int, context: Dict[str, Any]) -> None:
        from .types import to_rows, to_spark_type

        with self._lock:
            session = self._own_session(spark)
            schema = to_spark_type(self.output_type)
            rows = to_rows(values, self.output_type)
            app = app_id(context.get("checkpoint", ""), str(context.get("sink_uid", "sink")))
            metadata = commit_metadata(context.get("watermark"), batch_id, app)
            self._ensure_table(session, schema)
            if app not in self._last:  # first write of this writer (or after a failed one): the table's log knows
                self._last[app] = last_committed_batch(session, self.sink.path, self.sink.table, app)
            last = self._last[app]
            if last is not None and batch_id <= last:
                self.skipped += 1
                _log.info("Delta sink %s: batch %d is already committed (last: %d); not written again", app, batch_id, last)
                return
            try:
                if self.sink.merge_keys and rows:
                    self._merge(session, _last_wins(rows, schema.names, self.sink.merge_keys), schema, metadata)
                else:
                    self._append(session, session.createDataFrame(rows, schema), metadata)
            except BaseException:
                del self._last[app]  # the commit may have happened: read the log again before the next write
                raise
            self._last[app] = batch_id
            self.commits += 1

    def _append(self, spark: Any, df: Any, metadata: str) -> None:
        writer = df.write.format("delta").mode("append").option("userMetadata", metadata)
        if self.sink.partition_by:
            writer = writer.partitionBy(*self.sink.partition_by)
        if self.sink.path is not None:
            writer.save(self.sink.path)
        else:
            writer.saveAsTable(self.sink.table)

    def _merge(self, spark: Any, rows: List[tuple], schema: Any, metadata: str) -> None:  # type: ignore[type-arg]
        source = spark.createDataFrame(rows, schema)
        condition = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in self.sink.merge_keys)
        spark.conf.set(USER_METADATA_CONF, metadata)
        try:
            (
                self._table(spark)
                .alias("t")
                .merge(source.alias("s"), condition)
                .whenMatchedUpdateAll()
                .whenNotMatchedInsertAll()
                .execute()
            )
        finally:
            spark.conf.unset(USER_METADATA_CONF)


# ---------------------------------------------------------------------------------------------- source
@dataclass
class DeltaTableSource(DataFrameSource):
    """A Delta table read as a stream by the foreachBatch executor (see the module docstring)."""

    path: str = ""
    table_id: str = ""
    uid: str = ""
    starting_version: int = 0
    upstream_watermarks: bool = False
    value_columns: List[str] = field(default_factory=list)
    version_column: Optional[str] = None

    def __post_init__(self) -> None:
        self.explicit_watermarks = self.upstream_watermarks
        if not self.upstream_watermarks:
            self.steps = None  # type: ignore[assignment]  # watermarks from the data: no per-commit steps

    def steps(self, driver: Any, df: Any, batch_id: int) -> Tuple[List[Any], List[Dict[int, Optional[int]]]]:
        """The driver's hook: this Spark batch as Flink micro-batches, each with its explicit watermark."""
        from pyspark.sql import functions as F

        t = next(t for t in driver.plan.transformations if t.kind == "source" and t.source is self)
        uid = driver.plan.nodes[driver.plan.transformations.index(t)].uid
        prev = read_offset(driver.checkpoint, batch_id - 1, self.table_id) if batch_id > 0 else None
        prev_through = consumed_through(prev) if prev is not None else self.starting_version - 1
        cur = read_offset(driver.checkpoint, batch_id, self.table_id)
        cur_through = consumed_through(cur) if cur is not None else prev_through
        mine = F.col("src") == uid
        version = F.col("ord").getItem(0)
        row_versions = [int(r["v"]) for r in df.filter(mine).select(version.alias("v")).distinct().collect()]
        wanted = sorted(set(range(prev_through + 1, cur_through + 1)))
        watermarks = commit_watermarks(driver.spark, self.path, wanted)
        frames, explicit = [], []
        for i, (versions, wm) in enumerate(plan_steps(prev_through, cur_through, row_versions, watermarks)):
            cond = mine & version.isin(versions) if versions else F.lit(False)
            if i == 0:
                cond = cond | ~mine  # other sources' rows go with the first step
            frames.append(df.filter(cond))
            explicit.append({t.id: wm} if wm is not None else {})
        return frames, explicit


def commit_watermarks(spark: Any, path: str, versions: Sequence[int]) -> Dict[int, Optional[int]]:
    """The watermark recorded with each commit (None where none is): from ``_delta_log`` when the table is on a
    local path, else from the table's history."""
    if not versions:
        return {}
    out: Dict[int, Optional[int]] = {}
    local = _local_path(path)
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
        from delta.tables import DeltaTable

        history = DeltaTable.forPath(spark, path).history().select("version", "userMetadata").collect()
        recorded = {int(r["version"]): parse_watermark(r["userMetadata"]) for r in history}
        out.update({v: recorded.get(v) for v in missing})
    return out


def from_delta(
    env: Any,
    path: str,
    timestamp_column: Optional[str] = None,
    watermark_strategy: Optional[WatermarkStrategy] = None,
    bounded: bool = False,
    version: Optional[int] = None,
    starting_version: Optional[int] = None,
    source_name: str = "DeltaSource",
) -> DataStream:
    """See :meth:`SparkStreamExecutionEnvironment.from_delta`."""
    spark = env.spark
    from delta.tables import DeltaTable

    if not DeltaTable.isDeltaTable(spark, path):
        msg = f"from_delta: {path!r} is not a Delta table (create it first, e.g. by running the job writing it)"
        raise InvalidArgumentError(msg)
    detail = DeltaTable.forPath(spark, path).detail().first()
    if bounded:
        return _bounded(env, path, timestamp_column, watermark_strategy, version, source_name)
    if version is not None:
        msg = "from_delta: version= reads a snapshot; give bounded=True (streaming reads start at starting_version=)"
        raise InvalidArgumentError(msg)
    cdf = str((detail["properties"] or {}).get("delta.enableChangeDataFeed", "false")).lower() == "true"
    upstream = watermark_strategy is None
    if upstream and not cdf:
        msg = (
            f"from_delta({path!r}) takes the watermarks recorded by the writing job from the table's change data feed, "
            "which is off for this table: enable it (ALTER TABLE ... SET TBLPROPERTIES "
            "(delta.enableChangeDataFeed = true); DeltaSink does so on the tables it creates) or give a "
            "watermark_strategy to generate watermarks from the data"
        )
        raise InvalidArgumentError(msg)
    if upstream and env.backend != "foreach_batch":
        msg = (
            "from_delta with upstream watermarks needs the foreachBatch executor (the default): the "
            "applyInPandasWithState executor derives its watermark from event times; give a watermark_strategy"
        )
        raise UnsupportedFeatureError(msg)
    reader = spark.readStream.format("delta")
    start = starting_version if starting_version is not None else (0 if upstream else None)
    if cdf:
        reader = reader.option("readChangeFeed", "true").option("startingVersion", str(start if start is not None else 0))
    elif start is not None:
        reader = reader.option("startingVersion", str(start))
    df = reader.load(path)
    columns = [c for c in df.columns if c not in CDF_COLUMNS] if cdf else list(df.columns)
    if cdf:
        df = df.filter("_change_type IN ('insert', 'update_postimage')")
    if timestamp_column is not None and timestamp_column not in columns:
        msg = f"from_delta: timestamp_column {timestamp_column!r} is not a column of {path!r} (columns: {columns})"
        raise InvalidTypeError(msg)
    strategy = watermark_strategy if watermark_strategy is not None else WatermarkStrategy.no_watermarks()
    source = DeltaTableSource(
        df,
        timestamp_column,
        None,
        [],
        [],
        path=path,
        table_id=str(detail["id"]),
        starting_version=start or 0,
        upstream_watermarks=upstream,
        value_columns=columns,
        version_column="_commit_version" if cdf else None,
    )
    return DataStream(env, Transformation("source", source_name, source=source, watermark_strategy=strategy))


def _bounded(
    env: Any,
    path: str,
    timestamp_column: Optional[str],
    watermark_strategy: Optional[WatermarkStrategy],
    version: Optional[int],
    source_name: str,
) -> DataStream:
    """A snapshot as one micro-batch, then end of input (collected on the driver)."""
    reader = env.spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", str(version))
    rows = reader.load(path).collect()
    strategy = watermark_strategy
    if strategy is None:
        if timestamp_column is None:
            strategy = WatermarkStrategy.no_watermarks()
        else:
            strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(_ColumnTimestamp(timestamp_column))
    elif timestamp_column is not None:
        strategy = strategy.with_timestamp_assigner(_ColumnTimestamp(timestamp_column))
    return env.from_source(MicroBatchSource([MicroBatch(rows)], end_of_input=True), strategy, source_name)


class _ColumnTimestamp:
    """A timestamp assigner reading a timestamp or epoch-millisecond column of a ``Row``."""

    def __init__(self, column: str) -> None:
        self.column = column

    def __call__(self, value: Any, _previous: Any) -> int:
        return epoch_millis(value[self.column])

    def extract_timestamp(self, value: Any, record_timestamp: Any) -> int:
        return self(value, record_timestamp)


def with_delta_writers(sinks: List[Transformation]) -> List[Transformation]:
    """Give every ``DeltaSink`` of the pipeline its :class:`DeltaBatchWriter` (the sink only describes the table):
    one instance per sink, kept in the sink's spec as its ``writer`` and reused by later runs of the same
    environment. Returns ``sinks``."""
    for t in sinks:
        if isinstance(t.spec, DeltaSinkSpec) and t.spec.writer is None:
            t.spec.writer = DeltaBatchWriter(t.spec.sink, t.inputs[0].output_type)
    return sinks


__all__ = [
    "DeltaBatchWriter",
    "DeltaTableSource",
    "app_id",
    "commit_metadata",
    "consumed_through",
    "last_committed_batch",
    "parse_commit",
    "from_delta",
    "parse_watermark",
    "plan_steps",
    "with_delta_writers",
]
