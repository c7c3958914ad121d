"""Delta Lake on the Spark executors: the exactly-once batch writer behind ``DeltaSink``.

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
``spark.databricks.delta.commitInfo.userMetadata`` on a session of its own (on Spark Connect, which has no
``newSession()``, on the job's session for the MERGE: see :class:`DeltaBatchWriter`).
An empty batch is committed too (an empty append): it carries the watermark.

Commit metadata and reading the log: :mod:`.delta_commits`; reading a table as a source (``env.from_delta``):
:mod:`.delta_source`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from typing import Any, Dict, Iterator, List, Optional

from ..datastream.plan import DeltaSinkSpec, Transformation
from .delta_commits import app_id, commit_metadata, last_committed_batch, table_identifier
from .sink_frames import SinkFrame

_log = logging.getLogger("pyspark_flinkish.spark.delta")
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"


# ---------------------------------------------------------------------------------------------- writer
SKIP_EMPTY_COMMITS_CONF = "spark.databricks.delta.skipRecordingEmptyCommits"

# Spark Connect: the writers of this process share the job's session, whose settings they change for a write
_SHARED_SESSION_LOCK = threading.Lock()


def file_system_settings(spark: Any) -> Dict[str, str]:
    """The session's run-time settings of Hadoop file systems (``fs.*``, e.g. ``fs.s3a.endpoint`` set with
    ``spark.conf.set``): Spark adds a session's settings to the Hadoop configuration of its queries, so these reach
    ``s3a://``, ``abfss://``, ``gs://`` paths; a ``newSession()`` does not inherit them."""
    try:
        settings = spark.conf.getAll
    except Exception:  # an older pyspark or a stand-in: nothing to carry over
        return {}
    return {str(k): str(v) for k, v in dict(settings).items() if str(k).startswith("fs.") and v is not None}


