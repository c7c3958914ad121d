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
``spark.databricks.delta.commitInfo.userMetadata`` on a session of its own.
An empty batch is committed too (an empty append): it carries the watermark.

Commit metadata and reading the log: :mod:`.delta_commits`; reading a table as a source (``env.from_delta``):
:mod:`.delta_source`.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Dict, List, Optional, Sequence

from ..datastream.plan import DeltaSinkSpec, Transformation
from .delta_commits import app_id, commit_metadata, last_committed_batch

_log = logging.getLogger("pyspark_flinkish.spark.delta")
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"


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
    "USER_METADATA_CONF",
    "with_delta_writers",
]
