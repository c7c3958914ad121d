"""The producing side of :class:`~.kafka_sink.KafkaSink`, shared by both engines: serialize records and write them
with ``kafka-python``, in one Kafka transaction per writer and batch for ``EXACTLY_ONCE``.

A *writer* is one sequence of records that one producer writes in order: on Spark one partition of a micro-batch's
records (partitioned by a hash of topic and key, so that every record of a key is written by the same writer, in
Flink's order), in the JVM-free engine the whole stream. Its transactional id is ``<prefix>-<sink uid>-<writer>``:
the same for every batch, so a restarted attempt's ``init_transactions`` fences a dead attempt's producer and aborts
the transaction it left open.

How a replayed batch knows that its transaction committed: in the same transaction the writer commits an offset,
``batch id + 1``, for the consumer group :func:`marker_group` (``<prefix>-<app id>-<writer>``, with the query id of
the checkpoint in the app id) on partition 0 of the topic of its first record (``send_offsets_to_transaction``, the
transaction's first request). Records and offset commit together or not at all. If the group's committed offset says
that batch ``N`` committed, the writer writes nothing.

Producers are kept across batches (:class:`ProducerPool`: Spark reuses its Python workers) — a writer's transaction
starts with its marker offset, so a kept producer that another process fenced since fails before any record is
consumed, and is replaced by a new one (``init_transactions``: it completes or aborts what the other left). Which
batch a writer committed comes from, in this order: what its kept producer committed itself; after a new producer's
``init_transactions``, the group's offsets read by the writer; otherwise the offsets the Spark driver read for all
writers of the batch in one request (:func:`committed_batches`). See ``docs/kafka-and-delta.md`` ("Kafka out").

Pure Python (kafka-python, no pyspark): the Spark executors and the JVM-free engine import it.
"""

from __future__ import annotations

import atexit
import itertools
import json
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Optional, Tuple

from ...core.errors import BadInputError
from .base import DeliveryGuarantee

if TYPE_CHECKING:
    from .kafka_sink import KafkaSink

_log = logging.getLogger("pyspark_flinkish.kafka_sink")

__all__ = [
    "KafkaSinkError",
    "KafkaTransactionalWriter",
    "KeptProducer",
    "ProducerPool",
    "committed_batches",
    "marker_group",
    "serialize_record",
    "transactional_id",
]


COORDINATOR_WAIT_S = 60.0
"""How long a writer waits for the group coordinator that knows its committed batches (retriable errors only)."""


RETRY_BACKOFF_MS = 20
"""The sink's producers' ``retry.backoff.ms`` unless ``set_property`` sets it: kafka-python sleeps it before each
transactional request it sends again, which includes the first request to a coordinator it has just found, so with
its default (100 ms) a new transactional producer took ~0.4 s to start its first transaction."""


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


def _failure(sink: KafkaSink, what: str, exc: BaseException) -> KafkaSinkError:
    msg = f"{sink.name} (bootstrap servers {sink.bootstrap_servers}): {what}: {exc!r}"
    return KafkaSinkError(msg)


class KeptProducer:
    """A producer a :class:`ProducerPool` keeps between batches, and the newest batch it knows committed per
    marker group (from its own commits, or read after its ``init_transactions``)."""

    def __init__(self, producer: Any) -> None:
        self.producer = producer
        self.committed: Dict[str, int] = {}


