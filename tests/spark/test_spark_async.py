"""Async I/O (``AsyncDataStream``) on Spark's foreachBatch executor, compared with real PyFlink 2.3.0's outputs
(``jvm-free-tests/datastream/pyflink_async.json``): one query runs several of the oracle's cases, each over its
input in two micro-batches, the requests running on the executors; and a failing request fails the query with
the operator and the element named."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from pyspark_flinkish.core.errors import UserFunctionError
from pyspark_flinkish.datastream import StreamExecutionEnvironment

pytestmark = pytest.mark.spark
CASES_DIR = Path(__file__).resolve().parents[2] / "jvm-free-tests" / "datastream"
sys.path.insert(0, str(CASES_DIR))
import async_cases  # noqa: E402

sys.path.remove(str(CASES_DIR))

from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(async_cases)  # Spark's Python workers cannot import it
ORACLE = async_cases.load()
CASES = {c["name"]: c for c in ORACLE["cases"]}
IN_ONE_QUERY = [
    "ordered_varying_delays",
    "ordered_capacity_2",
    "unordered_capacity_1",
    "ordered_timeout_fallback",
    "ordered_fixed_retry_empty_results",
    "ordered_exponential_retry_exceptions",
]


def test_async_cases_on_foreach_batch_match_pyflink(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    got: Dict[str, List[Any]] = {}
    for name in IN_ONE_QUERY:
        async_cases.build(env, CASES[name], ORACLE, batches=2).add_sink(got.setdefault(name, []).append)
    handle = env.execute("async cases", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True})
    handle.await_termination()
    for name in IN_ONE_QUERY:
        assert [list(r) for r in got[name]] == CASES[name]["output"], name
    operators = [op for p in handle.recent_progress() for op in p["operators"].values() if "numAsyncRequests" in op]
    inputs = sum(len(ORACLE["inputs"][CASES[name]["input"]]) for name in IN_ONE_QUERY)
    assert sum(op["numAsyncRequests"] for op in operators) == inputs  # every element's request, once
    assert sum(op["numAsyncRetries"] for op in operators) > 0 and sum(op["numAsyncTimeouts"] for op in operators) == 2


def test_a_failing_request_fails_the_query_naming_operator_and_element(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    case = CASES["ordered_exception_fails"]
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    async_cases.build(env, case, ORACLE).add_sink(lambda v: None)
    handle = env.execute("async failure", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True})
    with pytest.raises(UserFunctionError) as info:
        handle.await_termination()
    assert async_cases.error_matches(info.value, case["error"]), str(info.value)[:2000]
    assert "'async wait operator'" in str(info.value)
