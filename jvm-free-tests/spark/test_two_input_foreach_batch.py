"""Two-input operators on the foreachBatch executor's real bodies (``foreach_batch_harness``: route, driver
watermarks with the two-input minimum, keyed levels with keyed and broadcast state in the state files), compared with
real PyFlink 2.3.0's outputs (``jvm-free-tests/datastream/pyflink_two_input.json``); a restart from the checkpoint in
the middle of the job neither loses nor repeats broadcast state; what Spark cannot run is refused up front."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from foreach_batch_harness import count_key_crossings, run_foreach_batch

from pyspark_flinkish.core.errors import UnsupportedFeatureError

DATASTREAM = Path(__file__).resolve().parents[1] / "datastream"
sys.path.insert(0, str(DATASTREAM))
import two_input_jobs  # noqa: E402

sys.path.remove(str(DATASTREAM))

ORACLE = json.loads((DATASTREAM / "pyflink_two_input.json").read_text())
CASES: Dict[str, Any] = {c["name"]: c for c in ORACLE["cases"]}
ON_SPARK = [c for c in two_input_jobs.CASES if c not in ("broadcast_process", "broadcast_per_instance")]


def run(
    case: str,
    checkpoint: str,
    batches: int = 3,
    spark_batches: Optional[range] = None,
    out: Optional[List[str]] = None,
    columnar_records: bool = True,
) -> List[Any]:
    got: List[str] = [] if out is None else out

    def build(env: Any) -> None:
        env.set_parallelism(two_input_jobs.PARALLELISM.get(case, 1))
        two_input_jobs.build(env, two_input_jobs.pyspark_flinkish_api(batches), case).add_sink(got.append)

    run_foreach_batch(build, checkpoint, vectorize=True, partitions=3, batches=spark_batches, columnar_records=columnar_records)
    return two_input_jobs.decode(got)


@pytest.mark.parametrize("name", ON_SPARK)
def test_two_input_jobs_on_foreach_batch_match_pyflink(name: str, tmp_path: Path) -> None:
    assert run(name, str(tmp_path / "ck")) == CASES[name]["output"]


@pytest.mark.parametrize("name", ["keyed_broadcast_process", "keyed_co_process_timers"])
def test_a_restart_resumes_keyed_and_broadcast_state(name: str, tmp_path: Path) -> None:
    """Batches 0-1, then a new driver resumes from the checkpoint at batch 2: every verdict equals PyFlink's."""
    ck = str(tmp_path / "ck")
    first: List[str] = []
    run(name, ck, spark_batches=range(0, 2), out=first)
    second: List[str] = []
    run(name, ck, spark_batches=range(2, 4), out=second)
    assert two_input_jobs.decode(first + second) == CASES[name]["output"]


@pytest.mark.parametrize("name", ["keyed_co_process_timers", "keyed_broadcast_process"])
def test_declared_keys_of_a_keyed_two_input_operator_cross_as_columns(name: str, tmp_path: Path, monkeypatch: Any) -> None:
    """``key_by(..., key_type=Types.STRING())`` on both inputs (or the keyed one of a broadcast connect): every key
    crosses from the route as columns (``k<dest>_<i>``, as a one-input operator's; a broadcast element has no key and
    goes to every partition), with PyFlink's outputs; a checkpoint written with every key as its bytes
    (``columnar_records=False``) goes on with keys as columns: the state is keyed by the same bytes."""
    crossed = count_key_crossings(monkeypatch)
    assert run(name, str(tmp_path / "columns")) == CASES[name]["output"]
    assert crossed and all(crossed)
    crossed.clear()
    ck = str(tmp_path / "mixed")
    first: List[str] = []
    run(name, ck, spark_batches=range(0, 2), out=first, columnar_records=False)
    assert crossed == []
    second: List[str] = []
    run(name, ck, spark_batches=range(2, 4), out=second)
    assert crossed and all(crossed)
    assert two_input_jobs.decode(first + second) == CASES[name]["output"]


