"""Kafka in: ``env.from_kafka`` / ``from_source(KafkaSource)`` on a real broker, compared with the JVM-free engine
replaying the same records per partition; and what Spark's own global watermark would drop instead.

Each "round" below is produced, then read by one ``availableNow`` run of the query (one Spark micro-batch,
restarted from its checkpoint), so that micro-batch boundaries — where Flink's watermark advances — are the
same on both engines.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import traceback
from typing import Any, Dict, List, Tuple

import pytest

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.core.errors import InvalidPipelineError
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecord,
    KafkaSource,
    MalformedRecord,
)
from pyspark_flinkish.datastream.formats.json import JsonRowDeserializationSchema
from pyspark_flinkish.datastream.functions import KeyedProcessFunction, ProcessWindowFunction
from pyspark_flinkish.datastream.state import ValueStateDescriptor
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows
from pyspark_flinkish.spark import read_state

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

SCHEMA = Types.ROW_NAMED(["user", "t", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])
Event = Dict[str, Any]


class Total(ProcessWindowFunction):  # type: ignore[type-arg]
    """(user, window start, window end, count, sum of v)."""

    def process(self, key, context, elements):  # type: ignore[no-untyped-def]
        values = [e.v for e in elements]
        yield key, context.window().start, context.window().end, len(values), sum(values)


def _windows(stream, late: OutputTag, size_s: int = 10):  # type: ignore[no-untyped-def]
    return (
        stream.key_by(lambda r: r.user)
        .window(TumblingEventTimeWindows.of(Duration.of_seconds(size_s)))
        .side_output_late_data(late)
        .process(Total())
    )


def _jvm_free(topic: str, partitions: int, rounds: List[List[Tuple[int, int, Event]]], strategy, clock_per_round=None):  # type: ignore[no-untyped-def]
    """The JVM-free engine on the same records: one micro-batch per round, in (partition, offset) order, each
    record in its Kafka partition's split; the stream does not end (as a Kafka stream does not)."""
    from pyspark.sql import Row

    batches = []
    for i, records in enumerate(rounds):
        ordered = sorted(records, key=lambda r: (r[0], r[1]))
        batches.append(
            MicroBatch(
                [Row(**e) for _, _, e in ordered],
                partitions=[f"{topic}-{p}" for p, _, _ in ordered],
                processing_time=None if clock_per_round is None else clock_per_round[i],
            )
        )
    env = StreamExecutionEnvironment.get_execution_environment()
    if clock_per_round is not None:
        env.set_manual_clock(0)
    source = MicroBatchSource(batches, end_of_input=False, partitions=[f"{topic}-{p}" for p in range(partitions)])
    events = env.from_source(source, strategy.with_timestamp_assigner(lambda r, _: r.t), "replay")
    late = OutputTag("late")
    results, late_out = [], []
    windows = _windows(events, late)
    windows.add_sink(results.append)
    windows.get_side_output(late).add_sink(late_out.append)
    env.execute()
    return results, late_out


