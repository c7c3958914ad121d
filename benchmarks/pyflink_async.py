"""Real PyFlink's async I/O (``AsyncDataStream``), as the oracle for pyspark_flinkish's ``AsyncDataStream``.

Runs with PyFlink's own interpreter (``benchmarks/.venv-pyflink``, which ``run_all.py``'s ``ensure_pyflink`` creates:
``python3 -m venv benchmarks/.venv-pyflink && benchmarks/.venv-pyflink/bin/pip install apache-flink==2.3.0``; Java 17)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_async.py --out jvm-free-tests/datastream/pyflink_async.json

Every case runs one async operator over the same input with parallelism 1. An element is ``[i, delay_ms, fails]``:
the request for element ``i`` takes ``delay_ms`` and fails (``fail``: raises ``IOError``; ``empty``: returns ``[]``)
on its first ``fails`` attempts. The delays are far apart (hundreds of milliseconds), so the order in which
requests complete, and which ones time out, is fixed. The JSON file holds the input, each case's spec and either
PyFlink's output in emission order (``[i, text, timestamp]``, the timestamp an output carries downstream) or the
failure of the job (the Python exception's type and message). ``jvm-free-tests/datastream/test_pyflink_async.py``
(local engine) and ``tests/spark/test_spark_async.py`` (foreachBatch executor) build the same pipelines from the
specs (``jvm-free-tests/datastream/async_cases.py``) and compare; neither needs PyFlink.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import traceback
from typing import Any, Dict, List

import pyflink_oracle as oracle
from pyflink.common import Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import AsyncDataStream, StreamExecutionEnvironment, async_retry_predicates
from pyflink.datastream.async_retry_strategies import ExponentialBackoffDelayRetryStrategy, FixedDelayRetryStrategy
from pyflink.datastream.functions import AsyncFunction, ProcessFunction

# [i, delay_ms, fails]: delays far apart, so completion order is fixed
INPUT = [[0, 900, 0], [1, 100, 0], [2, 500, 0], [3, 0, 0], [4, 300, 0], [5, 700, 0]]
RETRY_INPUT = [[0, 0, 0], [1, 0, 1], [2, 0, 2], [3, 0, 3], [4, 0, 5]]
TIMEOUT_INPUT = [[0, 0, 0], [1, 3000, 0], [2, 100, 0], [3, 4000, 0]]
TIMEOUT_FAIL_INPUT = [[0, 0, 0], [1, 3000, 0], [2, 100, 0]]
FAIL_INPUT = [[0, 0, 0], [1, 0, 1], [2, 0, 0]]
# A failing case has one failing element: when several requests fail at nearly the same moment, which failure
# PyFlink reports depends on timing (the last one before its operator looks).

# mode: ordered | unordered; timeout_ms; capacity; failure: fail (raise IOError) | empty (return []) | none;
# on_timeout: fallback (timeout() returns a marker) | default (PyFlink's: raise TimeoutError);
# retry: none | fixed [max_attempts, backoff_ms] | exponential [max_attempts, initial, max_delay, multiplier];
# predicate: result (async_retry_predicates.empty_result_predicate) | exception (IOError) | both
# result: list (a list of one string) | not_a_list (an int)
CASES: List[Dict[str, Any]] = [
    {"name": "ordered_varying_delays", "input": "INPUT", "mode": "ordered", "timeout_ms": 5000, "capacity": 100},
    {"name": "unordered_completion_order", "input": "INPUT", "mode": "unordered", "timeout_ms": 5000, "capacity": 100},
    {"name": "ordered_capacity_2", "input": "INPUT", "mode": "ordered", "timeout_ms": 5000, "capacity": 2},
    {"name": "unordered_capacity_1", "input": "INPUT", "mode": "unordered", "timeout_ms": 5000, "capacity": 1},
    {"name": "unordered_capacity_2", "input": "INPUT", "mode": "unordered", "timeout_ms": 5000, "capacity": 2},
    {"name": "ordered_timeout_fallback", "input": "TIMEOUT_INPUT", "mode": "ordered", "timeout_ms": 1000,
     "capacity": 100, "on_timeout": "fallback"},
    {"name": "unordered_timeout_fallback", "input": "TIMEOUT_INPUT", "mode": "unordered", "timeout_ms": 1000,
     "capacity": 100, "on_timeout": "fallback"},
    {"name": "ordered_default_timeout_fails", "input": "TIMEOUT_FAIL_INPUT", "mode": "ordered", "timeout_ms": 1000,
     "capacity": 100},
    {"name": "ordered_exception_fails", "input": "FAIL_INPUT", "mode": "ordered", "timeout_ms": 5000,
     "capacity": 100, "failure": "fail"},
    {"name": "ordered_not_a_list_fails", "input": "FAIL_INPUT", "mode": "ordered", "timeout_ms": 5000,
     "capacity": 100, "result": "not_a_list"},
    {"name": "ordered_fixed_retry_empty_results", "input": "RETRY_INPUT", "mode": "ordered", "timeout_ms": 10000,
     "capacity": 100, "failure": "empty", "retry": ["fixed", 3, 50], "predicate": "result"},
    {"name": "unordered_fixed_retry_empty_results", "input": "RETRY_INPUT", "mode": "unordered", "timeout_ms": 10000,
     "capacity": 1, "failure": "empty", "retry": ["fixed", 3, 50], "predicate": "result"},
    {"name": "ordered_exponential_retry_exceptions", "input": "RETRY_INPUT", "mode": "ordered", "timeout_ms": 10000,
     "capacity": 100, "failure": "fail", "retry": ["exponential", 5, 20, 200, 2.0], "predicate": "exception"},
    {"name": "ordered_exponential_retry_exhausted_fails", "input": "RETRY_INPUT", "mode": "ordered",
     "timeout_ms": 10000, "capacity": 100, "failure": "fail", "retry": ["exponential", 3, 20, 200, 2.0],
     "predicate": "exception"},
    {"name": "ordered_retry_result_predicate_ignores_exceptions", "input": "FAIL_INPUT", "mode": "ordered",
     "timeout_ms": 10000, "capacity": 100, "failure": "fail", "retry": ["fixed", 3, 50], "predicate": "result"},
    {"name": "ordered_retry_until_timeout_fallback", "input": "RETRY_INPUT", "mode": "ordered", "timeout_ms": 1500,
     "capacity": 100, "failure": "empty", "retry": ["fixed", 100, 400], "predicate": "both",
     "on_timeout": "fallback"},
]
INPUTS = {
    "INPUT": INPUT, "RETRY_INPUT": RETRY_INPUT, "TIMEOUT_INPUT": TIMEOUT_INPUT,
    "TIMEOUT_FAIL_INPUT": TIMEOUT_FAIL_INPUT, "FAIL_INPUT": FAIL_INPUT,
}
T0 = 1_000


class Lookup(AsyncFunction):
    """A request per element: waits ``delay_ms``, fails on the first ``fails`` attempts as the case says."""

    def __init__(self, case: Dict[str, Any]) -> None:
        self.failure = case.get("failure", "none")
        self.result = case.get("result", "list")
        self.fallback = case.get("on_timeout") == "fallback"
        self.attempts: Dict[int, int] = {}
        self.opened = False

    def open(self, runtime_context: Any) -> None:
        self.opened = True

    async def async_invoke(self, value: Any) -> List[Any]:
        i, delay, fails = value[0], value[1], value[2]
        attempt = self.attempts[i] = self.attempts.get(i, 0) + 1
        await asyncio.sleep(delay / 1000)
        if attempt <= fails and self.failure == "fail":
            raise OSError(f"request {i} failed (attempt {attempt})")
        if attempt <= fails and self.failure == "empty":
            return []
        if self.result == "not_a_list":
            return i  # type: ignore[return-value]
        return [json.dumps([i, f"ok attempt {attempt} opened {self.opened}"])]

    def timeout(self, value: Any) -> List[Any]:
        if not self.fallback:
            return super().timeout(value)
        return [json.dumps([value[0], "timeout"])]


def strategy_of(case: Dict[str, Any]) -> Any:
    retry = case.get("retry")
    if retry is None:
        return None
    predicate = case["predicate"]
    result = async_retry_predicates.empty_result_predicate if predicate in ("result", "both") else None
    exception = (
        (lambda e: async_retry_predicates.exception_type_predicate(e, IOError)) if predicate in ("exception", "both")
        else None
    )
    if retry[0] == "fixed":
        return FixedDelayRetryStrategy(retry[1], retry[2], result, exception)
    return ExponentialBackoffDelayRetryStrategy(retry[1], retry[2], retry[3], retry[4], result, exception)


class WithTimestamp(ProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> Any:
        i, text = json.loads(value)
        yield json.dumps([i, text, ctx.timestamp()])


class ElementTime(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return T0 + value[0]


def run_case(case: Dict[str, Any]) -> Dict[str, Any]:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.set_python_executable(sys.executable)  # the Python workers run in this venv too
    row = Types.TUPLE([Types.INT(), Types.INT(), Types.INT()])
    stream = env.from_collection([tuple(e) for e in INPUTS[case["input"]]], type_info=row)
    stream = stream.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ElementTime())
    )
    timeout = Time.milliseconds(case["timeout_ms"])
    fn, strategy = Lookup(case), strategy_of(case)
    if strategy is None:
        wait = AsyncDataStream.ordered_wait if case["mode"] == "ordered" else AsyncDataStream.unordered_wait
        out = wait(stream, fn, timeout, case["capacity"], Types.STRING())
    elif case["mode"] == "ordered":
        out = AsyncDataStream.ordered_wait_with_retry(stream, fn, timeout, strategy, case["capacity"], Types.STRING())
    else:
        out = AsyncDataStream.unordered_wait_with_retry(stream, fn, timeout, strategy, case["capacity"], Types.STRING())
    out = out.process(WithTimestamp(), output_type=Types.STRING())
    try:
        with out.execute_and_collect() as results:
            return {"output": [json.loads(r) for r in results]}
    except Exception as exc:  # the job failed: the Python exception that failed it, from the Java error's text
        return {"error": python_error(exc)}


def python_error(exc: BaseException) -> Dict[str, str]:
    """The Python exception that failed the job, from the (Java) error's text: its type and message, and the
    input PyFlink names when it wraps the function's error (``Exception(("Error happens inside the class ...
    during handling input '<input>'", <error>))``)."""
    text = "".join(traceback.format_exception(exc))
    found = re.findall(r"^(\w*(?:Error|Exception)): (.*)$", text, re.MULTILINE)
    kind, message = found[-1] if found else ("?", text[-500:])
    wrapped = re.match(r"""^\("Error happens inside the class '.*' during handling input '(.*)'", (\w+)\((['"])(.*)\3\)\)$""",
                       message.strip())
    if wrapped:
        return {"type": wrapped.group(2), "message": wrapped.group(4), "input": wrapped.group(1), "wrapped": kind}
    return {"type": kind, "message": message.strip()}


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", nargs="*", default=None,
                        help="run only these cases; the others' results are kept from --out")
    args = parser.parse_args(argv)

    kept = {}
    if args.only:
        with open(args.out) as f:
            kept = {c["name"]: c for c in json.load(f)["cases"]}
    cases = []
    for case in CASES:
        if args.only and case["name"] not in args.only:
            cases.append(kept[case["name"]])
            continue
        result = run_case(case)
        print(f"{case['name']}: {result}", flush=True)
        cases.append({**case, **result})
    oracle.record(args.out, __file__, {"parallelism": 1, "timestamp_base": T0, "inputs": INPUTS, "cases": cases})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
