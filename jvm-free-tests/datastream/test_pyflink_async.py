"""PyFlink's async I/O (``AsyncDataStream``) on the local engine, compared with real PyFlink 2.3.0's outputs and
failures (``pyflink_async.json``; see ``async_cases.py``): ordered and unordered emission, capacity, timeouts with
a fallback or failing the job, retries with fixed-delay and exponential strategies and result/exception
predicates. Further rules (watermarks bound reordering, metrics, validation) are tested without the oracle."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Dict, List

import pytest
from async_cases import Lookup, build, error_matches, load

from pyspark_flinkish.common import Time, WatermarkStrategy
from pyspark_flinkish.core.errors import InvalidArgumentError, InvalidTypeError, UserFunctionError
from pyspark_flinkish.datastream import (
    AsyncDataStream,
    AsyncFunction,
    AsyncRetryStrategy,
    MicroBatch,
    MicroBatchSource,
    StreamExecutionEnvironment,
    async_retry_predicates,
    async_retry_strategies,
)
from pyspark_flinkish.datastream.functions import ProcessFunction

ORACLE = load()
CASES = {c["name"]: c for c in ORACLE["cases"]}


def _run(case: Dict[str, Any], batches: int = 1) -> List[Any]:
    env = StreamExecutionEnvironment.get_execution_environment()
    out: List[Any] = []
    build(env, case, ORACLE, batches).add_sink(out.append)
    env.execute("async")
    return [list(r) for r in out]


def test_oracle_is_real_pyflink_output() -> None:
    assert ORACLE["pyflink_version"] == "2.3.0"
    assert ORACLE["command"].startswith("benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_async.py")
    assert all(("output" in c) != ("error" in c) for c in ORACLE["cases"])
    assert any(c["output"] != sorted(c["output"]) for c in ORACLE["cases"] if "output" in c)  # some reorder


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if "output" in c))
def test_async_outputs_match_pyflink(name: str) -> None:
    assert _run(CASES[name]) == CASES[name]["output"]


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if "error" in c))
def test_async_failures_match_pyflink(name: str) -> None:
    with pytest.raises(UserFunctionError) as info:
        _run(CASES[name])
    assert error_matches(info.value, CASES[name]["error"]), (str(info.value)[:2000], CASES[name]["error"])
    assert "'async wait operator'" in str(info.value)  # names the operator, its uid and the element


# ------------------------------------------------------------------------- rules beyond the oracle's cases
class Delayed(AsyncFunction):  # type: ignore[type-arg]
    """Waits ``value[1]`` ms, returns ``[value[0]]``; records how many requests ran at once."""

    def __init__(self) -> None:
        self.running = 0
        self.most = 0
        self.closed = False

    async def async_invoke(self, value: Any) -> List[Any]:
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await asyncio.sleep(value[1] / 1000)
        finally:
            self.running -= 1
        return [value[0]]

    def close(self) -> None:
        self.closed = True


def _batches(*batches: List[Any]) -> MicroBatchSource:
    return MicroBatchSource([MicroBatch(list(b)) for b in batches])


def test_unordered_never_reorders_across_a_watermark() -> None:
    """Batch 1's slow request is emitted before batch 2's fast ones: the watermark between them is a barrier."""
    env = StreamExecutionEnvironment.get_execution_environment()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[0])
    source = env.from_source(_batches([(1, 300), (2, 0)], [(3, 0), (4, 100)]), strategy, "s")
    out = AsyncDataStream.unordered_wait(source, Delayed(), Time.seconds(5))
    assert list(out.execute_and_collect()) == [2, 1, 3, 4]


def test_capacity_bounds_requests_in_flight_and_metrics_count_them() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    fn = Delayed()
    source = env.from_collection([(i, 20) for i in range(10)])
    AsyncDataStream.unordered_wait(source, fn, Time.seconds(5), capacity=3).add_sink(lambda v: None)
    result = env.execute("capacity")
    assert fn.most == 3 and fn.closed
    (metrics,) = [m for name, m in result.metrics.items() if "async wait operator" in name]
    assert metrics["async_requests"] == 10 and metrics["async_in_flight_max"] == 3
    assert metrics["async_timeouts"] == 0 and metrics["async_retries"] == 0


def test_timeouts_and_retries_are_counted() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    case = {"failure": "empty", "on_timeout": "fallback"}
    strategy = async_retry_strategies.FixedDelayRetryStrategy(
        2, 10, async_retry_predicates.empty_result_predicate, None
    )
    source = env.from_collection([(0, 0, 1), (1, 2000, 0)])
    AsyncDataStream.ordered_wait_with_retry(source, Lookup(case), Time.milliseconds(300), strategy).add_sink(
        lambda v: None
    )
    metrics = next(m for name, m in env.execute("counted").metrics.items() if "async wait operator" in name)
    assert (metrics["async_requests"], metrics["async_retries"], metrics["async_timeouts"]) == (2, 1, 1)


def test_no_timeout_waits_for_the_request() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    out = AsyncDataStream.ordered_wait(env.from_collection([(0, 50)]), Delayed(), 0)
    assert list(out.execute_and_collect()) == [0]


def test_results_carry_the_input_timestamp_and_a_list_of_several_results() -> None:
    class Many(AsyncFunction):  # type: ignore[type-arg]
        async def async_invoke(self, value: Any) -> List[Any]:
            return [value, value * 10]

    class Ts(ProcessFunction):  # type: ignore[type-arg]
        def process_element(self, value: Any, ctx: Any) -> Any:
            yield value, ctx.timestamp()

    env = StreamExecutionEnvironment.get_execution_environment()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e * 100)
    source = env.from_source(_batches([1, 2]), strategy, "s")
    got = list(AsyncDataStream.ordered_wait(source, Many(), Time.seconds(1)).process(Ts()).execute_and_collect())
    assert got == [(1, 100), (10, 100), (2, 200), (20, 200)]


def test_a_request_ending_in_a_base_exception_fails_the_job_and_never_hangs() -> None:
    class Cancelled(AsyncFunction):  # type: ignore[type-arg]
        async def async_invoke(self, value: Any) -> List[Any]:
            raise asyncio.CancelledError()

    env = StreamExecutionEnvironment.get_execution_environment()
    AsyncDataStream.ordered_wait(env.from_collection([1]), Cancelled(), 0).uid("lookup").add_sink(lambda v: None)
    with pytest.raises(UserFunctionError, match="during handling input 1") as info:
        env.execute("cancelled")
    assert info.value.uid == "lookup" and info.value.operator == "async wait operator"


def test_a_failure_at_the_end_of_a_batch_without_watermarks_names_the_operator() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    source = env.from_source(_batches([(0, 0, 1)], [(1, 0, 0)]), WatermarkStrategy.no_watermarks(), "s")
    AsyncDataStream.ordered_wait(source, Lookup({"failure": "fail"}), 1000).uid("lookup").add_sink(lambda v: None)
    with pytest.raises(UserFunctionError, match="request 0 failed") as info:
        env.execute("failing")
    assert info.value.uid == "lookup"


def test_runs_inside_a_running_event_loop() -> None:
    """A notebook's cell runs inside an event loop: the operator's own loop thread still runs the requests."""

    async def cell() -> List[Any]:
        env = StreamExecutionEnvironment.get_execution_environment()
        return list(AsyncDataStream.ordered_wait(env.from_collection([(0, 10)]), Delayed(), 1000).execute_and_collect())

    assert asyncio.run(cell()) == [0]


def test_the_operator_closes_its_loop_thread() -> None:
    before = {t.name for t in threading.enumerate()}
    env = StreamExecutionEnvironment.get_execution_environment()
    list(AsyncDataStream.unordered_wait(env.from_collection([(0, 1)]), Delayed(), 1000).execute_and_collect())
    assert {t.name for t in threading.enumerate()} - before == set()


def test_validation_follows_pyflink() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    s = env.from_collection([1])

    class NotAsync(AsyncFunction):  # type: ignore[type-arg]
        def async_invoke(self, value: Any) -> List[Any]:  # type: ignore[override]
            return [value]

    with pytest.raises(InvalidTypeError, match="should be declared as 'async def'"):
        AsyncDataStream.ordered_wait(s, NotAsync(), Time.seconds(1))
    retry = AsyncRetryStrategy.fixed_delay(3, 10, async_retry_predicates.empty_result_predicate, None)
    with pytest.raises(InvalidArgumentError, match="Timeout should be configured"):
        AsyncDataStream.unordered_wait_with_retry(s, Delayed(), Time.milliseconds(0), retry)
    with pytest.raises(InvalidArgumentError, match="should not be None"):
        AsyncDataStream.ordered_wait_with_retry(s, Delayed(), Time.seconds(1), None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="capacity"):
        AsyncDataStream.ordered_wait(s, Delayed(), Time.seconds(1), capacity=0)
    with pytest.raises(AssertionError, match="max_attempts should be greater than zero"):
        AsyncRetryStrategy.fixed_delay(0, 10, None, None)
    assert AsyncRetryStrategy.no_restart() is async_retry_strategies.NO_RETRY_STRATEGY


def test_exponential_backoff_delays_follow_pyflink() -> None:
    s = AsyncRetryStrategy.exponential_backoff(5, 10, 50, 2.0, None, None)
    assert [s.get_backoff_time_millis(n) for n in (1, 2, 3, 4, 5)] == [10, 20, 40, 50, 50]
    assert [s.can_retry(n) for n in (1, 5, 6)] == [True, True, False]
    assert async_retry_predicates.exception_type_predicate(OSError(), IOError)
    assert async_retry_predicates.has_exception_predicate(ValueError()) and async_retry_predicates.empty_result_predicate([])
