"""KeyedProcessFunction via the operator harness and via the engine (spec §1 table, §4.6, §16)."""

from __future__ import annotations

from typing import Any, Iterable, List, Optional, Tuple

import pytest

from pyspark_flinkish.common import WatermarkStrategy
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.core.errors import FlinkishError, InvalidPipelineError, UserFunctionError
from pyspark_flinkish.core.javamath import LONG_MAX, LONG_MIN
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment, TimeDomain
from pyspark_flinkish.datastream.functions import KeyedProcessFunction, ProcessFunction
from pyspark_flinkish.datastream.state import ValueStateDescriptor
from pyspark_flinkish.testing.harness import KeyedProcessHarness

SIDE = OutputTag("side")


def key0(v: Any) -> Any:
    return v[0]


class TimerFn(KeyedProcessFunction):
    """value = (key, ts, command). 'e<t>' registers an event timer at t, 'p<t>' a processing timer.
    Emits ('elem', key, value) per element and ('timer', key, ts, domain, wm) per timer, with a side
    output of each through ctx.output and through `yield tag, value`."""

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Iterable[Any]:
        for cmd in value[2].split():
            t = int(cmd[1:])
            if cmd[0] == "e":
                ctx.timer_service().register_event_time_timer(t)
            elif cmd[0] == "p":
                ctx.timer_service().register_processing_time_timer(t)
            elif cmd[0] == "d":
                ctx.timer_service().delete_event_time_timer(t)
        ctx.output(SIDE, ("ctx-elem", value[1]))
        yield SIDE, ("yield-elem", value[1])
        yield ("elem", ctx.get_current_key(), ctx.timestamp(), ctx.timer_service().current_watermark())

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Iterable[Any]:
        domain = ctx.time_domain()
        ctx.output(SIDE, ("ctx-timer", timestamp, domain))
        yield SIDE, ("yield-timer", timestamp, domain)
        yield ("timer", ctx.get_current_key(), timestamp, domain, ctx.timer_service().current_watermark())


def records(h: KeyedProcessHarness) -> List[Tuple[Any, Optional[int]]]:
    return [(r.value, r.timestamp) for r in h.get_output()]


def side(h: KeyedProcessHarness) -> List[Tuple[Any, Optional[int]]]:
    return [(r.value, r.timestamp) for r in h.get_side_output(SIDE)]


# ------------------------------------------------------------------------------- harness tests


def test_element_output_carries_input_timestamp_and_initial_watermark_is_min() -> None:
    h = KeyedProcessHarness(TimerFn(), key0)
    h.process_element(("a", 7, ""), timestamp=7)
    h.process_element(("b", None, ""), timestamp=None)
    assert records(h) == [(("elem", "a", 7, LONG_MIN), 7), (("elem", "b", None, LONG_MIN), None)]
    assert side(h) == [
        (("ctx-elem", 7), 7),
        (("yield-elem", 7), 7),
        (("ctx-elem", None), None),
        (("yield-elem", None), None),
    ]


def test_event_timer_output_carries_timer_time_and_firing_watermark() -> None:
    h = KeyedProcessHarness(TimerFn(), key0)
    h.process_element(("a", 1, "e10 e20"), timestamp=1)
    h.process_element(("b", 2, "e15"), timestamp=2)
    h.clear_output()
    h.process_watermark(17)
    assert records(h) == [
        (("timer", "a", 10, TimeDomain.EVENT_TIME, 17), 10),
        (("timer", "b", 15, TimeDomain.EVENT_TIME, 17), 15),
    ]
    assert side(h) == [
        (("ctx-timer", 10, TimeDomain.EVENT_TIME), 10),
        (("yield-timer", 10, TimeDomain.EVENT_TIME), 10),
        (("ctx-timer", 15, TimeDomain.EVENT_TIME), 15),
        (("yield-timer", 15, TimeDomain.EVENT_TIME), 15),
    ]
    # timers fire before the watermark is forwarded
    assert h.events[-1] == ("watermark", 17)
    h.process_element(("c", 3, ""), timestamp=3)
    assert records(h)[-1] == (("elem", "c", 3, 17), 3)


def test_processing_timer_output_has_no_timestamp_side_output_has_timer_time() -> None:
    h = KeyedProcessHarness(TimerFn(), key0, clock=ManualClock(0))
    h.process_element(("a", 5, "p100"), timestamp=5)
    h.clear_output()
    h.set_processing_time(100)
    assert records(h) == []  # fires only when now > ts
    h.set_processing_time(101)
    assert records(h) == [(("timer", "a", 100, TimeDomain.PROCESSING_TIME, LONG_MIN), None)]
    assert (("ctx-timer", 100, TimeDomain.PROCESSING_TIME), 100) in side(h)


def test_processing_timer_yielded_side_output_has_timer_time() -> None:
    """§1: from a processing-time onTimer the main output has no timestamp, side outputs still get the
    timer time — also when the side output is produced with `yield tag, value`."""
    h = KeyedProcessHarness(TimerFn(), key0, clock=ManualClock(0))
    h.process_element(("a", 5, "p100"), timestamp=5)
    h.clear_output()
    h.set_processing_time(101)
    assert side(h) == [
        (("ctx-timer", 100, TimeDomain.PROCESSING_TIME), 100),
        (("yield-timer", 100, TimeDomain.PROCESSING_TIME), 100),
    ]


