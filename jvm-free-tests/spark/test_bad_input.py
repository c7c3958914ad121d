"""Bad input without a JVM: the reasons of malformed Kafka records, the malformed-records policy and dead-letter
table settings, dead-letter rows and sinks, and the executors' far-future counting (``spark/plan.py``)."""

from __future__ import annotations

import datetime as dt
import json
import logging

import pytest
from pyspark.sql import types as T

from pyspark_flinkish.common import Types, WatermarkStrategy
from pyspark_flinkish.core.errors import InvalidArgumentError, InvalidPipelineError, InvalidTypeError
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors.delta import DeltaSink
from pyspark_flinkish.datastream.connectors.kafka import (
    KafkaSource,
    MalformedRecord,
    MalformedRecordPolicy,
)
from pyspark_flinkish.datastream.formats.json import JsonRowDeserializationSchema
from pyspark_flinkish.spark.chain import route_records
from pyspark_flinkish.spark.dead_letters import (
    DEAD_LETTER_TYPE,
    DeadLetterWriter,
    dead_letter_counts,
    dead_letter_row,
    with_dead_letter_sinks,
)
from pyspark_flinkish.spark.far_future import FutureRecords, position
from pyspark_flinkish.spark.kafka import malformed_reason
from pyspark_flinkish.spark.plan import ExecPlan
from pyspark_flinkish.spark.rows import FUTURE_SAMPLES
from pyspark_flinkish.spark.sink_frames import SinkFrame

SCHEMA = T.StructType(
    [
        T.StructField("user", T.StringType()),
        T.StructField("t", T.LongType()),
        T.StructField("at", T.TimestampType()),
        T.StructField("n", T.StructType([T.StructField("x", T.IntegerType())])),
        T.StructField("xs", T.ArrayType(T.LongType())),
    ]
)
NULLS = {"user": None, "t": None, "at": None, "n": None, "xs": None}


def _reason(value, parsed=None, parse_failed=True, timestamp_field=None):  # type: ignore[no-untyped-def]
    raw = value if isinstance(value, bytes) or value is None else json.dumps(value).encode()
    return malformed_reason(raw, SCHEMA, {**NULLS, **(parsed or {})}, parse_failed, timestamp_field)


@pytest.mark.parametrize(
    ("value", "parsed", "parse_failed", "timestamp_field", "expected"),
    [
        (None, None, True, None, "null value (a tombstone)"),
        (b'{"user": "\xff"}', {"user": "\ufffd"}, False, None, "not UTF-8 text (invalid start byte at byte 10)"),
        (b"{not json", None, True, None, "not JSON (Expecting property name enclosed in double quotes at line 1 column 2)"),
        (b"", None, True, None, "not JSON (Expecting value at line 1 column 1)"),
        ([1, 2], None, True, None, "not a JSON object (a JSON array)"),
        (b"null", None, True, None, "not a JSON object (a JSON null)"),
        ("text", None, True, None, "not a JSON object (a JSON string)"),
        ({"user": "ann", "t": "soon"}, {"user": "ann"}, True, None, "field 't' is a JSON string, not bigint"),
        ({"t": 1.5}, None, True, None, "field 't' is a JSON number with a fraction or exponent, not bigint"),
        ({"t": True}, None, True, None, "field 't' is a JSON boolean, not bigint"),
        ({"t": 10**20}, None, True, None, "field 't' is a JSON integer out of range for bigint"),
        ({"at": "next tuesday"}, None, True, "at", "field 'at' is a JSON string that does not parse as a timestamp"),
        ({"n": {"x": "y"}}, {"n": {"x": None}}, True, None, "field 'n.x' is a JSON string, not int"),
        ({"n": 5}, None, True, None, "field 'n' is a JSON integer, not struct<x:int>"),
        ({"xs": [1, "two"]}, None, True, None, "field 'xs' is a JSON array, not array<bigint>"),
        ({"user": "ann", "t": 1}, {"user": "ann", "t": 1}, False, "at", "event-time field 'at' is missing"),
        ({"user": "ann", "at": None}, {"user": "ann"}, False, "at", "event-time field 'at' is null"),
        (b'{"at": null} trailing', None, False, "at", "event-time field 'at' is missing or null"),
        ({"user": "ann"}, {"user": "ann"}, True, None, "does not fit the schema " + SCHEMA.simpleString()),
    ],
)
def test_malformed_reasons_name_the_problem(value, parsed, parse_failed, timestamp_field, expected) -> None:  # type: ignore[no-untyped-def]
    assert _reason(value, parsed, parse_failed, timestamp_field) == expected


