"""``KafkaSink`` without a broker: PyFlink's builders, their refusals (named, with the alternative), the serialization
schemas, and the JVM-free engine's error for an unreachable broker. Writes to a broker: ``tests/kafka/test_kafka_sink.py``."""

from __future__ import annotations

import json
import pickle

import pytest

from pyspark_flinkish.common import Row, SimpleStringSchema, Types
from pyspark_flinkish.common.serialization import SerializationSchema
from pyspark_flinkish.core.errors import InvalidArgumentError, InvalidTypeError, UnsupportedFeatureError
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors import DeliveryGuarantee
from pyspark_flinkish.datastream.connectors.kafka import (
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaTopicSelector,
)
from pyspark_flinkish.datastream.connectors.kafka_producer import (
    KafkaSinkError,
    marker_group,
    serialize_record,
    transactional_id,
)
from pyspark_flinkish.datastream.formats.json import JsonRowSerializationSchema

ROW = Types.ROW_NAMED(["k", "n"], [Types.STRING(), Types.LONG()])


def _serializer(topic: str = "out") -> KafkaRecordSerializationSchema:
    return (
        KafkaRecordSerializationSchema.builder()
        .set_topic(topic)
        .set_value_serialization_schema(JsonRowSerializationSchema.builder().with_type_info(ROW).build())
        .build()
    )


def _sink(**overrides: object) -> KafkaSink:
    builder = KafkaSink.builder().set_bootstrap_servers("127.0.0.1:1").set_record_serializer(_serializer())
    return builder.build() if not overrides else builder.set_delivery_guarantee(overrides["guarantee"]).build()  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- serialization schemas
def test_simple_string_schema_serializes_text_in_its_charset_and_refuses_other_types() -> None:
    assert SimpleStringSchema().serialize("héllo") == "héllo".encode()
    assert SimpleStringSchema("latin-1").serialize("héllo") == "héllo".encode("latin-1")
    assert isinstance(SimpleStringSchema(), SerializationSchema)
    with pytest.raises(InvalidTypeError, match="SimpleStringSchema serializes str elements; got int"):
        SimpleStringSchema().serialize(42)


def test_json_row_serialization_schema_writes_rows_tuples_and_dicts_in_the_types_field_order() -> None:
    schema = JsonRowSerializationSchema.builder().with_type_info(ROW).build()
    assert schema.serialize(Row(n=2, k="a")) == b'{"k":"a","n":2}'
    assert schema.serialize(("b", None)) == b'{"k":"b","n":null}'
    assert schema.serialize({"k": "c", "n": 3}) == b'{"k":"c","n":3}'
    nested = Types.ROW_NAMED(["id", "tags", "inner"], [Types.LONG(), Types.LIST(Types.STRING()), ROW])
    value = JsonRowSerializationSchema(nested).serialize(Row(id=1, tags=["x"], inner=Row(k="d", n=4)))
    assert json.loads(value) == {"id": 1, "tags": ["x"], "inner": {"k": "d", "n": 4}}
    assert pickle.loads(pickle.dumps(schema)) == schema


def test_json_row_serialization_schema_names_a_field_that_does_not_fit() -> None:
    schema = JsonRowSerializationSchema(ROW)
    with pytest.raises(InvalidTypeError, match="field 'n' is declared LONG; got str"):
        schema.serialize(Row(k="a", n="two"))
    with pytest.raises(InvalidTypeError, match="has 3 fields, the type"):
        schema.serialize(("a", 1, 2))


def test_json_row_serialization_schema_refuses_time_types_and_non_rows_up_front() -> None:
    with pytest.raises(UnsupportedFeatureError, match=r"cannot write field 'at' of type SQL_TIMESTAMP.*Types.LONG"):
        JsonRowSerializationSchema(Types.ROW_NAMED(["at"], [Types.SQL_TIMESTAMP()]))
    with pytest.raises(InvalidTypeError, match=r"needs Types.ROW_NAMED"):
        JsonRowSerializationSchema(Types.STRING())
    with pytest.raises(InvalidArgumentError, match="with_type_info"):
        JsonRowSerializationSchema.builder().build()


