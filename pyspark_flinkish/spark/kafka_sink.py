"""Kafka on the Spark executors: the batch writer behind ``KafkaSink`` (both Spark executors).

Per micro-batch the sink's records (a :class:`~.sink_frames.SinkFrame`, still on the executors: pickled, or as typed
columns where the stream's type is declared, ``spark/record_columns.py``) are serialized into Kafka records by the
executors (``mapInArrow``: topic, key and value bytes, timestamp, place in Flink's order),
hash-partitioned by ``(topic, key)`` into ``n = ceil(records / records per writer)`` writers (:data:`RECORDS_PER_WRITER_CONF`,
at most ``spark.sql.shuffle.partitions``; a deterministic function of the batch's records, so a replayed batch puts the
same records in the same writer — never ``coalesce``, whose grouping depends on locality), sorted in Flink's order
within each writer, and written by one task per writer (:class:`~..datastream.connectors.kafka_producer.KafkaTransactionalWriter`:
one Kafka transaction per writer and batch with ``EXACTLY_ONCE``). Every record of a key is written by one task in
Flink's order, and a batch's transactions commit before the next batch starts: per-key order is Flink's. The driver
reads the writers' committed batches in one request (``EXACTLY_ONCE``), passes them into the tasks (one number per
writer), collects one count row per writer and keeps the sink's metrics. Each process (driver, Python worker) keeps
its producers and admin clients across batches in one :class:`~..datastream.connectors.kafka_producer.ProducerPool`.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Iterable, Iterator, List, Optional

from ..datastream.connectors.base import DeliveryGuarantee
from ..datastream.connectors.kafka_producer import (
    KafkaTransactionalWriter,
    ProducerPool,
    committed_batches,
    marker_group,
    serialize_record,
)
from ..datastream.plan import KafkaSinkSpec, Transformation
from .delta_commits import app_id
from .record_columns import RecordColumns, arrow_values
from .sink_frames import ORDER_COLUMN, RECORDS_PER_TASK, STEP_COLUMN, SinkFrame

_log = logging.getLogger("pyspark_flinkish.spark.kafka_sink")

_RECORD_DDL = f"topic string, key binary, value binary, ts long, {ORDER_COLUMN} array<long>"
_COUNTS_DDL = "writer int, records long, bytes long, committed long, skipped long, new_producers long"

RECORDS_PER_WRITER_CONF = "spark.flinkish.kafkaSink.recordsPerWriter"
"""The Spark setting of how many records of a batch one writer (task, transaction) takes at most; default
:data:`~.sink_frames.RECORDS_PER_TASK` (200,000). Lower it for more, smaller transactions per batch (the crash test
sets 2, so that a batch has several writers)."""

_POOL: Optional[ProducerPool] = None


def process_pool() -> ProducerPool:
    """This process's :class:`ProducerPool` (the driver's, or a Python worker's: kept across tasks and batches)."""
    global _POOL
    if _POOL is None:
        _POOL = ProducerPool(close_at_exit=True)
    return _POOL