def test_a_reason_names_at_most_three_fields_and_never_the_values() -> None:
    secret = "hunter2-password"
    schema = T.StructType([T.StructField(f"f{i}", T.LongType()) for i in range(5)])
    value = json.dumps({f"f{i}": secret for i in range(5)}).encode()
    reason = malformed_reason(value, schema, {f"f{i}": None for i in range(5)})
    assert reason == (
        "field 'f0' is a JSON string, not bigint; field 'f1' is a JSON string, not bigint; "
        "field 'f2' is a JSON string, not bigint; and 2 more fields"
    )
    for bad in (value, value[:-3], b'["' + secret.encode() + b'"]', secret.encode()):
        assert secret not in malformed_reason(bad, schema, {}, True, "f0")


# ------------------------------------------------------------------------------------ policy and table settings
ROW = Types.ROW_NAMED(["user", "t"], [Types.STRING(), Types.LONG()])


def _json_builder():  # type: ignore[no-untyped-def]
    return (
        KafkaSource.builder().set_bootstrap_servers("b:9092").set_topics("events")
        .set_value_only_deserializer(JsonRowDeserializationSchema(ROW))
    )


def test_the_default_policy_is_dead_letter_and_a_tag_means_side_output() -> None:
    source = _json_builder().build()
    assert source.malformed_records_policy is MalformedRecordPolicy.DEAD_LETTER
    assert source.dead_letter_table is None  # the default table is chosen with the checkpoint
    tagged = _json_builder().set_malformed_records_tag(OutputTag("bad")).build()
    assert tagged.malformed_records_policy is MalformedRecordPolicy.SIDE_OUTPUT
    failing = KafkaSource.from_options("t", "b:1", schema="user STRING", malformed_records="fail")
    assert failing.malformed_records_policy is MalformedRecordPolicy.FAIL
    assert MalformedRecordPolicy.of("side_output") is MalformedRecordPolicy.SIDE_OUTPUT


def test_dead_letter_tables_are_paths_catalog_names_or_delta_sinks() -> None:
    path = _json_builder().set_dead_letter_table("/lake/ops/dead_letters").build()
    assert path.dead_letter_table == DeltaSink.for_path("/lake/ops/dead_letters")
    uri = KafkaSource.from_options("t", "b:1", schema="user STRING", dead_letter_table="s3://bucket/dl")
    assert uri.dead_letter_table == DeltaSink.for_path("s3://bucket/dl")
    name = _json_builder().set_dead_letter_table("ops.dead_letters").build()
    assert name.dead_letter_table == DeltaSink.for_table("ops.dead_letters")
    sink = DeltaSink.for_path("/dl").with_partition_columns("source")
    assert _json_builder().set_dead_letter_table(sink).build().dead_letter_table == sink


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: _json_builder().set_malformed_records_policy("skip"), InvalidArgumentError, "must be one of"),
        (lambda: _json_builder().set_malformed_records_policy("side_output").build(), InvalidArgumentError,
         "needs its tag"),
        (lambda: _json_builder().set_malformed_records_tag(OutputTag("b")).set_malformed_records_policy("fail").build(),
         InvalidArgumentError, "policy is 'fail'"),
        (lambda: _json_builder().set_malformed_records_policy("fail").set_dead_letter_table("/dl").build(),
         InvalidArgumentError, "dead-letter table is set"),
        (lambda: _json_builder().set_dead_letter_table(""), InvalidTypeError, "path, a table name or a DeltaSink"),
        (lambda: _json_builder().set_dead_letter_table(DeltaSink.for_path("/dl", merge_keys=["offset"])),
         InvalidArgumentError, "merge keys"),
        (lambda: _json_builder().set_dead_letter_table(DeltaSink.for_path("/dl", partition_by=["day"])),
         InvalidArgumentError, "not dead-letter columns"),
        (lambda: KafkaSource.from_options("t", "b:1", schema="user STRING", malformed_records_tag=OutputTag("b"),
                                          dead_letter_table="/dl"), InvalidArgumentError, "policy is 'side_output'"),
    ],
)
def test_conflicting_or_invalid_settings_fail_at_build_time(make, error, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=match):
        make()