def test_json_tumbling_windows_equal_the_jvm_free_engine_across_a_broker_restart(spark, kafka_broker, kafka_topic, tmp_path) -> None:  # type: ignore[no-untyped-def]
    topic = kafka_topic(partitions=4)
    rounds = [
        kafka_broker.produce_json(topic, [
            (0, {"user": "ann", "t": 1_000, "v": 1}), (0, {"user": "bob", "t": 4_000, "v": 2}), (0, {"user": "ann", "t": 12_000, "v": 3}),
            (1, {"user": "ann", "t": 2_500, "v": 4}), (1, {"user": "cat", "t": 11_000, "v": 5}),
            (2, {"user": "bob", "t": 9_000, "v": 6}), (2, {"user": "bob", "t": 13_000, "v": 7}),
            (3, {"user": "cat", "t": 3_000, "v": 8}), (3, {"user": "cat", "t": 12_500, "v": 9}),
        ]),
    ]  # after this batch the watermark is min(12 s, 11 s, 13 s, 12.5 s) - 1 s - 1 ms: [0 s, 10 s) fires
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1))
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    late = OutputTag("late")
    bad = OutputTag("malformed")
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka_broker.bootstrap_servers)
        .set_topics(topic)
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_value_only_deserializer(JsonRowDeserializationSchema.builder().type_info(SCHEMA).build())
        .set_timestamp_field("t")
        .set_malformed_records_tag(bad)
        .build()
    )
    events = env.from_source(source, strategy, "events")
    results, late_out, malformed = [], [], []
    windows = _windows(events, late)
    windows.add_sink(results.append)
    windows.get_side_output(late).add_sink(late_out.append)
    events.get_side_output(bad).add_sink(malformed.append)
    checkpoint = str(tmp_path / "ck")

    def run() -> None:
        env.execute("kafka-json", checkpoint_location=checkpoint, trigger={"availableNow": True}).await_termination()

    run()
    kafka_broker.restart()  # the query resumes from its checkpoint's offsets on the restarted broker
    rounds.append(kafka_broker.produce_json(topic, [
        (0, {"user": "ann", "t": 14_000, "v": 10}), (0, {"user": "ann", "t": 31_000, "v": 11}),
        (1, {"user": "ann", "t": 8_000, "v": 12}),  # late: its window fired after the first batch
        (1, {"user": "dan", "t": 30_000, "v": 13}),
        (2, {"user": "bob", "t": 21_000, "v": 14}), (3, {"user": "cat", "t": 25_000, "v": 15}),
    ]))
    bad_offset = kafka_broker.produce(topic, ["{not json"], partition=2)[0][1]
    run()

    expected, expected_late = _jvm_free(topic, 4, rounds, strategy)
    assert expected and expected_late  # the scenario fires windows and has a late record
    assert sorted(results) == sorted(expected)
    assert [(r.user, r.t, r.v) for r in late_out] == [(r.user, r.t, r.v) for r in expected_late]
    assert [(m.topic, m.partition, m.offset, m.value) for m in malformed] == [(topic, 2, bad_offset, b"{not json")]
    assert malformed[0].reason.startswith("not JSON")


