"""``DeltaSink``: exactly-once Delta Lake output of a stream, after Flink's Delta connector.

Flink's ``DeltaSink.forRowData(path, hadoopConf, rowType).withPartitionColumns(...).build()`` becomes::

    results.sink_to(DeltaSink.for_path("/lake/silver/scores").with_partition_columns("day"))
    results.sink_to(DeltaSink.for_table("silver.scores").with_merge_keys("player", "window_start"))

The rows' schema is the stream's ``output_type`` (e.g. ``Types.ROW_NAMED([...], [...])``). Every micro-batch
is one Delta commit that records its app id and batch id (``userMetadata``), so a replayed batch is found in the
table's log and not written twice (see ``docs/kafka-and-delta.md``). This module describes the sink and imports
no executor: the Spark executors build its writer (:mod:`pyspark_flinkish.spark.delta`, ``with_delta_writers``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence, Tuple

from ...core.errors import InvalidArgumentError, InvalidPipelineError, InvalidTypeError
from ..executors import require_spark
from ..plan import DeltaSinkSpec, Transformation

if TYPE_CHECKING:
    from ..data_stream import DataStream, DataStreamSink


class DeltaSink:
    """A Delta Lake table as the sink of a stream (``stream.sink_to(sink)``); immutable, built fluently.

    Modes:

    * append (default): every record becomes a row;
    * merge by key (``with_merge_keys``): a Delta ``MERGE`` upserts each record by its key fields, so the last
      firing of a window (late firings included) wins; within one micro-batch the last record of a key in
      emission order wins.

    Args:
        path: the table's location (``for_path``), or None with ``table``.
        table: the catalog table's name (``for_table``), or None with ``path``.
        partition_by: partition columns of a table this sink creates.
        merge_keys: key columns for merge mode (empty: append).
        background_checkpoints: True (default): an append's batch ends once its commit is in the table's log;
            Delta's post-commit work (the log checkpoint of every ``delta.checkpointInterval``-th commit, the
            checksum, the log clean-up) finishes on a background thread while the next batch runs
            (``with_background_checkpoints(False)``: inside the batch, as Delta's own writers do).

    Differences from Flink: Flink's DeltaSink commits on Flink checkpoints (two-phase commit); here every Spark
    micro-batch is one commit, idempotent per (query, sink, batch id). It runs on the Spark executors only.
    """

    def __init__(
        self,
        path: Optional[str] = None,
        table: Optional[str] = None,
        partition_by: Sequence[str] = (),
        merge_keys: Sequence[str] = (),
        background_checkpoints: bool = True,
    ) -> None:
        if (path is None) == (table is None):
            msg = (
                "DeltaSink needs a path (DeltaSink.for_path) or a table name (DeltaSink.for_table), not both; "
                f"got path={path!r}, table={table!r}"
            )
            raise InvalidArgumentError(msg)
        for what, value in (("path", path), ("table", table)):
            if value is not None and (not isinstance(value, str) or not value):
                msg = f"DeltaSink {what} must be a non-empty string; got {value!r}"
                raise InvalidTypeError(msg)
        self.path = path
        self.table = table
        self.partition_by: Tuple[str, ...] = _names("partition column", partition_by)
        self.merge_keys: Tuple[str, ...] = _names("merge key", merge_keys)
        if not isinstance(background_checkpoints, bool):
            msg = f"DeltaSink background_checkpoints must be True or False; got {background_checkpoints!r}"
            raise InvalidTypeError(msg)
        self.background_checkpoints = background_checkpoints

    @staticmethod
    def for_path(path: str, partition_by: Sequence[str] = (), merge_keys: Sequence[str] = ()) -> DeltaSink:
        """A sink writing the Delta table at ``path`` (created at the first batch if missing)."""
        return DeltaSink(path=path, partition_by=partition_by, merge_keys=merge_keys)

    @staticmethod
    def for_table(name: str, partition_by: Sequence[str] = (), merge_keys: Sequence[str] = ()) -> DeltaSink:
        """A sink writing the catalog table ``name`` (created at the first batch if missing)."""
        return DeltaSink(table=name, partition_by=partition_by, merge_keys=merge_keys)

    def with_partition_columns(self, *columns: str) -> DeltaSink:
        """A copy partitioning the table it creates by ``columns`` (Flink: ``withPartitionColumns``)."""
        return DeltaSink(self.path, self.table, _flatten(columns), self.merge_keys, self.background_checkpoints)

    def with_merge_keys(self, *keys: str) -> DeltaSink:
        """A copy in merge mode: records upsert by ``keys`` (the last firing of a key wins)."""
        keys = _flatten(keys)
        if not keys:
            msg = "with_merge_keys needs at least one key column, e.g. with_merge_keys('key', 'window_start')"
            raise InvalidArgumentError(msg)
        return DeltaSink(self.path, self.table, self.partition_by, keys, self.background_checkpoints)

    def with_background_checkpoints(self, enabled: bool = True) -> DeltaSink:
        """A copy that finishes Delta's post-commit work of an append (the log checkpoint every
        ``delta.checkpointInterval`` commits) in the background (``True``, the default) or inside the batch
        (``False``). Either way every commit's records are in the table when the batch ends, and no table property
        is changed; see ``docs/kafka-and-delta.md``, *Log checkpoints*."""
        return DeltaSink(self.path, self.table, self.partition_by, self.merge_keys, enabled)

    def build(self) -> DeltaSink:
        """Flink's builders end with ``build()``; this sink is already built."""
        return self

    @property
    def target(self) -> str:
        return self.path if self.path is not None else f"table {self.table}"

    def _attach(self, stream: DataStream) -> DataStreamSink:
        """``DataStream.sink_to`` calls this: adds the sink to the stream's environment."""
        from ..data_stream import DataStreamSink

        env = stream.get_execution_environment()
        require_spark(env.executor, "DeltaSink", f"({self.target})")
        output_type = stream.get_type()
        if output_type is None:
            msg = (
                f"DeltaSink({self.target}) needs the stream's type for the table's schema: give output_type="
                "Types.ROW_NAMED([...], [...]) to the map/process/window function producing it, as PyFlink does"
            )
            raise InvalidPipelineError(msg)
        names = list(output_type.field_names or ()) if output_type.name in ("ROW", "TUPLE") else ["value"]
        if output_type.name == "TUPLE" and not output_type.field_names:
            names = [f"f{i}" for i in range(len(output_type.children))]
        for what, cols in (("merge key", self.merge_keys), ("partition column", self.partition_by)):
            unknown = [c for c in cols if c not in names]
            if unknown:
                msg = f"DeltaSink({self.target}): {what}s {unknown} are not fields of the stream's type {output_type!r} ({names})"
                raise InvalidPipelineError(msg)
        # the Spark executors build the writer of this description (``spark/delta.py``'s ``with_delta_writers``)
        t = Transformation("sink", "DeltaSink", [stream._t], sink=None, spec=DeltaSinkSpec(sink=self))
        env._add_sink(t)
        return DataStreamSink(t)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeltaSink) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def _fields(self) -> tuple:  # type: ignore[type-arg]
        return (self.path, self.table, self.partition_by, self.merge_keys, self.background_checkpoints)

    def __repr__(self) -> str:
        target = f"for_path({self.path!r})" if self.path is not None else f"for_table({self.table!r})"
        out = f"DeltaSink.{target}"
        if self.partition_by:
            out += f".with_partition_columns{self.partition_by!r}"
        if self.merge_keys:
            out += f".with_merge_keys{self.merge_keys!r}"
        if not self.background_checkpoints:
            out += ".with_background_checkpoints(False)"
        return out


def _flatten(values: Sequence[Any]) -> Tuple[str, ...]:
    out = []
    for v in values:
        out.extend(v if isinstance(v, (list, tuple)) else [v])
    return tuple(out)


def _names(what: str, values: Sequence[str]) -> Tuple[str, ...]:
    if isinstance(values, str):
        values = [values]
    out = tuple(values)
    for v in out:
        if not isinstance(v, str) or not v:
            msg = f"DeltaSink {what}s must be non-empty strings; got {v!r}"
            raise InvalidTypeError(msg)
    if len(set(out)) != len(out):
        msg = f"DeltaSink {what}s must be distinct; got {list(out)}"
        raise InvalidArgumentError(msg)
    return out


__all__ = ["DeltaSink"]
