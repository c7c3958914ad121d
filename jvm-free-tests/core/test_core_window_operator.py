"""WindowOperator (spec §6, §8, §9, §12, §16, §18): lateness, cleanup, window state, merging, errors.

Timelines: ``e(ts)`` = element, ``W=n`` = watermark advanced to n, ``L`` = allowed lateness.
Tumbling windows of size 10 are used unless noted: ``[0,10)`` has maxTs 9 and cleanup time 9+L.
"""

from __future__ import annotations

from typing import Any, List

import pytest

from pyspark_flinkish.core.errors import FlinkishError, InvalidArgumentError, InvalidPipelineError, UserFunctionError
from pyspark_flinkish.core.javamath import LONG_MAX, LONG_MIN
from pyspark_flinkish.core.state_descriptors import ValueStateDescriptor
from pyspark_flinkish.datastream import OutputTag
from pyspark_flinkish.datastream.functions import AggregateFunction, ProcessWindowFunction
from pyspark_flinkish.datastream.window import (
    ContinuousEventTimeTrigger,
    CountTrigger,
    EventTimeSessionWindows,
    GlobalWindows,
    PurgingTrigger,
    SlidingEventTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
)
from pyspark_flinkish.testing.harness import WindowHarness

LATE = OutputTag("late")
W10 = TimeWindow(0, 10)


