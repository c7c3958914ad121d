"""Async I/O (``AsyncDataStream``) through the foreachBatch executor's real bodies without a JVM
(``foreach_batch_harness``): the oracle's cases (``datastream/pyflink_async.json``, real PyFlink 2.3.0) after a
keyed-free route and after a keyed operator, a restart that replays a batch, and the applyInPandasWithState
executor's refusal."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
from foreach_batch_harness import run_foreach_batch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "datastream"))
from async_cases import Lookup, build, error_matches, load

from pyspark_flinkish.common import Time, WatermarkStrategy
from pyspark_flinkish.core.errors import UnsupportedFeatureError, UserFunctionError
from pyspark_flinkish.datastream import AsyncDataStream, AsyncFunction, MicroBatch, MicroBatchSource
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment
from pyspark_flinkish.spark.plan import ExecPlan
from pyspark_flinkish.spark.stateful import validate

ORACLE = load()
CASES = {c["name"]: c for c in ORACLE["cases"]}
ON_SPARK = ["ordered_varying_delays", "unordered_completion_order", "ordered_fixed_retry_empty_results",
            "ordered_timeout_fallback"]


@pytest.mark.parametrize("name", ON_SPARK)
def test_oracle_cases_on_the_foreach_batch_bodies(name: str, tmp_path: Path) -> None:
    case, out = CASES[name], []

    def pipeline(env: Any) -> None:
        build(env, case, ORACLE).add_sink(out.append)

    run_foreach_batch(pipeline, str(tmp_path / "ck"), vectorize=True, tasks=1)
    assert [list(r) for r in out] == case["output"]


def test_a_failure_names_the_operator_and_element_on_the_driver(tmp_path: Path) -> None:
    case = CASES["ordered_default_timeout_fails"]
    with pytest.raises(UserFunctionError) as info:
        run_foreach_batch(lambda env: build(env, case, ORACLE).add_sink(lambda v: None), str(tmp_path / "ck"), True, tasks=1)
    assert error_matches(info.value, case["error"]) and "async wait operator" in str(info.value)


def test_async_after_a_keyed_operator_and_across_batches(tmp_path: Path) -> None:
    """Each batch's requests complete in its keyed task; ordered results keep the keyed operator's order."""
    case = {**CASES["ordered_varying_delays"], "input": "INPUT"}
    got: List[Any] = []
    rows = [tuple(e) for e in ORACLE["inputs"]["INPUT"]]
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: 1000 + e[0])

    def pipeline(env: Any) -> None:
        src = env.from_source(MicroBatchSource([MicroBatch(rows[:3]), MicroBatch(rows[3:])]), strategy, "s")
        summed = src.key_by(lambda e: e[0] % 2).reduce(lambda a, b: (b[0], b[1], a[2] + 1))
        AsyncDataStream.ordered_wait(summed, Lookup(case), Time.seconds(5)).add_sink(got.append)

    run_foreach_batch(pipeline, str(tmp_path / "ck"), vectorize=True, partitions=1, tasks=1)
    assert [int(v.split(",")[0][1:]) for v in got] == [0, 1, 2, 3, 4, 5]


def test_apply_in_pandas_with_state_refuses_async_io() -> None:
    env = SparkStreamExecutionEnvironment(None, state_partitions=1)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[0])
    src = env.from_source(MicroBatchSource([MicroBatch([(1, 0, 0)])]), strategy, "s")
    out = AsyncDataStream.ordered_wait(src, Lookup({}), Time.seconds(1)).key_by(lambda e: e).reduce(lambda a, b: a)
    plan = ExecPlan([out._t])
    with pytest.raises(UnsupportedFeatureError, match=r"async I/O.*foreachBatch executor"):
        validate(plan, len(plan.nodes) - 1)


def test_a_task_finishes_its_requests_orders_results_after_its_last_input_and_reports_metrics() -> None:
    import json

    from pyspark_flinkish.core.records import StreamRecord
    from pyspark_flinkish.monitoring import async_metrics
    from pyspark_flinkish.spark.chain import ChainRunner
    from pyspark_flinkish.spark.rows import loads

    env = SparkStreamExecutionEnvironment(None, state_partitions=1)
    src = env.from_source(MicroBatchSource([MicroBatch([])]), WatermarkStrategy.no_watermarks(), "s")
    sink = AsyncDataStream.unordered_wait(src, Lookup({}), Time.seconds(5), capacity=2).add_sink(lambda v: None)
    plan = ExecPlan([sink._t])
    runner = ChainRunner(plan, {}, 0, 1)
    for n, element in enumerate([(0, 200, 0), (1, 0, 0), (2, 50, 0)]):
        runner.forward(plan.sources[0], StreamRecord(element, None), [1, 0, n])
    assert runner.rows == []  # nothing requested yet: the task's input may go on
    runner.finish()
    records = [r for r in runner.rows if r["kind"] == "rec"]
    assert [json.loads(loads(r["value"]))[0] for r in records] == [1, 2, 0]  # completion order
    assert [r["ord"] for r in records] == [[1, 0, 2, 1], [1, 0, 2, 2], [1, 0, 2, 3]]  # after the last input
    (metric,) = [json.loads(r["value"]) for r in runner.rows if r["kind"] == "metric"]
    assert metric["async_requests"] == 3 and metric["async_in_flight_max"] == 2
    merged = async_metrics([metric, {**metric, "async_in_flight_max": 1}])
    assert merged == {"numAsyncRequests": 6, "numAsyncRetries": 0, "numAsyncTimeouts": 0, "asyncInFlightMax": 2}


class FailsWhileMarked(AsyncFunction):  # type: ignore[type-arg]
    """Returns ``[value]``; raises for element 3 while the file ``marker`` exists (a service that is down)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    async def async_invoke(self, value: Any) -> List[Any]:
        await asyncio.sleep(0.001 * (value % 3))
        if value == 3 and os.path.exists(self.marker):
            msg = "service down"
            raise ConnectionError(msg)
        return [value]


