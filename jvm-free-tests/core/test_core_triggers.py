"""Triggers (spec §7, §12, §19): decisions checked with a fake TriggerContext and through WindowHarness.

Notation in timelines: ``e(ts)`` = element with timestamp ts, ``W=n`` = watermark advanced to n,
``P=n`` = processing time set to n (processing timers fire when ``timer < now``, spec §4.4).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Tuple

import pytest

from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.core.errors import FlinkishError, InvalidArgumentError, InvalidPipelineError, InvalidTypeError
from pyspark_flinkish.core.javamath import LONG_MAX, LONG_MIN
from pyspark_flinkish.core.state_descriptors import StateDescriptor
from pyspark_flinkish.datastream import OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import ProcessWindowFunction
from pyspark_flinkish.datastream.window import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    DeltaTrigger,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindow,
    GlobalWindows,
    NeverTrigger,
    OnMergeContext,
    ProcessingTimeoutTrigger,
    ProcessingTimeSessionWindows,
    ProcessingTimeTrigger,
    PurgingTrigger,
    TimeWindow,
    Trigger,
    TriggerResult,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from pyspark_flinkish.testing.harness import WindowHarness

# ---------------------------------------------------------------------------------------------------
# helpers


class FakeState:
    def __init__(self, store: Dict[Tuple[str, Any], Any], key: Tuple[str, Any], desc: StateDescriptor) -> None:
        self.store, self.key, self.desc = store, key, desc

    def value(self) -> Any:
        return self.store.get(self.key)

    def update(self, v: Any) -> None:
        if v is None:
            self.store.pop(self.key, None)
        else:
            self.store[self.key] = v

    def get(self) -> Any:
        return self.store.get(self.key)

    def add(self, v: Any) -> None:
        cur = self.store.get(self.key)
        self.store[self.key] = v if cur is None else self.desc.reduce_function(cur, v)  # type: ignore[attr-defined]

    def clear(self) -> None:
        self.store.pop(self.key, None)


class FakeCtx(OnMergeContext):
    """A TriggerContext for one key: timers are (time, window) pairs, state is keyed by (name, window)."""

    def __init__(self, watermark: int = LONG_MIN, now: int = 0) -> None:
        self.watermark = watermark
        self.now = now
        self.window: Any = None
        self.merged: List[Any] = []
        self.event_timers: set = set()
        self.processing_timers: set = set()
        self.store: Dict[Tuple[str, Any], Any] = {}

    def at(self, window: Any) -> FakeCtx:
        self.window = window
        return self

    def get_current_processing_time(self) -> int:
        return self.now

    def get_current_watermark(self) -> int:
        return self.watermark

    def register_processing_time_timer(self, time: int) -> None:
        self.processing_timers.add((time, self.window))

    def register_event_time_timer(self, time: int) -> None:
        self.event_timers.add((time, self.window))

    def delete_processing_time_timer(self, time: int) -> None:
        self.processing_timers.discard((time, self.window))

    def delete_event_time_timer(self, time: int) -> None:
        self.event_timers.discard((time, self.window))

    def get_partitioned_state(self, state_descriptor: StateDescriptor) -> Any:
        return FakeState(self.store, (state_descriptor.name, self.window), state_descriptor)

    def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
        target = self.get_partitioned_state(state_descriptor)
        for m in self.merged:
            v = self.store.pop((state_descriptor.name, m), None)
            if v is not None:
                target.add(v)

    def state_of(self, window: Any) -> Dict[str, Any]:
        return {name: v for (name, w), v in self.store.items() if w == window}


class Contents(ProcessWindowFunction):
    """Emits (window, sorted contents, current watermark) at each firing."""

    def process(self, key: Any, context: ProcessWindowFunction.Context, elements: Any) -> Any:
        yield (context.window(), sorted(elements), context.current_watermark())


def windows_and_contents(h: WindowHarness) -> List[Tuple[Any, List[Any]]]:
    return [(w, c) for w, c, _ in h.extract_output_values()]


def contents(h: WindowHarness) -> List[List[Any]]:
    return [c for _, c, _ in h.extract_output_values()]


def harness(assigner: Any, **options: Any) -> WindowHarness:
    return WindowHarness.process(assigner, Contents(), key_selector=lambda v: "k", **options)


W10 = TimeWindow(0, 10)

# ---------------------------------------------------------------------------------------------------
# TriggerResult


@pytest.mark.parametrize(
    ("result", "fire", "purge"),
    [
        (TriggerResult.CONTINUE, False, False),
        (TriggerResult.FIRE, True, False),
        (TriggerResult.PURGE, False, True),
        (TriggerResult.FIRE_AND_PURGE, True, True),
    ],
)
def test_trigger_result_predicates(result: TriggerResult, fire: bool, purge: bool) -> None:
    assert result.is_fire() is fire
    assert result.is_purge() is purge


def test_trigger_result_members_are_flinks_four_and_cover_every_decision() -> None:
    assert [r.name for r in TriggerResult] == ["CONTINUE", "FIRE_AND_PURGE", "FIRE", "PURGE"]  # Flink's declaration order
    assert {(r.is_fire(), r.is_purge()) for r in TriggerResult} == {(f, p) for f in (False, True) for p in (False, True)}


class ByElement(Trigger):  # type: ignore[type-arg]
    """Returns ``decisions[element]`` for each element (CONTINUE when absent); configuration, not window state."""

    def __init__(self, decisions: Dict[int, TriggerResult]) -> None:
        self.decisions = decisions

    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> TriggerResult:
        return self.decisions.get(element, TriggerResult.CONTINUE)

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: Any, ctx: Any) -> None:
        pass


@pytest.mark.parametrize(
    ("decision", "fired"),
    [
        (TriggerResult.CONTINUE, [[1, 2, 3, 4]]),  # nothing emitted, contents kept
        (TriggerResult.FIRE, [[1, 2, 3], [1, 2, 3, 4]]),  # emitted, contents kept
        (TriggerResult.PURGE, [[4]]),  # nothing emitted, contents cleared
        (TriggerResult.FIRE_AND_PURGE, [[1, 2, 3], [4]]),  # emitted, then cleared
    ],
)
def test_each_trigger_result_drives_the_window_operator_as_in_flink(decision: TriggerResult, fired: List[List[int]]) -> None:
    """WindowOperator.processElement: ``isFire`` emits the window's contents, ``isPurge`` clears them afterwards;
    element 3 gets ``decision``, element 4 then fires what is left (through a process and a reduce function)."""
    trigger = ByElement({3: decision, 4: TriggerResult.FIRE})
    h = harness(GlobalWindows.create(), trigger=trigger)
    for v in (1, 2, 3, 4):
        h.process_element(v, v)
    assert contents(h) == fired
    summed = WindowHarness.reduce(GlobalWindows.create(), lambda a, b: a + b, key_selector=lambda v: "k", trigger=trigger)
    for v in (1, 2, 3, 4):
        summed.process_element(v, v)
    assert summed.extract_output_values() == [sum(c) for c in fired]


# ---------------------------------------------------------------------------------------------------
# value objects


def test_trigger_value_objects() -> None:
    assert EventTimeTrigger.create() == EventTimeTrigger()
    assert ProcessingTimeTrigger.create() == ProcessingTimeTrigger()
    assert EventTimeTrigger() != ProcessingTimeTrigger()
    assert CountTrigger.of(3) == CountTrigger.of(3)
    assert hash(CountTrigger.of(3)) == hash(CountTrigger.of(3))
    assert CountTrigger.of(3) != CountTrigger.of(4)
    assert PurgingTrigger.of(CountTrigger.of(2)) == PurgingTrigger.of(CountTrigger.of(2))
    assert PurgingTrigger.of(CountTrigger.of(2)) != PurgingTrigger.of(CountTrigger.of(3))
    assert hash(PurgingTrigger.of(CountTrigger.of(2))) == hash(PurgingTrigger.of(CountTrigger.of(2)))
    assert ContinuousEventTimeTrigger.of(1000) == ContinuousEventTimeTrigger.of(1000)
    assert ContinuousEventTimeTrigger.of(1000) != ContinuousProcessingTimeTrigger.of(1000)
    assert ContinuousProcessingTimeTrigger.of(5) != ContinuousProcessingTimeTrigger.of(6)
    assert NeverTrigger.create() == NeverTrigger()
    assert ProcessingTimeoutTrigger.of(CountTrigger.of(2), 100) == ProcessingTimeoutTrigger.of(CountTrigger.of(2), 100)
    assert ProcessingTimeoutTrigger.of(CountTrigger.of(2), 100) != ProcessingTimeoutTrigger.of(CountTrigger.of(2), 100, True)

    def delta(a: int, b: int) -> int:
        return b - a

    assert DeltaTrigger.of(5, delta) == DeltaTrigger.of(5, delta)
    assert DeltaTrigger.of(5, delta) != DeltaTrigger.of(6, delta)
    assert len({CountTrigger.of(3), CountTrigger.of(3), EventTimeTrigger(), EventTimeTrigger()}) == 2


def test_trigger_reprs() -> None:
    assert repr(EventTimeTrigger.create()) == "EventTimeTrigger()"
    assert repr(ProcessingTimeTrigger.create()) == "ProcessingTimeTrigger()"
    assert repr(CountTrigger.of(3)) == "CountTrigger.of(3)"
    assert repr(PurgingTrigger.of(CountTrigger.of(3))) == "PurgingTrigger.of(CountTrigger.of(3))"
    assert repr(ContinuousEventTimeTrigger.of(10)) == "ContinuousEventTimeTrigger.of(10)"
    assert repr(ContinuousProcessingTimeTrigger.of(10)) == "ContinuousProcessingTimeTrigger.of(10)"
    assert repr(NeverTrigger.create()) == "NeverTrigger()"
    assert repr(ProcessingTimeoutTrigger.of(CountTrigger.of(2), 100)) == "ProcessingTimeoutTrigger.of(CountTrigger.of(2), 100)"


def test_time_like_intervals() -> None:
    from pyspark_flinkish.common import Duration, Time

    assert ContinuousEventTimeTrigger.of(Duration.of_seconds(2)) == ContinuousEventTimeTrigger.of(2000)
    assert ContinuousProcessingTimeTrigger.of(Time.seconds(1)).interval == 1000
    assert ProcessingTimeoutTrigger.of(NeverTrigger(), Duration.of_millis(7)).timeout == 7


@pytest.mark.parametrize(
    "make",
    [
        lambda: CountTrigger.of(0),
        lambda: CountTrigger.of(-1),
        lambda: ContinuousEventTimeTrigger.of(0),
        lambda: ContinuousProcessingTimeTrigger.of(-5),
        lambda: ProcessingTimeoutTrigger.of(CountTrigger.of(1), 0),
    ],
)
def test_invalid_trigger_parameters(make) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgumentError) as info:
        make()
    assert isinstance(info.value, FlinkishError)
    assert isinstance(info.value, ValueError)


def test_wrappers_need_a_trigger() -> None:
    with pytest.raises(InvalidTypeError):
        PurgingTrigger.of(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        ProcessingTimeoutTrigger.of("count", 100)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("trigger", "can_merge"),
    [
        (EventTimeTrigger(), True),
        (ProcessingTimeTrigger(), True),
        (CountTrigger.of(2), True),
        (PurgingTrigger.of(CountTrigger.of(2)), True),
        (ContinuousEventTimeTrigger.of(5), True),
        (ContinuousProcessingTimeTrigger.of(5), True),
        (NeverTrigger(), True),
        (DeltaTrigger.of(1, lambda a, b: b - a), False),
        (PurgingTrigger.of(DeltaTrigger.of(1, lambda a, b: b - a)), False),
        (ProcessingTimeoutTrigger.of(CountTrigger.of(2), 10), False),
    ],
    ids=lambda t: re.sub(r" at 0x[0-9a-f]+", "", repr(t)),  # the same ids in every pytest-xdist worker
)
def test_can_merge(trigger: Trigger, can_merge: bool) -> None:  # type: ignore[type-arg]
    assert trigger.can_merge() is can_merge


# ---------------------------------------------------------------------------------------------------
# EventTimeTrigger


def test_event_time_trigger_decisions_fake_ctx() -> None:
    t = EventTimeTrigger()
    ctx = FakeCtx(watermark=8).at(W10)
    assert t.on_element("a", 3, W10, ctx) is TriggerResult.CONTINUE
    assert ctx.event_timers == {(9, W10)}
    ctx.watermark = 9  # maxTs <= W: FIRE at once, no timer, no purge
    ctx.event_timers.clear()
    assert t.on_element("a", 3, W10, ctx) is TriggerResult.FIRE
    assert ctx.event_timers == set()
    assert t.on_event_time(9, W10, ctx) is TriggerResult.FIRE
    assert t.on_event_time(8, W10, ctx) is TriggerResult.CONTINUE
    assert t.on_event_time(10, W10, ctx) is TriggerResult.CONTINUE
    assert t.on_processing_time(9, W10, ctx) is TriggerResult.CONTINUE
    ctx.event_timers = {(9, W10)}
    t.clear(W10, ctx)
    assert ctx.event_timers == set()


@pytest.mark.parametrize(("watermark", "registered"), [(19, True), (20, False), (21, False)])
def test_event_time_trigger_on_merge_registers_only_if_max_ts_after_watermark(watermark: int, registered: bool) -> None:
    merged = TimeWindow(0, 21)  # maxTs 20
    ctx = FakeCtx(watermark=watermark).at(merged)
    EventTimeTrigger().on_merge(merged, ctx)
    assert ctx.event_timers == ({(20, merged)} if registered else set())


def test_event_time_trigger_fires_at_watermark_end_minus_one() -> None:
    h = harness(TumblingEventTimeWindows.of(10))
    h.process_element("a", 3)
    h.process_element("b", 0)
    h.process_watermark(8)
    assert h.extract_output_values() == []
    h.process_watermark(9)
    assert h.extract_output_values() == [(W10, ["a", "b"], 9)]
    assert [r.timestamp for r in h.get_output()] == [9]


def test_event_time_trigger_late_firings_re_emit_full_contents() -> None:
    # L=10.  e(3) e(1) | W=9 -> fire [1,3] | e(5) -> FIRE now [1,3,5] | e(0) -> [0,1,3,5] | W=19 cleanup: no firing
    late = OutputTag("late")
    h = harness(TumblingEventTimeWindows.of(10), allowed_lateness=10, late_data_tag=late)
    h.process_element(3, 3)
    h.process_element(1, 1)
    h.process_watermark(9)
    h.process_watermark(12)
    h.process_element(5, 5)
    h.process_element(0, 0)
    assert h.extract_output_values() == [
        (W10, [1, 3], 9),
        (W10, [1, 3, 5], 12),
        (W10, [0, 1, 3, 5], 12),
    ]
    assert [r.timestamp for r in h.get_output()] == [9, 9, 9]  # maxTs, already <= W
    h.process_watermark(19)
    assert len(h.get_output()) == 3  # no firing at cleanup time
    h.process_element(2, 2)  # window cleaned up -> late
    assert h.extract_side_output_values(late) == [2]
    assert len(h.get_output()) == 3


def test_event_time_trigger_on_session_merge_in_harness() -> None:
    # gap 10: e(0) -> [0,10) timer 9; e(5) -> [5,15) merges into [0,15): timer 9 deleted, 14 registered
    h = harness(EventTimeSessionWindows.with_gap(10))
    h.process_element("a", 0)
    h.process_element("b", 5)
    assert h.num_event_time_timers() == 1
    h.process_watermark(13)
    assert h.extract_output_values() == []
    h.process_watermark(14)
    assert windows_and_contents(h) == [(TimeWindow(0, 15), ["a", "b"])]


# ---------------------------------------------------------------------------------------------------
# CountTrigger


def test_count_trigger_fake_ctx_counts_and_resets() -> None:
    t = CountTrigger.of(3)
    ctx = FakeCtx().at(W10)
    results = [t.on_element(i, i, W10, ctx) for i in range(7)]
    assert results == [TriggerResult.CONTINUE, TriggerResult.CONTINUE, TriggerResult.FIRE] * 2 + [TriggerResult.CONTINUE]
    assert ctx.state_of(W10) == {"count": 1}
    assert t.on_event_time(9, W10, ctx) is TriggerResult.CONTINUE
    assert t.on_processing_time(9, W10, ctx) is TriggerResult.CONTINUE
    t.clear(W10, ctx)
    assert ctx.state_of(W10) == {}


def test_count_trigger_on_merge_sums_counts_fake_ctx() -> None:
    t = CountTrigger.of(5)
    a, b, merged = TimeWindow(0, 5), TimeWindow(10, 15), TimeWindow(0, 15)
    ctx = FakeCtx()
    for _ in range(2):
        t.on_element("x", 0, a, ctx.at(a))
    t.on_element("y", 10, b, ctx.at(b))
    ctx.at(merged).merged = [a, b]
    t.on_merge(merged, ctx)
    assert ctx.state_of(merged) == {"count": 3}
    assert t.on_element("z", 5, merged, ctx) is TriggerResult.CONTINUE
    assert t.on_element("z", 5, merged, ctx) is TriggerResult.FIRE


def test_count_trigger_fires_every_n_without_purge_and_never_at_end() -> None:
    h = WindowHarness.reduce(
        TumblingEventTimeWindows.of(100), lambda a, b: a + b, key_selector=lambda v: "k", trigger=CountTrigger.of(3)
    )
    for i in range(1, 8):
        h.process_element(i, i)
    # fires after elements 3 and 6; no purge so the second firing is cumulative
    assert h.extract_output_values() == [1 + 2 + 3, 1 + 2 + 3 + 4 + 5 + 6]
    h.end_input()  # the watermark reaches maxTs and cleanup: a CountTrigger ignores time -> element 7 is lost
    assert h.extract_output_values() == [6, 21]
    assert h.snapshot() == {}


def test_count_trigger_counts_are_per_key_and_window() -> None:
    h = WindowHarness.process(
        TumblingEventTimeWindows.of(10), Contents(), key_selector=lambda v: v[0], trigger=CountTrigger.of(2)
    )
    h.process_element(("a", 1), 1)
    h.process_element(("b", 1), 1)
    h.process_element(("a", 2), 12)  # another window of key a
    assert h.extract_output_values() == []
    h.process_element(("a", 3), 3)
    assert windows_and_contents(h) == [(W10, [("a", 1), ("a", 3)])]
    h.process_element(("b", 2), 2)
    assert windows_and_contents(h)[1] == (W10, [("b", 1), ("b", 2)])


def test_count_trigger_counts_add_up_on_session_merge() -> None:
    # gap 5, CountTrigger(4):  e(0) e(1) -> [0,6) count 2 ;  e(10) -> [10,15) count 1
    # e(5) -> [5,10) bridges both: merged [0,15) count 2+1 = 3, then +1 = 4 -> FIRE with all 4
    h = harness(EventTimeSessionWindows.with_gap(5), trigger=CountTrigger.of(4))
    h.process_element("a", 0)
    h.process_element("b", 1)
    h.process_element("c", 10)
    assert h.extract_output_values() == []
    h.process_element("d", 5)
    assert windows_and_contents(h) == [(TimeWindow(0, 15), ["a", "b", "c", "d"])]
    # only the merged window's cleanup timer is left
    assert h.num_event_time_timers() == 1


# ---------------------------------------------------------------------------------------------------
# PurgingTrigger


@pytest.mark.parametrize(
    ("nested", "expected"),
    [
        (TriggerResult.CONTINUE, TriggerResult.CONTINUE),
        (TriggerResult.FIRE, TriggerResult.FIRE_AND_PURGE),
        (TriggerResult.FIRE_AND_PURGE, TriggerResult.FIRE_AND_PURGE),
        (TriggerResult.PURGE, TriggerResult.PURGE),
    ],
)
def test_purging_trigger_maps_results(nested: TriggerResult, expected: TriggerResult) -> None:
    class Fixed(Trigger):  # type: ignore[type-arg]
        def on_element(self, element, timestamp, window, ctx):  # type: ignore[no-untyped-def]
            return nested

        def on_event_time(self, time, window, ctx):  # type: ignore[no-untyped-def]
            return nested

        def on_processing_time(self, time, window, ctx):  # type: ignore[no-untyped-def]
            return nested

        def clear(self, window, ctx):  # type: ignore[no-untyped-def]
            return None

    t = PurgingTrigger.of(Fixed())
    ctx = FakeCtx().at(W10)
    assert t.on_element("x", 1, W10, ctx) is expected
    assert t.on_event_time(9, W10, ctx) is expected
    assert t.on_processing_time(9, W10, ctx) is expected


def test_purging_count_trigger_emits_disjoint_batches() -> None:
    h = harness(TumblingEventTimeWindows.of(100), trigger=PurgingTrigger.of(CountTrigger.of(3)))
    for i in range(1, 9):
        h.process_element(i, i)
    h.end_input()
    assert contents(h) == [[1, 2, 3], [4, 5, 6]]  # 7, 8 never emitted


def test_purging_event_time_trigger_late_firings_hold_only_new_records() -> None:
    # L=10: e(1) e(2) | W=9 -> [1,2] purged | e(3) -> [3] | e(4) -> [4]
    h = harness(TumblingEventTimeWindows.of(10), trigger=PurgingTrigger.of(EventTimeTrigger.create()), allowed_lateness=10)
    h.process_element(1, 1)
    h.process_element(2, 2)
    h.process_watermark(9)
    h.process_element(3, 3)
    h.process_element(4, 4)
    assert contents(h) == [[1, 2], [3], [4]]


def test_purging_trigger_delegates_merge_and_clear() -> None:
    t = PurgingTrigger.of(CountTrigger.of(5))
    a, merged = TimeWindow(0, 5), TimeWindow(0, 8)
    ctx = FakeCtx()
    t.on_element("x", 0, a, ctx.at(a))
    ctx.at(merged).merged = [a]
    t.on_merge(merged, ctx)
    assert ctx.state_of(merged) == {"count": 1}
    t.clear(merged, ctx)
    assert ctx.store == {}


# ---------------------------------------------------------------------------------------------------
# ContinuousEventTimeTrigger


def test_continuous_event_time_first_fire_uses_java_truncating_remainder() -> None:
    # window [-100,0), interval 10, e(-35): Java -35 % 10 == -5 -> t0 = -30 -> pending = -20
    # (Python floor-mod would give t0 = -40, pending = -30)
    t = ContinuousEventTimeTrigger.of(10)
    w = TimeWindow(-100, 0)
    ctx = FakeCtx().at(w)
    assert t.on_element("x", -35, w, ctx) is TriggerResult.CONTINUE
    assert ctx.event_timers == {(-1, w), (-20, w)}
    assert ctx.state_of(w) == {"fire-time": -20}

    h = harness(TumblingEventTimeWindows.of(100), trigger=ContinuousEventTimeTrigger.of(10))
    h.process_element("x", -35)
    h.process_watermark(-30)
    assert h.extract_output_values() == []
    h.process_watermark(-21)
    assert h.extract_output_values() == []
    h.process_watermark(-20)
    assert windows_and_contents(h) == [(TimeWindow(-100, 0), ["x"])]


def test_continuous_event_time_positive_alignment_and_clamp_to_max_ts() -> None:
    t = ContinuousEventTimeTrigger.of(10)
    w = TimeWindow(0, 25)  # maxTs 24
    ctx = FakeCtx().at(w)
    t.on_element("x", 17, w, ctx)  # 17 - 7 + 10 = 20
    assert ctx.state_of(w) == {"fire-time": 20}
    assert t.on_event_time(20, w, ctx) is TriggerResult.FIRE
    assert ctx.state_of(w) == {"fire-time": 24}  # min(30, maxTs)
    assert (24, w) in ctx.event_timers
    assert t.on_event_time(24, w, ctx) is TriggerResult.FIRE
    assert t.on_event_time(23, w, ctx) is TriggerResult.CONTINUE
    assert t.on_processing_time(20, w, ctx) is TriggerResult.CONTINUE
    t.clear(w, ctx)
    assert ctx.state_of(w) == {}
    assert (24, w) not in ctx.event_timers


def test_continuous_event_time_fires_immediately_when_window_already_due() -> None:
    t = ContinuousEventTimeTrigger.of(10)
    ctx = FakeCtx(watermark=9).at(W10)
    assert t.on_element("x", 5, W10, ctx) is TriggerResult.FIRE
    assert ctx.event_timers == set()
    assert ctx.store == {}


def test_continuous_event_time_burst_on_big_watermark_jump() -> None:
    # window [0,100), interval 10, e(3): pending 10. One jump W=99 fires at 10,20,...,90 and 99.
    h = harness(TumblingEventTimeWindows.of(100), trigger=ContinuousEventTimeTrigger.of(10))
    h.process_element("a", 3)
    h.process_element("b", 50)
    h.process_watermark(99)
    out = h.extract_output_values()
    assert len(out) == 10
    assert all(o == (TimeWindow(0, 100), ["a", "b"], 99) for o in out)  # identical cumulative firings
    assert [r.timestamp for r in h.get_output()] == [99] * 10
    assert h.snapshot() == {}  # cleaned at maxTs (L=0)
    assert h.num_event_time_timers() == 0


def test_continuous_event_time_timer_registered_in_the_past_fires_at_next_watermark() -> None:
    # window [0,100), W=50: e(5) registers pending 10 (<= W): nothing fires now;
    # the next watermark increase fires it and the chained 20, 30, 40, 50 within the same advance
    h = harness(TumblingEventTimeWindows.of(100), trigger=ContinuousEventTimeTrigger.of(10))
    h.process_watermark(50)
    h.process_element("a", 5)
    assert h.extract_output_values() == []
    h.process_watermark(51)
    assert contents(h) == [["a"]] * 5
    assert {wm for _, _, wm in h.extract_output_values()} == {51}


def test_continuous_event_time_pending_is_min_on_merge() -> None:
    # gap 30, interval 7: e(3) -> [3,33) pending 7 ; e(60) -> [60,90) pending 63
    # e(33) -> [33,63) bridges: merged [3,90) pending min(7, 63) = 7
    h = harness(EventTimeSessionWindows.with_gap(30), trigger=ContinuousEventTimeTrigger.of(7))
    h.process_element("a", 3)
    h.process_element("c", 60)
    h.process_element("b", 33)
    h.process_watermark(6)
    assert h.extract_output_values() == []
    h.process_watermark(7)
    assert windows_and_contents(h) == [(TimeWindow(3, 90), ["a", "b", "c"])]
    h.process_watermark(13)
    assert len(h.get_output()) == 1
    h.process_watermark(14)
    assert len(h.get_output()) == 2
    # and the merged window keeps its end-of-window timer at maxTs 89
    h.process_watermark(88)
    n = len(h.get_output())  # 21, 28, ..., 84 fired
    assert n == 2 + len(range(21, 89, 7))
    h.process_watermark(89)
    assert len(h.get_output()) == n + 1


def test_continuous_event_time_on_merge_fake_ctx() -> None:
    t = ContinuousEventTimeTrigger.of(10)
    a, b, merged = TimeWindow(0, 50), TimeWindow(60, 120), TimeWindow(0, 120)
    ctx = FakeCtx()
    t.on_element("x", 45, a, ctx.at(a))  # pending 49 (clamped)
    t.on_element("y", 61, b, ctx.at(b))  # pending 70
    ctx.at(merged).merged = [a, b]
    t.on_merge(merged, ctx)
    assert ctx.state_of(merged) == {"fire-time": 49}
    assert (49, merged) in ctx.event_timers


# ---------------------------------------------------------------------------------------------------
# ProcessingTimeTrigger / ContinuousProcessingTimeTrigger (ManualClock)


def test_processing_time_trigger_decisions_fake_ctx() -> None:
    t = ProcessingTimeTrigger()
    ctx = FakeCtx(now=3).at(W10)
    assert t.on_element("x", 123, W10, ctx) is TriggerResult.CONTINUE
    assert ctx.processing_timers == {(9, W10)}
    assert t.on_processing_time(9, W10, ctx) is TriggerResult.FIRE
    assert t.on_processing_time(4, W10, ctx) is TriggerResult.FIRE  # any timer fires
    assert t.on_event_time(9, W10, ctx) is TriggerResult.CONTINUE
    merged = TimeWindow(0, 20)
    ctx.now = 19
    t.on_merge(merged, ctx.at(merged))
    assert (19, merged) not in ctx.processing_timers
    ctx.now = 18
    t.on_merge(merged, ctx)
    assert (19, merged) in ctx.processing_timers
    t.clear(merged, ctx)
    assert (19, merged) not in ctx.processing_timers


def test_processing_time_trigger_with_manual_clock() -> None:
    clock = ManualClock(3)
    h = harness(TumblingProcessingTimeWindows.of(10), clock=clock)
    h.process_element("a", 999)  # the element timestamp is irrelevant
    assert h.num_processing_time_timers() == 1
    h.set_processing_time(9)  # timer 9 fires only when now > 9
    assert h.extract_output_values() == []
    h.set_processing_time(10)
    assert windows_and_contents(h) == [(W10, ["a"])]
    assert h.get_output()[0].timestamp == 9
    assert h.snapshot() == {}
    h.process_element("b", None)  # now = 10 -> window [10,20)
    h.set_processing_time(100)
    assert windows_and_contents(h)[1] == (TimeWindow(10, 20), ["b"])


def test_processing_time_windows_dropped_at_end_of_input() -> None:
    h = harness(TumblingProcessingTimeWindows.of(10), clock=ManualClock(0))
    h.process_element("a", 5)
    h.end_input()  # only the event-time MAX watermark: processing-time timers never fire
    assert h.extract_output_values() == []


def test_processing_time_session_merge_with_manual_clock() -> None:
    clock = ManualClock(0)
    h = harness(ProcessingTimeSessionWindows.with_gap(10), clock=clock)
    h.process_element("a")  # [0,10)
    clock.set(5)
    h.process_element("b")  # [5,15) -> merged [0,15): timer 9 deleted, 14 registered
    h.set_processing_time(10)
    assert h.extract_output_values() == []
    h.set_processing_time(15)
    assert windows_and_contents(h) == [(TimeWindow(0, 15), ["a", "b"])]


def test_continuous_processing_time_trigger_with_manual_clock() -> None:
    # window [0,100), interval 30; element at P=5 -> pending 30 (5 - 5%30 + 30)
    clock = ManualClock(5)
    h = harness(TumblingProcessingTimeWindows.of(100), trigger=ContinuousProcessingTimeTrigger.of(30), clock=clock)
    h.process_element("a")
    h.set_processing_time(30)
    assert h.extract_output_values() == []
    h.set_processing_time(31)
    assert contents(h) == [["a"]]
    h.process_element("b")  # pending (60) already set: nothing new
    h.set_processing_time(200)  # fires at 60, 90 and maxTs 99 (pending clamped to 99), then cleanup
    assert contents(h) == [["a"], ["a", "b"], ["a", "b"], ["a", "b"]]
    assert [r.timestamp for r in h.get_output()] == [99] * 4
    assert h.snapshot() == {}


def test_continuous_processing_time_trigger_fake_ctx() -> None:
    t = ContinuousProcessingTimeTrigger.of(10)
    w = TimeWindow(0, 45)  # maxTs 44
    ctx = FakeCtx(now=23).at(w)
    assert t.on_element("x", -999, w, ctx) is TriggerResult.CONTINUE
    assert ctx.processing_timers == {(30, w)}  # no timer at maxTs is registered by this trigger
    assert t.on_processing_time(30, w, ctx) is TriggerResult.FIRE
    assert ctx.state_of(w) == {"fire-time": 40}
    assert t.on_processing_time(35, w, ctx) is TriggerResult.CONTINUE
    assert t.on_processing_time(40, w, ctx) is TriggerResult.FIRE
    assert ctx.state_of(w) == {"fire-time": 44}
    assert t.on_processing_time(44, w, ctx) is TriggerResult.FIRE  # maxTs
    assert t.on_event_time(44, w, ctx) is TriggerResult.CONTINUE
    # merge: pending = min
    a, b, merged = TimeWindow(0, 100), TimeWindow(100, 200), TimeWindow(0, 200)
    ctx2 = FakeCtx(now=57)
    t.on_element("x", 0, a, ctx2.at(a))  # 60
    ctx2.now = 71
    t.on_element("y", 0, b, ctx2.at(b))  # 80
    ctx2.at(merged).merged = [a, b]
    t.on_merge(merged, ctx2)
    assert ctx2.state_of(merged) == {"fire-time": 60}
    assert (60, merged) in ctx2.processing_timers


# ---------------------------------------------------------------------------------------------------
# DeltaTrigger


def test_delta_trigger_fires_strictly_above_threshold() -> None:
    t = DeltaTrigger.of(5, lambda old, new: new - old)
    ctx = FakeCtx().at(GlobalWindow())
    g = GlobalWindow()
    assert t.on_element(1, 0, g, ctx) is TriggerResult.CONTINUE  # first element is remembered
    assert t.on_element(6, 0, g, ctx) is TriggerResult.CONTINUE  # delta 5 == threshold: no
    assert t.on_element(7, 0, g, ctx) is TriggerResult.FIRE  # delta 6 > 5, 7 remembered
    assert t.on_element(12, 0, g, ctx) is TriggerResult.CONTINUE
    assert t.on_element(13, 0, g, ctx) is TriggerResult.FIRE
    assert t.on_event_time(LONG_MAX, g, ctx) is TriggerResult.CONTINUE
    assert t.on_processing_time(0, g, ctx) is TriggerResult.CONTINUE
    t.clear(g, ctx)
    assert ctx.store == {}


def test_delta_trigger_in_harness() -> None:
    h = harness(GlobalWindows.create(), trigger=DeltaTrigger.of(5, lambda old, new: new - old))
    for v in [1, 3, 6, 7, 12, 13]:
        h.process_element(v, v)
    assert contents(h) == [[1, 3, 6, 7], [1, 3, 6, 7, 12, 13]]
    assert [r.timestamp for r in h.get_output()] == [LONG_MAX, LONG_MAX]


def test_delta_trigger_accepts_delta_function_object() -> None:
    class Delta:
        def get_delta(self, old: int, new: int) -> int:
            return abs(new - old)

    t = DeltaTrigger.of(2, Delta())
    ctx = FakeCtx().at(W10)
    t.on_element(10, 0, W10, ctx)
    assert t.on_element(7, 0, W10, ctx) is TriggerResult.FIRE


def _keyed_stream():  # type: ignore[no-untyped-def]
    env = StreamExecutionEnvironment.get_execution_environment()
    return env.from_collection([1, 2, 3]).key_by(lambda v: "k")


@pytest.mark.parametrize(
    "trigger",
    [
        DeltaTrigger.of(1, lambda a, b: b - a),
        PurgingTrigger.of(DeltaTrigger.of(1, lambda a, b: b - a)),
        ProcessingTimeoutTrigger.of(CountTrigger.of(2), 100),
    ],
    ids=["delta", "purging-delta", "processing-timeout"],
)
@pytest.mark.parametrize(
    "assigner",
    [EventTimeSessionWindows.with_gap(5), ProcessingTimeSessionWindows.with_gap(5)],
    ids=["event-session", "processing-session"],
)
def test_non_mergeable_trigger_on_sessions_rejected_at_trigger_call(trigger, assigner) -> None:  # type: ignore[no-untyped-def]
    windowed = _keyed_stream().window(assigner)
    with pytest.raises(InvalidPipelineError) as info:
        windowed.trigger(trigger)
    assert isinstance(info.value, FlinkishError)
    # the operator itself refuses the combination too
    with pytest.raises(InvalidPipelineError):
        harness(assigner, trigger=trigger)


def test_non_mergeable_trigger_on_non_merging_windows_is_fine() -> None:
    windowed = _keyed_stream().window(TumblingEventTimeWindows.of(10))
    assert windowed.trigger(DeltaTrigger.of(1, lambda a, b: b - a)) is windowed


def test_trigger_call_requires_a_trigger() -> None:
    with pytest.raises(InvalidTypeError):
        _keyed_stream().window(TumblingEventTimeWindows.of(10)).trigger(3)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------
# NeverTrigger


def test_never_trigger() -> None:
    t = NeverTrigger()
    ctx = FakeCtx(watermark=LONG_MAX, now=LONG_MAX).at(GlobalWindow())
    g = GlobalWindow()
    assert t.on_element("x", 0, g, ctx) is TriggerResult.CONTINUE
    assert t.on_event_time(LONG_MAX, g, ctx) is TriggerResult.CONTINUE
    assert t.on_processing_time(LONG_MAX, g, ctx) is TriggerResult.CONTINUE
    t.on_merge(g, ctx)
    t.clear(g, ctx)
    assert ctx.event_timers == set()
    assert ctx.processing_timers == set()
    assert ctx.store == {}


def test_global_windows_default_never_fires() -> None:
    h = harness(GlobalWindows.create(), clock=ManualClock(0))
    for i in range(5):
        h.process_element(i, i)
    h.set_processing_time(10**12)
    h.end_input()
    assert h.extract_output_values() == []


def test_global_windows_end_of_stream_trigger_fires_once_at_end() -> None:
    h = harness(GlobalWindows.create_with_end_of_stream_trigger())
    h.process_element(1, 1)
    h.process_element(2, 2)
    h.process_watermark(10**15)
    assert h.extract_output_values() == []
    h.end_input()
    assert contents(h) == [[1, 2]]
    assert h.get_output()[0].timestamp == LONG_MAX


# ---------------------------------------------------------------------------------------------------
# ProcessingTimeoutTrigger


def test_processing_timeout_nested_fire_returns_and_clears() -> None:
    # CountTrigger(2) nested, timeout 100: P=0 e(a) -> timeout at 100; P=10 e(b) -> nested FIRE, timeout deleted
    clock = ManualClock(0)
    h = harness(GlobalWindows.create(), trigger=ProcessingTimeoutTrigger.of(CountTrigger.of(2), 100), clock=clock)
    h.process_element("a", 1)
    assert h.num_processing_time_timers() == 1
    clock.set(10)
    h.process_element("b", 2)
    assert contents(h) == [["a", "b"]]
    assert h.num_processing_time_timers() == 0
    h.set_processing_time(1000)
    assert len(h.get_output()) == 1


def test_processing_timeout_fires_at_now_plus_timeout_and_clears_nested_state() -> None:
    clock = ManualClock(0)
    h = harness(GlobalWindows.create(), trigger=ProcessingTimeoutTrigger.of(CountTrigger.of(3), 100), clock=clock)
    h.process_element("a")  # timeout armed at 0 + 100
    clock.set(50)
    h.process_element("b")  # no reset: still 100
    h.set_processing_time(100)
    assert h.extract_output_values() == []
    h.set_processing_time(101)
    assert contents(h) == [["a", "b"]]  # FIRE (no purge): contents stay
    # the nested count was cleared on timeout: two more elements do not reach 3
    clock.set(200)
    h.process_element("c")  # count 1, timeout armed at 300
    h.process_element("d")  # count 2
    assert len(h.get_output()) == 1
    h.process_element("e")  # count 3 -> nested FIRE
    assert contents(h)[1] == ["a", "b", "c", "d", "e"]
    assert h.num_processing_time_timers() == 0


def test_processing_timeout_reset_timer_on_new_record() -> None:
    clock = ManualClock(0)
    trigger = ProcessingTimeoutTrigger.of(CountTrigger.of(10), 100, reset_timer_on_new_record=True)
    h = harness(GlobalWindows.create(), trigger=trigger, clock=clock)
    h.process_element("a")  # timeout 100
    clock.set(50)
    h.process_element("b")  # timeout re-armed at 150
    assert h.num_processing_time_timers() == 1
    h.set_processing_time(101)
    assert h.extract_output_values() == []
    h.set_processing_time(151)
    assert contents(h) == [["a", "b"]]


def test_processing_timeout_fire_and_purge_when_nested_purges() -> None:
    # nested PurgingTrigger(ProcessingTimeTrigger): its answer to the timeout timer is FIRE_AND_PURGE
    clock = ManualClock(0)
    trigger = ProcessingTimeoutTrigger.of(PurgingTrigger.of(ProcessingTimeTrigger.create()), 100)
    h = harness(GlobalWindows.create(), trigger=trigger, clock=clock)
    h.process_element("a")
    h.process_element("b")
    h.set_processing_time(101)
    assert contents(h) == [["a", "b"]]
    clock.set(200)
    h.process_element("c")
    h.set_processing_time(301)
    assert contents(h) == [["a", "b"], ["c"]]  # purged in between


def test_processing_timeout_timer_results_fake_ctx() -> None:
    class Answer(Trigger):  # type: ignore[type-arg]
        def __init__(self, result: TriggerResult) -> None:
            self.result = result

        def on_element(self, element, timestamp, window, ctx):  # type: ignore[no-untyped-def]
            return TriggerResult.CONTINUE

        def on_event_time(self, time, window, ctx):  # type: ignore[no-untyped-def]
            return self.result

        def on_processing_time(self, time, window, ctx):  # type: ignore[no-untyped-def]
            return self.result

        def clear(self, window, ctx):  # type: ignore[no-untyped-def]
            return None

    for nested, expected in [
        (TriggerResult.CONTINUE, TriggerResult.FIRE),
        (TriggerResult.FIRE, TriggerResult.FIRE),
        (TriggerResult.PURGE, TriggerResult.FIRE_AND_PURGE),
        (TriggerResult.FIRE_AND_PURGE, TriggerResult.FIRE_AND_PURGE),
    ]:
        t = ProcessingTimeoutTrigger.of(Answer(nested), 10)
        ctx = FakeCtx(now=5).at(W10)
        assert t.on_element("x", 1, W10, ctx) is TriggerResult.CONTINUE
        assert ctx.processing_timers == {(15, W10)}
        assert t.on_processing_time(15, W10, ctx) is expected
        assert ctx.processing_timers == set()  # cleared on timeout (default)
        t.on_element("x", 1, W10, ctx)
        assert t.on_event_time(123, W10, ctx) is expected  # every timer callback fires


def test_processing_timeout_without_clear_on_timeout_keeps_state() -> None:
    t = ProcessingTimeoutTrigger.of(CountTrigger.of(3), 10, should_clear_on_timeout=False)
    ctx = FakeCtx(now=0).at(W10)
    t.on_element("x", 1, W10, ctx)
    assert t.on_processing_time(10, W10, ctx) is TriggerResult.FIRE
    assert ctx.state_of(W10) == {"count": 1, "timeout": 10}


def test_processing_timeout_fires_on_the_cleanup_timer() -> None:
    # spec §19: every timer callback FIREs, including the window's (event-time) cleanup timer
    h = harness(
        TumblingEventTimeWindows.of(10), trigger=ProcessingTimeoutTrigger.of(CountTrigger.of(5), 1000), clock=ManualClock(0)
    )
    h.process_element("a", 1)
    h.process_watermark(9)
    assert windows_and_contents(h) == [(W10, ["a"])]
    assert h.snapshot() == {}
    assert h.num_processing_time_timers() == 0