class ProducerPool:
    """Producers and admin clients kept in one process across batches.

    A producer is taken for one batch (:meth:`take`) and given back after it (:meth:`give_back`); one that failed is
    closed instead, and the next batch creates another. Transactional producers are kept per transactional id, the
    idempotent one (``AT_LEAST_ONCE``, ``NONE``) per configuration; admin clients per brokers and settings. On Spark
    each Python worker has one pool (its producers outlive the task: Spark reuses the worker), and so has the driver
    (its admin client reads the writers' committed batches).

    Args:
        close_at_exit: close everything when the process exits (a process's pool; a writer's own pool is closed
            with the writer).
    """

    def __init__(self, close_at_exit: bool = False) -> None:
        self._producers: Dict[Tuple[Any, ...], KeptProducer] = {}
        self._admins: Dict[Tuple[Any, ...], Any] = {}
        self._lock = threading.Lock()
        if close_at_exit:
            atexit.register(self.close)

    @staticmethod
    def producer_key(sink: KafkaSink, transactional: Optional[str]) -> Tuple[Any, ...]:
        """What identifies a kept producer: the brokers, its transactional id (None: idempotent) and settings."""
        config = tuple(sorted((k, repr(v)) for k, v in sink.producer_config().items()))
        return sink.bootstrap_servers, transactional, config

    def take(self, key: Tuple[Any, ...]) -> Optional[KeptProducer]:
        """The kept producer of ``key`` (no longer in the pool until given back), or None."""
        with self._lock:
            return self._producers.pop(key, None)

    def give_back(self, key: Tuple[Any, ...], kept: KeptProducer) -> None:
        """Keep ``kept`` for the next batch (closing one kept meanwhile under the same key)."""
        with self._lock:
            previous, self._producers[key] = self._producers.get(key), kept
        if previous is not None and previous is not kept:
            close_quietly(previous.producer)

    def admin(self, sink: KafkaSink) -> Any:
        """The admin client of the sink's brokers and settings (created at the first call)."""
        key = (sink.bootstrap_servers, tuple(sorted((k, repr(v)) for k, v in sink.client_config().items())))
        with self._lock:
            admin = self._admins.get(key)
        if admin is None:
            from kafka.admin import KafkaAdminClient

            try:
                admin = KafkaAdminClient(bootstrap_servers=sink.bootstrap_servers.split(","), **sink.client_config())
            except Exception as exc:
                raise _failure(sink, "cannot connect to the brokers (admin client)", exc) from exc
            with self._lock:
                admin = self._admins.setdefault(key, admin)
        return admin

    def drop_admin(self, sink: KafkaSink) -> None:
        """Close the sink's admin client after an error: the next call creates another."""
        key = (sink.bootstrap_servers, tuple(sorted((k, repr(v)) for k, v in sink.client_config().items())))
        with self._lock:
            admin = self._admins.pop(key, None)
        if admin is not None:
            close_quietly(admin)

    def close(self) -> None:
        """Close every kept producer and admin client."""
        with self._lock:
            producers, self._producers = list(self._producers.values()), {}
            admins, self._admins = list(self._admins.values()), {}
        for kept in producers:
            close_quietly(kept.producer)
        for admin in admins:
            close_quietly(admin)


def close_quietly(client: Any, timeout: float = 10) -> None:
    """Close a producer or admin client; an error closing it is logged, never raised (it never hides a batch's)."""
    try:
        client.close(timeout=timeout) if hasattr(client, "flush") else client.close()
    except Exception:
        _log.debug("closing %r failed", client, exc_info=True)


def committed_batches(sink: KafkaSink, admin: Any, groups: List[str]) -> Dict[str, int]:
    """The newest batch id committed per marker group (-1: none) in one request (one per group coordinator);
    retriable errors (a coordinator still loading) are retried for :data:`COORDINATOR_WAIT_S`.

    Only transactions already completed are seen: a transaction whose commit is still being written may be missing,
    so a writer that finds its batch not committed goes on only once its producer proves current (see the module)."""
    deadline = time.monotonic() + COORDINATOR_WAIT_S
    while True:
        try:
            found = admin.list_group_offsets({g: None for g in groups})
            break
        except Exception as exc:
            # the group coordinator may be loading (e.g. Kafka creates its offsets topic at the first request)
            if getattr(exc, "retriable", False) and time.monotonic() < deadline:
                time.sleep(0.5)
                continue
            what = f"cannot read the committed batches of groups {groups[:3]!r}{' ...' if len(groups) > 3 else ''}"
            raise _failure(sink, what, exc) from exc
    out = {}
    for group in groups:
        offsets = (found or {}).get(group) or {}
        newest = max((o.offset for o in offsets.values() if o is not None and o.offset is not None), default=-1)
        out[group] = newest - 1 if newest > 0 else -1
    return out


