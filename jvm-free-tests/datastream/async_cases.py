"""The async I/O pipelines of ``pyflink_async.json`` (real PyFlink 2.3.0's outputs and failures, written by
``benchmarks/pyflink_async.py``), built with pyspark_flinkish for any environment.

Used by ``test_pyflink_async.py`` (local engine) and ``tests/spark/test_spark_async.py`` (foreachBatch executor).
The function, the retry strategies and the output are the oracle script's: an element ``[i, delay_ms, fails]``
waits ``delay_ms`` and fails its first ``fails`` attempts; an output is ``[i, text, timestamp]``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

from pyspark_flinkish.common import Time, Types, WatermarkStrategy
from pyspark_flinkish.datastream import AsyncDataStream, MicroBatch, MicroBatchSource, async_retry_predicates
from pyspark_flinkish.datastream.async_retry_strategies import (
    ExponentialBackoffDelayRetryStrategy,
    FixedDelayRetryStrategy,
)
from pyspark_flinkish.datastream.functions import AsyncFunction, ProcessFunction

ORACLE = Path(__file__).with_name("pyflink_async.json")


def load() -> Dict[str, Any]:
    return json.loads(ORACLE.read_text())  # type: ignore[no-any-return]


class Lookup(AsyncFunction):  # type: ignore[type-arg]
    """The oracle's request: waits ``delay_ms``, fails on the first ``fails`` attempts as the case says."""

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
            msg = f"request {i} failed (attempt {attempt})"
            raise OSError(msg)
        if attempt <= fails and self.failure == "empty":
            return []
        if self.result == "not_a_list":
            return i  # type: ignore[return-value]
        return [json.dumps([i, f"ok attempt {attempt} opened {self.opened}"])]

    def timeout(self, value: Any) -> List[Any]:
        if not self.fallback:
            return super().timeout(value)  # type: ignore[no-any-return]
        return [json.dumps([value[0], "timeout"])]


def strategy_of(case: Dict[str, Any]) -> Any:
    retry = case.get("retry")
    if retry is None:
        return None
    predicate = case["predicate"]
    result = async_retry_predicates.empty_result_predicate if predicate in ("result", "both") else None
    exception = (
        (lambda e: async_retry_predicates.exception_type_predicate(e, IOError))
        if predicate in ("exception", "both")
        else None
    )
    if retry[0] == "fixed":
        return FixedDelayRetryStrategy(retry[1], retry[2], result, exception)
    return ExponentialBackoffDelayRetryStrategy(retry[1], retry[2], retry[3], retry[4], result, exception)


class WithTimestamp(ProcessFunction):  # type: ignore[type-arg]
    def process_element(self, value: Any, ctx: Any) -> Any:
        i, text = json.loads(value)
        yield [i, text, ctx.timestamp()]


def build(env: Any, case: Dict[str, Any], oracle: Dict[str, Any], batches: int = 1, function: Optional[Any] = None) -> Any:
    """``case``'s pipeline on ``env``: its input in ``batches`` micro-batches, timestamps ``timestamp_base + i`` with
    monotonous watermarks (one per micro-batch), the async operator, then ``[i, text, timestamp]``."""
    rows = [tuple(e) for e in oracle["inputs"][case["input"]]]
    step = -(-len(rows) // batches)
    base = oracle["timestamp_base"]
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: base + e[0])
    source = env.from_source(
        MicroBatchSource([MicroBatch(rows[i : i + step]) for i in range(0, len(rows), step)]), strategy, "requests"
    )
    timeout = Time.milliseconds(case["timeout_ms"])
    fn, retry = function if function is not None else Lookup(case), strategy_of(case)
    capacity = case["capacity"]
    if retry is None:
        wait = AsyncDataStream.ordered_wait if case["mode"] == "ordered" else AsyncDataStream.unordered_wait
        out = wait(source, fn, timeout, capacity, Types.STRING())
    elif case["mode"] == "ordered":
        out = AsyncDataStream.ordered_wait_with_retry(source, fn, timeout, retry, capacity, Types.STRING())
    else:
        out = AsyncDataStream.unordered_wait_with_retry(source, fn, timeout, retry, capacity, Types.STRING())
    return out.process(WithTimestamp())


def error_matches(error: BaseException, expected: Dict[str, str]) -> bool:
    """Whether a failed job's error has PyFlink's failure: an exception of the expected type and message in its
    cause chain, and the element PyFlink names in the message."""
    if "input" in expected and expected["input"] not in str(error):
        return False
    expected = {**expected, "message": expected["message"].replace("'__main__.", "'async_cases.")}  # Lookup's module
    seen: Optional[BaseException] = error
    while seen is not None:
        if type(seen).__name__ == expected["type"] and str(seen) == expected["message"]:
            return True
        if expected["type"] in str(seen) and expected["message"] in str(seen):  # carried as text (on Spark)
            return True
        seen = seen.__cause__
    return False
