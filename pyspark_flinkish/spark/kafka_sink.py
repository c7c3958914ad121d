"""Kafka on the Spark executors: the batch writer behind ``KafkaSink`` (both Spark executors).

Per micro-batch the sink's records (a :class:`~.sink_frames.SinkFrame`, still on the executors) are serialized into
Kafka records by the executors (``mapInArrow``: topic, key and value bytes, timestamp, place in Flink's order),
hash-partitioned by ``(topic, key)`` into ``n = ceil(records / RECORDS_PER_TASK)`` writers (at most
``spark.sql.shuffle.partitions``; a deterministic function of the batch's records, so a replayed batch puts the same
records in the same writer — never ``coalesce``, whose grouping depends on locality), sorted in Flink's order within
each writer, and written by one task per writer (:class:`~..datastream.connectors.kafka_producer.KafkaTransactionalWriter`:
one Kafka transaction per writer and batch with ``EXACTLY_ONCE``). Every record of a key is written by one task in
Flink's order, and a batch's transactions commit before the next batch starts: per-key order is Flink's. The driver
collects one count row per writer and keeps the sink's metrics.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Iterable, Iterator, List

from ..datastream.connectors.kafka_producer import KafkaTransactionalWriter, serialize_record
from ..datastream.plan import KafkaSinkSpec, Transformation
from .delta_commits import app_id
from .sink_frames import ORDER_COLUMN, RECORDS_PER_TASK, STEP_COLUMN, SinkFrame

_log = logging.getLogger("pyspark_flinkish.spark.kafka_sink")

_RECORD_DDL = f"topic string, key binary, value binary, ts long, {ORDER_COLUMN} array<long>"
_COUNTS_DDL = "writer int, records long, bytes long, committed long, skipped long"


def _serialize(sink: Any) -> Any:
    """``mapInArrow`` body: sink rows (pickled element, order, step, timestamp) to Kafka records."""

    def run(batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from .rows import loads

        schema = pa.schema([("topic", pa.string()), ("key", pa.binary()), ("value", pa.binary()), ("ts", pa.int64()),
                            (ORDER_COLUMN, pa.list_(pa.int64()))])
        for batch in batches:
            out: Dict[str, List[Any]] = {name: [] for name in schema.names}
            for value, order, step, ts in zip(batch.column("value").to_pylist(), batch.column("ord").to_pylist(),
                                              batch.column(STEP_COLUMN).to_pylist(), batch.column("ts").to_pylist()):
                topic, key, data = _serialize_one(sink, loads(value))
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


def _write(sink: Any, sink_uid: str, app: str, batch_id: int) -> Any:
    """``mapInArrow`` body: write this task's writer partition (records in Flink's order) to Kafka."""

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

        writer = KafkaTransactionalWriter(sink, sink_uid, app, writer_index, serialized=True)
        try:
            stats = writer.write_batch(batch_id, records())
        finally:
            writer.close()
        yield pa.RecordBatch.from_pylist(
            [{"writer": writer_index, "records": stats["records"], "bytes": stats["bytes"],
              "committed": stats["committed"], "skipped": stats["skipped"]}],
            schema=pa.schema([("writer", pa.int32()), ("records", pa.int64()), ("bytes", pa.int64()),
                              ("committed", pa.int64()), ("skipped", pa.int64())]),
        )

    return run


class KafkaBatchWriter:
    """Writes one ``KafkaSink``'s micro-batches from the executors; called on the driver with the batch's
    :class:`~.sink_frames.SinkFrame` and a context (``checkpoint``, ``sink_uid``).

    Metrics (cumulative for this writer, and of the last batch in :attr:`last_batch`): ``records`` and ``bytes``
    written, ``transactions_committed``, ``transactions_skipped`` (a replayed batch's transaction found committed),
    ``transactions_aborted`` (writers of a write that failed: their open transactions are aborted).
    """

    def __init__(self, sink: Any) -> None:
        self.sink = sink
        self.totals = {"records": 0, "bytes": 0, "transactions_committed": 0, "transactions_skipped": 0,
                       "transactions_aborted": 0}
        self.last_batch: Dict[str, int] = dict(self.totals)

    def writers(self, frame: SinkFrame) -> int:
        """How many writers (tasks, transactions) a batch of this frame has: :data:`RECORDS_PER_TASK` records
        each, at most ``spark.sql.shuffle.partitions``; a function of the batch's record count only."""
        limit = int(frame.session.conf.get("spark.sql.shuffle.partitions", "200"))
        if frame.count is None:
            return limit
        return max(1, min(limit, -(-frame.count // RECORDS_PER_TASK)))

    def __call__(self, spark: Any, frame: SinkFrame, batch_id: int, context: Dict[str, Any]) -> None:
        from pyspark.sql import functions as F

        self.last_batch = {k: 0 for k in self.totals}
        if frame.count == 0:
            return
        sink_uid = str(context.get("sink_uid", "sink"))
        app = app_id(context.get("checkpoint", ""), sink_uid)
        n = self.writers(frame)
        records = frame.rows.select("value", "ord", STEP_COLUMN, "ts").mapInArrow(_serialize(self.sink), _RECORD_DDL)
        records = records.repartition(n, F.col("topic"), F.col("key")).sortWithinPartitions(ORDER_COLUMN)
        try:
            counts = records.mapInArrow(_write(self.sink, sink_uid, app, batch_id), _COUNTS_DDL).collect()
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