def test_lagging_partition_spark_global_watermark_drops_what_flink_keeps(spark, kafka_broker, kafka_topic, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Partition 0 runs 40 s ahead of partitions 1-3. Spark's ``withWatermark`` takes the maximum event time over
    all partitions and drops the lagging partitions' records; Flink's watermark is the minimum over partitions,
    so they are on time. This package matches the JVM-free (Flink) engine and drops nothing."""
    from pyspark.sql import functions as F

    topic = kafka_topic(partitions=4)
    users = {1: "bob", 2: "cat", 3: "dan"}
    plan = [
        [(0, {"user": "ann", "t": t, "v": 1}) for t in (1_000, 12_000, 25_000, 38_000)]
        + [(p, {"user": u, "t": 500 * p, "v": 1}) for p, u in users.items()],
        [(0, {"user": "ann", "t": t, "v": 1}) for t in (45_000, 52_000)]
        + [(p, {"user": u, "t": t + p, "v": 1}) for p, u in users.items() for t in (3_000, 8_000, 15_000)],
    ]
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(2))

    env = StreamExecutionEnvironment.get_execution_environment(spark)
    late = OutputTag("late")
    events = env.from_kafka(topic, kafka_broker.bootstrap_servers, strategy, schema="user STRING, t BIGINT, v BIGINT",
                            timestamp_field="t")
    results, late_out = [], []
    windows = _windows(events, late)
    windows.add_sink(results.append)
    windows.get_side_output(late).add_sink(late_out.append)

    native = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka_broker.bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .select(F.from_json(F.col("value").cast("string"), "user STRING, t BIGINT, v BIGINT").alias("j"))
        .select("j.*")
        .withColumn("ts", F.timestamp_millis("t"))
        .withWatermark("ts", "2 seconds")
        .groupBy(F.window("ts", "10 seconds"), "user")
        .agg(F.count("v").alias("n"))
    )
    native_rows: list = []
    dropped = 0
    rounds = []
    for records in plan:
        rounds.append(kafka_broker.produce_json(topic, records))
        env.execute("kafka-skew", checkpoint_location=str(tmp_path / "ours"), trigger={"availableNow": True}).await_termination()
        query = (
            native.writeStream.outputMode("append")
            .foreachBatch(lambda df, _id: native_rows.extend(df.collect()))
            .option("checkpointLocation", str(tmp_path / "native"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        dropped += sum(op.get("numRowsDroppedByWatermark", 0) for p in query.recentProgress for op in p["stateOperators"])

    expected, expected_late = _jvm_free(topic, 4, rounds, strategy)
    assert sorted(results) == sorted(expected)
    assert late_out == [] and expected_late == []
    # Flink: the watermark after round 2 is min(52, 15.001, 15.002, 15.003 s) - 2 s - 1 ms, so bob's, cat's and
    # dan's first windows fire with all three of their records
    assert {(u, n) for u, s, _, n, _ in results if s == 0 and u != "ann"} == {("bob", 3), ("cat", 3), ("dan", 3)}
    # Spark: after the first batch its watermark is 38 s - 2 s, so round 2's lagging records (3-15 s) are dropped
    # (counted after Spark's partial aggregation: one row per partition, user and window)
    assert dropped == 6
    native_first = {(r["user"], r["n"]) for r in native_rows if r["window"]["start"].timestamp() == 0 and r["user"] != "ann"}
    assert native_first == {("bob", 1), ("cat", 1), ("dan", 1)}


def test_an_empty_partition_holds_the_watermark_back_until_idle(spark, kafka_broker, kafka_topic, tmp_path) -> None:  # type: ignore[no-untyped-def]
    topic = kafka_topic(partitions=2)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)).with_idleness(Duration.of_seconds(5))
    clock = ManualClock(0)
    env = StreamExecutionEnvironment.get_execution_environment(spark, clock=clock)
    late = OutputTag("late")
    results: list = []
    _windows(env.from_kafka(topic, kafka_broker.bootstrap_servers, strategy, schema=SCHEMA, timestamp_field="t"), late).add_sink(results.append)
    rounds, times = [], [0, 10_000]
    for i, t in enumerate((1_000, 15_000)):  # partition 1 never gets a record
        rounds.append(kafka_broker.produce_json(topic, [(0, {"user": "ann", "t": t, "v": i})]))
        clock.set(times[i])
        env.execute("kafka-idle", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True}).await_termination()

    expected, _ = _jvm_free(topic, 2, rounds, strategy, clock_per_round=times)
    assert expected == [("ann", 0, 10_000, 1, 0)]  # fired only once partition 1 was idle
    assert results == expected
    without_idleness, _ = _jvm_free(topic, 2, rounds, WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)))
    assert without_idleness == []  # the empty partition holds the watermark at Long.MIN_VALUE


def test_string_values_with_metadata_and_kafka_timestamps(spark, kafka_broker, kafka_topic) -> None:  # type: ignore[no-untyped-def]
    topic = kafka_topic(partitions=1)
    kafka_broker.produce(topic, ["héllo", "world"], keys=["k1", None], timestamps_ms=[1_000, 2_000])
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    stream = env.from_kafka(topic, kafka_broker.bootstrap_servers, value_format="string", include_metadata=True)
    got = list(stream.execute_and_collect())
    assert got == [KafkaRecord(topic, 0, 0, 1_000, b"k1", "héllo"), KafkaRecord(topic, 0, 1, 2_000, None, "world")]


def test_a_malformed_record_with_the_fail_policy_fails_with_its_offset(spark, kafka_broker, kafka_topic, tmp_path) -> None:  # type: ignore[no-untyped-def]
    topic = kafka_topic(partitions=1)
    kafka_broker.produce(topic, [json.dumps({"user": "ann", "t": 1, "v": 1}), json.dumps({"user": "secret-ann", "t": "x"})])
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    env.from_kafka(topic, kafka_broker.bootstrap_servers, schema=SCHEMA, malformed_records="fail").add_sink(lambda _: None)
    handle = env.execute("kafka-bad", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True})
    with pytest.raises(Exception, match=r"malformed Kafka record in topic .*partition 0, offset 1: field 't' is a JSON "
                       r"string, not bigint\. The source's malformed-records policy is 'fail'") as failure:
        handle.await_termination()
    assert "secret-ann" not in str(failure.value)  # the value never appears in the error
    assert not os.path.exists(tmp_path / "ck" / "dead_letters")
    assert MalformedRecord._fields[-1] == "reason"


def test_records_deleted_before_they_are_read_fail_the_query(spark, kafka_broker, kafka_topic, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Never a silent loss: records the broker deleted (retention, DeleteRecords) between the query fixing its
    offsets and reading them fail the query with Spark's data-loss error; nothing of the batch is delivered, and a
    rerun fails again instead of skipping them (Spark's ``failOnDataLoss`` keeps its default, true)."""
    topic = kafka_topic(partitions=1)
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    got: List[str] = []
    env.from_kafka(topic, kafka_broker.bootstrap_servers, value_format="string").add_sink(got.append)
    checkpoint = str(tmp_path / "ck")

    def run() -> None:
        env.execute("kafka-lost", checkpoint_location=checkpoint, trigger={"availableNow": True}).await_termination()

    run()  # an empty topic: the query's checkpoint starts it at offset 0
    kafka_broker.produce(topic, ["a", "b", "c"])
    kafka_broker.delete_records(topic, {0: 2})  # as retention would: the log now starts at offset 2
    assert kafka_broker.offset_ranges(topic) == {0: (2, 3)}
    for _ in range(2):
        with pytest.raises(Exception, match=rf"(?s)Some data may have been lost.*offset \[0, [23]\) for topic partition {topic}-0"):
            run()
    assert got == []


SECRETS = ("jaas-S3CRET", "ts-S3CRET", "ks-S3CRET")


def _secret_options(jaas_end: str = ";") -> Dict[str, str]:
    jaas = f'org.apache.kafka.common.security.plain.PlainLoginModule required username="svc" password="jaas-S3CRET"{jaas_end}'
    return {
        "kafka.sasl.jaas.config": jaas,
        "kafka.ssl.truststore.password": "ts-S3CRET",
        "kafka.ssl.keystore.password": "ks-S3CRET",
    }


def test_kafka_secrets_never_reach_messages_logs_progress_or_reprs(spark, kafka_broker, kafka_topic, tmp_path, caplog) -> None:  # type: ignore[no-untyped-def]
    """SSL/SASL options go to Spark untouched; their values appear in no message, log record, progress report,
    query name or repr of this package: (1) listing the partitions fails with a SASL config the Kafka client
    rejects (a JAAS entry without its ';'), (2) a query runs with the options on a plaintext broker (which
    ignores them) and reports progress."""
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    seen: List[str] = []
    # every log record of this package, and warnings and errors of any other Python logger (py4j's own DEBUG
    # records echo every call to the JVM, option values included: see docs/operations.md#security)
    with caplog.at_level(logging.WARNING), caplog.at_level(logging.DEBUG, logger="pyspark_flinkish"):
        source = (
            KafkaSource.builder()
            .set_bootstrap_servers(kafka_broker.bootstrap_servers)
            .set_topics("secured-topic")
            .set_properties({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", **_secret_options(jaas_end="")})
            .build()
        )
        with pytest.raises(InvalidPipelineError, match=r"could not list the partitions of \['secured-topic'\]") as failed:
            env.from_source(source, WatermarkStrategy.for_monotonous_timestamps(), "secured")
        seen += ["".join(traceback.format_exception(failed.type, failed.value, failed.tb)), repr(source)]

        topic = kafka_topic(partitions=1)
        kafka_broker.produce(topic, ["a", "b"], timestamps_ms=[1_000, 2_000])
        stream = env.from_kafka(topic, kafka_broker.bootstrap_servers, value_format="string", options=_secret_options())
        got: List[str] = []
        stream.map(lambda v: v.upper()).add_sink(got.append)
        progress: List[Any] = []
        handle = env.execute(
            "secured-job", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True}, progress=progress.append
        )
        handle.await_termination()
    assert got == ["A", "B"] and progress
    assert "Failed to create new KafkaAdminClient" in seen[0]  # the Kafka client's reason is kept
    seen += [repr(stream), repr(progress), handle.query.name or "", json.dumps(handle.last_progress, default=str), caplog.text]
    leaks = {i: [s for s in SECRETS if s in text] for i, text in enumerate(seen) if any(s in text for s in SECRETS)}
    assert leaks == {}, leaks


class _RunningCount(KeyedProcessFunction):  # type: ignore[misc]
    def open(self, ctx: Any) -> None:
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.count.update((self.count.value() or 0) + 1)
        yield value.user, self.count.value()


@pytest.mark.parametrize("reader", ["from_kafka", "from_dataframe"])
def test_a_savepoint_carries_kafka_offsets_and_keyed_state_to_a_rescaled_job(spark, kafka_broker, kafka_topic, tmp_path, reader) -> None:  # type: ignore[no-untyped-def]
    """stop_with_savepoint records each Kafka partition's next offset (Spark's offsets log of the last batch); the
    job restored from it in another checkpoint, with 3 state partitions instead of 2, reads only what came after
    (the source's own start is ``earliest``) and continues every key's state: each (user, n) appears once.

    ``from_dataframe``: the job reads ``spark.readStream.format("kafka")`` itself; the savepoint carries that stream's
    entry of Spark's offsets log, and the restore seeds the new checkpoint with it (``spark/source_logs.py``)."""
    topic = kafka_topic(partitions=2)
    users = ["ann", "bob", "cat", "dan", "eve"]
    first = [(i % 2, {"user": users[i % 5], "t": 1_000 * i, "v": i}) for i in range(12)]
    second = [(i % 2, {"user": users[(i * 3) % 5], "t": 20_000 + 1_000 * i, "v": i}) for i in range(9)]
    kafka_broker.produce_json(topic, first)

    def job(partitions: int, out: List[Any]) -> Any:
        env = StreamExecutionEnvironment.get_execution_environment(spark, state_partitions=partitions)
        if reader == "from_kafka":
            events = env.from_kafka(topic, kafka_broker.bootstrap_servers, schema="user STRING, t BIGINT, v BIGINT",
                                    timestamp_field="t")
        else:
            from pyspark.sql import functions as F

            df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka_broker.bootstrap_servers)
                  .option("subscribe", topic).option("startingOffsets", "earliest").load())
            df = df.select(F.from_json(F.col("value").cast("string"), "user STRING, t BIGINT, v BIGINT").alias("e"),
                           "partition", "offset").select("e.*", "partition", "offset")
            events = env.from_dataframe(df, WatermarkStrategy.for_monotonous_timestamps(), timestamp_column="t",
                                        partition_column="partition", order_columns=["partition", "offset"])
        events.key_by(lambda r: r.user, key_type=Types.STRING()).process(_RunningCount()).uid("counts").add_sink(out.append)
        return env

    got: List[Any] = []
    handle = job(2, got).execute(f"kafka-savepoint-1-{reader}", checkpoint_location=str(tmp_path / "ck1"),
                                  trigger={"availableNow": True})
    handle.await_termination()
    path = handle.stop_with_savepoint(str(tmp_path / "savepoints"))
    kafka_broker.produce_json(topic, second)
    handle = job(3, got).execute(f"kafka-savepoint-2-{reader}", checkpoint_location=str(tmp_path / "ck2"),
                                  trigger={"availableNow": True}, from_savepoint=path)
    handle.await_termination()

    totals = collections.Counter(e["user"] for _, e in first + second)
    assert sorted(got) == sorted((u, n) for u, total in totals.items() for n in range(1, total + 1))
    counts = read_state(spark, str(tmp_path / "ck2"), "counts", ValueStateDescriptor("count", Types.LONG())).collect()
    assert {r["key"]: r["value"] for r in counts} == dict(totals)


