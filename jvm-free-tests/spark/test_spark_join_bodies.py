"""Window joins, co-groups and interval joins through the foreachBatch executor's real bodies
(``foreach_batch_harness``, no JVM), compared with real Apache Flink 2.3.0's outputs (``flink_joins.json``), and the
applyInPandasWithState executor's refusal of the interval join."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
from foreach_batch_harness import local_outputs, run_foreach_batch
from stateful_harness import run_apply_in_pandas_with_state

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "datastream"))
from join_cases import Pairs, build, comparable, load

from pyspark_flinkish.common import Duration, WatermarkStrategy
from pyspark_flinkish.core.errors import UnsupportedFeatureError
from pyspark_flinkish.datastream import MicroBatch
from pyspark_flinkish.datastream.window import EventTimeSessionWindows, TumblingEventTimeWindows
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment
from pyspark_flinkish.spark.stateful import StatefulQueryBuilder

SCENARIOS = {s["name"]: s for s in load()["scenarios"]}


@pytest.mark.parametrize("vectorize", [True, False], ids=["vectorize", "general"])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_join_on_foreach_batch_matches_flink(tmp_path: Path, name: str, vectorize: bool) -> None:
    scenario = SCENARIOS[name]
    got: Dict[str, List[Any]] = {}

    def pipeline(env: Any) -> None:
        for stream_name, stream in build(env, scenario).items():
            stream.add_sink(got.setdefault(stream_name, []).append)

    run_foreach_batch(pipeline, str(tmp_path), vectorize)
    for stream_name, rows in scenario["output"].items():
        assert comparable(scenario, stream_name, got.get(stream_name, [])) == comparable(scenario, stream_name, rows)


def _window_join(out: List[Any], assigner: Any) -> Any:
    def pipeline(env: Any) -> None:
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(2)).with_timestamp_assigner(
            lambda e, _: e[2]
        )
        batches = [
            MicroBatch([("L", "a", 1), ("R", "a", 3), ("L", "a", 5), ("L", "b", 6)]),
            MicroBatch([("R", "a", 12), ("L", "a", 2), ("R", "a", 4), ("R", "b", 7)]),
            MicroBatch([("L", "a", 30)]),
        ]
        events = env.from_micro_batches(batches, strategy)
        left, right = events.filter(lambda e: e[0] == "L"), events.filter(lambda e: e[0] == "R")
        (
            left.join(right).where(lambda e: e[1]).equal_to(lambda e: e[1]).window(assigner)
            .allowed_lateness(Duration.of_millis(5))
            .apply(lambda a, b: (a[1], a[2], b[2]))
            .add_sink(out.append)
        )

    return pipeline


@pytest.mark.parametrize("vectorize", [True, False], ids=["vectorize", "general"])
@pytest.mark.parametrize(
    "assigner",
    [TumblingEventTimeWindows.of(Duration.of_millis(10)), EventTimeSessionWindows.with_gap(Duration.of_millis(3))],
    ids=repr,
)
def test_window_join_on_apply_in_pandas_with_state_is_the_local_engines(assigner: Any, vectorize: bool) -> None:
    """A window join is a keyed window: the applyInPandasWithState executor runs it where it runs windows."""
    local: List[Any] = []
    local_outputs(_window_join(local, assigner))
    assert ("a", 2, 4) in local  # the late element within the allowed lateness joined
    spark: List[Any] = []
    run_apply_in_pandas_with_state(_window_join(spark, assigner), vectorize)
    assert sorted(spark) == sorted(local)
    for key in ("a", "b"):
        assert [r for r in spark if r[0] == key] == [r for r in local if r[0] == key]


def test_interval_join_is_refused_on_apply_in_pandas_with_state() -> None:
    env = SparkStreamExecutionEnvironment(None, state_partitions=1, backend="apply_in_pandas_with_state")
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)).with_timestamp_assigner(
        lambda e, _: e[2]
    )
    events = env.from_micro_batches([MicroBatch([("L", "a", 1), ("R", "a", 2)])], strategy)
    left = events.filter(lambda e: e[0] == "L").key_by(lambda e: e[1])
    right = events.filter(lambda e: e[0] == "R").key_by(lambda e: e[1])
    left.interval_join(right).between(0, 1).process(Pairs()).add_sink(lambda v: None)
    with pytest.raises(UnsupportedFeatureError, match=r"apply_in_pandas_with_state executor cannot express an interval join.*foreachBatch"):
        StatefulQueryBuilder(env, sinks=env._sinks)


@pytest.mark.parametrize("name", ["interval_negative_bounds", "session_join_bridge_and_lateness"])
def test_join_state_survives_a_restart_and_a_replayed_batch(tmp_path: Path, name: str) -> None:
    """Batch 0, then batch 1 whose results are lost (a crash before Spark committed it), then a new driver that
    replays batch 1 from the checkpoint and runs to the end: batch 0's and the new driver's results are Flink's."""
    scenario = SCENARIOS[name]
    n = len(scenario["steps"])

    def run(batches: range) -> Dict[str, List[Any]]:
        got: Dict[str, List[Any]] = {}

        def pipeline(env: Any) -> None:
            for stream_name, stream in build(env, scenario).items():
                stream.add_sink(got.setdefault(stream_name, []).append)

        run_foreach_batch(pipeline, str(tmp_path), vectorize=False, batches=batches)
        return got

    first = run(range(1))
    run(range(1, 2))  # lost: replayed below
    rest = run(range(1, n + 1))
    got = first["main"] + rest["main"]
    assert comparable(scenario, "main", got) == comparable(scenario, "main", scenario["output"]["main"])


def _two_sources(out: List[Any]) -> Any:
    """An interval join of two sources whose watermarks differ: the join's watermark is the smaller one."""

    def pipeline(env: Any) -> None:
        strategy = WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda e, _: e[1])
        left = env.from_micro_batches([MicroBatch([("a", 10)], watermark=20), MicroBatch([], watermark=30)], strategy)
        right = env.from_micro_batches([MicroBatch([("a", 12)], watermark=5), MicroBatch([("a", 8)], watermark=6)], strategy)
        (
            left.key_by(lambda e: e[0])
            .interval_join(right.key_by(lambda e: e[0]))
            .between(Duration.of_millis(-5), Duration.of_millis(5))
            .process(Pairs())
            .add_sink(out.append)
        )

    return pipeline


@pytest.mark.parametrize("vectorize", [True, False], ids=["vectorize", "general"])
def test_interval_join_of_two_sources_runs_at_the_smaller_watermark(tmp_path: Path, vectorize: bool) -> None:
    local: List[Any] = []
    local_outputs(_two_sources(local))
    # the right element at 8 arrives at watermark min(20, 5) = 5: on time, it joins the left element at 10
    assert local == [[10, 12, 10, 12, 12], [10, 8, 10, 8, 10]]  # Pairs: [left[1], right[1], left ts, right ts, ts]
    spark: List[Any] = []
    run_foreach_batch(_two_sources(spark), str(tmp_path), vectorize)
    assert spark == local
