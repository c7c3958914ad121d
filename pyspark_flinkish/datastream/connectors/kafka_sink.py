"""PyFlink's ``KafkaSink`` (``pyflink.datastream.connectors.kafka``): a stream written to Kafka topics, exactly once.

Built as in PyFlink and added with ``stream.sink_to(sink)``, on any stream (side outputs included)::

    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers("broker:9092")
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic("scores")
            .set_key_serialization_schema(KeyField("player"))       # any SerializationSchema
            .set_value_serialization_schema(JsonRowSerializationSchema.builder().with_type_info(row_type).build())
            .build())
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix("scores-job")
        .build()
    )
    results.sink_to(sink).uid("scores")

As in Flink, a record without a partitioner goes to Kafka's default partitioner (a hash of its key bytes; keyless
records are spread), and its timestamp is the record's Flink timestamp (none: the producer's clock). The records
are written with ``kafka-python`` — on Spark from the executors, per micro-batch (``spark/kafka_sink.py``), in the
JVM-free engine per batch of its source (:class:`KafkaSinkOperator`); :mod:`.kafka_producer` has the transactions.
See ``docs/kafka-and-delta.md`` ("Kafka out") for the guarantees.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Union

from ...common.serialization import SerializationSchema
from ...core.errors import InvalidArgumentError, InvalidTypeError, UnsupportedFeatureError
from ...core.operators import StreamOperator
from ..plan import KafkaSinkSpec, Transformation
from .base import DeliveryGuarantee

if TYPE_CHECKING:
    from ...core.records import StreamRecord
    from ..data_stream import DataStream, DataStreamSink
    from .kafka_producer import KafkaTransactionalWriter

__all__ = [
    "KafkaRecordSerializationSchema",
    "KafkaRecordSerializationSchemaBuilder",
    "KafkaSink",
    "KafkaSinkBuilder",
    "KafkaSinkOperator",
    "KafkaTopicSelector",
]

# Producer properties the sink sets itself, with what to use instead.
_MANAGED_PROPERTIES = {
    "key.serializer": "set_record_serializer(KafkaRecordSerializationSchema.builder().set_key_serialization_schema(...))",
    "value.serializer": "set_record_serializer(KafkaRecordSerializationSchema.builder().set_value_serialization_schema(...))",
    "transactional.id": "set_transactional_id_prefix(...) (one transactional id per writer is derived from it)",
    "enable.idempotence": "set_delivery_guarantee(...) (EXACTLY_ONCE turns it on)",
    "partitioner.class": "nothing: records go to Kafka's default partitioner (a hash of the key), as in Flink",
    "sasl.jaas.config": "sasl.mechanism with sasl.plain.username / sasl.plain.password (the sink's producer is kafka-python's)",
}


class KafkaTopicSelector:
    """Chooses each record's topic (PyFlink's ``KafkaTopicSelector``): override :meth:`apply`. A plain callable
    ``element -> str`` works too. It runs on the Spark executors: it must pickle."""

    def apply(self, data: Any) -> str:
        raise NotImplementedError


class KafkaRecordSerializationSchema:
    """How an element becomes a Kafka record: its topic (fixed or chosen per element), key bytes (optional) and
    value bytes. Build it with :meth:`builder`."""

    def __init__(
        self,
        topic: Optional[str],
        topic_selector: Optional[Callable[[Any], str]],
        key_serialization_schema: Optional[SerializationSchema],
        value_serialization_schema: SerializationSchema,
    ) -> None:
        self.topic = topic
        self.topic_selector = topic_selector
        self.key_serialization_schema = key_serialization_schema
        self.value_serialization_schema = value_serialization_schema

    @staticmethod
    def builder() -> KafkaRecordSerializationSchemaBuilder:
        return KafkaRecordSerializationSchemaBuilder()

    def __repr__(self) -> str:
        target = f"topic={self.topic!r}" if self.topic is not None else f"topic_selector={self.topic_selector!r}"
        return (
            f"KafkaRecordSerializationSchema({target}, key={self.key_serialization_schema!r}, "
            f"value={self.value_serialization_schema!r})"
        )


def _schema(what: str, schema: Any) -> SerializationSchema:
    if not isinstance(schema, SerializationSchema):
        msg = (
            f"{what} needs a SerializationSchema (SimpleStringSchema(), JsonRowSerializationSchema..., or a subclass "
            f"with serialize(element) -> bytes); got {type(schema).__name__}"
        )
        raise InvalidTypeError(msg)
    return schema


class KafkaRecordSerializationSchemaBuilder:
    """PyFlink's ``KafkaRecordSerializationSchema.builder()``: ``set_topic`` or ``set_topic_selector``,
    ``set_value_serialization_schema``, optionally ``set_key_serialization_schema``, then ``build()``."""

    def __init__(self) -> None:
        self._topic: Optional[str] = None
        self._selector: Optional[Callable[[Any], str]] = None
        self._key: Optional[SerializationSchema] = None
        self._value: Optional[SerializationSchema] = None

    def set_topic(self, topic: str) -> KafkaRecordSerializationSchemaBuilder:
        if not isinstance(topic, str) or not topic:
            msg = f"KafkaRecordSerializationSchema.set_topic needs a topic name; got {topic!r}"
            raise InvalidArgumentError(msg)
        self._topic, self._selector = topic, None
        return self

    def set_topic_selector(
        self, topic_selector: Union[KafkaTopicSelector, Callable[[Any], str]]
    ) -> KafkaRecordSerializationSchemaBuilder:
        select = topic_selector.apply if isinstance(topic_selector, KafkaTopicSelector) else topic_selector
        if not callable(select):
            msg = f"set_topic_selector needs a KafkaTopicSelector or a callable element -> topic; got {topic_selector!r}"
            raise InvalidTypeError(msg)
        self._selector, self._topic = select, None
        return self

    def set_key_serialization_schema(self, key_schema: SerializationSchema) -> KafkaRecordSerializationSchemaBuilder:
        self._key = _schema("set_key_serialization_schema", key_schema)
        return self

    def set_value_serialization_schema(self, value_schema: SerializationSchema) -> KafkaRecordSerializationSchemaBuilder:
        self._value = _schema("set_value_serialization_schema", value_schema)
        return self

    def set_partitioner(self, partitioner: Any) -> KafkaRecordSerializationSchemaBuilder:
        msg = (
            "KafkaRecordSerializationSchema.set_partitioner is not supported: records go to Kafka's default "
            "partitioner (a hash of the key bytes), Flink's behaviour without a partitioner; set a key with "
            "set_key_serialization_schema to choose the partition"
        )
        raise UnsupportedFeatureError(msg)

    def build(self) -> KafkaRecordSerializationSchema:
        if self._topic is None and self._selector is None:
            msg = "KafkaRecordSerializationSchema.builder(): call set_topic(...) or set_topic_selector(...) before build()"
            raise InvalidArgumentError(msg)
        if self._value is None:
            msg = "KafkaRecordSerializationSchema.builder(): call set_value_serialization_schema(...) before build()"
            raise InvalidArgumentError(msg)
        return KafkaRecordSerializationSchema(self._topic, self._selector, self._key, self._value)


def _property_config(key: str, value: Any) -> Dict[str, Any]:
    """A Kafka producer property (Java's name, e.g. ``transaction.timeout.ms``) as kafka-python's setting."""
    from kafka import KafkaProducer

    name = key.strip().lower()
    if name in _MANAGED_PROPERTIES:
        msg = f"KafkaSink: property {key!r} is set by the sink; use {_MANAGED_PROPERTIES[name]}"
        raise UnsupportedFeatureError(msg)
    config = name.replace(".", "_")
    if config == "bootstrap_servers":
        return {}
    if config not in KafkaProducer.DEFAULT_CONFIG or config in ("transactional_id", "key_serializer", "value_serializer"):
        msg = (
            f"KafkaSink: producer property {key!r} is not supported by the sink's producer (kafka-python); "
            f"supported: the Java names of {sorted(k.replace('_', '.') for k in KafkaProducer.DEFAULT_CONFIG)}"
        )
        raise UnsupportedFeatureError(msg)
    default = KafkaProducer.DEFAULT_CONFIG[config]
    if isinstance(value, str) and isinstance(default, bool):
        value = value.strip().lower() == "true"
    elif isinstance(value, str) and isinstance(default, int):
        try:
            value = int(value)
        except ValueError:
            msg = f"KafkaSink: property {key!r} needs an integer; got {value!r}"
            raise InvalidArgumentError(msg) from None
    return {config: value}


class KafkaSink:
    """A Kafka topic (or topics) as the sink of a stream (``stream.sink_to(sink)``); build it with :meth:`builder`.

    Guarantees (``set_delivery_guarantee``):

    * ``EXACTLY_ONCE``: each micro-batch is written in Kafka transactions (one per writer: on Spark a partition of
      the batch's records by key) that record the batch id; a replayed batch whose transactions committed is not
      written again. Consumers must read with ``isolation.level=read_committed``.
    * ``AT_LEAST_ONCE`` and ``NONE`` (the default, as in Flink): an idempotent producer flushed before the batch
      commits; a replayed batch is written again.

    Differences from Flink: Flink commits its transactions with checkpoints; here every micro-batch (Spark) or
    source batch (JVM-free engine) commits. The producer is kafka-python's: ``set_property`` takes the Java names of
    its settings (``transaction.timeout.ms``, ``max.request.size``, ``security.protocol``, ``sasl.mechanism``, ...)
    and refuses the others by name.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        record_serializer: KafkaRecordSerializationSchema,
        delivery_guarantee: DeliveryGuarantee = DeliveryGuarantee.NONE,
        transactional_id_prefix: Optional[str] = None,
        properties: Optional[Dict[str, Any]] = None,
    ) -> None:
        if not isinstance(bootstrap_servers, str) or not bootstrap_servers.strip():
            msg = f"KafkaSink needs bootstrap servers (set_bootstrap_servers('host:9092,...')); got {bootstrap_servers!r}"
            raise InvalidArgumentError(msg)
        if not isinstance(record_serializer, KafkaRecordSerializationSchema):
            msg = (
                "KafkaSink needs a record serializer: set_record_serializer(KafkaRecordSerializationSchema.builder()"
                f"...build()); got {record_serializer!r}"
            )
            raise InvalidArgumentError(msg)
        if not isinstance(delivery_guarantee, DeliveryGuarantee):
            msg = f"set_delivery_guarantee needs a DeliveryGuarantee; got {delivery_guarantee!r}"
            raise InvalidTypeError(msg)
        if delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE and not transactional_id_prefix:
            msg = (
                "KafkaSink with DeliveryGuarantee.EXACTLY_ONCE needs set_transactional_id_prefix(...) (as in Flink): a "
                "prefix no other job writing to the same brokers uses"
            )
            raise InvalidArgumentError(msg)
        self.bootstrap_servers = bootstrap_servers.strip()
        self.record_serializer = record_serializer
        self.delivery_guarantee = delivery_guarantee
        self.transactional_id_prefix = transactional_id_prefix or "flinkish-kafka-sink"
        self.properties = dict(properties or {})
        self._config: Dict[str, Any] = {}
        for key, value in self.properties.items():
            self._config.update(_property_config(key, value))

    @staticmethod
    def builder() -> KafkaSinkBuilder:
        return KafkaSinkBuilder()

    @property
    def name(self) -> str:
        """How messages name the sink."""
        topic = self.record_serializer.topic
        return f"KafkaSink(topic {topic!r})" if topic is not None else "KafkaSink(topic selector)"

    def producer_config(self) -> Dict[str, Any]:
        """kafka-python settings from ``set_property``."""
        return dict(self._config)

    def client_config(self) -> Dict[str, Any]:
        """The settings of ``producer_config`` an admin client takes too (security, timeouts)."""
        from kafka.admin import KafkaAdminClient

        return {k: v for k, v in self._config.items() if k in KafkaAdminClient.DEFAULT_CONFIG}

    def _attach(self, stream: DataStream) -> DataStreamSink:
        """``DataStream.sink_to`` calls this: adds the sink to the stream's environment (on Spark both executors
        build its writer, ``spark/kafka_sink.py``; the JVM-free engine runs a :class:`KafkaSinkOperator`)."""
        from ..data_stream import DataStreamSink
        from ..executors import SPARK

        env = stream.get_execution_environment()
        spec = KafkaSinkSpec(sink=self)
        factory = None if env.executor == SPARK else (lambda: KafkaSinkOperator(self))
        t = Transformation("sink", "KafkaSink", [stream._t], factory=factory, spec=spec)
        env._add_sink(t)
        return DataStreamSink(t)

    def __repr__(self) -> str:
        return (
            f"KafkaSink({self.bootstrap_servers!r}, {self.record_serializer!r}, {self.delivery_guarantee}, "
            f"transactional_id_prefix={self.transactional_id_prefix!r}, properties={sorted(self.properties)})"
        )


class KafkaSinkBuilder:
    """PyFlink's ``KafkaSink.builder()``."""

    def __init__(self) -> None:
        self._servers: Optional[str] = None
        self._serializer: Optional[KafkaRecordSerializationSchema] = None
        self._guarantee = DeliveryGuarantee.NONE
        self._prefix: Optional[str] = None
        self._properties: Dict[str, Any] = {}

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSinkBuilder:
        self._servers = bootstrap_servers
        return self

    def set_record_serializer(self, record_serializer: KafkaRecordSerializationSchema) -> KafkaSinkBuilder:
        self._serializer = record_serializer
        return self

    def set_delivery_guarantee(self, delivery_guarantee: DeliveryGuarantee) -> KafkaSinkBuilder:
        self._guarantee = delivery_guarantee
        return self

    def set_transactional_id_prefix(self, transactional_id_prefix: str) -> KafkaSinkBuilder:
        if not isinstance(transactional_id_prefix, str) or not transactional_id_prefix:
            msg = f"set_transactional_id_prefix needs a non-empty string; got {transactional_id_prefix!r}"
            raise InvalidArgumentError(msg)
        self._prefix = transactional_id_prefix
        return self

    def set_property(self, key: str, value: str) -> KafkaSinkBuilder:
        _property_config(key, value)  # refused at once, by name
        if key.strip().lower() == "bootstrap.servers":
            self._servers = value
        self._properties[key] = value
        return self

    def build(self) -> KafkaSink:
        if self._servers is None:
            msg = "KafkaSink.builder(): call set_bootstrap_servers(...) before build()"
            raise InvalidArgumentError(msg)
        if self._serializer is None:
            msg = "KafkaSink.builder(): call set_record_serializer(KafkaRecordSerializationSchema.builder()...build())"
            raise InvalidArgumentError(msg)
        return KafkaSink(self._servers, self._serializer, self._guarantee, self._prefix, self._properties)


class KafkaSinkOperator(StreamOperator):
    """The JVM-free engine's KafkaSink: one writer for the job, one transaction (``EXACTLY_ONCE``) or flush per
    batch of the sources (committed when the batch ends: ``on_periodic_emit``; the last one at the end of input).

    Metrics (the job result's): ``numRecordsOut``, ``numBytesOut``, ``transactionsCommitted``,
    ``transactionsAborted``.
    """

    def __init__(self, sink: KafkaSink) -> None:
        super().__init__("KafkaSink")
        self.sink = sink
        self._pending: list = []  # type: ignore[type-arg]
        self._batch = 0
        self._writer: Optional[KafkaTransactionalWriter] = None

    def open(self, output: Any, clock: Any) -> None:
        import uuid

        from .kafka_producer import KafkaTransactionalWriter

        super().open(output, clock)
        # a job of the JVM-free engine is never restarted: a transactional id of its own per sink and run (two sinks
        # of a job sharing one would fence each other)
        name = f"local-{uuid.uuid4().hex}"
        self._writer = KafkaTransactionalWriter(self.sink, name, name, 0, replayable=False)

    def process_element(self, record: StreamRecord) -> None:
        self._pending.append((record.value, record.timestamp))

    def on_periodic_emit(self) -> None:
        self._flush()

    def end_input(self) -> None:
        self._flush()

    def _flush(self) -> None:
        if not self._pending or self._writer is None:
            return
        records, self._pending = self._pending, []
        try:
            stats = self._writer.write_batch(self._batch, records)
        except BaseException:
            self._count("transactionsAborted", 1 if self._writer.exactly_once else 0)
            raise
        self._batch += 1
        self._count("numRecordsOut", stats["records"])
        self._count("numBytesOut", stats["bytes"])
        self._count("transactionsCommitted", stats["committed"])

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        super().close()