def test_timers_are_per_key_and_deduplicated() -> None:
    h = KeyedProcessHarness(TimerFn(), key0)
    h.process_element(("a", 1, "e10"), timestamp=1)
    h.process_element(("a", 2, "e10"), timestamp=2)  # same key, same ts: one timer
    h.process_element(("b", 3, "e10"), timestamp=3)  # other key: its own timer
    h.process_element(("c", 4, "e10 d10"), timestamp=4)  # registered and deleted
    assert h.num_event_time_timers() == 2
    h.clear_output()
    h.process_watermark(10)  # inclusive
    fired = sorted(r.value[1] for r in h.get_output())
    assert fired == ["a", "b"]
    assert all(r.timestamp == 10 for r in h.get_output())


def test_timer_registered_in_the_past_fires_at_next_watermark() -> None:
    h = KeyedProcessHarness(TimerFn(), key0)
    h.process_watermark(50)
    h.process_element(("a", 60, "e40"), timestamp=60)
    assert [r.value[0] for r in h.get_output()] == ["elem"]
    h.clear_output()
    h.process_watermark(51)
    assert records(h) == [(("timer", "a", 40, TimeDomain.EVENT_TIME, 51), 40)]


class StatefulFn(KeyedProcessFunction):
    """Counts per key in state obtained in open(); a timer reports and clears the count."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        ctx.timer_service().register_event_time_timer(100)
        return [(ctx.get_current_key(), n)]

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        n = self.count.value()
        self.count.clear()
        return [("final", ctx.get_current_key(), n)]


def test_state_via_runtime_context_and_timer_runs_under_its_key() -> None:
    h = KeyedProcessHarness(StatefulFn(), key0)
    for k in ["a", "b", "a", "a", "b", "c"]:
        h.process_element((k,), timestamp=1)
    assert h.extract_output_values() == [("a", 1), ("b", 1), ("a", 2), ("a", 3), ("b", 2), ("c", 1)]
    h.clear_output()
    h.process_watermark(100)
    assert sorted(h.extract_output_values()) == [("final", "a", 3), ("final", "b", 2), ("final", "c", 1)]
    assert h.snapshot() == {}  # state cleared, timers fired: nothing left


def test_snapshot_holds_state_and_timers() -> None:
    h = KeyedProcessHarness(StatefulFn(), key0)
    h.process_element(("a",), timestamp=1)
    snap = h.snapshot()
    assert list(snap) == ["a"]
    assert snap["a"]["event_timers"] == [(100, snap["a"]["event_timers"][0][1])]
    assert list(snap["a"]["state"].values()) == [1]


def test_end_input_fires_all_event_timers() -> None:
    h = KeyedProcessHarness(TimerFn(), key0)
    h.process_element(("a", 1, f"e{10**12} e{LONG_MAX}"), timestamp=1)
    h.clear_output()
    h.end_input()
    assert [(r.value[2], r.value[4]) for r in h.get_output()] == [(10**12, LONG_MAX), (LONG_MAX, LONG_MAX)]
    assert h.watermarks() == [LONG_MAX]


def test_user_exception_names_the_key() -> None:
    class Boom(KeyedProcessFunction):
        def process_element(self, value: Any, ctx: Any) -> Any:
            if value[1] == "boom":
                msg = "kaput"
                raise ZeroDivisionError(msg)
            ctx.timer_service().register_event_time_timer(5)
            return None

        def on_timer(self, timestamp: int, ctx: Any) -> Any:
            msg = "in timer"
            raise KeyError(msg)

    h = KeyedProcessHarness(Boom(), key0)
    with pytest.raises(UserFunctionError, match="key='user-7'") as info:
        h.process_element(("user-7", "boom"), timestamp=1)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert "kaput" in str(info.value)
    h.process_element(("user-8", "ok"), timestamp=1)
    with pytest.raises(UserFunctionError, match="key='user-8'"):
        h.process_watermark(5)


def test_time_domain_outside_on_timer_is_an_error() -> None:
    class Bad(KeyedProcessFunction):
        def process_element(self, value: Any, ctx: Any) -> Any:
            ctx.time_domain()

    h = KeyedProcessHarness(Bad(), key0)
    with pytest.raises(FlinkishError):
        h.process_element(("a",), timestamp=1)


# -------------------------------------------------------------------------------- engine tests


class Stamp(ProcessFunction):
    """Makes each record's timestamp visible: (value, ctx.timestamp())."""

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        yield (value, ctx.timestamp())


def _env() -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_manual_clock(0)
    return env


def _explicit(env: StreamExecutionEnvironment, batches: List[MicroBatch], end: bool = True, name: str = "src") -> Any:
    strategy = WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda v: v[1])
    return env.from_source(MicroBatchSource(batches, end_of_input=end), strategy, name)


