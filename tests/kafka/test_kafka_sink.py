"""``KafkaSink`` on a real broker: the JVM-free engine and the Spark foreachBatch executor write the same records
(keys by Flink's partitioner, record timestamps, per-key order), exactly once for ``read_committed`` consumers;
bad input fails naming the sink with nothing committed. The crash tests are in ``test_kafka_sink_kills.py``."""

from __future__ import annotations

import json
import os
from typing import Any, List, Tuple

import pytest

from pyspark_flinkish.common import Duration, Row, SimpleStringSchema, Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors.kafka import (
    DeliveryGuarantee,
    KafkaRecordSerializationSchema,
    KafkaSink,
)
from pyspark_flinkish.datastream.connectors.kafka_producer import KafkaSinkError
from pyspark_flinkish.datastream.formats.json import JsonRowSerializationSchema
from pyspark_flinkish.datastream.functions import ProcessWindowFunction
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

pytestmark = pytest.mark.kafka

EVENT = Types.ROW_NAMED(["k", "t", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])
TOTAL = Types.ROW_NAMED(["k", "start", "n", "total"], [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG()])
LATE = OutputTag("late", EVENT)


class KeyOf(SimpleStringSchema):
    """The key of a record: its ``k`` field as UTF-8 text."""

    def serialize(self, element: Any) -> bytes:
        return str(element["k"]).encode()


class Total(ProcessWindowFunction):  # type: ignore[type-arg]
    def process(self, key, context, elements):  # type: ignore[no-untyped-def]
        values = [e["v"] for e in elements]
        yield Row(k=key, start=context.window().start, n=len(values), total=sum(values))


def sink(servers: str, topic: str, row_type: Any, prefix: str, guarantee: Any = DeliveryGuarantee.EXACTLY_ONCE) -> KafkaSink:
    builder = (
        KafkaSink.builder()
        .set_bootstrap_servers(servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic)
            .set_key_serialization_schema(KeyOf())
            .set_value_serialization_schema(JsonRowSerializationSchema.builder().with_type_info(row_type).build())
            .build()
        )
        .set_delivery_guarantee(guarantee)
    )
    if guarantee is DeliveryGuarantee.EXACTLY_ONCE:
        builder = builder.set_transactional_id_prefix(prefix)
    return builder.build()


BATCHES = [
    [Row(k="a", t=1_000, v=1), Row(k="b", t=1_500, v=2), Row(k="a", t=4_000, v=3)],
    [Row(k="b", t=12_000, v=4), Row(k="a", t=2_000, v=5)],  # a@2s is not late yet (watermark 3.999 s)
    [Row(k="a", t=25_000, v=6), Row(k="b", t=3_000, v=7)],  # b@3s is late: [0, 10 s) fired at watermark 11.999 s
]


def pipeline(env: StreamExecutionEnvironment, batches: List[List[Row]]) -> Tuple[Any, Any]:
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(1)).with_timestamp_assigner(
        lambda e, _: e["t"]
    )
    events = env.from_source(MicroBatchSource([MicroBatch(b) for b in batches], end_of_input=False), strategy, "events")
    totals = (
        events.key_by(lambda e: e["k"])
        .window(TumblingEventTimeWindows.of(Duration.of_seconds(10)))
        .side_output_late_data(LATE)
        .process(Total(), output_type=TOTAL)
    )
    return totals, totals.get_side_output(LATE)


def records(broker: Any, topic: str, isolation_level: str = "read_committed") -> List[Tuple[Any, ...]]:
    """``(partition, key, value, timestamp)`` of a topic's records, in partition and offset order."""
    got = broker.consume(topic, timeout=10, isolation_level=isolation_level)
    return [(r.partition, r.key.decode() if r.key else None, json.loads(r.value), r.timestamp) for r in got]