# ---------------------------------------------------------------------------------------------- builders
def test_record_serializer_builder_needs_a_topic_and_a_value_schema_and_refuses_a_partitioner() -> None:
    with pytest.raises(InvalidArgumentError, match="set_topic"):
        KafkaRecordSerializationSchema.builder().set_value_serialization_schema(SimpleStringSchema()).build()
    with pytest.raises(InvalidArgumentError, match="set_value_serialization_schema"):
        KafkaRecordSerializationSchema.builder().set_topic("t").build()
    with pytest.raises(InvalidTypeError, match="needs a SerializationSchema"):
        KafkaRecordSerializationSchema.builder().set_value_serialization_schema(lambda v: b"")  # type: ignore[arg-type]
    with pytest.raises(UnsupportedFeatureError, match="Kafka's default partitioner"):
        KafkaRecordSerializationSchema.builder().set_partitioner(object())


def test_record_serializer_chooses_topic_key_and_value() -> None:
    class ByKey(KafkaTopicSelector):
        def apply(self, data: object) -> str:
            return f"t-{data[0]}"  # type: ignore[index]

    class Key(SerializationSchema):
        def serialize(self, element: object) -> bytes:
            return str(element[0]).encode()  # type: ignore[index]

    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic_selector(ByKey())
        .set_key_serialization_schema(Key())
        .set_value_serialization_schema(JsonRowSerializationSchema(ROW))
        .build()
    )
    sink = KafkaSink.builder().set_bootstrap_servers("b:9092").set_record_serializer(serializer).build()
    assert serialize_record(sink, ("a", 1)) == ("t-a", b"a", b'{"k":"a","n":1}')
    keyless = KafkaSink("b:9092", _serializer("fixed"))
    assert serialize_record(keyless, ("a", 1)) == ("fixed", None, b'{"k":"a","n":1}')


def test_kafka_sink_builder_defaults_and_refusals() -> None:
    sink = _sink()
    assert sink.delivery_guarantee is DeliveryGuarantee.NONE  # Flink's default
    with pytest.raises(InvalidArgumentError, match="EXACTLY_ONCE needs set_transactional_id_prefix"):
        _sink(guarantee=DeliveryGuarantee.EXACTLY_ONCE)
    with pytest.raises(InvalidArgumentError, match="set_bootstrap_servers"):
        KafkaSink.builder().set_record_serializer(_serializer()).build()
    with pytest.raises(InvalidArgumentError, match="set_record_serializer"):
        KafkaSink.builder().set_bootstrap_servers("b:9092").build()
    builder = KafkaSink.builder()
    with pytest.raises(UnsupportedFeatureError, match=r"'transactional.id' is set by the sink; use set_transactional_id_prefix"):
        builder.set_property("transactional.id", "x")
    with pytest.raises(UnsupportedFeatureError, match=r"'value.serializer' is set by the sink"):
        builder.set_property("value.serializer", "x")
    with pytest.raises(UnsupportedFeatureError, match=r"'no.such.setting' is not supported by the sink's producer"):
        builder.set_property("no.such.setting", "1")
    with pytest.raises(InvalidArgumentError, match="needs an integer"):
        builder.set_property("transaction.timeout.ms", "soon")


def test_kafka_sink_properties_become_producer_settings_and_ids_are_stable() -> None:
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers("b1:9092,b2:9092")
        .set_record_serializer(_serializer())
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix("job")
        .set_property("transaction.timeout.ms", "120000")
        .set_property("max.request.size", "2097152")
        .set_property("security.protocol", "PLAINTEXT")
        .build()
    )
    assert sink.producer_config() == {
        "transaction_timeout_ms": 120_000, "max_request_size": 2_097_152, "security_protocol": "PLAINTEXT"
    }
    assert sink.client_config() == {"security_protocol": "PLAINTEXT"}
    assert transactional_id(sink, "scores", 3) == "job-scores-3"
    assert marker_group(sink, "flinkish-q1-scores", 3) == "job-flinkish-q1-scores-3"
    assert pickle.loads(pickle.dumps(sink)).producer_config() == sink.producer_config()


# ---------------------------------------------------------------------------------------------- the JVM-free engine
def test_local_engine_fails_naming_the_sink_when_the_broker_is_unreachable() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([("a", 1)]).sink_to(
        KafkaSink.builder()
        .set_bootstrap_servers("127.0.0.1:1")  # nothing listens on port 1
        .set_record_serializer(_serializer("scores"))
        .set_property("bootstrap.timeout.ms", "1000")
        .build()
    )
    with pytest.raises(KafkaSinkError, match=r"KafkaSink\(topic 'scores'\) \(bootstrap servers 127.0.0.1:1\): cannot connect"):
        env.execute("unreachable broker")