def test_a_failed_batch_is_replayed_after_a_restart_losing_and_duplicating_nothing(tmp_path: Path) -> None:
    """Batch 1 fails while its requests are in flight; nothing of it reached the sinks or keyed state. The restart
    replays it from batch 0's commit: every result once, the keyed count as without the failure."""
    marker = tmp_path / "down"
    marker.write_text("")
    ck = str(tmp_path / "ck")
    out: List[Any] = []

    def pipeline(env: Any) -> None:
        source = env.from_source(
            MicroBatchSource([MicroBatch([0, 1, 2]), MicroBatch([3, 4, 5]), MicroBatch([6, 7])]),
            WatermarkStrategy.no_watermarks(), "s",
        )
        results = AsyncDataStream.unordered_wait(source, FailsWhileMarked(str(marker)), Time.seconds(5))
        results.add_sink(out.append)
        results.key_by(lambda v: v % 2).map(lambda v: ("seen", v)).add_sink(out.append)

    with pytest.raises(UserFunctionError, match="service down"):
        run_foreach_batch(pipeline, ck, vectorize=True, partitions=1, tasks=2)
    assert sorted(v for v in out if isinstance(v, int)) == [0, 1, 2]  # batch 0 only
    marker.unlink()
    run_foreach_batch(pipeline, ck, vectorize=True, partitions=1, tasks=2, batches=range(1, 4))
    assert sorted(v for v in out if isinstance(v, int)) == list(range(8))
    assert sorted(v for _, v in (x for x in out if isinstance(x, tuple))) == list(range(8))


class Tagged(AsyncFunction):  # type: ignore[type-arg]
    async def async_invoke(self, value: Any) -> List[Any]:
        await asyncio.sleep(0.001)
        return [("enriched", value)]


def test_async_after_a_columnar_window_matches_the_local_engine(tmp_path: Path) -> None:
    """The columnar path's tasks finish the async operator after the window too (nothing stays buffered)."""
    import pandas as pd
    from foreach_batch_harness import PandasStream, local_outputs
    from pyspark.sql import Row
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from pyspark_flinkish.common import Duration
    from pyspark_flinkish.datastream.aggregates import ColumnAggregate, Count, Sum
    from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

    schema = StructType([StructField("user", StringType()), StructField("ts", LongType()), StructField("amount", LongType())])
    batches = [[("a", 1, 5), ("b", 2, 1), ("a", 12, 2)], [("b", 25, 3), ("a", 31, 4)]]
    outs: Dict[str, List[Any]] = {"spark": [], "local": []}

    def build_on(out: List[Any]) -> Any:
        def build_env(env: Any) -> None:
            strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
            if isinstance(env, SparkStreamExecutionEnvironment):
                frames = [pd.DataFrame(b, columns=schema.fieldNames()).astype({"ts": "int64", "amount": "int64"}) for b in batches]
                ds = env.from_dataframe(PandasStream(schema, frames), strategy, timestamp_column="ts")
            else:
                rows = [[Row(user=u, ts=t, amount=a) for u, t, a in b] for b in batches]
                ds = env.from_micro_batches(rows, strategy.with_timestamp_assigner(lambda r, _: r.ts), end_of_input=False)
            windowed = ds.key_by(lambda r: r.user).window(TumblingEventTimeWindows.of(Duration.of_millis(10)))
            result = windowed.aggregate(ColumnAggregate(Count(), Sum("amount")))
            AsyncDataStream.ordered_wait(result, Tagged(), Time.seconds(5)).add_sink(out.append)

        return build_env

    driver = run_foreach_batch(build_on(outs["spark"]), str(tmp_path / "ck"), vectorize=True, partitions=1, tasks=1)
    assert driver.columnar is not None  # the columnar path ran the window
    local_outputs(build_on(outs["local"]))
    assert outs["spark"] == outs["local"] and len(outs["local"]) >= 3