def _count_rules(got: List[str]) -> Any:
    def build(env: Any) -> None:
        api = two_input_jobs.pyspark_flinkish_api(2)
        f = api.functions
        desc = api.state.MapStateDescriptor("rules")

        class Count(f.KeyedBroadcastProcessFunction):
            def process_element(self, value: Any, ctx: Any) -> Any:
                return []

            def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
                state = ctx.get_broadcast_state(desc)
                state.put(value[1], value[2])
                state.put("count", (state.get("count") or 0) + 1)
                yield json.dumps(["rule", value[1], value[2]])

        rules = api.source(env, "rules", [tuple(r) for r in two_input_jobs.RULES], 0, True)
        events = api.source(env, "events", [tuple(r) for r in two_input_jobs.EVENTS], 1, True)
        events.key_by(lambda e: e[0]).connect(rules.broadcast(desc)).process(Count()).add_sink(got.append)

    return build


def _broadcast_state_per_partition(ck: Path) -> Dict[str, Any]:
    """The broadcast state each state partition holds after the newest committed batch (the driver's document
    names the partitions' files)."""
    from pyspark_flinkish.core.codec import decode_snapshot
    from pyspark_flinkish.spark.keyed_partition import OPERATOR_STATE_KEY
    from pyspark_flinkish.spark.state_store import manifest_rows

    newest = sorted((ck / "flinkish" / "driver").glob("b=*.json"))[-1]
    ((uid, op),) = json.loads(newest.read_text())["state"].items()
    last = {}
    for sp, manifest in sorted(op["partitions"].items(), key=lambda p: int(p[0])):
        rows = manifest_rows(str(ck / "flinkish" / "state"), uid, int(sp), manifest).to_pylist()
        (row,) = [r for r in rows if r["key"] == OPERATOR_STATE_KEY]
        (maps,) = decode_snapshot(row["value"])["state"].values()
        last[f"sp={int(sp):05d}"] = maps
    return last


def test_broadcast_state_is_the_same_in_every_state_partition_and_emitted_once(tmp_path: Path) -> None:
    """Every state partition (one instance of the operator each) holds the same broadcast state; what
    process_broadcast_element returns is sent by partition 0 alone (once: parallelism 1)."""
    got: List[str] = []
    run_foreach_batch(_count_rules(got), str(tmp_path / "ck"), vectorize=True, partitions=3)
    assert sorted(got) == sorted(json.dumps(["rule", r[1], r[2]]) for r in two_input_jobs.RULES)
    states = _broadcast_state_per_partition(tmp_path / "ck")
    assert list(states.values()) == [{"rules": {"big": 50, "tiny": 1, "count": 4}}] * 3


def test_a_replayed_batch_does_not_repeat_broadcast_state(tmp_path: Path) -> None:
    """Batch 1 runs again with a new driver (Spark replays a batch whose commit it did not record): its broadcast
    elements are applied to the state of batch 0 again, not on top of their own effect."""
    ck = tmp_path / "ck"
    got: List[str] = []
    run_foreach_batch(_count_rules(got), str(ck), vectorize=True, partitions=3, batches=range(0, 2))
    run_foreach_batch(_count_rules(got), str(ck), vectorize=True, partitions=3, batches=range(1, 4))
    states = _broadcast_state_per_partition(ck)
    assert list(states.values()) == [{"rules": {"big": 50, "tiny": 1, "count": 4}}] * 3


def test_non_keyed_broadcast_state_is_refused_on_spark(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFeatureError, match=r"BroadcastProcessFunction on a non-keyed stream.*KeyedBroadcastProcessFunction"):
        run("broadcast_process", str(tmp_path / "ck"))


def test_apply_in_pandas_with_state_refuses_two_input_operators() -> None:
    from pyspark_flinkish.datastream import StreamExecutionEnvironment
    from pyspark_flinkish.spark.plan import ExecPlan
    from pyspark_flinkish.spark.stateful import validate

    env = StreamExecutionEnvironment.get_execution_environment()
    sink = two_input_jobs.build(env, two_input_jobs.pyspark_flinkish_api(1), "keyed_co_process_timers").add_sink(print)
    plan = ExecPlan([sink._t])
    with pytest.raises(UnsupportedFeatureError, match=r"cannot express the two-input operator .*foreachBatch executor"):
        validate(plan, plan.sinks[0])


def test_driver_metrics_report_the_two_input_watermark(tmp_path: Path) -> None:
    """The driver's per-batch metrics read each operator's input watermark; a two-input operator's is the minimum of
    its inputs' (here MIN until the slow input, without watermarks, ends)."""
    from pyspark_flinkish.core.javamath import LONG_MAX, LONG_MIN
    from pyspark_flinkish.spark.driver_metrics import operator_metrics

    ck = str(tmp_path / "ck")

    def build(env: Any) -> None:
        two_input_jobs.build(env, two_input_jobs.pyspark_flinkish_api(3), "watermark_is_min_of_inputs").add_sink(print)

    seen = []
    for batch in range(4):
        driver = run_foreach_batch(build, ck, vectorize=True, partitions=2, batches=range(batch, batch + 1))
        (entry,) = [m for m in operator_metrics(driver, 0).values() if m["name"] == "Keyed Co-Process"]
        seen.append(entry["currentInputWatermark"])
    assert seen == [LONG_MIN, LONG_MIN, LONG_MIN, LONG_MAX]


