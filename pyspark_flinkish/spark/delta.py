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

An append's batch ends as soon as its commit file is in the table's log (the commit is durable then); Delta's
post-commit work (the log checkpoint every ``delta.checkpointInterval`` commits, the checksum, the log clean-up)
finishes on a background thread of the writer while the next batch runs (:meth:`DeltaBatchWriter.flush` waits for
it). Delta 4.x offers no switch for this: its checkpoint hook runs inside the writing call, so the writer runs
that call on its thread and watches the log for its commit (:func:`.delta_commits.find_commit`). A MERGE, a Spark
Connect session, a table whose location :mod:`.storage` cannot reach and ``with_background_checkpoints(False)``
keep the post-commit work inside the batch.

Commit metadata and reading the log: :mod:`.delta_commits`; reading a table as a source (``env.from_delta``):
:mod:`.delta_source`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from ..datastream.plan import DeltaSinkSpec, Transformation
from . import storage
from .delta_commits import app_id, commit_metadata, find_commit, last_committed_batch, log_versions, table_identifier
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
        self._log_dir: Optional[str] = None  # the table's _delta_log ("": not reachable: post-commit in the batch)
        self._next_version = 0  # the first log version not yet read by find_commit
        self._background: List[Tuple[threading.Thread, List[BaseException], int]] = []  # (thread, failure, batch)
        self.background_commits = 0  # commits whose post-commit work ran after the batch ended
        self.post_commit_failures = 0  # background post-commit work that failed after its commit (logged)

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        # a session, a lock and threads do not travel
        state.update(_session=None, _shared=False, _lock=None, _background=[], _log_dir=None)
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def flush(self, timeout: Optional[float] = None) -> bool:
        """Wait for the post-commit work (log checkpoints) still running after earlier batches; True when none is
        left. Called when the job stops; a failure of that work is logged (its commit stands)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread, _, _ in list(self._background):
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        self._reap()
        return not self._background

    def _reap(self) -> None:
        """Forget the background threads that ended; log the failure of one whose commit had succeeded."""
        running = []
        for thread, failure, batch_id in self._background:
            if thread.is_alive():
                running.append((thread, failure, batch_id))
            elif failure:
                self.post_commit_failures += 1
                _log.warning("Delta sink %s: the post-commit work of batch %d failed after its commit (the batch "
                             "is committed; Delta writes the next log checkpoint at its next interval): %s",
                             self.sink.target, batch_id, failure[0])
        self._background = running

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
                    self._append(session, session.createDataFrame([], schema), metadata, empty=True, commit=(app, batch_id))
                elif self.sink.merge_keys:
                    self._merge(session, frame.last_per_key(self.sink.merge_keys, self.output_type), metadata)
                else:
                    self._append(session, frame.typed(self.output_type), metadata, empty=False, commit=(app, batch_id))
            except BaseException:
                del self._last[app]  # the commit may have happened: read the log again before the next write
                raise
            self._last[app] = batch_id
            self.commits += 1
            self.rows_written += frame.count

    def _append(self, spark: Any, df: Any, metadata: str, empty: bool, commit: Tuple[str, int]) -> None:
        """Append ``df`` (written by the executors: ``df.write`` runs in the session ``df`` belongs to) with the
        commit's ``userMetadata``; returns once the commit ``(app id, batch id)`` is durable (see the module's
        docstring for the post-commit work after it)."""
        writer = df.write.format("delta").mode("append").option("userMetadata", metadata)
        if self.sink.partition_by:
            writer = writer.partitionBy(*self.sink.partition_by)

        def save() -> None:
            # an empty batch is still a commit: it carries the watermark (Delta elides empty commits by default)
            with self._settings(spark, {SKIP_EMPTY_COMMITS_CONF: "false"} if empty else {}):
                if self.sink.path is not None:
                    writer.save(self.sink.path)
                else:
                    writer.saveAsTable(self.sink.table)

        log_dir = self._table_log(spark) if self.sink.background_checkpoints and not self._shared else None
        if log_dir is None:
            save()
        else:
            self._save_until_committed(save, log_dir, *commit)

    def _table_log(self, spark: Any) -> Optional[str]:
        """The table's ``_delta_log`` as :mod:`.storage` reaches it (the location Spark resolved, from ``DESCRIBE
        DETAIL``), or None when it cannot (an unsupported file system: the post-commit work stays in the batch)."""
        if self._log_dir is None:
            self._log_dir = ""
            try:
                detail = spark.sql(f"DESCRIBE DETAIL {table_identifier(self.sink.path, self.sink.table)}").first()
                log_dir = storage.join(str(detail["location"]), "_delta_log")
                versions = log_versions(log_dir)  # reachable: the commits so far
                self._next_version = versions[-1] + 1 if versions else 0
                self._log_dir = log_dir
            except Exception as exc:  # any reason it is unreachable: the batch keeps the work
                _log.info("Delta sink %s: the table's log is not reachable from Python (%s); Delta's post-commit "
                          "work stays inside each batch", self.sink.target, exc)
        return self._log_dir or None

    def _save_until_committed(self, save: Callable[[], None], log_dir: str, app: str, batch_id: int) -> None:
        """Run ``save`` on a thread of its own and return once its commit is in the log at ``log_dir`` (or ``save``
        ended: its failure is raised); the thread finishes Delta's post-commit work after that."""
        self._reap()
        done = threading.Event()
        failure: List[BaseException] = []

        def run() -> None:
            try:
                save()
            except BaseException as exc:  # handed to the batch, or logged when its commit had succeeded
                failure.append(exc)
            finally:
                done.set()

        from pyspark.util import InheritableThread

        # with the batch's local properties (the query's job group: its jobs are the batch's, and stopping the query
        # cancels them, as inside the batch); not a daemon: the interpreter waits for a checkpoint being written
        thread = InheritableThread(run, name=f"flinkish-delta-commit-{batch_id}")
        thread.start()
        delay = 0.005
        while not done.wait(delay):
            version, self._next_version = find_commit(log_dir, self._next_version, app, batch_id)
            if version is not None:
                self._background.append((thread, failure, batch_id))
                self.background_commits += 1
                return
            delay = min(delay * 2, 0.05)
        if failure:
            raise failure[0]

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
