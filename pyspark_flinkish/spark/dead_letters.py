"""Dead letters: malformed Kafka records in a Delta table, exactly once, while the stream goes on.

A Kafka source with the policy ``dead_letter`` (the default, ``MalformedRecordPolicy``) sends its malformed
records to an internal side output (``spark/kafka.py``). When a job starts, :func:`with_dead_letter_sinks` gives
each such source a sink on that side output whose batch writer, :class:`DeadLetterWriter`, appends the batch's
dead letters to a Delta table through the same :class:`~pyspark_flinkish.spark.delta.DeltaBatchWriter` as
``DeltaSink``: one commit per Spark batch id that records its app id (``flinkish-<query id>-<sink uid>``) and
batch id, so a replayed micro-batch adds no row twice. Batches without dead letters write
nothing (the table appears with the first one).

The sinks are added after every transformation of the user's pipeline, so the positions (default uids) of the
user's operators do not change; their uid is ``dead-letters:<source name>`` (``-2``, ``-3``, ... for repeated
names).
"""

from __future__ import annotations

import datetime as _dt
import logging
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from ..core.errors import FlinkishError
from ..core.typeinfo import Types
from ..datastream.connectors.delta import DeltaSink
from ..datastream.connectors.kafka import DEAD_LETTER_COLUMNS, MalformedRecord
from ..datastream.plan import BatchWriterSinkSpec, DeadLetterRouteSpec, Transformation, topological
from . import storage
from .checkpoint import spark_query_id
from .sink_frames import SinkFrame

_log = logging.getLogger("pyspark_flinkish.spark.dead_letters")

class DeadLetterWriteError(FlinkishError, RuntimeError):
    """The dead-letter table could not be written (the query stops; a restart retries the batch)."""


DEFAULT_DIRECTORY = "dead_letters"
"""The default table: ``<checkpoint_location>/dead_letters``."""

DEAD_LETTER_TYPE = Types.ROW_NAMED(
    list(DEAD_LETTER_COLUMNS),
    [
        Types.LONG(),  # batch_id: the Spark micro-batch that read the record
        Types.STRING(),  # source: the source's name (from_kafka(source_name=...) / from_source(..., name))
        Types.STRING(),  # topic
        Types.INT(),  # partition
        Types.LONG(),  # offset
        Types.SQL_TIMESTAMP(),  # kafka_timestamp: the record's Kafka timestamp
        Types.PICKLED_BYTE_ARRAY(),  # key: raw bytes (null without a key)
        Types.PICKLED_BYTE_ARRAY(),  # value: raw bytes (null for a tombstone)
        Types.STRING(),  # reason
        Types.SQL_TIMESTAMP(),  # recorded_at: when the driver wrote the batch (wall clock, UTC)
        Types.STRING(),  # query_id: Spark's query id (stable across restarts of one checkpoint)
    ],
)
"""The dead-letter table's schema."""


def dead_letter_row(record: MalformedRecord, source: str, batch_id: int, recorded_at: _dt.datetime, query_id: str) -> tuple:  # type: ignore[type-arg]
    """One dead-letter row (columns :data:`DEAD_LETTER_TYPE`) of a malformed record."""
    kafka_ts = _dt.datetime.fromtimestamp(record.timestamp / 1000, tz=_dt.UTC)
    return (
        batch_id, source, record.topic, record.partition, record.offset, kafka_ts, record.key, record.value,
        record.reason, recorded_at, query_id,
    )


def query_id(checkpoint: str) -> str:
    """Spark's query id from ``<checkpoint>/spark/metadata`` ("" before the query wrote it)."""
    return spark_query_id(checkpoint)