def test_keyed_two_input_operators_may_register_processing_time_timers() -> None:
    """So that the driver schedules processing-time ticks for them on an idle stream (``spark/ticks.py``)."""
    from pyspark_flinkish.datastream import StreamExecutionEnvironment
    from pyspark_flinkish.datastream.plan import topological
    from pyspark_flinkish.spark.ticks import may_register_processing_timers

    def plan(case: str) -> Any:
        env = StreamExecutionEnvironment.get_execution_environment()
        sink = two_input_jobs.build(env, two_input_jobs.pyspark_flinkish_api(1), case).add_sink(print)
        return topological([sink._t])

    assert may_register_processing_timers(plan("keyed_co_process_timers"))
    assert may_register_processing_timers(plan("keyed_broadcast_process"))
    assert not may_register_processing_timers(plan("co_process"))


def test_processing_time_timers_of_a_keyed_co_process_function_match_the_local_engine(tmp_path: Path) -> None:
    """Processing-time timers registered from either input fire at the first batch whose processing time has passed
    them, on both engines, with the outputs' timestamps (none) and side outputs' (the timer's) as Flink gives them."""
    from foreach_batch_harness import local_outputs

    from pyspark_flinkish.common import WatermarkStrategy
    from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag
    from pyspark_flinkish.datastream.functions import KeyedCoProcessFunction, ProcessFunction

    late = OutputTag("late")

    class Remind(KeyedCoProcessFunction):  # type: ignore[type-arg]
        def process_element1(self, value: Any, ctx: Any) -> Any:
            ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 50)
            return []

        def process_element2(self, value: Any, ctx: Any) -> Any:
            ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 120)
            return []

        def on_timer(self, timestamp: int, ctx: Any) -> Any:
            yield ("timer", ctx.get_current_key(), timestamp, str(ctx.time_domain()))
            yield late, ("side", ctx.get_current_key(), timestamp)

    class WithTimestamp(ProcessFunction):  # type: ignore[type-arg]
        def process_element(self, value: Any, ctx: Any) -> Any:
            yield (*value, ctx.timestamp())

    def build(out: List[Any]) -> Any:
        def go(env: Any) -> None:
            none = WatermarkStrategy.no_watermarks()
            a = env.from_source(MicroBatchSource([
                MicroBatch([("a",), ("b",)], processing_time=0), MicroBatch([], processing_time=100),
                MicroBatch([], processing_time=200),
            ]), none, "a")
            b = env.from_source(MicroBatchSource([
                MicroBatch([("a",)], processing_time=0), MicroBatch([], processing_time=100),
                MicroBatch([], processing_time=200),
            ]), none, "b")
            fired = a.connect(b).key_by(lambda e: e[0], lambda e: e[0]).process(Remind())
            fired.union(fired.get_side_output(late)).process(WithTimestamp()).add_sink(out.append)

        return go

    local: List[Any] = []
    local_outputs(build(local))
    spark: List[Any] = []
    run_foreach_batch(build(spark), str(tmp_path / "ck"), vectorize=True, partitions=2)
    assert sorted(map(repr, spark)) == sorted(map(repr, local))
    assert sorted(map(repr, local)) == sorted(map(repr, [
        ("timer", "a", 50, "TimeDomain.PROCESSING_TIME", None), ("timer", "b", 50, "TimeDomain.PROCESSING_TIME", None),
        ("timer", "a", 120, "TimeDomain.PROCESSING_TIME", None),
        ("side", "a", 50, 50), ("side", "b", 50, 50), ("side", "a", 120, 120),
    ]))