class KafkaTransactionalWriter:
    """One writer of one sink: ``write_batch(batch_id, records)`` writes ``(element, timestamp)`` pairs in order.

    With ``EXACTLY_ONCE`` each batch is one transaction (skipped when the batch is found committed); otherwise the
    producer is idempotent and flushed at the end of the batch. Lifecycle: created per task (Spark) or per job
    (JVM-free engine); :meth:`close` gives the producer back to the pool (or closes it without one).

    Args:
        sink: the sink's description.
        sink_uid: the sink's uid (part of the transactional id).
        app: the query's and sink's app id (part of the marker group; the JVM-free engine passes a job-unique one).
        writer: this writer's index.
        serialized: the records' elements are already ``(topic, key bytes, value bytes)`` (Spark serializes them
            before it partitions them by key).
        replayable: batches may be written again after a restart (Spark): look their transactions up first. The
            JVM-free engine, whose jobs are never restarted, passes False.
        pool: where producers and admin clients are kept between batches (Spark: the worker's); None: this writer's
            own, closed by :meth:`close`.
    """

    def __init__(
        self,
        sink: KafkaSink,
        sink_uid: str,
        app: str,
        writer: int,
        serialized: bool = False,
        replayable: bool = True,
        pool: Optional[ProducerPool] = None,
    ) -> None:
        self.sink = sink
        self.exactly_once = sink.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE
        self.transactional_id = transactional_id(sink, sink_uid, writer)
        self.group = marker_group(sink, app, writer)
        self.serialized = serialized
        self.replayable = replayable
        self._shared = pool is not None
        self._pool = pool if pool is not None else ProducerPool()
        self._key = ProducerPool.producer_key(sink, self.transactional_id if self.exactly_once else None)
        self._kept: Optional[KeptProducer] = None
        self._known_topics: Dict[str, bool] = {}
        self.new_producers = 0
        """Producers this writer created (each with ``init_transactions`` for ``EXACTLY_ONCE``)."""

    def _fail(self, what: str, exc: BaseException) -> KafkaSinkError:
        return _failure(self.sink, what, exc)

    def _producer(self) -> Tuple[KeptProducer, bool]:
        """This batch's producer: the kept one, else a new one (True: new, its ``init_transactions`` done)."""
        if self._kept is not None:
            return self._kept, False
        kept = self._pool.take(self._key)
        if kept is not None:
            self._kept = kept
            return kept, False
        from kafka import KafkaProducer

        config = dict(self.sink.producer_config())
        config.setdefault("retry_backoff_ms", RETRY_BACKOFF_MS)
        if self.exactly_once:
            config.update(transactional_id=self.transactional_id, enable_idempotence=True, acks="all")
        producer = None
        try:
            producer = KafkaProducer(bootstrap_servers=self.sink.bootstrap_servers.split(","), **config)
            if self.exactly_once:
                producer.init_transactions()  # fences any other producer of the id and ends its open transaction
        except Exception as exc:
            if producer is not None:
                close_quietly(producer)
            what = "cannot connect to the brokers or initialize the transactional producer"
            raise self._fail(what, exc) from exc
        self.new_producers += 1
        self._kept = KeptProducer(producer)
        return self._kept, True

    def _discard(self) -> None:
        """Close this batch's producer (failed, fenced or in an unknown state): the next batch creates another."""
        if self._kept is not None:
            close_quietly(self._kept.producer)
            self._kept = None

    def committed_batch(self) -> Optional[int]:
        """The newest batch id this writer committed (from its marker group), or None."""
        try:
            newest = committed_batches(self.sink, self._pool.admin(self.sink), [self.group])[self.group]
        except KafkaSinkError:
            self._pool.drop_admin(self.sink)
            raise
        return newest if newest >= 0 else None

    def _check_topic(self, topic: str) -> None:
        """Fail at once, naming the topic, if it does not exist (a producer would wait ``max.block.ms`` for it)."""
        if topic in self._known_topics:
            return
        try:
            described = self._pool.admin(self.sink).describe_topics([topic])
        except KafkaSinkError:
            raise
        except Exception as exc:
            self._pool.drop_admin(self.sink)
            what = f"cannot look topic {topic!r} up (does it exist?)"
            raise self._fail(what, exc) from exc
        entry = described[0] if described else {}
        if entry.get("error_code", 0) != 0 or not entry.get("partitions"):
            what = f"topic {topic!r} does not exist (create it first: the sink creates no topics)"
            raise self._fail(what, LookupError(f"Kafka error code {entry.get('error_code')}"))
        self._known_topics[topic] = True

    def _serialized(self, records: Iterable[Tuple[Any, Optional[int]]]) -> Iterator[Tuple[Any, Optional[int]]]:
        """``((topic, key, value), timestamp)`` of each record, serialized unless it is already."""
        for element, timestamp in records:
            if self.serialized:
                yield element, timestamp
                continue
            try:
                yield serialize_record(self.sink, element), timestamp
            except KafkaSinkError:
                raise
            except Exception as exc:
                msg = f"{self.sink.name}: the record serializer failed on {element!r:.80}: {exc!r}"
                raise KafkaSinkError(msg) from exc

    def _begin(self, batch_id: int, marker: Any, committed: Optional[int]) -> bool:
        """Begin batch ``batch_id``'s transaction, its marker offset first; True (and no transaction) if the batch is
        already committed. ``committed``: the newest batch the driver found committed for this writer, if it read it.

        A kept producer's first request in the transaction fails if another producer of the id was initialized
        since (it is fenced): it is replaced by a new one, whose ``init_transactions`` completes or aborts what the
        other left, and the group is read again. A kept producer that is not fenced has made every commit of its id
        since it was created, so what it knows, or else what the driver read, is current."""
        from kafka.structs import OffsetAndMetadata

        metadata = json.dumps({"batch_id": batch_id, "transactional_id": self.transactional_id})
        retried = False
        while True:
            kept, new = self._producer()
            if self.replayable:
                # committed batches stay committed: the newest any source knows of is a fact
                known = [n for n in (kept.committed.get(self.group), committed) if n is not None]
                if new or not known:
                    found = self.committed_batch()
                    known.append(-1 if found is None else found)
                    kept.committed[self.group] = max(known)
                done = max(known)
                if done >= batch_id:
                    _log.info("%s: batch %d of %s already committed (newest: %d); not written again",
                              self.sink.name, batch_id, self.transactional_id, done)
                    return True
            producer = kept.producer
            try:
                producer.begin_transaction()
                producer.send_offsets_to_transaction({marker: OffsetAndMetadata(batch_id + 1, metadata, -1)}, self.group)
            except Exception as exc:
                self._discard()
                if not new and not retried:
                    retried = True
                    _log.info("%s: the kept producer of %s failed (%r); creating a new one", self.sink.name,
                              self.transactional_id, exc)
                    continue
                what = f"batch {batch_id}: cannot begin the transaction"
                raise self._fail(what, exc) from exc
            return False

    def write_batch(
        self, batch_id: int, records: Iterable[Tuple[Any, Optional[int]]], committed: Optional[int] = None
    ) -> Dict[str, int]:
        """Write one batch's ``(element, timestamp ms or None)`` records in order; returns the counts
        ``records``, ``bytes`` (keys and values), ``committed`` / ``skipped`` / ``aborted`` (transactions).
        ``committed``: the newest batch id the caller read as committed for this writer (-1: none), if it did."""
        from kafka.structs import TopicPartition

        stats = {"records": 0, "bytes": 0, "committed": 0, "skipped": 0, "aborted": 0}
        pending = self._serialized(records)
        first = next(pending, None)
        if first is None:
            return stats  # nothing to write, no transaction (a replay of the batch has no records here either)
        (topic, _, _), _ = first
        self._check_topic(topic)
        in_transaction = False
        try:
            if self.exactly_once:
                if self._begin(batch_id, TopicPartition(topic, 0), committed):
                    stats["skipped"] = 1
                    return stats
                in_transaction = True
            producer = self._producer()[0].producer
            futures = []
            for (topic, key, value), timestamp in itertools.chain([first], pending):
                self._check_topic(topic)
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
                try:
                    producer.commit_transaction()
                except Exception as exc:
                    what = f"batch {batch_id}: the transaction did not commit"
                    raise self._fail(what, exc) from exc
                in_transaction = False
                stats["committed"] = 1
                assert self._kept is not None
                self._kept.committed[self.group] = batch_id
        except BaseException:
            if in_transaction and self._kept is not None:
                stats["aborted"] = 1
                try:
                    self._kept.producer.abort_transaction()
                except Exception:  # a fenced or broken producer: the broker aborts it (timeout or the next init)
                    _log.warning("%s: could not abort the transaction of %s", self.sink.name, self.transactional_id)
            self._discard()
            raise
        return stats

    def close(self) -> None:
        """Give the producer back to the pool (or, without a shared pool, close it and the admin client)."""
        if self._kept is not None:
            if self._shared:
                self._pool.give_back(self._key, self._kept)
            else:
                close_quietly(self._kept.producer)
            self._kept = None
        if not self._shared:
            self._pool.close()