class DeadLetterWriter:
    """The batch writer of one source's dead-letter sink (called on the driver with the batch's
    :class:`MalformedRecord`s as a :class:`~.sink_frames.SinkFrame`: the rows are made and written on the
    executors; see the module docstring)."""

    def __init__(self, source: str, table: DeltaSink) -> None:
        from .delta import DeltaBatchWriter

        self.source = source
        self.table = table
        self.delta = DeltaBatchWriter(table, DEAD_LETTER_TYPE)

    def __call__(self, spark: Any, frame: SinkFrame, batch_id: int, context: Dict[str, Any]) -> None:
        if frame.count == 0:
            return  # nothing to commit; a replay of a batch that had dead letters is found in the log and skipped
        now = _dt.datetime.now(_dt.UTC)
        qid = query_id(context.get("checkpoint", ""))
        source = self.source

        def row(record: MalformedRecord) -> tuple:  # type: ignore[type-arg]
            return dead_letter_row(record, source, batch_id, now, qid)  # on the executors

        letters = SinkFrame(frame.rows, DEAD_LETTER_TYPE, frame.count, convert=row, layout=frame.layout)
        try:
            self.delta(spark, letters, batch_id, context)
        except Exception as exc:
            cause = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
            msg = (
                f"could not write {frame.count} dead letters of Kafka source {self.source!r} (batch {batch_id}) to the "
                f"Delta table {self.table.target}: {cause}. Check that Delta Lake is on Spark's classpath and that "
                "the table, if it exists, has the dead-letter schema; or choose another malformed-records policy"
            )
            raise DeadLetterWriteError(msg) from exc


@dataclass(eq=False, kw_only=True)
class DeadLetterSinkSpec(BatchWriterSinkSpec):
    """The sink the Spark executors add for a Kafka source's dead letters (``writer``: a :class:`DeadLetterWriter`)."""

    source: str


def with_dead_letter_sinks(sinks: List[Transformation], checkpoint: str) -> List[Transformation]:
    """``sinks`` plus one dead-letter sink per Kafka source with the policy ``dead_letter`` that they read
    (new transformations, created after the user's, so they never shift the user's default uids)."""
    out = list(sinks)
    used: Dict[str, int] = {}
    for t in topological(sinks):
        if not isinstance(t.spec, DeadLetterRouteSpec):
            continue
        from .kafka import DEAD_LETTER_TAG

        source = str(t.spec.source)
        table: Optional[DeltaSink] = t.spec.table
        if table is None:
            table = DeltaSink.for_path(storage.join(checkpoint, DEFAULT_DIRECTORY))
            _log.info(
                "malformed records of Kafka source %r go to the dead-letter Delta table %s (the default, under the "
                "checkpoint location; choose another with set_dead_letter_table(...) / from_kafka(dead_letter_table=...))",
                source, table.target,
            )
        used[source] = used.get(source, 0) + 1
        uid = f"dead-letters:{source}" + (f"-{used[source]}" if used[source] > 1 else "")
        side = Transformation("side_output", f"DeadLetters({source})", [t], tag=DEAD_LETTER_TAG)
        out.append(
            Transformation(
                "sink",
                f"DeadLetterSink({source})",
                [side],
                spec=DeadLetterSinkSpec(writer=DeadLetterWriter(source, table), source=source),
                uid=uid,
            )
        )
    return out


def dead_letter_counts(transformations: List[Transformation], sink_counts: Dict[int, int]) -> Dict[str, int]:
    """Dead letters written this batch, per source name (the driver's progress ``dead_letters``), from the
    records per sink (``sink_counts``: plan index -> count)."""
    out: Dict[str, int] = {}
    for i, n in sink_counts.items():
        spec = transformations[i].spec
        if isinstance(spec, DeadLetterSinkSpec):
            out[spec.source] = out.get(spec.source, 0) + n
    return out


__all__ = [
    "DeadLetterSinkSpec",
    "DeadLetterWriteError",
    "DEFAULT_DIRECTORY",
    "DEAD_LETTER_TYPE",
    "dead_letter_row",
    "query_id",
    "DeadLetterWriter",
    "with_dead_letter_sinks",
    "dead_letter_counts",
]