def test_keyed_co_map_keeps_keyed_state_across_micro_batches(tmp_path: Path) -> None:
    """A CoMapFunction after key_by runs in the keyed stage with keyed state (as PyFlink runs it as a keyed
    co-process function): the same counts as the local engine."""
    from foreach_batch_harness import local_outputs

    def build(out: List[Any]) -> Any:
        def go(env: Any) -> None:
            api = two_input_jobs.pyspark_flinkish_api(3)

            class Count(api.functions.CoMapFunction):
                def open(self, runtime_context: Any) -> None:
                    self.n = runtime_context.get_state(api.state.ValueStateDescriptor("n"))

                def map1(self, value: Any) -> Any:
                    self.n.update((self.n.value() or 0) + 1)
                    return ("order", value[0], self.n.value())

                def map2(self, value: Any) -> Any:
                    self.n.update((self.n.value() or 0) + 1)
                    return ("payment", value[0], self.n.value())

            orders = api.source(env, "orders", [tuple(r) for r in two_input_jobs.ORDERS], 1, True)
            payments = api.source(env, "payments", [tuple(r) for r in two_input_jobs.PAYMENTS], 1, True)
            orders.connect(payments).key_by(lambda o: o[0], lambda p: p[0]).map(Count()).add_sink(out.append)

        return go

    local: List[Any] = []
    local_outputs(build(local))
    spark: List[Any] = []
    run_foreach_batch(build(spark), str(tmp_path / "ck"), vectorize=True, partitions=3)
    # which input's element of a key comes first is not defined (Flink's order between inputs), each key's counts are
    def counts(out: List[Any]) -> Dict[str, List[int]]:
        per_key: Dict[str, List[int]] = {}
        for _, key, n in out:
            per_key.setdefault(key, []).append(n)
        return {k: sorted(v) for k, v in per_key.items()}

    assert counts(spark) == counts(local)
    assert counts(local) == {"o1": [1, 2], "o2": [1, 2], "o3": [1, 2], "o4": [1, 2], "o5": [1], "o6": [1]}


def test_an_idle_input_leaves_the_two_input_watermark_on_both_engines(tmp_path: Path) -> None:
    """Input b goes idle (``with_idleness``) after its only element: from then on the operator's watermark is input
    a's, so the timers at 1000 and 5000 fire at the end of the micro-batch where b is found idle (a has seen 3
    elements), not at the end of input (4). Without idleness, b holds the watermark at MIN until the end."""
    from foreach_batch_harness import local_outputs

    from pyspark_flinkish.common import Duration, WatermarkStrategy
    from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource
    from pyspark_flinkish.datastream.functions import KeyedCoProcessFunction
    from pyspark_flinkish.datastream.state import ValueStateDescriptor

    class Seen(KeyedCoProcessFunction):  # type: ignore[type-arg]
        def open(self, runtime_context: Any) -> None:
            self.n = runtime_context.get_state(ValueStateDescriptor("n"))

        def process_element1(self, value: Any, ctx: Any) -> Any:
            self.n.update((self.n.value() or 0) + 1)
            ctx.timer_service().register_event_time_timer(value[1])
            return []

        def process_element2(self, value: Any, ctx: Any) -> Any:
            return []

        def on_timer(self, timestamp: int, ctx: Any) -> Any:
            yield (timestamp, self.n.value())

    def build(out: List[Any], idleness: bool) -> Any:
        def go(env: Any) -> None:
            by_time = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
            a = env.from_source(MicroBatchSource([
                MicroBatch([("k", 1000)], processing_time=0), MicroBatch([("k", 5000)], processing_time=1000),
                MicroBatch([("k", 9000)], processing_time=2000), MicroBatch([("k", 20000)], processing_time=3000),
            ]), by_time, "a")
            b_strategy = by_time.with_idleness(Duration.of_millis(500)) if idleness else by_time
            b = env.from_source(MicroBatchSource([
                MicroBatch([("k", 0)], processing_time=0), MicroBatch([], processing_time=1000),
                MicroBatch([], processing_time=2000), MicroBatch([], processing_time=3000),
            ]), b_strategy, "b")
            a.connect(b).key_by(lambda e: e[0], lambda e: e[0]).process(Seen()).add_sink(out.append)

        return go

    cases = ((True, [(1000, 3), (5000, 3), (9000, 4), (20000, 4)]), (False, [(t, 4) for t in (1000, 5000, 9000, 20000)]))
    for idleness, expected in cases:
        local: List[Any] = []
        local_outputs(build(local, idleness))
        spark: List[Any] = []
        run_foreach_batch(build(spark, idleness), str(tmp_path / f"ck-{idleness}"), vectorize=True, partitions=2)
        assert local == expected, idleness
        assert spark == expected, idleness