class Contents(ProcessWindowFunction):
    """Emits (window, sorted contents) per firing."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield (context.window(), sorted(elements))


def harness(assigner: Any = None, fn: Any = None, **options: Any) -> WindowHarness:
    options.setdefault("late_data_tag", LATE)
    return WindowHarness.process(
        assigner if assigner is not None else TumblingEventTimeWindows.of(10),
        fn if fn is not None else Contents(),
        key_selector=lambda v: "k",
        **options,
    )


def fired(h: WindowHarness) -> List[Any]:
    return h.extract_output_values()


def late(h: WindowHarness) -> List[Any]:
    return h.extract_side_output_values(LATE)


# ---------------------------------------------------------------------------------------------------
# lateness


@pytest.mark.parametrize("lateness", [0, 1, 5])
@pytest.mark.parametrize("watermark", list(range(-1, 17)))
def test_window_late_iff_max_ts_plus_lateness_le_watermark(lateness: int, watermark: int) -> None:
    #   window [0,10): maxTs 9, cleanup 9+L
    #   ----|----------------|=========L=========|------->
    #       0                9 (fires)           9+L (cleaned; from here the window is late)
    h = harness(allowed_lateness=lateness)
    h.process_watermark(watermark)
    h.process_element(5, 5)
    if 9 + lateness <= watermark:
        assert fired(h) == []
        assert late(h) == [5]
        assert h.snapshot() == {}
    elif 9 <= watermark:  # late but allowed: fires immediately
        assert fired(h) == [(W10, [5])]
        assert late(h) == []
    else:  # on time: fires when W reaches 9
        assert fired(h) == []
        assert late(h) == []
        h.process_watermark(9)
        assert fired(h) == [(W10, [5])]


def test_ts_equal_watermark_at_end_minus_one_is_late_with_zero_lateness() -> None:
    #   W=9, e(9): window [0,10) has maxTs 9, 9+0 <= 9 -> late (side output)
    h = harness()
    h.process_watermark(9)
    h.process_element(9, 9)
    assert fired(h) == []
    assert late(h) == [9]
    assert h.get_side_output(LATE)[0].timestamp == 9  # the late record keeps its timestamp


def test_ts_equal_watermark_at_end_minus_one_fires_immediately_with_lateness() -> None:
    #   W=9, L=1, e(9): cleanup 10 > 9 -> accepted; maxTs 9 <= W -> immediate FIRE
    h = harness(allowed_lateness=1)
    h.process_watermark(9)
    h.process_element(9, 9)
    assert fired(h) == [(W10, [9])]
    assert h.get_output()[0].timestamp == 9
    assert late(h) == []


def test_ts_equal_watermark_not_at_window_end_is_on_time() -> None:
    h = harness()
    h.process_watermark(5)
    h.process_element(5, 5)
    assert fired(h) == []
    assert late(h) == []
    h.process_watermark(9)
    assert fired(h) == [(W10, [5])]


def test_partially_late_sliding_element_vanishes_silently_from_late_windows() -> None:
    #   sliding 10/5, W=9, e(7): windows [5,15) (maxTs 14, on time) and [0,10) (maxTs 9, late)
    #   -> added to [5,15) only; not side-output because it entered a window
    h = harness(SlidingEventTimeWindows.of(10, 5))
    h.process_element(3, 3)  # in [0,10) and [-5,5)
    h.process_watermark(9)
    assert fired(h) == [(TimeWindow(-5, 5), [3]), (W10, [3])]
    h.process_element(7, 7)
    assert late(h) == []
    h.process_watermark(14)
    assert fired(h)[2:] == [(TimeWindow(5, 15), [7])]
    # [0,10) never received 7
    assert all(7 not in c for w, c in fired(h) if w == W10)


def test_fully_late_sliding_element_goes_to_side_output() -> None:
    h = harness(SlidingEventTimeWindows.of(10, 5))
    h.process_watermark(14)
    h.process_element(4, 4)  # windows [0,10) and [-5,5), both late
    assert late(h) == [4]
    assert fired(h) == []


def test_element_in_no_window_not_late_is_dropped_silently() -> None:
    #   sliding size 5 < slide 10: ts 5..9 fall into no window
    h = harness(SlidingEventTimeWindows.of(5, 10), allowed_lateness=3)
    h.process_watermark(10)
    h.process_element(8, 8)  # ts + L = 11 > W = 10: not late -> silently dropped
    assert late(h) == []
    h.end_input()
    assert fired(h) == []
    assert h.snapshot() == {}


def test_element_in_no_window_and_late_goes_to_side_output() -> None:
    h = harness(SlidingEventTimeWindows.of(5, 10), allowed_lateness=3)
    h.process_watermark(11)
    h.process_element(8, 8)  # ts + L = 11 <= W = 11 -> late
    assert late(h) == [8]


def test_late_element_dropped_without_side_output_tag() -> None:
    h = WindowHarness.process(TumblingEventTimeWindows.of(10), Contents(), key_selector=lambda v: "k")
    h.process_watermark(20)
    h.process_element(3, 3)
    assert fired(h) == []
    assert h.operator.metrics.get("late_records_dropped") == 1
    assert [e for e in h.events if e[0] == "side"] == []


def test_results_are_emitted_before_the_watermark_is_forwarded() -> None:
    h = harness()
    h.process_element(1, 1)
    h.process_element(11, 11)
    h.process_watermark(25)
    kinds = [(e[0], e[1].value if e[0] == "record" else e[1]) for e in h.events]
    assert kinds == [("record", (W10, [1])), ("record", (TimeWindow(10, 20), [11])), ("watermark", 25)]


# ---------------------------------------------------------------------------------------------------
# cleanup


class Clearing(ProcessWindowFunction):
    """Counts firings in window state; clear() records the count and deletes the window state."""

    DESC = ValueStateDescriptor("fires")

    def __init__(self) -> None:
        self.cleared: List[Any] = []

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        state = context.window_state().get_state(self.DESC)
        state.update((state.value() or 0) + 1)
        yield (context.window(), sorted(elements), state.value())

    def clear(self, context: Any) -> None:
        state = context.window_state().get_state(self.DESC)
        self.cleared.append((context.window(), state.value()))
        state.clear()


def test_timer_dedup_trigger_and_cleanup_timer() -> None:
    h = harness()
    h.process_element(1, 1)
    assert h.num_event_time_timers() == 1  # EventTimeTrigger timer 9 == cleanup timer 9
    h2 = harness(allowed_lateness=5)
    h2.process_element(1, 1)
    assert h2.num_event_time_timers() == 2  # 9 and 14
    h2.process_element(2, 2)
    assert h2.num_event_time_timers() == 2


def test_cleanup_clears_everything_and_calls_clear_once() -> None:
    #   L=5:  e(1) e(2) | W=9 fire#1 | e(3) late-allowed fire#2 | W=14 cleanup (no firing) | e(4) late
    fn = Clearing()
    h = harness(fn=fn, allowed_lateness=5)
    h.process_element(1, 1)
    h.process_element(2, 2)
    h.process_watermark(9)
    h.process_element(3, 3)
    assert fired(h) == [(W10, [1, 2], 1), (W10, [1, 2, 3], 2)]
    assert fn.cleared == []
    assert h.snapshot()["k"] is not None
    h.process_watermark(13)
    assert fn.cleared == []
    h.process_watermark(14)
    assert fn.cleared == [(W10, 2)]  # clear ran once, with the window state still readable
    assert len(fired(h)) == 2  # no firing at cleanup
    assert h.snapshot() == {}  # contents, trigger state, timers, window state all gone
    assert h.num_event_time_timers() == 0
    h.process_element(4, 4)
    assert late(h) == [4]
    h.end_input()
    assert fn.cleared == [(W10, 2)]


def test_cleanup_with_zero_lateness_fires_then_cleans_at_the_same_timer() -> None:
    fn = Clearing()
    h = harness(fn=fn)
    h.process_element(1, 1)
    h.process_watermark(9)
    assert fired(h) == [(W10, [1], 1)]
    assert fn.cleared == [(W10, 1)]
    assert h.snapshot() == {}
    assert h.num_event_time_timers() == 0


def test_cleanup_loses_count_trigger_partial_count() -> None:
    #   CountTrigger(3), L=5: e(1) e(2) (count 2) | W=14 cleanup -> nothing emitted, count gone
    fn = Clearing()
    h = harness(fn=fn, trigger=CountTrigger.of(3), allowed_lateness=5)
    h.process_element(1, 1)
    h.process_element(2, 2)
    snap = h.snapshot()["k"]
    assert any("count" in str(name) for name, _ in snap["state"])
    h.process_watermark(14)
    assert fired(h) == []
    assert h.snapshot() == {}
    assert h.num_event_time_timers() == 0
    assert fn.cleared == [(W10, None)]  # clear() runs even if the window never fired
    h.process_element(3, 3)  # the window is gone: late, not counted
    assert late(h) == [3]


def test_purge_is_not_cleanup() -> None:
    #   PurgingTrigger(CountTrigger(2)), window [0,100): e1 e2 -> fire [1,2] (purge)
    #   e3 e4 -> fire [3,4]; window state (firing count) survives the purge; clear() only at W=99
    fn = Clearing()
    h = harness(TumblingEventTimeWindows.of(100), fn=fn, trigger=PurgingTrigger.of(CountTrigger.of(2)))
    for i in range(1, 6):
        h.process_element(i, i)
    w = TimeWindow(0, 100)
    assert fired(h) == [(w, [1, 2], 1), (w, [3, 4], 2)]
    assert fn.cleared == []
    h.process_watermark(99)
    assert fn.cleared == [(w, 2)]
    assert len(fired(h)) == 2  # the remainder (5) is lost at cleanup
    assert h.snapshot() == {}


def test_fire_with_null_contents_does_not_invoke_function() -> None:
    #   PurgingTrigger(ContinuousEventTimeTrigger(10)): W=10 fires [5] and purges;
    #   the following periodic firings see null contents -> no call
    calls: List[Any] = []

    class Record(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            calls.append(list(elements))
            return []

    h = harness(TumblingEventTimeWindows.of(100), fn=Record(), trigger=PurgingTrigger.of(ContinuousEventTimeTrigger.of(10)))
    h.process_element(5, 5)
    h.process_watermark(10)
    assert calls == [[5]]
    h.process_watermark(99)
    assert calls == [[5]]


def test_cleanup_time_overflow_means_no_cleanup_timer() -> None:
    #   window [MAX-17, MAX-7): maxTs MAX-8; L=100 -> maxTs+L overflows -> cleanup = MAX -> no timer
    start = LONG_MAX - 17
    fn = Clearing()
    h = harness(fn=fn, allowed_lateness=100)
    h.process_element("x", LONG_MAX - 10)
    assert h.num_event_time_timers() == 1  # only EventTimeTrigger's timer at maxTs
    h.end_input()
    assert fired(h) == [(TimeWindow(start, start + 10), ["x"], 1)]
    assert h.get_output()[0].timestamp == LONG_MAX - 8
    assert fn.cleared == []  # never cleaned
    assert h.snapshot()["k"] is not None


def test_cleanup_timer_at_exactly_long_max_is_not_registered() -> None:
    h = harness(allowed_lateness=8)
    h.process_element("x", LONG_MAX - 10)  # maxTs MAX-8, + 8 == MAX: no cleanup timer
    assert h.num_event_time_timers() == 1


def test_global_window_is_never_cleaned_up() -> None:
    fn = Clearing()
    h = harness(GlobalWindows.create(), fn=fn, trigger=CountTrigger.of(1))
    h.process_element(1, 1)
    h.end_input()
    assert h.num_event_time_timers() == 0
    assert fn.cleared == []
    assert h.get_output()[0].timestamp == LONG_MAX


# ---------------------------------------------------------------------------------------------------
# ProcessWindowFunction context


def test_window_results_carry_max_timestamp_and_context_values() -> None:
    seen: List[Any] = []

    class Ctx(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            seen.append((key, context.window(), context.current_watermark(), context.current_processing_time()))
            yield sum(elements)

    h = WindowHarness.process(TumblingEventTimeWindows.of(10), Ctx(), key_selector=lambda v: "k" if v < 100 else "z")
    h.process_element(1, 1)
    h.process_element(100, 15)
    h.process_watermark(30)
    assert seen == [("k", W10, 30, 0), ("z", TimeWindow(10, 20), 30, 0)]
    assert [(r.value, r.timestamp) for r in h.get_output()] == [(1, 9), (100, 19)]


def test_side_output_from_window_function_carries_max_timestamp() -> None:
    tag = OutputTag("extra")

    class Side(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            context.output(tag, ("ctx", sum(elements)))
            yield (tag, ("yielded", len(list(elements))))
            yield "main"

    h = WindowHarness.process(TumblingEventTimeWindows.of(10), Side(), key_selector=lambda v: "k")
    h.process_element(2, 2)
    h.process_element(3, 3)
    h.process_watermark(9)
    assert [(r.value, r.timestamp) for r in h.get_side_output(tag)] == [(("ctx", 5), 9), (("yielded", 2), 9)]
    assert [(r.value, r.timestamp) for r in h.get_output()] == [("main", 9)]


def test_side_output_from_global_window_carries_long_max() -> None:
    tag = OutputTag("extra")

    class Side(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            context.output(tag, 1)
            return []

    h = WindowHarness.process(GlobalWindows.create(), Side(), key_selector=lambda v: "k", trigger=CountTrigger.of(1))
    h.process_element(1, 1)
    assert [r.timestamp for r in h.get_side_output(tag)] == [LONG_MAX]


def test_window_state_raises_with_session_windows() -> None:
    caught: List[Any] = []

    class UsesWindowState(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            try:
                context.window_state()
            except FlinkishError as exc:
                caught.append(exc)
            return []

    h = WindowHarness.process(EventTimeSessionWindows.with_gap(5), UsesWindowState(), key_selector=lambda v: "k")
    h.process_element(1, 1)
    h.process_watermark(100)
    assert len(caught) == 1
    assert isinstance(caught[0], InvalidPipelineError)

    class Unguarded(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            context.window_state().get_state(ValueStateDescriptor("x"))
            return []

    h2 = WindowHarness.process(EventTimeSessionWindows.with_gap(5), Unguarded(), key_selector=lambda v: "k")
    h2.process_element(1, 1)
    with pytest.raises(FlinkishError) as info:
        h2.process_watermark(100)
    cause = info.value if isinstance(info.value, InvalidPipelineError) else info.value.__cause__
    assert isinstance(cause, InvalidPipelineError)


def test_global_state_survives_windows_and_window_state_is_per_window() -> None:
    g = ValueStateDescriptor("total-firings")
    w = ValueStateDescriptor("window-firings")

    class Both(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            gs = context.global_state().get_state(g)
            ws = context.window_state().get_state(w)
            gs.update((gs.value() or 0) + 1)
            ws.update((ws.value() or 0) + 1)
            yield (context.window().start, gs.value(), ws.value())

        def clear(self, context: Any) -> None:
            context.window_state().get_state(w).clear()

    h = WindowHarness.process(TumblingEventTimeWindows.of(10), Both(), key_selector=lambda v: "k", allowed_lateness=100)
    h.process_element(1, 1)
    h.process_watermark(9)
    h.process_element(2, 2)  # late-allowed re-firing of [0,10)
    h.process_element(11, 11)
    h.process_watermark(19)
    assert fired(h) == [(0, 1, 1), (0, 2, 2), (10, 3, 1)]
    h.end_input()  # cleanup clears window state (via clear) but global state stays
    snap = h.snapshot()["k"]
    assert [(name, ns) for (name, ns) in snap["state"]] == [(g.name, ns) for (name, ns) in snap["state"]]
    assert list(snap["state"].values()) == [3]


# ---------------------------------------------------------------------------------------------------
# session windows


def session_harness(gap: int = 5, **options: Any) -> WindowHarness:
    return harness(EventTimeSessionWindows.with_gap(gap), **options)


def test_session_touching_windows_merge() -> None:
    #   gap 5: e(0) -> [0,5); e(5) -> [5,10) touches (5 <= 5) -> [0,10), fires at W=9
    h = session_harness()
    h.process_element("a", 0)
    h.process_element("b", 5)
    h.process_watermark(8)
    assert fired(h) == []
    h.process_watermark(9)
    assert fired(h) == [(TimeWindow(0, 10), ["a", "b"])]
    assert h.get_output()[0].timestamp == 9
    assert h.snapshot() == {}


def test_session_gap_of_more_than_gap_does_not_merge() -> None:
    h = session_harness()
    h.process_element("a", 0)
    h.process_element("b", 6)  # [6,11) does not touch [0,5)
    h.end_input()
    assert fired(h) == [(TimeWindow(0, 5), ["a"]), (TimeWindow(6, 11), ["b"])]


def test_session_element_inside_existing_session() -> None:
    h = session_harness(10, trigger=CountTrigger.of(3))
    h.process_element("a", 0)
    h.process_element("b", 5)  # [0,15)
    h.process_element("c", 2)  # [2,12) inside [0,15)
    assert fired(h) == [(TimeWindow(0, 15), ["a", "b", "c"])]


def test_session_bridge_merges_three_windows_and_counts_add_up() -> None:
    #   gap 5, CountTrigger(4):
    #   e(0) e(2) -> [0,7) count 2 ;  e(12) -> [12,17) count 1
    #   e(7) -> [7,12) touches both -> [0,17): count 3, +1 = 4 -> FIRE
    h = session_harness(trigger=CountTrigger.of(4))
    for v, ts in [("a", 0), ("b", 2), ("d", 12)]:
        h.process_element(v, ts)
    assert fired(h) == []
    h.process_element("c", 7)
    assert fired(h) == [(TimeWindow(0, 17), ["a", "b", "c", "d"])]
    # the old windows' cleanup timers were deleted; only [0,17)'s (16) is left
    assert h.num_event_time_timers() == 1
    h.process_watermark(16)
    assert h.snapshot() == {}


def test_session_bridge_with_event_time_trigger() -> None:
    h = session_harness()
    h.process_element("a", 0)
    h.process_element("c", 10)
    assert h.num_event_time_timers() == 2  # 4 and 14
    h.process_element("b", 5)  # [5,10) bridges [0,5) and [10,15)
    assert h.num_event_time_timers() == 1  # only 14
    h.process_watermark(13)
    assert fired(h) == []
    h.process_watermark(14)
    assert fired(h) == [(TimeWindow(0, 15), ["a", "b", "c"])]


def test_late_element_touching_in_flight_session_is_accepted() -> None:
    #   gap 10, L=0: e(20) -> [20,30) maxTs 29 | W=25
    #   e(10): alone [10,20) would be late (19 <= 25) but it touches [20,30) -> [10,30) maxTs 29 > 25: accepted
    h = session_harness(10)
    h.process_element("b", 20)
    h.process_watermark(25)
    h.process_element("a", 10)
    assert late(h) == []
    h.process_watermark(29)
    assert fired(h) == [(TimeWindow(10, 30), ["a", "b"])]


def test_element_behind_watermark_bridges_two_sessions_within_lateness() -> None:
    #   gap 10, L=5:  e(0) -> [0,10) ; e(20) -> [20,30)
    #   W=12: [0,10) fires (on time) and stays in flight until cleanup 9+5=14
    #   e(10) (ts <= W) -> [10,20) touches both -> [0,30), maxTs 29 > W: timer at 29
    h = session_harness(10, allowed_lateness=5)
    h.process_element("a", 0)
    h.process_element("c", 20)
    h.process_watermark(12)
    assert fired(h) == [(TimeWindow(0, 10), ["a"])]
    h.process_element("b", 10)
    assert late(h) == []
    assert len(fired(h)) == 1
    h.process_watermark(14)  # the old window's cleanup timer was deleted with the merge
    assert len(fired(h)) == 1
    h.process_watermark(29)
    assert fired(h)[1:] == [(TimeWindow(0, 30), ["a", "b", "c"])]


def test_session_extended_within_lateness_fires_immediately() -> None:
    #   gap 10, L=20: e(0) -> [0,10) | W=15 fires [0] | e(3) -> [3,13) merges -> [0,13), maxTs 12 <= 15
    #   -> immediate FIRE with the merged contents
    h = session_harness(10, allowed_lateness=20)
    h.process_element("a", 0)
    h.process_watermark(15)
    h.process_element("b", 3)
    assert fired(h) == [(TimeWindow(0, 10), ["a"]), (TimeWindow(0, 13), ["a", "b"])]
    assert [r.timestamp for r in h.get_output()] == [9, 12]


def test_late_element_touching_nothing_goes_to_side_output() -> None:
    h = session_harness(10)
    h.process_element("b", 20)
    h.process_watermark(25)
    h.process_element("x", 5)  # [5,15): touches nothing, maxTs 14 <= 25 -> late
    assert late(h) == ["x"]
    h.process_watermark(29)
    assert fired(h) == [(TimeWindow(20, 30), ["b"])]


def test_late_element_after_session_cleanup_is_side_output() -> None:
    h = session_harness(10)
    h.process_element("a", 0)
    h.process_watermark(9)  # fired and cleaned
    h.process_element("b", 5)  # [5,15) would touch [0,10), but it is gone; maxTs 14 > 9 -> own session
    h.process_watermark(100)
    assert fired(h) == [(TimeWindow(0, 10), ["a"]), (TimeWindow(5, 15), ["b"])]
    h.process_element("c", 1)  # [1,11) late, nothing in flight
    assert late(h) == ["c"]


def test_session_aggregate_merges_accumulators() -> None:
    class SumCount(AggregateFunction):
        def create_accumulator(self) -> List[int]:
            return [0, 0]

        def add(self, value: int, acc: List[int]) -> List[int]:
            return [acc[0] + value, acc[1] + 1]

        def get_result(self, acc: List[int]) -> tuple:
            return tuple(acc)

        def merge(self, a: List[int], b: List[int]) -> List[int]:
            return [a[0] + b[0], a[1] + b[1]]

    h = WindowHarness.aggregate(EventTimeSessionWindows.with_gap(5), SumCount(), key_selector=lambda v: "k")
    for v, ts in [(1, 0), (10, 10), (100, 5)]:  # the last one bridges
        h.process_element(v, ts)
    h.end_input()
    assert [(r.value, r.timestamp) for r in h.get_output()] == [((111, 3), 14)]


def test_session_reduce_merges_contents() -> None:
    h = WindowHarness.reduce(EventTimeSessionWindows.with_gap(5), lambda a, b: a + b, key_selector=lambda v: "k")
    for v, ts in [(1, 0), (10, 10), (100, 5), (1000, 30)]:
        h.process_element(v, ts)
    h.end_input()
    assert [(r.value, r.timestamp) for r in h.get_output()] == [(111, 14), (1000, 34)]


def test_sessions_are_per_key() -> None:
    h = WindowHarness.process(EventTimeSessionWindows.with_gap(5), Contents(), key_selector=lambda v: v[0])
    h.process_element(("a", 1), 0)
    h.process_element(("b", 1), 4)
    h.process_element(("a", 2), 5)
    h.end_input()
    assert sorted(fired(h)) == [
        (TimeWindow(0, 10), [("a", 1), ("a", 2)]),
        (TimeWindow(4, 9), [("b", 1)]),
    ]


# ---------------------------------------------------------------------------------------------------
# user function errors


def test_user_function_exception_names_key_and_window() -> None:
    class Boom(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            msg = "boom"
            raise ZeroDivisionError(msg)

    h = WindowHarness.process(TumblingEventTimeWindows.of(10), Boom(), key_selector=lambda v: "the-key")
    h.process_element(1, 3)
    with pytest.raises(UserFunctionError) as info:
        h.process_watermark(9)
    err = info.value
    assert isinstance(err, FlinkishError)
    assert isinstance(err.__cause__, ZeroDivisionError)
    msg = str(err)
    assert "'the-key'" in msg
    assert "TimeWindow(start=0, end=10)" in msg
    assert "boom" in msg


def test_reduce_function_exception_is_wrapped() -> None:
    def bad(a: int, b: int) -> int:
        msg = "nope"
        raise KeyError(msg)

    h = WindowHarness.reduce(TumblingEventTimeWindows.of(10), bad, key_selector=lambda v: "k")
    h.process_element(1, 1)
    with pytest.raises(UserFunctionError) as info:
        h.process_element(2, 2)
    assert isinstance(info.value.__cause__, KeyError)
    assert "TimeWindow(start=0, end=10)" in str(info.value)


def _root(exc: BaseException) -> BaseException:
    """The framework error itself, or the one a UserFunctionError wraps."""
    return exc.__cause__ if isinstance(exc, UserFunctionError) and exc.__cause__ is not None else exc


def test_dynamic_gap_error_surfaces_at_runtime() -> None:
    h = WindowHarness.process(EventTimeSessionWindows.with_dynamic_gap(lambda v: v), Contents(), key_selector=lambda v: "k")
    h.process_element(5, 0)
    with pytest.raises(FlinkishError) as info:
        h.process_element(0, 1)
    root = _root(info.value)
    assert isinstance(root, InvalidArgumentError)
    assert isinstance(root, ValueError)


@pytest.mark.parametrize("ts", [None, LONG_MIN])
def test_missing_timestamp_is_an_error_for_event_time_windows(ts: Any) -> None:
    h = harness()
    with pytest.raises(FlinkishError) as info:
        h.process_element("x", ts)
    assert isinstance(_root(info.value), InvalidArgumentError)


# ---------------------------------------------------------------------------------------------------
# window functions (spec §8) and processing-time cleanup


def test_reduce_window_function_gets_exactly_one_value() -> None:
    got: List[Any] = []

    class Capture(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            got.append(list(elements))
            yield got[-1][0]

    h = WindowHarness.reduce(
        TumblingEventTimeWindows.of(10), lambda a, b: a + b, key_selector=lambda v: "k", window_function=Capture()
    )
    for i in range(1, 5):
        h.process_element(i, i)
    h.process_watermark(9)
    assert got == [[10]]
    assert fired(h) == [10]


def test_aggregate_result_at_every_firing_is_cumulative() -> None:
    created: List[int] = []

    class SumCount(AggregateFunction):
        def create_accumulator(self) -> List[int]:
            created.append(1)
            return [0, 0]

        def add(self, value: int, acc: List[int]) -> List[int]:
            acc[0] += value
            acc[1] += 1
            return acc

        def get_result(self, acc: List[int]) -> tuple:
            return tuple(acc)

    h = WindowHarness.aggregate(
        TumblingEventTimeWindows.of(100), SumCount(), key_selector=lambda v: "k", trigger=CountTrigger.of(2)
    )
    for i in range(1, 6):
        h.process_element(i, i)
    assert fired(h) == [(3, 2), (10, 4)]
    assert len(created) == 1  # one accumulator, created on the window's first element
    h.end_input()
    assert fired(h) == [(3, 2), (10, 4)]


def test_processing_time_window_ignores_allowed_lateness_for_cleanup() -> None:
    from pyspark_flinkish.core.clock import ManualClock
    from pyspark_flinkish.core.window_operator import WindowContents, WindowOperator
    from pyspark_flinkish.datastream.window import ProcessingTimeTrigger, TumblingProcessingTimeWindows
    from pyspark_flinkish.testing.harness import OneInputHarness

    fn = Clearing()
    op = WindowOperator(
        "W",
        lambda v: "k",
        TumblingProcessingTimeWindows.of(10),
        ProcessingTimeTrigger(),
        WindowContents("list"),
        fn,
        None,
        100,
        None,
        [fn],
    )
    h = OneInputHarness(op, ManualClock(2))
    h.process_element("a", 5)
    assert h.num_processing_time_timers() == 1  # trigger timer == cleanup timer (maxTs 9, L ignored)
    h.set_processing_time(10)
    assert fired(h) == [(W10, ["a"], 1)]
    assert fn.cleared == [(W10, 1)]
    assert h.snapshot() == {}