class DeltaBatchWriter:
    """Writes one sink's micro-batches to a Delta table, exactly once per (query, sink, batch id).

    Called on the driver by both executors with the batch's records as a :class:`~.sink_frames.SinkFrame` (they stay
    on the executors, which write the files; the driver commits) and a context (``checkpoint``, ``sink_uid``,
    ``watermark``); a merge keeps each key's last record in Flink's order
    (:meth:`~.sink_frames.SinkFrame.last_per_key`). Lifecycle: one instance per sink of a pipeline; the table is
    created (with the change data feed on) at the first batch if it does not exist.

    Everything goes through Spark SQL and the DataFrame writer (``CREATE TABLE IF NOT EXISTS``, ``MERGE INTO`` over a
    global temporary view, ``DESCRIBE HISTORY``), never delta-spark's ``DeltaTable`` API, so that the same code runs on a
    Spark Connect session without Delta Connect. The Delta settings a write needs (``userMetadata`` of a MERGE,
    recording an empty commit) are session settings: on a classic session they are set on a session of the
    writer's own (``newSession()``); a Connect session has none, so they are set on the job's session for the
    write and restored after it, under a lock shared by the writers of the process.
    """

    def __init__(self, sink: Any, output_type: Any) -> None:
        self.sink = sink
        self.output_type = output_type
        self._session: Any = None
        self._shared = False  # True: self._session is the job's session (Spark Connect), not one of our own
        self._table_ready = False
        self._lock = threading.Lock()
        self._last: Dict[str, Optional[int]] = {}  # app id -> the newest batch id of it in the table (None: none)
        self.commits = 0  # commits made by this instance
        self.skipped = 0  # replayed batches found already committed and not written again
        self.rows_written = 0  # records committed by this instance

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state.update(_session=None, _shared=False, _lock=None)  # a session and a lock do not travel
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _own_session(self, spark: Any) -> Any:
        # MERGE takes its commit's userMetadata from session settings: a session of its own keeps them from other
        # queries; Spark Connect has no newSession(): the settings go on the job's session for each write
        if self._session is None:
            from .connect import is_connect

            if is_connect(spark):
                self._session, self._shared = spark, True
            else:
                self._session = spark.newSession()
                # a new session starts from the static settings only: the job session's file-system settings set at
                # run time (spark.conf.set("fs.s3a.access.key", ...)), which Spark puts into each query's Hadoop
                # configuration, must reach the table's files from this one too
                for key, value in file_system_settings(spark).items():
                    self._session.conf.set(key, value)
                # an empty batch is still a commit: it carries the watermark (Delta elides empty commits by default)
                self._session.conf.set(SKIP_EMPTY_COMMITS_CONF, "false")
        return self._session

    @contextlib.contextmanager
    def _settings(self, spark: Any, settings: Dict[str, str]) -> Iterator[None]:
        """``settings`` on ``spark`` for one write: unset after it on the writer's own session (which records empty
        commits from its start); on the job's shared (Connect) session set under the process's lock and restored to
        their previous values."""
        if not self._shared:
            settings = {k: v for k, v in settings.items() if k != SKIP_EMPTY_COMMITS_CONF}
        if not settings:
            yield
            return
        with _SHARED_SESSION_LOCK if self._shared else contextlib.nullcontext():
            previous = {k: spark.conf.get(k, None) for k in settings} if self._shared else {}
            for k, v in settings.items():
                spark.conf.set(k, v)
            try:
                yield
            finally:
                for k in settings:
                    if previous.get(k) is None:
                        spark.conf.unset(k)
                    else:
                        spark.conf.set(k, previous[k])

    def _ensure_table(self, spark: Any, schema: Any) -> None:
        if self._table_ready:
            return
        columns = ", ".join(f"{_quote(f.name)} {f.dataType.simpleString()}" for f in schema.fields)
        partitioned = ""
        if self.sink.partition_by:
            partitioned = f" PARTITIONED BY ({', '.join(_quote(c) for c in self.sink.partition_by)})"
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS {table_identifier(self.sink.path, self.sink.table)} ({columns}) USING delta"
            f"{partitioned} TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"
        )
        self._table_ready = True

    def __call__(self, spark: Any, frame: SinkFrame, batch_id: int, context: Dict[str, Any]) -> None:
        """Commit the batch's records (``frame``, still on the executors) unless this batch id is committed."""
        from .types import to_spark_type

        with self._lock:
            session = self._own_session(frame.session)
            schema = to_spark_type(self.output_type)
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
                if frame.count == 0:  # still a commit: it carries the watermark
                    self._append(session, session.createDataFrame([], schema), metadata, empty=True)
                elif self.sink.merge_keys:
                    self._merge(session, frame.last_per_key(self.sink.merge_keys, self.output_type), metadata)
                else:
                    self._append(session, frame.typed(self.output_type), metadata, empty=False)
            except BaseException:
                del self._last[app]  # the commit may have happened: read the log again before the next write
                raise
            self._last[app] = batch_id
            self.commits += 1
            self.rows_written += frame.count

    def _append(self, spark: Any, df: Any, metadata: str, empty: bool) -> None:
        """Append ``df`` (written by the executors: ``df.write`` runs in the session ``df`` belongs to) with the
        commit's ``userMetadata``."""
        writer = df.write.format("delta").mode("append").option("userMetadata", metadata)
        if self.sink.partition_by:
            writer = writer.partitionBy(*self.sink.partition_by)
        # an empty batch is still a commit: it carries the watermark (Delta elides empty commits by default)
        with self._settings(spark, {SKIP_EMPTY_COMMITS_CONF: "false"} if empty else {}):
            if self.sink.path is not None:
                writer.save(self.sink.path)
            else:
                writer.saveAsTable(self.sink.table)

    def _merge(self, spark: Any, df: Any, metadata: str) -> None:
        """MERGE ``df`` (one row per merge key) into the table on the writer's session ``spark``: ``df`` belongs to
        the query's session, so it is reached through a global temporary view (visible to every session)."""
        view = f"flinkish_delta_merge_{uuid.uuid4().hex}"
        df.createOrReplaceGlobalTempView(view)
        condition = " AND ".join(f"t.{_quote(k)} <=> s.{_quote(k)}" for k in self.sink.merge_keys)
        try:
            with self._settings(spark, {USER_METADATA_CONF: metadata}):
                spark.sql(
                    f"MERGE INTO {table_identifier(self.sink.path, self.sink.table)} AS t USING global_temp.{view} AS s "
                    f"ON {condition} WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
                )
        finally:
            spark.catalog.dropGlobalTempView(view)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


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
    "SKIP_EMPTY_COMMITS_CONF",
    "USER_METADATA_CONF",
    "file_system_settings",
    "with_delta_writers",
]