# ------------------------------------------------------------------------------------ dead-letter rows and sinks
def test_a_dead_letter_row_has_the_raw_bytes_reason_and_position() -> None:
    record = MalformedRecord("events", 2, 41, 1_700_000_000_123, b"k", b"\xff{", "not UTF-8 text (...)")
    at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    row = dead_letter_row(record, "orders", 7, at, "q-1")
    assert dict(zip(DEAD_LETTER_TYPE.field_names, row)) == {
        "batch_id": 7, "source": "orders", "topic": "events", "partition": 2, "offset": 41,
        "kafka_timestamp": dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.UTC), "key": b"k",
        "value": b"\xff{", "reason": "not UTF-8 text (...)", "recorded_at": at, "query_id": "q-1",
    }


def test_dead_letter_sinks_are_added_after_the_users_transformations(caplog: pytest.LogCaptureFixture) -> None:
    from pyspark_flinkish.datastream.plan import DeadLetterRouteSpec, Transformation

    src = Transformation("source", "events")
    routes = [
        Transformation("operator", f"{name}: malformed", [src], spec=DeadLetterRouteSpec("process", source=name, table=table))
        for name, table in (("orders", None), ("orders", DeltaSink.for_table("ops.dl")))
    ]
    user = Transformation("sink", "Sink", [routes[0]])
    other = Transformation("sink", "Sink", [routes[1]])
    with caplog.at_level(logging.INFO, logger="pyspark_flinkish.spark.dead_letters"):
        sinks = with_dead_letter_sinks([user, other], "/ck")
    assert sinks[:2] == [user, other]
    added = sinks[2:]
    assert [s.uid for s in added] == ["dead-letters:orders", "dead-letters:orders-2"]
    assert all(s.id > t.id for s in added for t in (src, user, other, *routes))  # after the user's: uids stay put
    writers = [s.spec.writer for s in added]
    assert isinstance(writers[0], DeadLetterWriter) and writers[0].table == DeltaSink.for_path("/ck/dead_letters")
    assert writers[1].table == DeltaSink.for_table("ops.dl")
    assert [s.inputs[0].inputs[0] for s in added] == routes
    assert "/ck/dead_letters" in caplog.text and caplog.text.count("dead-letter Delta table") == 1
    plan = [user, other, *added]
    assert dead_letter_counts(plan, {0: 1, 2: 2, 3: 1}) == {"orders": 3}


def test_dead_letter_writer_commits_nothing_for_an_empty_batch() -> None:
    writer = DeadLetterWriter("orders", DeltaSink.for_path("/nowhere"))
    writer(None, SinkFrame(None, DEAD_LETTER_TYPE, 0), 3, {})  # no Spark, no Delta: an empty batch touches neither
    assert writer.delta.commits == 0


