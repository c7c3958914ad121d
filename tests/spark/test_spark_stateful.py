"""The applyInPandasWithState executor: a pipeline as a streaming DataFrame; Flink-identical where Spark can
express the pipeline, rejected up front (naming the foreachBatch executor) where it cannot."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.conformance import differences, discover, load
from pyspark_flinkish.conformance.pipeline import generated_bound
from pyspark_flinkish.conformance.runner import run_spark_stateful_all
from pyspark_flinkish.core.errors import UnsupportedFeatureError
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.window import (
    ContinuousProcessingTimeTrigger,
    EventTimeSessionWindows,
    TumblingEventTimeWindows,
)

pytestmark = pytest.mark.spark
BACKEND = "apply_in_pandas_with_state"
CASES_DIR = Path(__file__).resolve().parents[2] / "jvm-free-tests" / "datastream"
sys.path.insert(0, str(CASES_DIR))
import punctuated_cases  # noqa: E402

sys.path.remove(str(CASES_DIR))

from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(punctuated_cases)  # Spark's Python workers cannot import it
PUNCTUATED = {s["name"]: s for s in punctuated_cases.load()["scenarios"]}


@pytest.fixture(scope="module")
def conformance(spark, conformance_dir: Path, tmp_path_factory) -> tuple:  # type: ignore[no-untyped-def]
    """The conformance scenarios and the custom punctuated generator's (``punctuated_cases.py``), all queries running
    at once (one per scenario: one source and one keyed operator per query on this executor)."""
    scenarios = [load(p) for p in discover(conformance_dir / "scenarios")]
    generators = {name: punctuated_cases.strategy(s["generator"]) for name, s in PUNCTUATED.items()}
    everything = [*scenarios, *PUNCTUATED.values()]
    results, rejected = run_spark_stateful_all(spark, everything, str(tmp_path_factory.mktemp("stateful")), generators)
    return scenarios, results, rejected


def test_supported_scenarios_match_flink_and_the_rest_are_rejected_up_front(conformance, conformance_dir: Path) -> None:  # type: ignore[no-untyped-def]
    scenarios, results, rejected = conformance
    assert set(results) | set(rejected) == {s["name"] for s in scenarios} | set(PUNCTUATED)
    for scenario in scenarios:
        name = scenario["name"]
        if name in rejected:
            assert generated_bound(scenario) is None, f"{name} has generated watermarks but was rejected: {rejected[name]}"
            assert "foreachBatch executor" in rejected[name] and "explicit per-batch watermarks" in rejected[name]
            continue
        expected = json.loads((conformance_dir / "expected" / f"{name}.expected.json").read_text())
        assert differences(results[name], expected) == [], name
    assert len(results) >= 25


@pytest.mark.parametrize("name", sorted(PUNCTUATED))
def test_custom_punctuated_generator_matches_flink(name: str, conformance) -> None:  # type: ignore[no-untyped-def]
    """A Python ``WatermarkGenerator`` in ``assign_timestamps_and_watermarks`` emitting on markers or every n-th
    event (``spark/stateful_generators.py``: in the one route task, its state in the checkpoint's generator files):
    Flink 2.3.0's outputs (``benchmarks/pyflink_punctuated.py``), compared as multisets."""
    _, results, rejected = conformance
    assert name not in rejected, rejected.get(name)
    assert differences(results[name], PUNCTUATED[name]["expected"]) == []


class SumAfter(KeyedProcessFunction):  # type: ignore[type-arg]
    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        from pyspark_flinkish.datastream.state import ValueStateDescriptor

        self.total = runtime_context.get_state(ValueStateDescriptor("total"))

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        if self.total.value() is None:
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)
        self.total.update((self.total.value() or 0) + value[2])

    def on_timer(self, timestamp, ctx):  # type: ignore[no-untyped-def]
        yield ctx.get_current_key(), timestamp, self.total.value()
        self.total.clear()


def _events(env):  # type: ignore[no-untyped-def]
    t0 = 1_700_000_000_000
    batches = [
        MicroBatch([("a", t0 + 1, 1), ("b", t0 + 2, 2), ("a", t0 + 5, 3)]),
        MicroBatch([("a", t0 + 30, 4), ("b", t0 + 3, 5)]),
        MicroBatch([("c", t0 + 60, 6), ("a", t0 + 2, 7)]),
    ]
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5)).with_timestamp_assigner(lambda e, _: e[1])
    return env.from_source(MicroBatchSource(batches), strategy, "events")


def _pipeline(env):  # type: ignore[no-untyped-def]
    return (
        _events(env)
        .key_by(lambda e: e[0])
        .process(SumAfter(), output_type=Types.ROW_NAMED(["key", "at", "total"], [Types.STRING(), Types.LONG(), Types.LONG()]))
    )


