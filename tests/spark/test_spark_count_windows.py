"""PyFlink's count windows (``CountTumblingWindowAssigner`` / ``CountSlidingWindowAssigner``) on Spark, compared with
real PyFlink 2.3.0's outputs (``jvm-free-tests/datastream/pyflink_count_windows.json``): on the foreachBatch executor
with the input split into micro-batches (the assigners' per-key counters are keyed state, snapshotted between batches),
and on the applyInPandasWithState executor."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from pyspark_flinkish.common import Types, WatermarkStrategy
from pyspark_flinkish.datastream import StreamExecutionEnvironment

pytestmark = pytest.mark.spark
CASES_DIR = Path(__file__).resolve().parents[2] / "jvm-free-tests" / "datastream"
sys.path.insert(0, str(CASES_DIR))
import count_window_cases  # noqa: E402

sys.path.remove(str(CASES_DIR))

from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(count_window_cases)  # Spark's Python workers cannot import it
ORACLE = count_window_cases.load()
T0 = 1_700_000_000_000


def test_count_assigners_on_foreach_batch_match_pyflink_across_micro_batches(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    got: Dict[str, List[Any]] = {}
    for case in ORACLE["cases"]:
        out = got.setdefault(case["name"], [])
        count_window_cases.build(env, case, ORACLE["input"], batches=4).add_sink(out.append)
    handle = env.execute("count windows", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True})
    handle.await_termination()
    for case in ORACLE["cases"]:
        assert [list(r) for r in got[case["name"]]] == case["output"], case["name"]


def test_count_assigner_on_apply_in_pandas_with_state_matches_pyflink(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    case = next(c for c in ORACLE["cases"] if c["name"] == "sliding_3_2_process")
    env = StreamExecutionEnvironment.get_execution_environment(spark, backend="apply_in_pandas_with_state")
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: T0 + e[2])
    out = count_window_cases.build(env, case, ORACLE["input"], batches=4, strategy=strategy)
    df = out.map(json.dumps, output_type=Types.STRING()).to_dataframe()
    query = (
        df.writeStream.format("memory")
        .queryName("flinkish_count_windows")
        .outputMode("append")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    got = [json.loads(r[0]) for r in spark.table("flinkish_count_windows").collect()]
    # a streaming DataFrame has no order across keys; within a key, rows come in PyFlink's order
    for key in {k for k, _, _ in case["output"]}:
        assert [r for r in got if r[0] == key] == [r for r in case["output"] if r[0] == key]
    assert len(got) == len(case["output"])
