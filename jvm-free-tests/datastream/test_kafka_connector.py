"""The Kafka source's builder, options and offsets (pure Python: no JVM, no broker)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pyspark_flinkish.common import Types, WatermarkStrategy
from pyspark_flinkish.common.serialization import RawBytesSchema, SimpleStringSchema
from pyspark_flinkish.core.errors import InvalidArgumentError, InvalidTypeError, UnsupportedFeatureError
from pyspark_flinkish.datastream import OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors.kafka import (
    KafkaOffsetResetStrategy,
    KafkaOffsetsInitializer,
    KafkaSource,
    KafkaTopicPartition,
    MalformedRecord,
)
from pyspark_flinkish.datastream.formats.json import JsonRowDeserializationSchema

ROW = Types.ROW_NAMED(["user", "t"], [Types.STRING(), Types.LONG()])


def _builder():  # type: ignore[no-untyped-def]
    return KafkaSource.builder().set_bootstrap_servers("b:9092").set_topics("events")


def test_pyflink_style_builder_gives_spark_options() -> None:
    source = (
        _builder()
        .set_starting_offsets(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(JsonRowDeserializationSchema.builder().type_info(ROW).build())
        .set_group_id("g")
        .set_property("security.protocol", "SASL_SSL")
        .set_property("kafka.sasl.jaas.config", "secret-jaas")
        .set_max_offsets_per_trigger(500)
        .set_spark_option("failOnDataLoss", "false")
        .set_timestamp_field("t")
        .build()
    )
    assert source.spark_options() == {
        "kafka.bootstrap.servers": "b:9092",
        "subscribe": "events",
        "startingOffsets": "latest",
        "maxOffsetsPerTrigger": "500",
        "kafka.group.id": "g",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.jaas.config": "secret-jaas",
        "failOnDataLoss": "false",
    }
    assert source.value_format == "json" and source.field_names() == ("user", "t")
    assert "secret-jaas" not in repr(source) and "SASL_SSL" not in repr(source)
    assert "kafka.sasl.jaas.config" in repr(source)


def test_from_options_matches_the_builder() -> None:
    tag = OutputTag("bad")
    a = KafkaSource.from_options(
        "events", "b:9092", schema="user STRING, t BIGINT", timestamp_field="t", starting_offsets={0: 5},
        partitions=[0, 1], malformed_records_tag=tag, options={"kafka.ssl.truststore.password": "pw", "minPartitions": "4"},
    )
    assert a.malformed_records_tag == tag
    assert a.partitions == (KafkaTopicPartition("events", 0), KafkaTopicPartition("events", 1))
    options = a.spark_options(a.partitions)  # type: ignore[arg-type]
    assert json.loads(options["startingOffsets"]) == {"events": {"0": 5, "1": -2}}
    assert options["kafka.ssl.truststore.password"] == "pw" and options["minPartitions"] == "4"
    assert KafkaSource.from_options(["a", "b"], "b:9092", value_format="string").spark_options()["subscribe"] == "a,b"
    assert isinstance(KafkaSource.from_options("a", "b:9092", value_format="raw").deserializer, RawBytesSchema)


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: KafkaSource.builder().set_topics("t").build(), InvalidArgumentError, "bootstrap servers"),
        (lambda: KafkaSource.builder().set_bootstrap_servers("b:1").build(), InvalidArgumentError, "exactly one of"),
        (lambda: _builder().set_property("auto.offset.reset", "earliest"), InvalidArgumentError, "set_starting_offsets"),
        (lambda: _builder().set_property("value.deserializer", "x"), InvalidArgumentError, "set_value_only_deserializer"),
        (lambda: _builder().set_spark_option("startingOffsets", "latest"), InvalidArgumentError, "set_starting_offsets"),
        (lambda: _builder().set_max_offsets_per_trigger(0), InvalidArgumentError, ">= 1"),
        (lambda: _builder().set_timestamp_field("t").build(), InvalidArgumentError, "JSON value"),
        (lambda: _builder().set_value_only_deserializer(JsonRowDeserializationSchema(ROW)).set_timestamp_field("x").build(),
         InvalidArgumentError, "not a field"),
        (lambda: _builder().set_bounded(None), UnsupportedFeatureError, "availableNow"),
        (lambda: KafkaOffsetsInitializer.committed_offsets(), UnsupportedFeatureError, "checkpoint"),
        (lambda: KafkaOffsetsInitializer.offsets({KafkaTopicPartition("t", 0): 1}, KafkaOffsetResetStrategy.NONE),
         UnsupportedFeatureError, "EARLIEST or LATEST"),
        (lambda: KafkaOffsetsInitializer.timestamp(-1), InvalidArgumentError, "epoch milliseconds"),
        (lambda: JsonRowDeserializationSchema(Types.LONG()), InvalidTypeError, "ROW_NAMED"),
        (lambda: JsonRowDeserializationSchema.builder().ignore_parse_errors(), UnsupportedFeatureError, "side output"),
        (lambda: KafkaSource.from_options("t", "b:1"), InvalidArgumentError, "needs schema="),
        (lambda: KafkaSource.from_options("t", "b:1", value_format="avro"), InvalidArgumentError, "value_format"),
        (lambda: KafkaSource.from_options(["a", "b"], "b:1", value_format="raw", partitions=[0]), InvalidArgumentError,
         "exactly one topic"),
        (lambda: SimpleStringSchema("no-such-charset"), InvalidArgumentError, "charset"),
    ],
)
def test_invalid_settings_fail_at_build_time_with_a_hint(make, error, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=match):
        make()


def test_starting_offsets() -> None:
    assert KafkaOffsetsInitializer.earliest().spark_options() == {"startingOffsets": "earliest"}
    assert KafkaOffsetsInitializer.timestamp(1_000).spark_options() == {"startingTimestamp": "1000"}
    latest_rest = KafkaOffsetsInitializer.offsets({("t", 1): 7}, KafkaOffsetResetStrategy.LATEST)
    spec = json.loads(latest_rest.spark_options([KafkaTopicPartition("t", 0), KafkaTopicPartition("t", 1)])["startingOffsets"])
    assert spec == {"t": {"0": -1, "1": 7}}
    assert str(KafkaTopicPartition("t", 3)) == "t-3"


def test_the_jvm_free_engine_says_kafka_needs_spark() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    source = _builder().set_value_only_deserializer(SimpleStringSchema()).build()
    with pytest.raises(UnsupportedFeatureError, match="get_execution_environment\\(spark\\)"):
        env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka")


def test_malformed_records_skip_the_timestamp_assigner() -> None:
    record = MalformedRecord("t", 0, 1, 2, None, b"x", "not JSON")
    assert record.no_timestamp_assigner is True


def test_the_connector_modules_do_not_import_pyspark() -> None:
    code = (
        "import sys; sys.modules['pyspark'] = None\n"
        "import pyspark_flinkish.datastream.connectors.kafka, pyspark_flinkish.datastream.formats.json\n"
        "import pyspark_flinkish.common.serialization, pyspark_flinkish.testing.fixtures, pyspark_flinkish.testing.kafka\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="svc" password="jaas-S3CRET";'
SECRETS = ("jaas-S3CRET", "ks-S3CRET", "key-S3CRET", "opt-S3CRET")


def _secret_source() -> KafkaSource:
    return (
        _builder()
        .set_property("security.protocol", "SASL_SSL")
        .set_property("sasl.mechanism", "PLAIN")
        .set_property("sasl.jaas.config", JAAS)
        .set_property("ssl.keystore.password", "ks-S3CRET")
        .set_property("kafka.ssl.key.password", "key-S3CRET")
        .set_spark_option("kafka.sasl.client.secret.extra", "opt-S3CRET")
        .build()
    )


def test_secrets_never_show_in_repr_and_are_redacted_from_quoted_client_errors() -> None:
    source = _secret_source()
    assert source.spark_options()["kafka.sasl.jaas.config"] == JAAS  # passed untouched
    assert source.spark_options()["kafka.ssl.keystore.password"] == "ks-S3CRET"
    shown = repr(source)
    assert not any(s in shown for s in SECRETS) and "svc" not in shown
    assert "kafka.sasl.jaas.config" in shown and "kafka.ssl.keystore.password" in shown
    quoted = (
        f"Failed to create new KafkaAdminClient: bad JAAS {JAAS} and a part of it: password=\"jaas-S3CRET\"; "
        "keystore password ks-S3CRET, key key-S3CRET, opt-S3CRET; protocol SASL_SSL mechanism PLAIN"
    )
    redacted = source.redact(quoted)
    assert not any(s in redacted for s in SECRETS) and JAAS not in redacted
    assert "[hidden]" in redacted and "SASL_SSL" in redacted and "PLAIN" in redacted  # not secrets: kept
    assert source.redact("nothing secret here") == "nothing secret here"