EXPECTED_TOTALS = [
    ("a", {"k": "a", "start": 0, "n": 3, "total": 9}, 9_999),
    ("b", {"k": "b", "start": 0, "n": 1, "total": 2}, 9_999),
    ("b", {"k": "b", "start": 10_000, "n": 1, "total": 4}, 19_999),
]
EXPECTED_LATE = [("b", {"k": "b", "t": 3_000, "v": 7}, 3_000)]


def _by_key(rows: List[Tuple[Any, ...]]) -> List[Tuple[Any, ...]]:
    return sorted(((k, v, ts) for _, k, v, ts in rows), key=lambda r: (r[0], r[2]))


def test_local_engine_writes_exactly_once_with_keys_timestamps_and_side_outputs(kafka_broker: Any, kafka_topic: Any) -> None:
    out, late = kafka_topic(partitions=3), kafka_topic(partitions=1, suffix="late")
    env = StreamExecutionEnvironment.get_execution_environment()
    totals, late_stream = pipeline(env, BATCHES)
    totals.sink_to(sink(kafka_broker.bootstrap_servers, out, TOTAL, "local-test"))
    late_stream.sink_to(sink(kafka_broker.bootstrap_servers, late, EVENT, "local-test"))
    result = env.execute("kafka sink (local)")

    got = records(kafka_broker, out)
    assert _by_key(got) == EXPECTED_TOTALS
    # Kafka's default partitioner on the key bytes, as Flink's KafkaSink without a partitioner
    from kafka.partitioner.default import murmur2

    for partition, key, _, _ in got:
        assert partition == (murmur2(key.encode()) & 0x7FFFFFFF) % 3
    assert _by_key(records(kafka_broker, late)) == EXPECTED_LATE
    sink_metrics = [m for name, m in result.metrics.items() if name.endswith("KafkaSink")]
    assert sorted(m["numRecordsOut"] for m in sink_metrics) == [1, 3]
    assert all(m["transactionsCommitted"] >= 1 and m["numBytesOut"] > 0 for m in sink_metrics)


