"""The producing side of :class:`~.kafka_sink.KafkaSink`, shared by both engines: serialize records and write them
with ``kafka-python``, in one Kafka transaction per writer and batch for ``EXACTLY_ONCE``.

A *writer* is one sequence of records that one producer writes in order: on Spark one partition of a micro-batch's
records (partitioned by a hash of topic and key, so that every record of a key is written by the same writer, in
Flink's order), in the JVM-free engine the whole stream. Its transactional id is ``<prefix>-<sink uid>-<writer>``:
the same for every batch, so a restarted attempt's ``init_transactions`` fences a dead attempt's producer and aborts
the transaction it left open.

How a replayed batch knows that its transaction committed: in the same transaction the writer commits an offset,
``batch id + 1``, for the consumer group :func:`marker_group` (``<prefix>-<app id>-<writer>``, with the query id of
the checkpoint in the app id) on partition 0 of a topic it wrote to (``send_offsets_to_transaction``). Records and
offset commit together or not at all. Before it writes, a writer reads the group's committed offsets (after
``init_transactions``, which completes or aborts what an earlier attempt left); if they say batch ``N`` committed,
it writes nothing.

Pure Python (kafka-python, no pyspark): the Spark executors and the JVM-free engine import it.
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any, Dict, Iterable, Optional, Tuple

from ...core.errors import BadInputError
from .base import DeliveryGuarantee

if TYPE_CHECKING:
    from .kafka_sink import KafkaSink

_log = logging.getLogger("pyspark_flinkish.kafka_sink")

__all__ = [
    "KafkaSinkError",
    "KafkaTransactionalWriter",
    "marker_group",
    "serialize_record",
    "transactional_id",
]


COORDINATOR_WAIT_S = 60.0
"""How long a writer waits for the group coordinator that knows its committed batches (retriable errors only)."""


class KafkaSinkError(BadInputError):
    """A ``KafkaSink`` could not write a batch (broker unreachable, topic missing, record too large, a serializer
    that raised, ...). The message names the sink; with ``EXACTLY_ONCE`` the batch's open transaction is aborted
    and nothing of it is committed."""


def transactional_id(sink: KafkaSink, sink_uid: str, writer: int) -> str:
    """The Kafka ``transactional.id`` of writer ``writer`` of a sink: stable across batches and restarts."""
    return f"{sink.transactional_id_prefix}-{sink_uid}-{writer}"


def marker_group(sink: KafkaSink, app: str, writer: int) -> str:
    """The consumer group whose committed offset (``batch id + 1``) records a writer's committed batches; ``app``
    names the query and sink (a new checkpoint starts a new group)."""
    return f"{sink.transactional_id_prefix}-{app}-{writer}"


def serialize_record(sink: KafkaSink, element: Any) -> Tuple[str, Optional[bytes], bytes]:
    """``(topic, key bytes or None, value bytes)`` of ``element`` by the sink's record serializer."""
    schema = sink.record_serializer
    topic = schema.topic if schema.topic is not None else schema.topic_selector(element)  # type: ignore[misc]
    if not isinstance(topic, str) or not topic:
        msg = f"{sink.name}: the topic selector returned {topic!r} for {element!r:.80}; it must return a topic name"
        raise KafkaSinkError(msg)
    key = schema.key_serialization_schema.serialize(element) if schema.key_serialization_schema is not None else None
    value = schema.value_serialization_schema.serialize(element)
    if not isinstance(value, (bytes, bytearray)) or (key is not None and not isinstance(key, (bytes, bytearray))):
        msg = f"{sink.name}: a serialization schema returned {type(value).__name__}, not bytes"
        raise KafkaSinkError(msg)
    return topic, None if key is None else bytes(key), bytes(value)


