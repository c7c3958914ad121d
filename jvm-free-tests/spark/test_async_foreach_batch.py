"""Async I/O (``AsyncDataStream``) through the foreachBatch executor's real bodies without a JVM
(``foreach_batch_harness``): the oracle's cases (``datastream/pyflink_async.json``, real PyFlink 2.3.0) after a
keyed-free route and after a keyed operator, a restart that replays a batch, and the applyInPandasWithState
executor's refusal."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
from foreach_batch_harness import run_foreach_batch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "datastream"))
from async_cases import Lookup, build, error_matches, load  # noqa: E402

from pyspark_flinkish.common import Time, WatermarkStrategy  # noqa: E402
from pyspark_flinkish.core.errors import UnsupportedFeatureError, UserFunctionError  # noqa: E402
from pyspark_flinkish.datastream import AsyncDataStream, MicroBatch, MicroBatchSource  # noqa: E402
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment  # noqa: E402
from pyspark_flinkish.spark.plan import ExecPlan  # noqa: E402
from pyspark_flinkish.spark.stateful import validate  # noqa: E402

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
    with pytest.raises(UnsupportedFeatureError, match="async I/O.*foreachBatch executor"):
        validate(plan, len(plan.nodes) - 1)
