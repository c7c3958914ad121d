"""Window joins, co-groups and interval joins on the local engine, compared with real Apache Flink 2.3.0's outputs
(``flink_joins.json``, see ``join_cases.py``), plus the API's checks and the two-input watermark rule."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest
from join_cases import build, comparable, load

from pyspark_flinkish.common import Duration
from pyspark_flinkish.core.errors import InvalidArgumentError, InvalidPipelineError, InvalidTypeError, UnsupportedFeatureError
from pyspark_flinkish.core.javamath import LONG_MIN
from pyspark_flinkish.core.two_input_watermarks import TwoInputWatermarkValve
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import ProcessJoinFunction
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows
from pyspark_flinkish.local.executor import LocalExecutor

ORACLE = load()
SCENARIOS = {s["name"]: s for s in ORACLE["scenarios"]}


def _run(scenario: Dict[str, Any], restore_every_batch: bool = False) -> Dict[str, List[Any]]:
    env = StreamExecutionEnvironment.get_execution_environment()
    got: Dict[str, List[Any]] = {}
    for name, stream in build(env, scenario).items():
        stream.add_sink(got.setdefault(name, []).append)
    LocalExecutor(env._sinks, env.clock, restore_every_batch=restore_every_batch).run(scenario["name"])
    return got


def test_oracle_is_real_flink_output() -> None:
    assert ORACLE["flink_version"] == "2.3.0"
    assert ORACLE["command"].startswith("python benchmarks/flink_joins.py")
    assert {s["kind"] for s in ORACLE["scenarios"]} == {"join", "co_group", "interval"}
    assert all(s["output"]["main"] for s in ORACLE["scenarios"])


@pytest.mark.parametrize("restore_every_batch", [False, True], ids=["in-memory", "snapshot-restore"])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_join_matches_flink(name: str, restore_every_batch: bool) -> None:
    """Every scenario; with ``snapshot-restore`` keyed state goes through its encoded per-key snapshots after every
    micro-batch, as on Spark."""
    scenario = SCENARIOS[name]
    got = _run(scenario, restore_every_batch)
    assert set(got) == set(scenario["output"])
    for stream, rows in scenario["output"].items():
        assert comparable(scenario, stream, got[stream]) == comparable(scenario, stream, rows), stream


def test_comparison_detects_a_changed_result() -> None:
    scenario = SCENARIOS["interval_inclusive"]
    rows = scenario["output"]["main"]
    assert comparable(scenario, "main", rows[1:]) != comparable(scenario, "main", rows)
    moved = [[r[0], r[1] + 1, *r[2:]] if i == 0 else r for i, r in enumerate(rows)]  # same pair, other watermark
    assert comparable(scenario, "main", moved) != comparable(scenario, "main", rows)


def test_interval_join_state_is_cleaned_up() -> None:
    """After the end of input every buffered element has been removed by its cleanup timer."""
    env = StreamExecutionEnvironment.get_execution_environment()
    out = build(env, SCENARIOS["interval_negative_bounds"])["main"]
    out.add_sink(lambda v: None)
    executor = LocalExecutor(env._sinks, env.clock)
    executor.run("cleanup")
    (join,) = [n.operator for n in executor.nodes.values() if type(n.operator).__name__ == "IntervalJoinOperator"]
    assert join.active_keys() == []


def _streams(env: Any) -> Any:
    left = env.from_collection([("a", 1)])
    return left, env.from_collection([("a", 2)])


def test_api_checks_arguments() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    left, right = _streams(env)
    with pytest.raises(InvalidTypeError, match="takes a DataStream"):
        left.join([1, 2])
    with pytest.raises(InvalidTypeError, match="WindowAssigner"):
        left.join(right).where(lambda e: e[0]).equal_to(lambda e: e[0]).window("tumbling")
    windowed = left.co_group(right).where(lambda e: e[0]).equal_to(lambda e: e[0]).window(
        TumblingEventTimeWindows.of(Duration.of_millis(10))
    )
    with pytest.raises(InvalidTypeError, match="CoGroupFunction"):
        windowed.apply(42)
    with pytest.raises(InvalidArgumentError, match="cannot be negative"):
        windowed.allowed_lateness(Duration.of_millis(-1))
    keyed_left, keyed_right = left.key_by(lambda e: e[0]), right.key_by(lambda e: e[0])
    with pytest.raises(InvalidPipelineError, match="two keyed streams"):
        keyed_left.interval_join(right)
    with pytest.raises(InvalidArgumentError, match="lower <= upper"):
        keyed_left.interval_join(keyed_right).between(Duration.of_millis(5), Duration.of_millis(1))
    with pytest.raises(UnsupportedFeatureError, match="only supported in event time"):
        keyed_left.interval_join(keyed_right).in_processing_time().between(Duration.of_millis(0), Duration.of_millis(1))
    with pytest.raises(InvalidTypeError, match="ProcessJoinFunction"):
        keyed_left.interval_join(keyed_right).between(Duration.of_millis(0), Duration.of_millis(1)).process(ProcessJoinFunction)


def test_interval_join_without_timestamps_is_an_error() -> None:
    class Pair(ProcessJoinFunction):  # type: ignore[type-arg]
        def process_element(self, left, right, ctx):  # type: ignore[no-untyped-def]
            yield left, right

    env = StreamExecutionEnvironment.get_execution_environment()
    left, right = _streams(env)
    joined = left.key_by(lambda e: e[0]).interval_join(right.key_by(lambda e: e[0])).between(0, 1).process(Pair())
    with pytest.raises(Exception, match="needs elements with timestamps"):
        list(joined.execute_and_collect())


def test_two_input_watermark_is_the_min_of_active_inputs_and_never_flushes_when_both_idle() -> None:
    valve = TwoInputWatermarkValve()
    assert valve.input_watermark(0, 10) is None  # the other input is still at MIN
    assert valve.input_watermark(1, 5) == 5
    assert valve.input_idle(1, True) == (10, None)  # the idle input leaves the min
    assert valve.input_idle(0, True) == (None, True)  # both idle: no flush (union's valve would), output idle
    assert valve.input_watermark(0, 20) is None  # an idle input's watermark is ignored
    assert valve.input_idle(1, False) == (None, False)  # back, at 5: it holds the min at once (no re-alignment)
    assert valve.input_watermark(1, 12) == 12  # input 0 is idle: the min over the active inputs
    assert valve.last_output == 12
    restored = TwoInputWatermarkValve.from_dict(valve.to_dict())
    assert type(restored) is TwoInputWatermarkValve and restored.to_dict() == valve.to_dict()
    assert valve.to_dict() == {"kind": "combined", "watermarks": [10, 12], "idle": [True, False], "combined": 12,
                               "output_idle": False}
    assert TwoInputWatermarkValve().last_output == LONG_MIN


@pytest.mark.parametrize(
    ("name", "metric", "count"),
    [("interval_late_side_outputs", "late_records_side_output", 3), ("interval_inclusive", "late_records_dropped", 1)],
)
def test_interval_join_counts_late_records(name: str, metric: str, count: int) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    for stream in build(env, SCENARIOS[name]).values():
        stream.add_sink(lambda v: None)
    result = LocalExecutor(env._sinks, env.clock).run(name)
    (metrics,) = [m for op, m in result.metrics.items() if op.endswith(":IntervalJoin")]
    assert metrics[metric] == count
