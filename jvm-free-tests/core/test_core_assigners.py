"""Window assigners (spec §5): geometry as hypothesis properties, validation, value-object protocol.

Window formulas (spec §5, conformance README §2.1):
  tumbling: start = ts - floorMod(ts - offset, size)                         -> [start, start+size)
  sliding:  last  = ts - floorMod(ts - offset, slide); starts last, last-slide, ... while start > ts - size
  session:  [ts, ts + gap)
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyspark_flinkish.common import Duration, Time
from pyspark_flinkish.core.errors import FlinkishError, InvalidArgumentError, InvalidTypeError
from pyspark_flinkish.core.javamath import LONG_MIN
from pyspark_flinkish.datastream.window import (
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindow,
    GlobalWindows,
    MergingWindowAssigner,
    NeverTrigger,
    ProcessingTimeSessionWindows,
    ProcessingTimeTrigger,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssignerContext,
)


class Ctx(WindowAssignerContext):
    """An assigner context with a fixed processing time."""

    def __init__(self, now: int = 0) -> None:
        self.now = now

    def get_current_processing_time(self) -> int:
        return self.now


CTX = Ctx(0)
TS = st.integers(-(10**13), 10**13)  # negative timestamps included; far from the long range edges
PROPS = settings(max_examples=200, deadline=None)


@st.composite
def size_and_offset(draw: st.DrawFn) -> tuple:
    size = draw(st.integers(1, 10**7))
    offset = draw(st.integers(-(size - 1), size - 1))
    return size, offset


@st.composite
def sliding_params(draw: st.DrawFn) -> tuple:
    slide = draw(st.integers(1, 1000))
    size = draw(st.integers(1, 5000))
    offset = draw(st.integers(-(slide - 1), slide - 1))
    return size, slide, offset


# ---------------------------------------------------------------------------------------------------
# tumbling


@PROPS
@given(size_and_offset(), TS)
def test_tumbling_event_time_geometry(so: tuple, ts: int) -> None:
    size, offset = so
    windows = TumblingEventTimeWindows.of(size, offset).assign_windows("x", ts, CTX)
    assert len(windows) == 1
    (w,) = windows
    assert isinstance(w, TimeWindow)
    assert w.start <= ts < w.end
    assert w.end - w.start == size
    assert (w.start - offset) % size == 0
    assert w.max_timestamp() == w.end - 1


@PROPS
@given(size_and_offset(), TS, st.integers(-(10**13), 10**13))
def test_tumbling_processing_time_uses_clock_not_element_timestamp(so: tuple, now: int, ts: int) -> None:
    size, offset = so
    (w,) = TumblingProcessingTimeWindows.of(size, offset).assign_windows("x", ts, Ctx(now))
    assert w.start <= now < w.end
    assert w.end - w.start == size
    assert (w.start - offset) % size == 0
    (w2,) = TumblingProcessingTimeWindows.of(size, offset).assign_windows("x", None, Ctx(now))
    assert w2 == w


@pytest.mark.parametrize(
    ("size", "offset", "ts", "expected"),
    [
        (10, 0, 0, (0, 10)),
        (10, 0, 9, (0, 10)),
        (10, 0, 10, (10, 20)),
        (10, 0, -1, (-10, 0)),  # floor-mod: negative timestamps round down
        (10, 0, -10, (-10, 0)),
        (10, 0, -11, (-20, -10)),
        (10, 3, 2, (-7, 3)),
        (10, 3, 3, (3, 13)),
        (10, -3, 6, (-3, 7)),
        (10, -3, 7, (7, 17)),
        (10, -3, -4, (-13, -3)),
        (86_400_000, -8 * 3_600_000, 0, (-28_800_000, 57_600_000)),  # a UTC+8 "day"
    ],
)
def test_tumbling_examples(size: int, offset: int, ts: int, expected: tuple) -> None:
    assert TumblingEventTimeWindows.of(size, offset).assign_windows("x", ts, CTX) == [TimeWindow(*expected)]


# ---------------------------------------------------------------------------------------------------
# sliding


def _expected_sliding(ts: int, size: int, slide: int, offset: int) -> list:
    """Independent derivation: every start s with s = offset (mod slide) and ts - size < s <= ts, latest first."""
    last = offset + slide * ((ts - offset) // slide)
    return [TimeWindow(s, s + size) for s in range(last, ts - size, -slide)]


@PROPS
@given(sliding_params(), TS)
def test_sliding_event_time_geometry(params: tuple, ts: int) -> None:
    size, slide, offset = params
    windows = SlidingEventTimeWindows.of(size, slide, offset).assign_windows("x", ts, CTX)
    assert windows == _expected_sliding(ts, size, slide, offset)
    for w in windows:
        assert w.start <= ts < w.end
        assert w.end - w.start == size
        assert (w.start - offset) % slide == 0
    starts = [w.start for w in windows]
    assert starts == sorted(starts, reverse=True)  # latest start first
    # count == number of k with start in (ts - size, ts]
    expected_count = sum(1 for s in range(ts - size + 1, ts + 1) if (s - offset) % slide == 0)
    assert len(windows) == expected_count
    # with size < slide a timestamp falls in no window exactly when floorMod(ts - offset, slide) >= size
    if size < slide:
        assert (windows == []) == ((ts - offset) % slide >= size)
    else:
        assert windows


@PROPS
@given(sliding_params(), TS, TS)
def test_sliding_processing_time_uses_clock(params: tuple, now: int, ts: int) -> None:
    size, slide, offset = params
    windows = SlidingProcessingTimeWindows.of(size, slide, offset).assign_windows("x", ts, Ctx(now))
    assert windows == _expected_sliding(now, size, slide, offset)


def test_sliding_examples() -> None:
    assigner = SlidingEventTimeWindows.of(10, 5)
    assert assigner.assign_windows("x", 7, CTX) == [TimeWindow(5, 15), TimeWindow(0, 10)]
    assert assigner.assign_windows("x", 5, CTX) == [TimeWindow(5, 15), TimeWindow(0, 10)]
    assert assigner.assign_windows("x", 4, CTX) == [TimeWindow(0, 10), TimeWindow(-5, 5)]
    assert assigner.assign_windows("x", -1, CTX) == [TimeWindow(-5, 5), TimeWindow(-10, 0)]
    # size not a multiple of slide
    assert SlidingEventTimeWindows.of(7, 3).assign_windows("x", 6, CTX) == [
        TimeWindow(6, 13),
        TimeWindow(3, 10),
        TimeWindow(0, 7),
    ]
    # size < slide: 0..4 in [0,5), 5..9 in no window
    gaps = SlidingEventTimeWindows.of(5, 10)
    assert gaps.assign_windows("x", 4, CTX) == [TimeWindow(0, 5)]
    assert gaps.assign_windows("x", 5, CTX) == []
    assert gaps.assign_windows("x", 9, CTX) == []
    assert gaps.assign_windows("x", -1, CTX) == []
    assert gaps.assign_windows("x", -10, CTX) == [TimeWindow(-10, -5)]
    # with an offset
    assert SlidingEventTimeWindows.of(10, 5, 2).assign_windows("x", 6, CTX) == [TimeWindow(2, 12), TimeWindow(-3, 7)]


# ---------------------------------------------------------------------------------------------------
# sessions


@PROPS
@given(st.integers(1, 10**9), TS)
def test_event_time_session_window(gap: int, ts: int) -> None:
    assert EventTimeSessionWindows.with_gap(gap).assign_windows("x", ts, CTX) == [TimeWindow(ts, ts + gap)]


@PROPS
@given(st.integers(1, 10**9), TS, TS)
def test_processing_time_session_uses_clock(gap: int, now: int, ts: int) -> None:
    assert ProcessingTimeSessionWindows.with_gap(gap).assign_windows("x", ts, Ctx(now)) == [TimeWindow(now, now + gap)]


def test_dynamic_event_time_session_gap_from_element() -> None:
    assigner = EventTimeSessionWindows.with_dynamic_gap(lambda e: e["gap"])
    assert isinstance(assigner, DynamicEventTimeSessionWindows)
    assert assigner.assign_windows({"gap": 7}, 100, CTX) == [TimeWindow(100, 107)]
    assert assigner.assign_windows({"gap": 1}, -5, CTX) == [TimeWindow(-5, -4)]


def test_dynamic_gap_extractor_object_and_time_like_gap() -> None:
    class Extractor(SessionWindowTimeGapExtractor):
        def extract(self, element: int) -> int:
            return element

    assigner = DynamicEventTimeSessionWindows.with_dynamic_gap(Extractor())
    assert assigner.assign_windows(5, 10, CTX) == [TimeWindow(10, 15)]
    as_duration = DynamicEventTimeSessionWindows.with_dynamic_gap(lambda e: Duration.of_seconds(2))
    assert as_duration.assign_windows("x", 0, CTX) == [TimeWindow(0, 2000)]


def test_dynamic_processing_time_session_uses_clock() -> None:
    assigner = ProcessingTimeSessionWindows.with_dynamic_gap(lambda e: e)
    assert isinstance(assigner, DynamicProcessingTimeSessionWindows)
    assert assigner.assign_windows(3, 999_999, Ctx(50)) == [TimeWindow(50, 53)]


@pytest.mark.parametrize("gap", [0, -1, -1000])
@pytest.mark.parametrize(
    "make",
    [DynamicEventTimeSessionWindows.with_dynamic_gap, DynamicProcessingTimeSessionWindows.with_dynamic_gap],
)
def test_dynamic_gap_not_positive_raises_at_runtime(make, gap: int) -> None:  # type: ignore[no-untyped-def]
    assigner = make(lambda e: gap)  # construction is fine: the gap is only known per element
    with pytest.raises(InvalidArgumentError) as info:
        assigner.assign_windows("x", 10, CTX)
    assert isinstance(info.value, FlinkishError)
    assert isinstance(info.value, ValueError)


def test_dynamic_gap_extractor_must_be_callable() -> None:
    with pytest.raises(InvalidTypeError):
        DynamicEventTimeSessionWindows.with_dynamic_gap(42)


# ---------------------------------------------------------------------------------------------------
# global windows


def test_global_windows() -> None:
    assert GlobalWindows.create().assign_windows("x", 5, CTX) == [GlobalWindow()]
    assert GlobalWindows.create().assign_windows("x", None, CTX) == [GlobalWindow()]
    assert GlobalWindows.create().assign_windows("x", LONG_MIN, CTX) == [GlobalWindow()]


# ---------------------------------------------------------------------------------------------------
# validation


INVALID = [
    pytest.param(lambda: TumblingEventTimeWindows.of(0), id="tumbling-size-0"),
    pytest.param(lambda: TumblingEventTimeWindows.of(-5), id="tumbling-size-neg"),
    pytest.param(lambda: TumblingEventTimeWindows.of(10, 10), id="tumbling-offset-eq-size"),
    pytest.param(lambda: TumblingEventTimeWindows.of(10, -10), id="tumbling-neg-offset-eq-size"),
    pytest.param(lambda: TumblingEventTimeWindows.of(10, 25), id="tumbling-offset-gt-size"),
    pytest.param(lambda: TumblingProcessingTimeWindows.of(0), id="tumbling-pt-size-0"),
    pytest.param(lambda: TumblingProcessingTimeWindows.of(10, -11), id="tumbling-pt-offset"),
    pytest.param(lambda: SlidingEventTimeWindows.of(0, 5), id="sliding-size-0"),
    pytest.param(lambda: SlidingEventTimeWindows.of(-1, 5), id="sliding-size-neg"),
    pytest.param(lambda: SlidingEventTimeWindows.of(10, 0), id="sliding-slide-0"),
    pytest.param(lambda: SlidingEventTimeWindows.of(10, -5), id="sliding-slide-neg"),
    pytest.param(lambda: SlidingEventTimeWindows.of(10, 5, 5), id="sliding-offset-eq-slide"),
    pytest.param(lambda: SlidingEventTimeWindows.of(10, 5, -5), id="sliding-neg-offset-eq-slide"),
    pytest.param(lambda: SlidingEventTimeWindows.of(100, 5, 7), id="sliding-offset-gt-slide-lt-size"),
    pytest.param(lambda: SlidingEventTimeWindows.of(10**9, 1), id="sliding-size-over-slide-gt-1e7"),
    pytest.param(lambda: SlidingProcessingTimeWindows.of(10, 0), id="sliding-pt-slide-0"),
    pytest.param(lambda: SlidingProcessingTimeWindows.of(0, 5), id="sliding-pt-size-0"),
    pytest.param(lambda: SlidingProcessingTimeWindows.of(10, 5, 6), id="sliding-pt-offset"),
    pytest.param(lambda: EventTimeSessionWindows.with_gap(0), id="session-gap-0"),
    pytest.param(lambda: EventTimeSessionWindows.with_gap(-1), id="session-gap-neg"),
    pytest.param(lambda: ProcessingTimeSessionWindows.with_gap(0), id="pt-session-gap-0"),
    pytest.param(lambda: ProcessingTimeSessionWindows.with_gap(Duration.of_millis(-3)), id="pt-session-gap-neg"),
]


@pytest.mark.parametrize("make", INVALID)
def test_invalid_parameters_raise_flinkish_value_error(make) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgumentError) as info:
        make()
    assert isinstance(info.value, FlinkishError)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "make",
    [
        lambda: TumblingEventTimeWindows.of(10, 9),
        lambda: TumblingEventTimeWindows.of(10, -9),
        lambda: SlidingEventTimeWindows.of(10, 5, 4),
        lambda: SlidingEventTimeWindows.of(10, 5, -4),
        lambda: SlidingEventTimeWindows.of(3, 10),  # size < slide is allowed
        lambda: SlidingEventTimeWindows.of(10**7, 1),  # exactly 10^7 windows per element
        lambda: EventTimeSessionWindows.with_gap(1),
    ],
)
def test_boundary_parameters_accepted(make) -> None:  # type: ignore[no-untyped-def]
    make()


@pytest.mark.parametrize(
    "assigner",
    [TumblingEventTimeWindows.of(10), SlidingEventTimeWindows.of(10, 5)],
    ids=["tumbling", "sliding"],
)
@pytest.mark.parametrize("ts", [LONG_MIN, None])
def test_event_time_assigner_rejects_missing_timestamp(assigner, ts) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgumentError) as info:
        assigner.assign_windows("x", ts, CTX)
    assert isinstance(info.value, FlinkishError)
    assert isinstance(info.value, ValueError)
    assert "timestamp" in str(info.value)


def test_non_time_like_argument_is_a_type_error() -> None:
    with pytest.raises(InvalidTypeError) as info:
        TumblingEventTimeWindows.of("5s")  # type: ignore[arg-type]
    assert isinstance(info.value, FlinkishError)
    assert isinstance(info.value, TypeError)
    with pytest.raises(InvalidTypeError):
        EventTimeSessionWindows.with_gap(1.5)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------
# time-like arguments


@pytest.mark.parametrize(
    "five_seconds", [5000, Time.seconds(5), Duration.of_seconds(5), dt.timedelta(seconds=5), Time.milliseconds(5000)]
)
def test_time_like_arguments(five_seconds) -> None:  # type: ignore[no-untyped-def]
    assert TumblingEventTimeWindows.of(five_seconds) == TumblingEventTimeWindows(5000, 0)
    assert TumblingEventTimeWindows.of(five_seconds).assign_windows("x", 7001, CTX) == [TimeWindow(5000, 10000)]
    assert SlidingEventTimeWindows.of(five_seconds, Duration.of_seconds(1)) == SlidingEventTimeWindows(5000, 1000, 0)
    assert EventTimeSessionWindows.with_gap(five_seconds).gap == 5000
    assert ProcessingTimeSessionWindows.with_gap(five_seconds).gap == 5000
    assert TumblingProcessingTimeWindows.of(five_seconds).size == 5000
    assert SlidingProcessingTimeWindows.of(five_seconds, 1000).size == 5000


def test_time_like_offsets() -> None:
    day = TumblingEventTimeWindows.of(Time.days(1), Time.hours(-8))
    assert (day.size, day.offset) == (86_400_000, -28_800_000)
    assert TumblingEventTimeWindows.of(dt.timedelta(days=1), dt.timedelta(hours=-8)) == day
    assert SlidingEventTimeWindows.of(
        Duration.of_minutes(10), Duration.of_minutes(5), Duration.of_minutes(1)
    ) == SlidingEventTimeWindows(600_000, 300_000, 60_000)


# ---------------------------------------------------------------------------------------------------
# value objects, event time flag, default triggers


def test_assigner_eq_hash() -> None:
    assert TumblingEventTimeWindows.of(10, 2) == TumblingEventTimeWindows.of(10, 2)
    assert hash(TumblingEventTimeWindows.of(10, 2)) == hash(TumblingEventTimeWindows.of(10, 2))
    assert TumblingEventTimeWindows.of(10, 2) != TumblingEventTimeWindows.of(10, 3)
    assert TumblingEventTimeWindows.of(10) != TumblingProcessingTimeWindows.of(10)
    assert SlidingEventTimeWindows.of(10, 5) == SlidingEventTimeWindows.of(10, 5, 0)
    assert SlidingEventTimeWindows.of(10, 5) != SlidingEventTimeWindows.of(10, 2)
    assert EventTimeSessionWindows.with_gap(5) == EventTimeSessionWindows.with_gap(5)
    assert EventTimeSessionWindows.with_gap(5) != ProcessingTimeSessionWindows.with_gap(5)
    assert GlobalWindows.create() == GlobalWindows.create()
    assert GlobalWindows.create() != GlobalWindows.create_with_end_of_stream_trigger()
    assert len({TumblingEventTimeWindows.of(10), TumblingEventTimeWindows.of(10), SlidingEventTimeWindows.of(10, 5)}) == 2

    def extractor(e: int) -> int:
        return e

    assert DynamicEventTimeSessionWindows.with_dynamic_gap(extractor) == DynamicEventTimeSessionWindows.with_dynamic_gap(
        extractor
    )
    assert DynamicEventTimeSessionWindows.with_dynamic_gap(extractor) != DynamicEventTimeSessionWindows.with_dynamic_gap(
        lambda e: e
    )


def test_assigner_repr() -> None:
    assert repr(TumblingEventTimeWindows.of(10, 2)) == "TumblingEventTimeWindows(10, 2)"
    assert repr(TumblingProcessingTimeWindows.of(10)) == "TumblingProcessingTimeWindows(10, 0)"
    assert repr(SlidingEventTimeWindows.of(10, 5, 1)) == "SlidingEventTimeWindows(10, 5, 1)"
    assert repr(SlidingProcessingTimeWindows.of(10, 5)) == "SlidingProcessingTimeWindows(10, 5, 0)"
    assert repr(EventTimeSessionWindows.with_gap(7)) == "EventTimeSessionWindows(7)"
    assert repr(ProcessingTimeSessionWindows.with_gap(7)) == "ProcessingTimeSessionWindows(7)"
    assert repr(GlobalWindows.create()) == "GlobalWindows.create()"
    assert repr(GlobalWindows.create_with_end_of_stream_trigger()) == "GlobalWindows.create_with_end_of_stream_trigger()"


DEFAULTS = [
    (TumblingEventTimeWindows.of(10), True, EventTimeTrigger, False),
    (SlidingEventTimeWindows.of(10, 5), True, EventTimeTrigger, False),
    (EventTimeSessionWindows.with_gap(10), True, EventTimeTrigger, True),
    (DynamicEventTimeSessionWindows.with_dynamic_gap(lambda e: 10), True, EventTimeTrigger, True),
    (TumblingProcessingTimeWindows.of(10), False, ProcessingTimeTrigger, False),
    (SlidingProcessingTimeWindows.of(10, 5), False, ProcessingTimeTrigger, False),
    (ProcessingTimeSessionWindows.with_gap(10), False, ProcessingTimeTrigger, True),
    (DynamicProcessingTimeSessionWindows.with_dynamic_gap(lambda e: 10), False, ProcessingTimeTrigger, True),
    (GlobalWindows.create(), False, NeverTrigger, False),
]


@pytest.mark.parametrize(("assigner", "event_time", "trigger_type", "merging"), DEFAULTS, ids=lambda v: repr(v)[:40])
def test_event_time_flag_default_trigger_and_merging(assigner, event_time: bool, trigger_type: type, merging: bool) -> None:  # type: ignore[no-untyped-def]
    assert assigner.is_event_time() is event_time
    assert type(assigner.get_default_trigger()) is trigger_type
    assert isinstance(assigner, MergingWindowAssigner) is merging


def test_global_windows_end_of_stream_trigger_is_not_never() -> None:
    trigger = GlobalWindows.create_with_end_of_stream_trigger().get_default_trigger()
    assert not isinstance(trigger, NeverTrigger)
    assert GlobalWindows.create_with_end_of_stream_trigger().is_event_time() is False


def test_session_assigners_merge_touching_windows() -> None:
    calls: list = []
    EventTimeSessionWindows.with_gap(5).merge_windows(
        [TimeWindow(0, 5), TimeWindow(5, 10), TimeWindow(11, 16)], lambda members, cover: calls.append((sorted(members), cover))
    )
    assert calls == [([TimeWindow(0, 5), TimeWindow(5, 10)], TimeWindow(0, 10))]


def test_session_assigners_accept_merge_callback_objects() -> None:
    class Callback:
        def __init__(self) -> None:
            self.calls: list = []

        def merge(self, members, cover) -> None:  # type: ignore[no-untyped-def]
            self.calls.append((sorted(members), cover))

    cb = Callback()
    ProcessingTimeSessionWindows.with_gap(5).merge_windows([TimeWindow(0, 5), TimeWindow(3, 8)], cb)
    assert cb.calls == [([TimeWindow(0, 5), TimeWindow(3, 8)], TimeWindow(0, 8))]