def _serialize(sink: Any, layout: Optional[RecordColumns] = None) -> Any:
    """``mapInArrow`` body: sink rows (the element: pickled, or as the columns of ``layout``; order, step, timestamp)
    to Kafka records."""

    def run(batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa

        schema = pa.schema([("topic", pa.string()), ("key", pa.binary()), ("value", pa.binary()), ("ts", pa.int64()),
                            (ORDER_COLUMN, pa.list_(pa.int64()))])
        for batch in batches:
            out: Dict[str, List[Any]] = {name: [] for name in schema.names}
            for element, order, step, ts in zip(arrow_values(batch, layout), batch.column("ord").to_pylist(),
                                                batch.column(STEP_COLUMN).to_pylist(), batch.column("ts").to_pylist()):
                topic, key, data = _serialize_one(sink, element)
                out["topic"].append(topic)
                out["key"].append(key)
                out["value"].append(data)
                out["ts"].append(ts)
                out[ORDER_COLUMN].append([step, *order])
            yield pa.RecordBatch.from_arrays([pa.array(out[n], type=schema.field(n).type) for n in schema.names],
                                             schema=schema)

    return run


def _serialize_one(sink: Any, element: Any) -> Any:
    from ..datastream.connectors.kafka_producer import KafkaSinkError

    try:
        return serialize_record(sink, element)
    except KafkaSinkError:
        raise
    except Exception as exc:
        msg = f"{sink.name}: the record serializer failed on {element!r:.80}: {exc!r}"
        raise KafkaSinkError(msg) from exc


def _write(sink: Any, sink_uid: str, app: str, batch_id: int, committed: Optional[Dict[int, int]] = None) -> Any:
    """``mapInArrow`` body: write this task's writer partition (records in Flink's order) to Kafka. ``committed``:
    the newest batch each writer committed, as the driver read it (``EXACTLY_ONCE``)."""

    def run(batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa
        from pyspark import TaskContext

        context = TaskContext.get()
        writer_index = context.partitionId() if context is not None else 0

        def records() -> Iterator[Any]:
            for batch in batches:
                for topic, key, value, ts in zip(batch.column("topic").to_pylist(), batch.column("key").to_pylist(),
                                                 batch.column("value").to_pylist(), batch.column("ts").to_pylist()):
                    yield (topic, key, value), ts

        writer = KafkaTransactionalWriter(sink, sink_uid, app, writer_index, serialized=True, pool=process_pool())
        try:
            stats = writer.write_batch(batch_id, records(), (committed or {}).get(writer_index))
        finally:
            writer.close()
        yield pa.RecordBatch.from_pylist(
            [{"writer": writer_index, "records": stats["records"], "bytes": stats["bytes"],
              "committed": stats["committed"], "skipped": stats["skipped"], "new_producers": writer.new_producers}],
            schema=pa.schema([("writer", pa.int32()), ("records", pa.int64()), ("bytes", pa.int64()),
                              ("committed", pa.int64()), ("skipped", pa.int64()), ("new_producers", pa.int64())]),
        )

    return run


class KafkaBatchWriter:
    """Writes one ``KafkaSink``'s micro-batches from the executors; called on the driver with the batch's
    :class:`~.sink_frames.SinkFrame` and a context (``checkpoint``, ``sink_uid``).

    Metrics (cumulative for this writer, and of the last batch in :attr:`last_batch`): ``records`` and ``bytes``
    written, ``transactions_committed``, ``transactions_skipped`` (a replayed batch's transaction found committed),
    ``transactions_aborted`` (writers of a write that failed: their open transactions are aborted),
    ``producers_created`` (producers the writers had to create: not kept from an earlier batch, or replaced after
    being fenced).
    """

    def __init__(self, sink: Any) -> None:
        self.sink = sink
        self.totals = {"records": 0, "bytes": 0, "transactions_committed": 0, "transactions_skipped": 0,
                       "transactions_aborted": 0, "producers_created": 0}
        self.last_batch: Dict[str, int] = dict(self.totals)

    def writers(self, frame: SinkFrame) -> int:
        """How many writers (tasks, transactions) a batch of this frame has: :data:`RECORDS_PER_WRITER_CONF` records
        each, at most ``spark.sql.shuffle.partitions``; a function of the batch's record count only."""
        limit = int(frame.session.conf.get("spark.sql.shuffle.partitions", "200"))
        if frame.count is None:
            return limit
        per_writer = int(frame.session.conf.get(RECORDS_PER_WRITER_CONF, str(RECORDS_PER_TASK)))
        if per_writer < 1:
            msg = f"{RECORDS_PER_WRITER_CONF} must be a positive number of records; got {per_writer}"
            raise ValueError(msg)
        return max(1, min(limit, -(-frame.count // per_writer)))

    def committed(self, app: str, n: int) -> Optional[Dict[int, int]]:
        """``EXACTLY_ONCE``: the newest batch each of ``n`` writers committed (-1: none), in one admin request."""
        if self.sink.delivery_guarantee is not DeliveryGuarantee.EXACTLY_ONCE:
            return None
        pool = process_pool()
        groups = [marker_group(self.sink, app, i) for i in range(n)]
        try:
            found = committed_batches(self.sink, pool.admin(self.sink), groups)
        except Exception:
            pool.drop_admin(self.sink)
            raise
        return {i: found[g] for i, g in enumerate(groups)}

    def __call__(self, spark: Any, frame: SinkFrame, batch_id: int, context: Dict[str, Any]) -> None:
        from pyspark.sql import functions as F

        self.last_batch = {k: 0 for k in self.totals}
        if frame.count == 0:
            return
        sink_uid = str(context.get("sink_uid", "sink"))
        app = app_id(context.get("checkpoint", ""), sink_uid)
        n = self.writers(frame)
        records = frame.rows.select(*frame.value_columns(), "ord", STEP_COLUMN, "ts")
        records = records.mapInArrow(_serialize(self.sink, frame.layout), _RECORD_DDL)
        records = records.repartition(n, F.col("topic"), F.col("key")).sortWithinPartitions(ORDER_COLUMN)
        committed = self.committed(app, n)
        try:
            counts = records.mapInArrow(_write(self.sink, sink_uid, app, batch_id, committed), _COUNTS_DDL).collect()
        except Exception:
            self.last_batch["transactions_aborted"] = n
            self.totals["transactions_aborted"] += n
            raise
        batch = {
            "records": sum(int(r["records"]) for r in counts),
            "bytes": sum(int(r["bytes"]) for r in counts),
            "transactions_committed": sum(int(r["committed"]) for r in counts),
            "transactions_skipped": sum(int(r["skipped"]) for r in counts),
            "transactions_aborted": 0,
            "producers_created": sum(int(r["new_producers"]) for r in counts),
        }
        self.last_batch = batch
        for k, v in batch.items():
            self.totals[k] += v
        if batch["transactions_skipped"]:
            _log.info("%s: batch %d: %d writers' transactions were already committed; not written again",
                      self.sink.name, batch_id, batch["transactions_skipped"])

    def metrics(self) -> Dict[str, int]:
        """The last batch's counters (see the class)."""
        return dict(self.last_batch)


def with_kafka_writers(sinks: List[Transformation]) -> List[Transformation]:
    """Give every ``KafkaSink`` of the pipeline its :class:`KafkaBatchWriter` (once; reused by later runs of the
    same environment). Returns ``sinks``."""
    for t in sinks:
        if isinstance(t.spec, KafkaSinkSpec) and t.spec.writer is None:
            t.spec.writer = KafkaBatchWriter(t.spec.sink)
    return sinks


__all__ = ["KafkaBatchWriter", "with_kafka_writers"]
