"""BATCH runtime mode on the JVM-free engine beyond windows (Flink's ``BatchExecutionInternalTimeService``,
``BatchGroupedReduceOperator``, sorted keyed inputs) and what BATCH refuses."""

from __future__ import annotations

from typing import Any, List

import pytest

from pyspark_flinkish.common import Duration, WatermarkStrategy
from pyspark_flinkish.core.errors import InvalidPipelineError, InvalidTypeError
from pyspark_flinkish.core.javamath import LONG_MAX, LONG_MIN
from pyspark_flinkish.datastream import (
    KeyedProcessFunction,
    MicroBatch,
    MicroBatchSource,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
)

EVENTS = [("a", 3000, 1), ("b", 1000, 2), ("a", 1000, 3), ("b", 500, 4), ("a", 2000, 5)]


def _env(mode: RuntimeExecutionMode) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_manual_clock(10_000)
    return env.set_runtime_mode(mode)  # type: ignore[return-value]


def _stream(env: StreamExecutionEnvironment, end_of_input: bool = True) -> Any:
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)).with_timestamp_assigner(
        lambda e, _: e[1]
    )
    source = MicroBatchSource([MicroBatch([e]) for e in EVENTS], end_of_input=end_of_input)
    return env.from_source(source, strategy, "events")


class Timers(KeyedProcessFunction):  # type: ignore[type-arg]
    """Sees each element with the watermark; registers an event-time and a processing-time timer per element; an
    event-time timer registers another one (ignored in BATCH: the timer service is quiesced at the end of a key)."""

    def process_element(self, value: Any, ctx: Any) -> Any:
        ctx.timer_service().register_event_time_timer(value[1] + 100)
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 1)
        yield ("element", ctx.get_current_key(), value[1], ctx.timer_service().current_watermark())

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        if timestamp % 100 == 0:  # once per element timer: STREAMING fires it, BATCH ignores it
            ctx.timer_service().register_event_time_timer(timestamp + 1)
        yield ("timer", ctx.get_current_key(), str(ctx.time_domain()), timestamp, ctx.timer_service().current_watermark())


def test_batch_sorts_each_keys_input_by_timestamp_and_fires_its_timers_at_its_end() -> None:
    env = _env(RuntimeExecutionMode.BATCH)
    out: List[Any] = []
    _stream(env).key_by(lambda e: e[0]).process(Timers()).add_sink(out.append)
    env.execute()
    a = [r for r in out if r[1] == "a"]
    assert a[:3] == [("element", "a", t, LONG_MIN) for t in (1000, 2000, 3000)]
    # event-time timers in timestamp order (the ones registered while firing are ignored), then processing time
    assert [(r[2], r[3]) for r in a[3:]] == [
        ("TimeDomain.EVENT_TIME", 1100), ("TimeDomain.EVENT_TIME", 2100), ("TimeDomain.EVENT_TIME", 3100),
        ("TimeDomain.PROCESSING_TIME", 10_001),
    ]
    assert all(r[4] == LONG_MAX for r in a[3:])
    assert [r[0] for r in out] == ["element"] * 3 + ["timer"] * 4 + ["element"] * 2 + ["timer"] * 3  # key after key


def test_streaming_on_the_same_input_differs() -> None:
    env = _env(RuntimeExecutionMode.STREAMING)
    out: List[Any] = []
    _stream(env).key_by(lambda e: e[0]).process(Timers()).add_sink(out.append)
    env.execute()
    elements = [r for r in out if r[0] == "element"]
    assert [r[2] for r in elements] == [e[1] for e in EVENTS]  # arrival order, watermarks as they come
    assert not any("PROCESSING" in r[2] for r in out if r[0] == "timer")  # quiesced at end of input
    assert 1101 in [r[3] for r in out if r[0] == "timer"]  # a timer registered while firing fires


def test_rolling_reduce_emits_each_keys_final_value_in_batch() -> None:
    out: List[Any] = []
    for mode in (RuntimeExecutionMode.STREAMING, RuntimeExecutionMode.BATCH):
        env = _env(mode)
        got: List[Any] = []
        _stream(env).key_by(lambda e: e[0]).reduce(lambda x, y: (x[0], max(x[1], y[1]), x[2] + y[2])).add_sink(got.append)
        env.execute()
        out.append(got)
    assert len(out[0]) == len(EVENTS)
    assert sorted(out[1]) == [("a", 3000, 9), ("b", 1000, 6)]


def test_batch_refuses_an_unbounded_source_as_flink_does() -> None:
    env = _env(RuntimeExecutionMode.BATCH)
    _stream(env, end_of_input=False).map(lambda e: e).add_sink(lambda v: None)
    with pytest.raises(InvalidPipelineError, match="UNBOUNDED source"):
        env.execute()


def test_automatic_is_streaming_with_an_unbounded_source() -> None:
    env = _env(RuntimeExecutionMode.AUTOMATIC)
    out: List[Any] = []
    _stream(env, end_of_input=False).key_by(lambda e: e[0]).process(Timers()).add_sink(out.append)
    env.execute()
    assert [r[2] for r in out if r[0] == "element"] == [e[1] for e in EVENTS]


def test_batch_leaves_the_users_plan_and_sources_as_they_are() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    out: List[Any] = []
    processed = _stream(env).key_by(lambda e: e[0]).process(Timers())
    processed.add_sink(out.append)
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.execute()
    batch = list(out)
    out.clear()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    processed.add_sink(out.append)  # the same plan again: execute() cleared the environment's sinks, as Flink's does
    env.execute()
    assert [r[2] for r in out if r[0] == "element"] == [e[1] for e in EVENTS]
    assert out != batch


def test_set_runtime_mode_needs_the_enum() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    assert env.get_runtime_mode() is RuntimeExecutionMode.STREAMING
    with pytest.raises(InvalidTypeError, match="RuntimeExecutionMode"):
        env.set_runtime_mode("BATCH")  # type: ignore[arg-type]