class KafkaTransactionalWriter:
    """One writer of one sink: ``write_batch(batch_id, records)`` writes ``(element, timestamp)`` pairs in order.

    With ``EXACTLY_ONCE`` each batch is one transaction (skipped when :meth:`committed_batch` says it committed);
    otherwise the producer is idempotent and flushed at the end of the batch. Lifecycle: created per task (Spark) or
    per job (JVM-free engine); :meth:`close` closes the producer.

    Args:
        sink: the sink's description.
        sink_uid: the sink's uid (part of the transactional id).
        app: the query's and sink's app id (part of the marker group; the JVM-free engine passes a job-unique one).
        writer: this writer's index.
        serialized: the records' elements are already ``(topic, key bytes, value bytes)`` (Spark serializes them
            before it partitions them by key).
        replayable: batches may be written again after a restart (Spark): look their transactions up first. The
            JVM-free engine, whose jobs are never restarted, passes False.
    """

    def __init__(
        self,
        sink: KafkaSink,
        sink_uid: str,
        app: str,
        writer: int,
        serialized: bool = False,
        replayable: bool = True,
    ) -> None:
        self.sink = sink
        self.exactly_once = sink.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE
        self.transactional_id = transactional_id(sink, sink_uid, writer)
        self.group = marker_group(sink, app, writer)
        self.serialized = serialized
        self.replayable = replayable
        self._producer: Any = None
        self._admin: Any = None
        self._known_topics: Dict[str, bool] = {}

    def _fail(self, what: str, exc: BaseException) -> KafkaSinkError:
        msg = f"{self.sink.name} (bootstrap servers {self.sink.bootstrap_servers}): {what}: {exc!r}"
        return KafkaSinkError(msg)

    def producer(self) -> Any:
        if self._producer is None:
            from kafka import KafkaProducer

            config = dict(self.sink.producer_config())
            if self.exactly_once:
                config.update(transactional_id=self.transactional_id, enable_idempotence=True, acks="all")
            try:
                self._producer = KafkaProducer(bootstrap_servers=self.sink.bootstrap_servers.split(","), **config)
                if self.exactly_once:
                    self._producer.init_transactions()  # fences a dead attempt and ends its open transaction
            except Exception as exc:
                what = "cannot connect to the brokers or initialize the transactional producer"
                raise self._fail(what, exc) from exc
        return self._producer

    def _admin_client(self) -> Any:
        if self._admin is None:
            from kafka.admin import KafkaAdminClient

            self._admin = KafkaAdminClient(bootstrap_servers=self.sink.bootstrap_servers.split(","), **self.sink.client_config())
        return self._admin

    def committed_batch(self) -> Optional[int]:
        """The newest batch id this writer committed (from its marker group), or None."""
        deadline = time.monotonic() + COORDINATOR_WAIT_S
        while True:
            try:
                offsets = self._admin_client().list_group_offsets({self.group: None}).get(self.group, {})
                break
            except Exception as exc:
                # the group coordinator may be loading (e.g. Kafka creates its offsets topic at the first request)
                if getattr(exc, "retriable", False) and time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
                what = f"cannot read the committed batches of group {self.group!r}"
                raise self._fail(what, exc) from exc
        newest = max((o.offset for o in offsets.values() if o is not None and o.offset is not None), default=-1)
        return newest - 1 if newest > 0 else None

    def _check_topic(self, topic: str) -> None:
        """Fail at once, naming the topic, if it does not exist (a producer would wait ``max.block.ms`` for it)."""
        if topic in self._known_topics:
            return
        try:
            described = self._admin_client().describe_topics([topic])
        except Exception as exc:
            what = f"cannot look topic {topic!r} up (does it exist?)"
            raise self._fail(what, exc) from exc
        entry = described[0] if described else {}
        if entry.get("error_code", 0) != 0 or not entry.get("partitions"):
            what = f"topic {topic!r} does not exist (create it first: the sink creates no topics)"
            raise self._fail(what, LookupError(f"Kafka error code {entry.get('error_code')}"))
        self._known_topics[topic] = True

    def write_batch(self, batch_id: int, records: Iterable[Tuple[Any, Optional[int]]]) -> Dict[str, int]:
        """Write one batch's ``(element, timestamp ms or None)`` records in order; returns the counts
        ``records``, ``bytes`` (keys and values), ``committed`` / ``skipped`` / ``aborted`` (transactions)."""
        from kafka.structs import OffsetAndMetadata, TopicPartition

        stats = {"records": 0, "bytes": 0, "committed": 0, "skipped": 0, "aborted": 0}
        producer = self.producer()
        if self.exactly_once and self.replayable:
            done = self.committed_batch()
            if done is not None and done >= batch_id:
                _log.info("%s: batch %d of %s already committed (newest: %d); not written again",
                          self.sink.name, batch_id, self.transactional_id, done)
                stats["skipped"] = 1
                return stats
        marker: Optional[Any] = None
        in_transaction = False
        futures = []
        try:
            for element, timestamp in records:
                try:
                    topic, key, value = element if self.serialized else serialize_record(self.sink, element)
                except KafkaSinkError:
                    raise
                except Exception as exc:
                    msg = f"{self.sink.name}: the record serializer failed on {element!r:.80}: {exc!r}"
                    raise KafkaSinkError(msg) from exc
                self._check_topic(topic)
                if self.exactly_once and not in_transaction:
                    producer.begin_transaction()
                    in_transaction = True
                marker = marker or TopicPartition(topic, 0)
                ts = timestamp if timestamp is not None and timestamp >= 0 else None  # as Flink: none -> the producer's time
                try:
                    futures.append(producer.send(topic, key=key, value=value, timestamp_ms=ts))
                except Exception as exc:
                    what = f"cannot send a record of {len(value)} bytes to topic {topic!r}"
                    raise self._fail(what, exc) from exc
                stats["records"] += 1
                stats["bytes"] += len(value) + (len(key) if key is not None else 0)
            try:
                producer.flush()
                for f in futures:
                    f.get(timeout=0)  # raises the error of a record the broker refused
            except Exception as exc:
                what = f"batch {batch_id}: a record was not written"
                raise self._fail(what, exc) from exc
            if in_transaction:
                metadata = json.dumps({"batch_id": batch_id, "transactional_id": self.transactional_id})
                try:
                    producer.send_offsets_to_transaction({marker: OffsetAndMetadata(batch_id + 1, metadata, -1)}, self.group)
                    producer.commit_transaction()
                except Exception as exc:
                    what = f"batch {batch_id}: the transaction did not commit"
                    raise self._fail(what, exc) from exc
                in_transaction = False
                stats["committed"] = 1
        except BaseException:
            if in_transaction:
                stats["aborted"] = 1
                try:
                    producer.abort_transaction()
                except Exception:  # a fenced or broken producer: the broker aborts it (timeout or the next init)
                    _log.warning("%s: could not abort the transaction of %s", self.sink.name, self.transactional_id)
            raise
        return stats

    def close(self) -> None:
        if self._admin is not None:
            try:
                self._admin.close()
            except Exception:  # closing never hides the batch's own error
                pass
            self._admin = None
        if self._producer is not None:
            try:
                self._producer.close(timeout=10)
            except Exception:  # closing never hides the batch's own error
                pass
            self._producer = None