def test_local_engine_serializer_error_names_the_sink_and_commits_nothing(kafka_broker: Any, kafka_topic: Any) -> None:
    out = kafka_topic()
    env = StreamExecutionEnvironment.get_execution_environment()
    strings = env.from_collection(["fine", 42, "never"])
    strings.sink_to(
        KafkaSink.builder()
        .set_bootstrap_servers(kafka_broker.bootstrap_servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder().set_topic(out).set_value_serialization_schema(SimpleStringSchema()).build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix("bad-serializer")
        .build()
    )
    with pytest.raises(Exception, match=rf"KafkaSink\(topic '{out}'\).*serializer failed on 42"):
        env.execute("kafka sink: a serializer that raises")
    assert kafka_broker.consume(out, timeout=3, isolation_level="read_committed") == []
    # the aborted transaction's first record may have reached the log, marked aborted: only read_uncommitted sees it
    assert [r.value for r in kafka_broker.consume(out, timeout=3)] in ([], [b"fine"])


def test_a_kept_producer_fenced_by_another_is_replaced_before_any_record_and_the_batch_checked_again(
    kafka_broker: Any, kafka_topic: Any
) -> None:
    """Producers kept between batches (as in a Spark Python worker): another process's producer of the same
    transactional id fences the kept one and commits batch 1; the kept writer, asked to write batch 1 with stale
    knowledge, fails on its transaction's first request (its marker offset), creates a new producer, finds batch 1
    committed and writes nothing; batch 2 then goes through the new producer, kept."""
    from pyspark_flinkish.datastream.connectors.kafka_producer import KafkaTransactionalWriter, ProducerPool

    out = kafka_topic(partitions=2)
    kafka = _string_sink(kafka_broker.bootstrap_servers, out, "kept")
    worker, other = ProducerPool(), ProducerPool()

    def write(pool: ProducerPool, batch: int, values: List[str], committed: Any = None) -> Tuple[dict, int]:  # type: ignore[type-arg]
        writer = KafkaTransactionalWriter(kafka, "uid", "app", 0, pool=pool)
        try:
            return writer.write_batch(batch, [(v, None) for v in values], committed), writer.new_producers
        finally:
            writer.close()

    try:
        assert write(worker, 0, ["a0", "b0"]) == ({"records": 2, "bytes": 4, "committed": 1, "skipped": 0, "aborted": 0}, 1)
        assert write(worker, 1, ["a1"], committed=0)[1] == 0  # kept: no new producer
        assert write(other, 2, ["a2", "b2"])[0]["committed"] == 1  # fences the worker's producer
        stats, created = write(worker, 2, ["a2", "b2"], committed=1)  # stale: the driver read before batch 2
        assert stats["skipped"] == 1 and stats["records"] == 0 and created == 1
        assert write(worker, 3, ["a3"], committed=2) == ({"records": 1, "bytes": 2, "committed": 1, "skipped": 0,
                                                          "aborted": 0}, 0)
    finally:
        worker.close()
        other.close()
    got = sorted(r.value.decode() for r in kafka_broker.consume(out, timeout=10, isolation_level="read_committed"))
    assert got == ["a0", "a1", "a2", "a3", "b0", "b2"]


# ---------------------------------------------------------------------------------------------- Spark
def _spark_job(spark: Any, servers: str, out: str, late: str, checkpoint: str, prefix: str) -> List[Any]:
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    totals, late_stream = pipeline(env, BATCHES)
    totals.sink_to(sink(servers, out, TOTAL, prefix)).uid("totals")
    late_stream.sink_to(sink(servers, late, EVENT, prefix)).uid("late")
    progress: List[Any] = []
    env.execute("kafka sink (spark)", checkpoint_location=checkpoint, trigger={"availableNow": True},
                progress=progress.append).await_termination()
    return progress


@pytest.mark.spark
def test_spark_writes_the_same_records_exactly_once_and_a_replayed_batch_is_not_written_again(  # type: ignore[no-untyped-def]
    spark, kafka_broker, kafka_topic, tmp_path
) -> None:
    """The foreachBatch executor writes what the JVM-free engine writes (keys, partitions, timestamps); the
    progress reports the sink's records, bytes and transactions; replaying the last batch (Spark's commit deleted, as
    after a crash between the Kafka commit and Spark's) finds its transactions committed and writes nothing."""
    out, late = kafka_topic(partitions=3), kafka_topic(partitions=1, suffix="late")
    checkpoint = str(tmp_path / "chk")
    progress = _spark_job(spark, kafka_broker.bootstrap_servers, out, late, checkpoint, "spark-test")

    got = records(kafka_broker, out)
    assert _by_key(got) == EXPECTED_TOTALS
    from kafka.partitioner.default import murmur2

    assert all(p == (murmur2(k.encode()) & 0x7FFFFFFF) % 3 for p, k, _, _ in got)
    assert _by_key(records(kafka_broker, late)) == EXPECTED_LATE
    metrics = [p["sink_metrics"] for p in progress]
    assert sum(m["totals"]["records"] for m in metrics) == 3 and sum(m["late"]["records"] for m in metrics) == 1
    assert sum(m["totals"]["bytes"] for m in metrics) == sum(len(json.dumps(v, separators=(",", ":"))) + 1
                                                             for _, _, v, _ in got)
    assert sum(m["totals"]["transactions_committed"] for m in metrics) == 2  # batches 1 and 2 fired windows

    # replay batch 2 (it wrote to both sinks) as after a crash before Spark's commit of it: its commit (and the
    # empty batch 3 after it) deleted; its transactions are found committed and nothing is written again
    assert [p["batch_id"] for p in progress] == [0, 1, 2, 3] and metrics[2]["late"]["records"] == 1
    _forget_spark_commits_from(checkpoint, 2)
    progress = _spark_job(spark, kafka_broker.bootstrap_servers, out, late, checkpoint, "spark-test")
    assert [p["batch_id"] for p in progress][:1] == [2]
    replayed = progress[0]["sink_metrics"]
    assert replayed["late"]["transactions_skipped"] == 1 and replayed["totals"]["transactions_skipped"] == 1
    assert replayed["late"]["transactions_committed"] == replayed["totals"]["transactions_committed"] == 0
    assert _by_key(records(kafka_broker, out)) == EXPECTED_TOTALS
    assert _by_key(records(kafka_broker, late)) == EXPECTED_LATE


def _forget_spark_commits_from(checkpoint: str, batch: int) -> None:
    """Make Spark replay ``batch``: delete its commit, and the offsets and commits of the batches after it."""
    for log in ("commits", "offsets"):
        directory = os.path.join(checkpoint, "spark", log)
        for name in os.listdir(directory):
            number = name.lstrip(".").split(".")[0]
            if number.isdigit() and (int(number) > batch or (log == "commits" and int(number) == batch)):
                os.remove(os.path.join(directory, name))


@pytest.mark.spark
def test_spark_writers_are_one_transaction_each_keep_each_keys_order_and_a_replay_skips_them_all(  # type: ignore[no-untyped-def]
    spark, kafka_broker, kafka_topic, tmp_path, monkeypatch
) -> None:
    """With one record per writer (``RECORDS_PER_TASK`` lowered) a batch has as many writers as shuffle partitions:
    each commits its own transaction, each key's records stay in order, and a replay finds every one committed."""
    from pyspark_flinkish.spark import kafka_sink as spark_kafka_sink

    monkeypatch.setattr(spark_kafka_sink, "RECORDS_PER_TASK", 1)
    out = kafka_topic(partitions=4)
    values = [f"k{i % 10}:{i}" for i in range(40)]  # 10 keys, 4 records each, in this order per key

    class Key(SimpleStringSchema):
        def serialize(self, element: Any) -> bytes:
            return element.split(":")[0].encode()

    kafka = (
        KafkaSink.builder()
        .set_bootstrap_servers(kafka_broker.bootstrap_servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder().set_topic(out).set_key_serialization_schema(Key())
            .set_value_serialization_schema(SimpleStringSchema()).build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix("writers")
        .build()
    )
    checkpoint = str(tmp_path / "chk")

    def run() -> List[Any]:
        env = StreamExecutionEnvironment.get_execution_environment(spark)
        source = MicroBatchSource([MicroBatch(values)], end_of_input=False)
        env.from_source(source, WatermarkStrategy.no_watermarks(), "values").sink_to(kafka).uid("values")
        progress: List[Any] = []
        env.execute("writers", checkpoint_location=checkpoint, trigger={"availableNow": True},
                    progress=progress.append).await_termination()
        return progress

    progress = run()
    written = [p for p in progress if p["sink_metrics"]["values"]["records"]]
    assert len(written) == 1 and written[0]["sink_metrics"]["values"]["records"] == 40
    assert written[0]["sink_metrics"]["values"]["transactions_committed"] == 2  # spark.sql.shuffle.partitions

    def per_key() -> dict:  # type: ignore[type-arg]
        keys: dict = {}  # type: ignore[type-arg]
        for r in kafka_broker.consume(out, timeout=10, isolation_level="read_committed"):
            keys.setdefault(r.key.decode(), []).append(r.value.decode())
        return keys

    expected = {f"k{k}": [f"k{k}:{i}" for i in range(k, 40, 10)] for k in range(10)}
    assert per_key() == expected
    _forget_spark_commits_from(checkpoint, written[0]["batch_id"])
    replayed = run()[0]["sink_metrics"]["values"]
    assert replayed["transactions_skipped"] == 2 and replayed["transactions_committed"] == 0
    assert per_key() == expected


# ---------------------------------------------------------------------------------------------- bad input
def _string_sink(servers: str, topic: str, prefix: str, **properties: str) -> KafkaSink:
    builder = (
        KafkaSink.builder()
        .set_bootstrap_servers(servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder().set_topic(topic).set_value_serialization_schema(SimpleStringSchema()).build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix(prefix)
    )
    for key, value in properties.items():
        builder = builder.set_property(key.replace("_", "."), value)
    return builder.build()


def test_local_engine_missing_topic_and_too_large_record_fail_naming_the_sink(kafka_broker: Any, kafka_topic: Any) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(["a"]).sink_to(_string_sink(kafka_broker.bootstrap_servers, "no-such-topic", "missing"))
    with pytest.raises(KafkaSinkError, match=r"KafkaSink\(topic 'no-such-topic'\).*topic 'no-such-topic' does not exist"):
        env.execute("missing topic")

    out = kafka_topic()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(["small", "x" * 5_000, "after"]).sink_to(
        _string_sink(kafka_broker.bootstrap_servers, out, "too-large", max_request_size="2000")
    )
    with pytest.raises(KafkaSinkError, match=rf"KafkaSink\(topic '{out}'\).*cannot send a record of 5000 bytes"):
        env.execute("too large")
    assert kafka_broker.consume(out, timeout=3, isolation_level="read_committed") == []


def test_local_engine_at_least_once_writes_without_transactions(kafka_broker: Any, kafka_topic: Any) -> None:
    out = kafka_topic()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(["a", "b"]).sink_to(
        KafkaSink.builder()
        .set_bootstrap_servers(kafka_broker.bootstrap_servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder().set_topic(out).set_value_serialization_schema(SimpleStringSchema()).build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.AT_LEAST_ONCE)
        .build()
    )
    result = env.execute("at least once")
    assert [r.value for r in kafka_broker.consume(out, timeout=5, isolation_level="read_committed")] == [b"a", b"b"]
    (metrics,) = [m for name, m in result.metrics.items() if name.endswith("KafkaSink")]
    assert metrics["numRecordsOut"] == 2 and metrics.get("transactionsCommitted", 0) == 0


@pytest.mark.spark
def test_spark_bad_input_fails_the_query_naming_the_sink_and_commits_nothing(  # type: ignore[no-untyped-def]
    spark, kafka_broker, kafka_topic, tmp_path
) -> None:
    """A serializer that raises, a record too large for the producer, and an unreachable broker fail the query with
    the sink's name; nothing of the failed batch is committed."""
    out = kafka_topic()
    cases = [
        (["fine", 42], kafka_broker.bootstrap_servers, {}, r"serializer failed on 42"),
        (["fine"], kafka_broker.bootstrap_servers, {"topic": "no-such-topic"}, r"topic 'no-such-topic' does not exist"),
        (["fine", "x" * 5_000], kafka_broker.bootstrap_servers, {"max_request_size": "2000"},
         r"cannot send a record of 5000 bytes"),
        (["fine"], "127.0.0.1:1", {"bootstrap_timeout_ms": "1000"}, r"bootstrap servers 127.0.0.1:1\): cannot connect"),
    ]
    for i, (values, servers, properties, error) in enumerate(cases):
        env = StreamExecutionEnvironment.get_execution_environment(spark)
        env.from_source(MicroBatchSource([MicroBatch(values)]), WatermarkStrategy.no_watermarks(), "values").sink_to(
            _string_sink(servers, properties.get("topic", out), f"bad-{i}",
                         **{k: v for k, v in properties.items() if k != "topic"})
        ).uid("bad")
        with pytest.raises(Exception, match=rf"(?s)KafkaSink\(topic '{properties.get('topic', out)}'\).*{error}"):
            env.execute("bad input", checkpoint_location=str(tmp_path / f"chk{i}"),
                        trigger={"availableNow": True}).await_termination()
    assert kafka_broker.consume(out, timeout=3, isolation_level="read_committed") == []


@pytest.mark.spark
def test_apply_in_pandas_with_state_executor_writes_the_same_records(  # type: ignore[no-untyped-def]
    spark, kafka_broker, kafka_topic, tmp_path
) -> None:
    """The same sink on the other Spark executor: the same records, keys, partitions and timestamps; its progress
    reports the sinks' records, bytes and transactions as the foreachBatch executor's does."""
    out, late = kafka_topic(partitions=3), kafka_topic(partitions=1, suffix="late")
    env = StreamExecutionEnvironment.get_execution_environment(spark, backend="apply_in_pandas_with_state")
    totals, late_stream = pipeline(env, BATCHES)
    totals.sink_to(sink(kafka_broker.bootstrap_servers, out, TOTAL, "apply-test")).uid("totals")
    late_stream.sink_to(sink(kafka_broker.bootstrap_servers, late, EVENT, "apply-test")).uid("late")
    called: List[Any] = []
    handle = env.execute("kafka sink (apply)", checkpoint_location=str(tmp_path / "chk"), trigger={"availableNow": True},
                         progress=called.append)
    handle.await_termination()
    got = records(kafka_broker, out)
    assert _by_key(got) == EXPECTED_TOTALS
    assert _by_key(records(kafka_broker, late)) == EXPECTED_LATE
    metrics = [p["sink_metrics"] for p in handle.recent_progress()]
    assert [p["sink_metrics"] for p in called] == metrics  # execute(progress=...) is called with each batch's progress
    assert metrics and all(set(m) == {"totals", "late"} for m in metrics), metrics
    assert sum(m["totals"]["records"] for m in metrics) == 3 and sum(m["late"]["records"] for m in metrics) == 1
    assert sum(m["totals"]["bytes"] for m in metrics) == sum(len(json.dumps(v, separators=(",", ":"))) + 1
                                                             for _, _, v, _ in got)
    committed = sum(m["totals"]["transactions_committed"] + m["late"]["transactions_committed"] for m in metrics)
    assert committed >= 2 and all(m[s]["transactions_skipped"] == 0 for m in metrics for s in m)


def test_the_kafka_to_kafka_example_writes_each_fired_window_once(spark, kafka_broker, kafka_topic, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``examples/kafka_to_kafka.py``'s job on the test broker, one micro-batch: the windows its watermark closed
    (``max(t) - 5 s``) are in the output topic once each, with the counts and sums of its generated events."""
    import argparse
    import collections
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "kafka_to_kafka.py"
    spec = importlib.util.spec_from_file_location("kafka_to_kafka_example", path)
    example = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = example  # type: ignore[union-attr]  # cloudpickle ships it by value from there
    spec.loader.exec_module(example)  # type: ignore[union-attr]
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(example)
    topics = {"input": kafka_topic(partitions=2), "output": kafka_topic(partitions=2), "late": kafka_topic(partitions=1)}
    events = example.generated(600)
    example.produce(kafka_broker.bootstrap_servers, topics["input"], events)
    args = argparse.Namespace(bootstrap_servers=kafka_broker.bootstrap_servers, **topics)
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    example.build(env, args)
    env.execute("kafka-to-kafka example", checkpoint_location=str(tmp_path / "ck"),
                trigger={"availableNow": True}).await_termination()
    watermark = max(e["t"] for e in events) - 5_000 - 1
    expected = collections.defaultdict(lambda: [0, 0])
    for e in events:
        start = e["t"] // 60_000 * 60_000
        if start + 60_000 - 1 <= watermark:
            expected[(e["k"], start)][0] += 1
            expected[(e["k"], start)][1] += e["v"]
    got = [json.loads(r.value) for r in kafka_broker.consume(topics["output"], timeout=10, isolation_level="read_committed")]
    assert sorted((g["k"], g["start"], g["n"], g["total"]) for g in got) == sorted((k, s, n, t) for (k, s), (n, t) in expected.items())
    assert kafka_broker.consume(topics["late"], timeout=3, isolation_level="read_committed") == []