class _RemindSoon(KeyedProcessFunction):  # type: ignore[misc]
    """Counts a user's records and registers a processing-time timer 1.5 s after each."""

    def open(self, ctx: Any) -> None:
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 1_500)
        return []

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield "fired", ctx.get_current_key(), timestamp, self.count.value()


def test_due_processing_time_timers_fire_right_after_a_restore_on_an_idle_topic(spark, kafka_broker, kafka_topic, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Flink fires a restored processing-time timer that is due as soon as the restored job runs, input or not. The
    first run's processing time is a manual clock at 0, so its timers (at 1500) stay pending; the job restored from
    its savepoint runs on the wall clock and its topic has nothing new: Spark runs a new query's first micro-batch
    without input (every source, the tick source too, has an initial offset), where every state partition advances
    its processing time and fires them; a timer due later is ticked as on any idle stream (``spark/ticks.py``)."""
    import time

    from pyspark_flinkish.spark import read_timers

    topic = kafka_topic(partitions=2)
    kafka_broker.produce_json(topic, [(i % 2, {"user": u, "t": 1_000 * i, "v": i}) for i, u in enumerate("abab")])

    def job(partitions: int, out: List[Any], clock: Any = None) -> Any:
        env = StreamExecutionEnvironment.get_execution_environment(spark, state_partitions=partitions, clock=clock)
        events = env.from_kafka(topic, kafka_broker.bootstrap_servers, schema="user STRING, t BIGINT, v BIGINT",
                                timestamp_field="t")
        events.key_by(lambda r: r.user, key_type=Types.STRING()).process(_RemindSoon()).uid("soon").add_sink(out.append)
        return env

    first: List[Any] = []
    handle = job(2, first, ManualClock(0)).execute("kafka-soon-1", checkpoint_location=str(tmp_path / "ck1"))
    handle.process_all_available()
    path = handle.stop_with_savepoint(str(tmp_path / "savepoints"))
    assert first == []
    pending = sorted((r["key"], r["timestamp"], r["kind"]) for r in read_timers(spark, path, "soon").collect())
    assert pending == [("a", 1_500, "processing"), ("b", 1_500, "processing")]

    second: List[Any] = []
    handle = job(3, second).execute("kafka-soon-2", checkpoint_location=str(tmp_path / "ck2"), from_savepoint=path)
    try:
        deadline = time.time() + 60
        while len(second) < 2 and time.time() < deadline and handle.is_active:
            time.sleep(0.2)
        handle.driver.raise_if_failed()
        assert sorted(second) == [("fired", "a", 1_500, 2), ("fired", "b", 1_500, 2)]
        # the sink received the timers' output inside the batch; Spark records the batch's progress only after the
        # batch function returns and the batch commits
        deadline = time.time() + 60
        while not handle.query.recentProgress and time.time() < deadline and handle.is_active:
            time.sleep(0.2)
        progress = [p if isinstance(p, dict) else json.loads(p.json) for p in handle.query.recentProgress]
        kafka_rows = [sum(s["numInputRows"] for s in p["sources"] if "Kafka" in s["description"]) for p in progress]
        assert progress and not any(kafka_rows)  # no input: the timers fired without any
    finally:
        handle.stop()