def test_engine_output_timestamps_and_side_outputs() -> None:
    env = _env()
    src = _explicit(
        env,
        [
            MicroBatch([("a", 5, "e8 p50")], watermark=0, processing_time=0),
            MicroBatch([], watermark=10, processing_time=60),
        ],
    )
    main = src.key_by(key0).process(TimerFn())
    stamped_side = main.get_side_output(SIDE).process(Stamp())
    side_out: List[Any] = []
    stamped_side.add_sink(side_out.append)
    out = list(main.process(Stamp()).execute_and_collect())
    assert out == [
        (("elem", "a", 5, LONG_MIN), 5),
        # batch 1: processing-time timers due at pt 60 fire first (watermark still 0), without timestamp
        (("timer", "a", 50, TimeDomain.PROCESSING_TIME, 0), None),
        # then the batch's watermark 10 fires the event timer at its time
        (("timer", "a", 8, TimeDomain.EVENT_TIME, 10), 8),
    ]
    assert side_out == [
        (("ctx-elem", 5), 5),
        (("yield-elem", 5), 5),
        (("ctx-timer", 50, TimeDomain.PROCESSING_TIME), 50),
        (("yield-timer", 50, TimeDomain.PROCESSING_TIME), 50),
        (("ctx-timer", 8, TimeDomain.EVENT_TIME), 8),
        (("yield-timer", 8, TimeDomain.EVENT_TIME), 8),
    ]


def test_engine_end_of_input_fires_event_timers_not_processing_timers() -> None:
    env = _env()
    src = _explicit(
        env,
        [
            MicroBatch([("a", 5, f"e1000 p10 p{10**9}")], watermark=0, processing_time=0),
            MicroBatch([("b", 6, "e2000 p20")], watermark=1, processing_time=15),
        ],
    )
    out = list(src.key_by(key0).process(TimerFn()).process(Stamp()).execute_and_collect())
    timers = [(v[1], v[2], v[3], v[4], ts) for v, ts in out if v[0] == "timer"]
    assert timers == [
        ("a", 10, TimeDomain.PROCESSING_TIME, 0, None),  # due at pt 15 (10 < 15), before batch 1's elements
        ("a", 1000, TimeDomain.EVENT_TIME, LONG_MAX, 1000),
        ("b", 2000, TimeDomain.EVENT_TIME, LONG_MAX, 2000),
    ]  # p20 and p1e9 never fire after end of input


def test_engine_processing_timers_quiesced_after_own_input_ends() -> None:
    """§16: once MAX reached an operator its processing-time service is quiesced, even while other
    sources of the job keep running."""
    env = _env()
    a = _explicit(env, [MicroBatch([("a", 1, "p50")], watermark=0, processing_time=0)], name="A")
    b = _explicit(
        env,
        [
            MicroBatch([], watermark=0, processing_time=0),
            MicroBatch([], watermark=1, processing_time=100),
            MicroBatch([], watermark=2, processing_time=200),
        ],
        name="B",
    )
    b_out: List[Any] = []
    b.add_sink(b_out.append)
    out = list(a.key_by(key0).process(TimerFn()).execute_and_collect())
    assert [v[0] for v in out] == ["elem"]  # the processing-time timer at 50 never fires


def test_engine_user_exception_names_key() -> None:
    class Boom(KeyedProcessFunction):
        def process_element(self, value: Any, ctx: Any) -> Any:
            msg = "bad"
            raise ValueError(msg)

    env = StreamExecutionEnvironment.get_execution_environment()
    stream = env.from_collection([("k-1", 1)]).key_by(key0).process(Boom())
    with pytest.raises(UserFunctionError, match="key='k-1'"):
        list(stream.execute_and_collect())


def test_keyed_process_function_on_non_keyed_stream_rejected() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(InvalidPipelineError, match="key_by"):
        env.from_collection([1]).process(TimerFn())


def test_non_keyed_process_cannot_register_timers() -> None:
    class Timers(ProcessFunction):
        def process_element(self, value: Any, ctx: Any) -> Any:
            ctx.timer_service().register_event_time_timer(5)
            return [value]

    class Reads(ProcessFunction):
        def process_element(self, value: Any, ctx: Any) -> Any:
            return [(value, ctx.timer_service().current_watermark())]

    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(FlinkishError, match="only supported on keyed streams"):
        list(env.from_collection([1]).process(Timers()).execute_and_collect())
    env2 = StreamExecutionEnvironment.get_execution_environment()
    assert list(env2.from_collection([1]).process(Reads()).execute_and_collect()) == [(1, LONG_MIN)]


def test_engine_state_and_timers_per_key() -> None:
    env = _env()
    src = _explicit(
        env,
        [
            MicroBatch([("a", 1), ("b", 2), ("a", 3)], watermark=50),
            MicroBatch([("a", 60)], watermark=99),
            MicroBatch([("b", 99)], watermark=100),
        ],
    )
    out = list(src.key_by(key0).process(StatefulFn()).execute_and_collect())
    assert out[:4] == [("a", 1), ("b", 1), ("a", 2), ("a", 3)]
    assert out[4:5] == [("b", 2)]
    assert sorted(out[5:], key=str) == [("final", "a", 3), ("final", "b", 2)]
    assert len(out) == 7