# ------------------------------------------------------------------------------------ far-future records
def test_the_route_counts_far_future_records_and_samples_a_few() -> None:
    """Processing time 1 000 000, horizon 60 s: event times above 1 060 000 are far in the future."""
    env = StreamExecutionEnvironment.get_execution_environment()
    stream = env.from_source(MicroBatchSource([MicroBatch([1])]), WatermarkStrategy.no_watermarks(), "events")
    stream.add_sink(lambda _: None)
    plan = ExecPlan(list(env._sinks))
    plan.future_horizon_ms = 60_000
    far = [(f"e{i}", 2_000_000 + i, "p0", [0, i]) for i in range(FUTURE_SAMPLES + 5)]
    records = [("a", 1_060_000, "p0", [0, 100]), ("b", None, "p1", [1, 0]), *far, ("c", 5_000_000, "p1", [1, 1])]
    frame = next(route_records(plan, iter(records), {}, 1_000_000, 1, plan.sources[0]))
    future = frame[frame["kind"] == "future"]
    totals, sampled = future[future["ts"].isna()], future[future["ts"].notna()]
    counts = {r.part: (r.stat_count, r.stat_max) for r in totals.itertuples()}
    assert counts == {"p0": (FUTURE_SAMPLES + 5, 2_000_000 + FUTURE_SAMPLES + 4), "p1": (1, 5_000_000)}
    samples = [(r.part, int(r.ts), list(r.ord)) for r in sampled.itertuples()]
    assert samples[:2] == [("p0", 2_000_000, [0, 0]), ("p0", 2_000_001, [0, 1])]
    assert len(samples) == FUTURE_SAMPLES + 1  # capped per partition, all counted
    plan.future_horizon_ms = None
    frame = next(route_records(plan, iter(records), {}, 1_000_000, 1, plan.sources[0]))
    assert (frame["kind"] == "future").sum() == 0


def test_the_driver_logs_far_future_records_with_partition_offset_and_time(caplog: pytest.LogCaptureFixture) -> None:
    kafka = ["__kafka_partition", "__kafka_offset"]
    future = FutureRecords(3_600_000, 0)
    future.add("events", {"part": "t-0", "ts": None, "ord": None, "stat_count": 12}, kafka)
    for i in range(12):
        future.add("events", {"part": "t-0", "ts": 7_200_000 + i, "ord": [0, 100 + i], "stat_count": None}, kafka)
    with caplog.at_level(logging.WARNING, logger="pyspark_flinkish.spark.far_future"):
        future.log()
    assert future.counts == {"events": {"t-0": 12}}
    lines = caplog.messages
    assert "source 'events': 12 record(s) with an event time more than 1 h ahead" in lines[0]
    assert lines[1] == (
        "far-future record: source 'events', partition t-0, offset 100: event time 1970-01-01T02:00:00.000+00:00 "
        "(7200000 ms), 2 h ahead of processing time"
    )
    assert len([m for m in lines if m.startswith("far-future record:")]) == 10
    assert lines[-1] == "far-future records: 12 in this micro-batch, 10 logged"
    assert position(["p", "off"], [1, 9]) == "p=1, off=9" and position([], [3, 4]) == "order [3, 4]"


class _Conf:
    def get(self, _key: str) -> str:
        return "2"


class _Spark:
    """Enough of a SparkSession for building environments (never used to run anything)."""

    conf = _Conf()


def test_the_apply_in_pandas_with_state_executor_refuses_kafka_when_the_source_is_built() -> None:
    from pyspark_flinkish.core.errors import UnsupportedFeatureError
    from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment

    env = SparkStreamExecutionEnvironment(_Spark(), backend="apply_in_pandas_with_state")
    with pytest.raises(UnsupportedFeatureError, match=r"Kafka source 'orders'.*dead-letter table.*foreachBatch"):
        env.from_kafka("t", "b:1", schema="user STRING", source_name="orders")


def test_the_horizon_is_validated() -> None:
    from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment

    assert SparkStreamExecutionEnvironment(_Spark(), future_horizon_ms=dt.timedelta(minutes=5)).future_horizon_ms == 300_000
    assert SparkStreamExecutionEnvironment(_Spark(), future_horizon_ms=None).future_horizon_ms is None
    assert SparkStreamExecutionEnvironment(_Spark()).future_horizon_ms == 3_600_000
    with pytest.raises(InvalidPipelineError, match=">= 0"):
        SparkStreamExecutionEnvironment(_Spark(), future_horizon_ms=-1)