def test_to_dataframe_writes_anywhere_and_equals_the_local_engine(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    expected = [tuple(r) for r in _pipeline(StreamExecutionEnvironment.get_execution_environment()).execute_and_collect()]
    env = StreamExecutionEnvironment.get_execution_environment(spark, backend=BACKEND)
    df = _pipeline(env).to_dataframe()
    assert df.isStreaming and df.columns == ["key", "at", "total"]
    query = (
        df.writeStream.format("memory")
        .queryName("flinkish_stateful_out")
        .outputMode("append")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    got = [tuple(r) for r in spark.table("flinkish_stateful_out").collect()]
    assert sorted(got) == sorted(expected)
    assert len(got) == 4  # key "a" fires twice: its late element at t0+2 starts a new timer


@pytest.mark.parametrize(
    ("build", "words"),
    [
        (
            lambda env: _events(env).key_by(lambda e: e[0]).process(SumAfter()).key_by(lambda r: r[0]).process(SumAfter()),
            "second keyed operator",
        ),
        (
            lambda env: (
                _events(env)
                .key_by(lambda e: e[0])
                .window(TumblingEventTimeWindows.of(10))
                .trigger(ContinuousProcessingTimeTrigger.of(5))
                .reduce(lambda a, b: a)
            ),
            "processing-time triggers",
        ),
        (lambda env: _events(env).union(_events(env)).key_by(lambda e: e[0]).process(SumAfter()), "2 sources"),
        (
            lambda env: (
                env.from_source(
                    MicroBatchSource([MicroBatch([("a", 1, 1)])]),
                    WatermarkStrategy.for_bounded_out_of_orderness(5)
                    .with_idleness(100)
                    .with_timestamp_assigner(lambda e, _: e[1]),
                )
                .key_by(lambda e: e[0])
                .process(SumAfter())
            ),
            "idleness",
        ),
        (
            lambda env: (
                env.from_source(
                    MicroBatchSource([MicroBatch([("a", 1, 1)], watermark=0)]),
                    WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda e, _: e[1]),
                )
                .key_by(lambda e: e[0])
                .window(EventTimeSessionWindows.with_gap(5))
                .reduce(lambda a, b: a)
            ),
            "explicit per-batch watermarks",
        ),
        (
            lambda env: (
                env.from_source(
                    MicroBatchSource([MicroBatch([("a", 1, 1)])]),
                    WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda e, _: e[1]),
                )
                .key_by(lambda e: e[0])
                .process(SumAfter())
            ),
            "the watermark strategy .*only bounded out-of-orderness",
        ),
    ],
    ids=["chained-keyed", "processing-time", "union", "idleness", "explicit-watermarks", "no-watermarks"],
)
def test_what_spark_cannot_express_is_rejected_up_front(spark, build, words: str) -> None:  # type: ignore[no-untyped-def]
    env = StreamExecutionEnvironment.get_execution_environment(spark, backend=BACKEND)
    stream = build(env)
    with pytest.raises(UnsupportedFeatureError, match=words) as info:
        stream.to_dataframe()
    assert "foreachBatch executor" in str(info.value)


def test_late_side_output_is_a_dataframe_too(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    late_tag = OutputTag("late")
    env = StreamExecutionEnvironment.get_execution_environment(spark, backend=BACKEND)
    windowed = _events(env).key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(10)).side_output_late_data(late_tag)
    late = windowed.reduce(lambda a, b: (a[0], a[1], a[2] + b[2])).get_side_output(late_tag)
    q = (
        late.to_dataframe()
        .writeStream.format("memory")
        .queryName("flinkish_late")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    import pickle

    values = [pickle.loads(r["value"]) for r in spark.table("flinkish_late").collect()]  # noqa: S301
    assert values == [("a", 1_700_000_000_002, 7)]


class ProcessingTimeAlert(KeyedProcessFunction):  # type: ignore[type-arg]
    """Registers a processing-time timer for some keys only: whether it does is known only while it runs."""

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        if value[0] == "b":
            ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 10)
        yield value

    def on_timer(self, timestamp, ctx):  # type: ignore[no-untyped-def]
        yield ctx.get_current_key(), timestamp


def test_processing_time_timers_of_a_function_fail_the_query_with_a_clear_unsupported_error(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Not decidable up front (the function decides per element): the query fails with the package's
    UnsupportedFeatureError naming the operator, this executor and the foreachBatch executor, not with Spark's
    StreamingQueryException around it."""
    env = StreamExecutionEnvironment.get_execution_environment(spark, backend=BACKEND)
    _events(env).key_by(lambda e: e[0]).process(ProcessingTimeAlert()).uid("alerts").add_sink(lambda v: None)
    handle = env.execute("pt-timers", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True})
    with pytest.raises(UnsupportedFeatureError) as info:
        handle.await_termination()
    message = str(info.value)
    assert "apply_in_pandas_with_state executor cannot express processing-time timers" in message
    assert "uid 'alerts'" in message and "key 'b'" in message and "foreachBatch executor" in message
    assert "<<" not in message and "org.apache" not in message
