"""A user function that raises, on Spark: the query stops with a :class:`UserFunctionError` whose message names the
operator (name and uid), the function, the key and the window and ends with the original traceback (not Spark's and
Py4J's stacks); after the bug is fixed, a restart from the same checkpoint resumes exactly once.

Real Kafka in (2 partitions), real Delta out (append). Each round of records is produced, then read by one
``availableNow`` run (one micro-batch), so that micro-batch boundaries — where Flink's watermark advances — are the
same as the JVM-free engine's replay of the rounds. Round 1 holds a record the reduce function fails on; the run
reading it fails, the table stays as round 0 left it; the "fixed" pipeline (same operators and uids, the function's
flag off) restarts from the checkpoint, re-runs the batch of round 1 (Spark's offsets log has its offsets) and goes
on with round 2 as the next batch. The table must then equal the JVM-free engine's output over all rounds: nothing
lost, nothing twice.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import pytest

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.core.errors import FlinkishError, StateError, UserFunctionError
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors.delta import DeltaSink
from pyspark_flinkish.datastream.functions import KeyedProcessFunction, ReduceFunction
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

SCHEMA = "user STRING, t BIGINT, v BIGINT"
OUT = Types.ROW_NAMED(["user", "t", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])
POISON = 13


class Sum(ReduceFunction):  # type: ignore[type-arg]
    """Sums ``v`` per key and window; with ``buggy`` it fails on ``v == 13`` (the bug, later "fixed")."""

    def __init__(self, buggy: bool) -> None:
        self.buggy = buggy

    def reduce(self, a, b):  # type: ignore[no-untyped-def]
        if self.buggy and b[2] == POISON:
            raise ValueError(f"cannot add {b!r}")  # noqa: EM102 (the traceback shows this line)
        return (a[0], max(a[1], b[1]), a[2] + b[2])


def _pipeline(events: Any, buggy: bool) -> Any:
    return (
        events.map(lambda r: (r.user, r.t, r.v), output_type=Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()]))
        .name("parse")
        .uid("parse")
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Duration.of_seconds(10)))
        .reduce(Sum(buggy))
        .name("sums")
        .uid("sums")
        .map(lambda e: {"user": e[0], "t": e[1], "v": e[2]}, output_type=OUT)
        .uid("out-map")
    )


def _expected(topic: str, rounds: List[List[Tuple[int, int, Dict[str, Any]]]]) -> List[Tuple[Any, ...]]:
    """The JVM-free engine (without the bug) over the same rounds, one micro-batch each, per-partition splits."""
    from pyspark.sql import Row

    batches = []
    for records in rounds:
        ordered = sorted(records, key=lambda r: (r[0], r[1]))
        batches.append(MicroBatch([Row(**e) for _, _, e in ordered], partitions=[f"{topic}-{p}" for p, _, _ in ordered]))
    env = StreamExecutionEnvironment.get_execution_environment()
    source = MicroBatchSource(batches, end_of_input=False, partitions=[f"{topic}-0", f"{topic}-1"])
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1)).with_timestamp_assigner(lambda r, _: r.t)
    out: List[Dict[str, Any]] = []
    _pipeline(env.from_source(source, strategy, "events"), buggy=False).add_sink(out.append)
    env.execute()
    return sorted((r["user"], r["t"], r["v"]) for r in out)


def test_a_failing_reduce_names_operator_key_window_and_a_fixed_restart_resumes_exactly_once(  # type: ignore[no-untyped-def]
    spark, kafka_broker, kafka_topic, tmp_path
) -> None:
    topic = kafka_topic(partitions=2)
    table = str(tmp_path / "sums")
    checkpoint = str(tmp_path / "ck")

    def run(buggy: bool) -> None:
        env = StreamExecutionEnvironment.get_execution_environment(spark)
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1))
        events = env.from_kafka(topic, kafka_broker.bootstrap_servers, strategy, schema=SCHEMA, timestamp_field="t")
        _pipeline(events, buggy).sink_to(DeltaSink.for_path(table)).uid("delta")
        env.execute("user-failure", checkpoint_location=checkpoint, trigger={"availableNow": True}).await_termination()

    rounds = [
        kafka_broker.produce_json(topic, [
            (0, {"user": "ann", "t": 1_000, "v": 1}), (0, {"user": "ann", "t": 3_000, "v": 2}),
            (1, {"user": "bob", "t": 2_000, "v": 3}), (1, {"user": "bob", "t": 12_000, "v": 4}),
            (0, {"user": "ann", "t": 14_000, "v": 5}),
        ]),  # watermark min(14 s, 12 s) - 1 s - 1 ms: [0 s, 10 s) fires
    ]
    run(buggy=True)
    rounds.append(kafka_broker.produce_json(topic, [
        (0, {"user": "ann", "t": 15_000, "v": 6}), (0, {"user": "ann", "t": 16_000, "v": POISON}),
        (1, {"user": "bob", "t": 25_000, "v": 7}), (0, {"user": "ann", "t": 26_000, "v": 8}),
    ]))  # would fire [10 s, 20 s)
    with pytest.raises(UserFunctionError) as info:
        run(buggy=True)
    message = str(info.value)
    first = message.splitlines()[0]
    # the clear part first: operator name and uid, the function, the key and the window, what the user raised
    assert first.startswith("operator 'sums' (uid 'sums'): "), message[:2000]
    assert "reduce (key='ann', window=TimeWindow(start=10000, end=20000))" in first, first
    assert first.endswith(f"raised ValueError: cannot add ('ann', 16000, {POISON})"), first
    # then the original traceback, down to the line of the user's function; no Java stack around it
    assert "Traceback (most recent call last)" in message and "in reduce" in message and "raise ValueError" in message
    assert "py4j" not in message.lower() and "at org.apache" not in message and len(message) < 4000, message
    assert isinstance(info.value, FlinkishError) and info.value.uid == "sums" and info.value.operator == "sums"
    assert info.value.__cause__ is not None  # Spark's exception, with the executor's full text
    before_fix = sorted(tuple(r) for r in spark.read.format("delta").load(table).select("user", "t", "v").collect())
    assert before_fix == _expected(topic, rounds[:1]), "the failed batch wrote nothing: only round 0's firings"

    rounds.append(kafka_broker.produce_json(topic, [
        (0, {"user": "ann", "t": 41_000, "v": 9}), (1, {"user": "bob", "t": 40_000, "v": 10}),
    ]))
    # the fix: the same pipeline and checkpoint, the function no longer fails. The run re-runs the failed batch
    # over round 1 exactly (its offsets were logged before it ran), then reads round 2 as the next batch.
    run(buggy=False)

    got = sorted(tuple(r) for r in spark.read.format("delta").load(table).select("user", "t", "v").collect())
    expected = _expected(topic, rounds)
    assert ("ann", 16_000, 6 + POISON + 5) in expected  # the window with the poison record fired once, complete
    assert got == expected


class Alerts(KeyedProcessFunction):  # type: ignore[type-arg]
    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        if value[2] == POISON:
            raise KeyError(value[0])
        yield value


def test_the_apply_in_pandas_with_state_executor_and_the_replay_source_name_the_failing_function(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The other executor raises the same error from its stateful function; a replay source's timestamp assigner
    (run on the driver when the query starts) names the source."""
    batches = [MicroBatch([("ann", 1, 1), ("bob", 2, 2)]), MicroBatch([("ann", 3, POISON)])]
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(1)).with_timestamp_assigner(lambda e, _: e[1])
    env = StreamExecutionEnvironment.get_execution_environment(spark, backend="apply_in_pandas_with_state")
    events = env.from_source(MicroBatchSource(batches), strategy, "events")
    events.key_by(lambda e: e[0]).process(Alerts()).name("alerts").uid("alerts").add_sink(lambda _: None)
    handle = env.execute("stateful-failure", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True})
    with pytest.raises(UserFunctionError) as info:
        handle.await_termination()
    first = str(info.value).splitlines()[0]
    assert first == f"operator 'alerts' (uid 'alerts'): KeyedProcess: process_element(('ann', 3, {POISON})) (key='ann') raised KeyError: 'ann'"
    assert "in process_element" in str(info.value) and "org.apache" not in str(info.value)

    # a restart on that checkpoint is checked as the foreachBatch executor checks its own (spark/signatures.py):
    # another operator under the uid, or (the checkpoint as this executor wrote it before it kept signatures) keys
    # of a declared DOUBLE type, whose bytes changed with Flink's key identity, are refused before the query starts
    def restart(keyed: Any) -> None:
        env = StreamExecutionEnvironment.get_execution_environment(spark, backend="apply_in_pandas_with_state")
        keyed(env.from_source(MicroBatchSource(batches), strategy, "events")).name("alerts").uid("alerts").add_sink(lambda _: None)
        env.execute("stateful-failure", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True})

    with pytest.raises(StateError, match=r"operator 'alerts': \[keyed_process:-\] -> \[window:TumblingEventTimeWindows"):
        restart(lambda s: s.key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(Duration.of_millis(2))).reduce(Sum(buggy=False)))
    (tmp_path / "ck" / "flinkish" / "meta.json").unlink()
    with pytest.raises(StateError, match=r"operator 'alerts': its state holds keys of type DOUBLE as Python held them"):
        restart(lambda s: s.key_by(lambda e: float(e[2]), key_type=Types.DOUBLE()).process(Alerts()))

    def assigner(e, _):  # type: ignore[no-untyped-def]
        return e[1] // (e[2] - POISON)

    env = StreamExecutionEnvironment.get_execution_environment(spark)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(assigner)
    env.from_source(MicroBatchSource(batches), strategy, "events").uid("events").add_sink(lambda _: None)
    with pytest.raises(UserFunctionError, match=r"^operator 'events' \(uid 'events'\): events: timestamp assigner on \('ann', 3, 13\) raised ZeroDivisionError"):
        env.execute("assigner-failure", checkpoint_location=str(tmp_path / "ck2"))
