"""Evictors (spec §10) and count windows (spec §11).

Unit level: evictors remove in place from a list of TimestampedValue. Through WindowHarness: the
evicting window operator buffers everything, evicts before/after the function, persists the survivors,
and may call the function with empty input.
"""

from __future__ import annotations

from typing import Any, List, Optional

import pytest

from pyspark_flinkish.core.errors import FlinkishError, InvalidArgumentError, InvalidTypeError
from pyspark_flinkish.core.javamath import LONG_MAX
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import AggregateFunction, ProcessWindowFunction
from pyspark_flinkish.datastream.window import (
    ContinuousEventTimeTrigger,
    CountEvictor,
    CountTrigger,
    DeltaEvictor,
    EvictorContext,
    GlobalWindow,
    GlobalWindows,
    PurgingTrigger,
    TimeEvictor,
    TimestampedValue,
    TimeWindow,
    TumblingEventTimeWindows,
)
from pyspark_flinkish.testing.harness import WindowHarness


class ECtx(EvictorContext):
    def get_current_processing_time(self) -> int:
        return 0

    def get_current_watermark(self) -> int:
        return 0


CTX = ECtx()
W = TimeWindow(0, 100)


def tv(*pairs: Any) -> List[TimestampedValue]:
    return [TimestampedValue(v, t) for v, t in pairs]


def values(elements: List[TimestampedValue]) -> List[Any]:
    return [e.value for e in elements]


def before(evictor: Any, elements: List[TimestampedValue]) -> List[Any]:
    evictor.evict_before(elements, len(elements), W, CTX)
    return values(elements)


def after(evictor: Any, elements: List[TimestampedValue]) -> List[Any]:
    evictor.evict_after(elements, len(elements), W, CTX)
    return values(elements)


# ---------------------------------------------------------------------------------------------------
# TimestampedValue


def test_timestamped_value() -> None:
    v = TimestampedValue("x", 5)
    assert (v.get_value(), v.get_timestamp(), v.has_timestamp()) == ("x", 5, True)
    assert TimestampedValue("y", None).has_timestamp() is False
    assert TimestampedValue("x", 5) == TimestampedValue("x", 5)


# ---------------------------------------------------------------------------------------------------
# CountEvictor


def test_count_evictor_drops_the_first_size_minus_n() -> None:
    assert before(CountEvictor.of(2), tv((1, 1), (2, 2), (3, 3), (4, 4), (5, 5))) == [4, 5]
    # buffer order, not timestamp order
    assert before(CountEvictor.of(2), tv(("a", 9), ("b", 1), ("c", 5))) == ["b", "c"]
    assert before(CountEvictor.of(3), tv((1, 1), (2, 2), (3, 3))) == [1, 2, 3]
    assert before(CountEvictor.of(5), tv((1, 1), (2, 2))) == [1, 2]
    assert before(CountEvictor.of(0), tv((1, 1), (2, 2))) == []
    assert before(CountEvictor.of(2), []) == []


def test_count_evictor_before_or_after() -> None:
    ev_before, ev_after = CountEvictor.of(1), CountEvictor.of(1, do_evict_after=True)
    assert after(ev_before, tv((1, 1), (2, 2))) == [1, 2]  # before-evictor ignores evict_after
    assert before(ev_after, tv((1, 1), (2, 2))) == [1, 2]  # after-evictor ignores evict_before
    assert after(ev_after, tv((1, 1), (2, 2))) == [2]


def test_count_evictor_uses_given_size() -> None:
    elements = tv((1, 1), (2, 2), (3, 3), (4, 4))
    CountEvictor.of(2).evict_before(elements, 3, W, CTX)  # size 3 > 2 -> evict 1 element
    assert values(elements) == [2, 3, 4]


def test_count_evictor_validation_and_value_object() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        CountEvictor.of(-1)
    assert isinstance(info.value, FlinkishError)
    assert isinstance(info.value, ValueError)
    with pytest.raises(InvalidTypeError):
        CountEvictor.of(2.5)  # type: ignore[arg-type]
    assert CountEvictor.of(3) == CountEvictor.of(3, False)
    assert CountEvictor.of(3) != CountEvictor.of(3, True)
    assert CountEvictor.of(3) != CountEvictor.of(4)
    assert hash(CountEvictor.of(3)) == hash(CountEvictor.of(3))
    assert repr(CountEvictor.of(3)) == "CountEvictor.of(3, do_evict_after=False)"


# ---------------------------------------------------------------------------------------------------
# TimeEvictor


def test_time_evictor_drops_ts_le_max_minus_size() -> None:
    # max ts 7, size 3 -> cutoff 4: ts <= 4 go
    assert before(TimeEvictor.of(3), tv(("a", 1), ("b", 2), ("c", 5), ("d", 7), ("e", 4))) == ["c", "d"]
    assert before(TimeEvictor.of(2), tv(("a", 5), ("b", 6), ("c", 7))) == ["b", "c"]  # 5 == cutoff: evicted
    assert before(TimeEvictor.of(100), tv(("a", 5), ("b", 6))) == ["a", "b"]
    assert before(TimeEvictor.of(3), tv(("a", -10), ("b", -6), ("c", -7))) == ["b", "c"]  # cutoff -9


def test_time_evictor_zero_evicts_everything() -> None:
    assert before(TimeEvictor.of(0), tv(("a", 1), ("b", 7), ("c", 7))) == []


def test_time_evictor_no_timestamp_on_first_element_means_no_eviction() -> None:
    assert before(TimeEvictor.of(0), tv(("a", None), ("b", 1), ("c", 7))) == ["a", "b", "c"]
    assert before(TimeEvictor.of(0), []) == []


def test_time_evictor_after_and_value_object() -> None:
    ev = TimeEvictor.of(1, do_evict_after=True)
    assert before(ev, tv(("a", 1), ("b", 7))) == ["a", "b"]
    assert after(ev, tv(("a", 1), ("b", 7))) == ["b"]
    assert TimeEvictor.of(5) == TimeEvictor.of(5)
    assert TimeEvictor.of(5) != TimeEvictor.of(5, True)
    with pytest.raises(InvalidArgumentError):
        TimeEvictor.of(-1)


def test_time_evictor_time_like_size() -> None:
    from pyspark_flinkish.common import Duration

    assert TimeEvictor.of(Duration.of_seconds(1)).window_size == 1000


# ---------------------------------------------------------------------------------------------------
# DeltaEvictor


def test_delta_evictor_uses_ge_threshold_against_last_element() -> None:
    # last = 9; deltas 8, 4, 3, 1, 0 -> >= 3 evicted (3 itself too; DeltaTrigger would use >)
    ev = DeltaEvictor.of(3, lambda e, last: abs(last - e))
    assert before(ev, tv((1, 1), (5, 2), (6, 3), (8, 4), (9, 5))) == [8, 9]


def test_delta_evictor_after_and_function_object() -> None:
    class Delta:
        def get_delta(self, a: int, b: int) -> int:
            return abs(a - b)

    ev = DeltaEvictor.of(2, Delta(), do_evict_after=True)
    assert before(ev, tv((1, 1), (5, 2))) == [1, 5]
    assert after(ev, tv((1, 1), (4, 2), (5, 3))) == [4, 5]
    assert after(ev, []) == []
    with pytest.raises(InvalidTypeError):
        DeltaEvictor.of(1, 42)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------
# through the harness


class Seen(ProcessWindowFunction):
    """Emits a copy of the elements it was given, in the order given."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield list(elements)


def test_evict_after_evictions_persist_across_firings() -> None:
    # CountTrigger(2) + CountEvictor(2, after): sees [1,2] | [1,2,3,4] then keeps [3,4] | [3,4,5,6]
    h = WindowHarness.process(
        GlobalWindows.create(),
        Seen(),
        key_selector=lambda v: "k",
        trigger=CountTrigger.of(2),
        evictor=CountEvictor.of(2, do_evict_after=True),
    )
    for i in range(1, 7):
        h.process_element(i, i)
    assert h.extract_output_values() == [[1, 2], [1, 2, 3, 4], [3, 4, 5, 6]]
    assert [r.timestamp for r in h.get_output()] == [LONG_MAX] * 3


def test_evict_before_evictions_persist_across_firings() -> None:
    # TimeEvictor(2) before, CountTrigger(2): [1@1, 2@5] -> cutoff 3 -> [2]; then +3@6 +4@20 -> cutoff 18 -> [4]
    h = WindowHarness.process(
        TumblingEventTimeWindows.of(100),
        Seen(),
        key_selector=lambda v: "k",
        trigger=CountTrigger.of(2),
        evictor=TimeEvictor.of(2),
    )
    h.process_element(1, 1)
    h.process_element(2, 5)
    h.process_element(3, 6)
    h.process_element(4, 20)
    h.process_element(5, 21)
    h.process_element(6, 23)
    # third firing: buffer [4@20, 5@21, 6@23] -> cutoff 21 -> [6]
    assert h.extract_output_values() == [[2], [4], [6]]
    assert [r.timestamp for r in h.get_output()] == [99] * 3


def test_evictor_means_no_incremental_aggregation() -> None:
    # with an evictor, reduce is applied at firing over the survivors (a left fold seeded with the first)
    calls: List[tuple] = []

    def reduce(a: int, b: int) -> int:
        calls.append((a, b))
        return a + b

    h = WindowHarness.reduce(TumblingEventTimeWindows.of(100), reduce, key_selector=lambda v: "k", evictor=CountEvictor.of(3))
    for i in [1, 2, 3, 4, 5]:
        h.process_element(i, i)
    assert calls == []  # nothing reduced while buffering
    h.process_watermark(99)
    assert h.extract_output_values() == [3 + 4 + 5]
    assert calls == [(3, 4), (7, 5)]


class Avg(AggregateFunction):
    def __init__(self) -> None:
        self.created = 0

    def create_accumulator(self) -> List[int]:
        self.created += 1
        return [0, 0]

    def add(self, value: int, accumulator: List[int]) -> List[int]:
        accumulator[0] += 1
        accumulator[1] += value
        return accumulator

    def get_result(self, accumulator: List[int]) -> tuple:
        return tuple(accumulator)

    def merge(self, a: List[int], b: List[int]) -> List[int]:
        return [a[0] + b[0], a[1] + b[1]]


def test_aggregate_with_evictor_uses_fresh_accumulator_per_firing() -> None:
    agg = Avg()
    h = WindowHarness.aggregate(
        GlobalWindows.create(), agg, key_selector=lambda v: "k", trigger=CountTrigger.of(2), evictor=CountEvictor.of(3)
    )
    for i in range(1, 7):
        h.process_element(i, i)
    # firings over [1,2], [2,3,4], [4,5,6]
    assert h.extract_output_values() == [(2, 3), (3, 9), (3, 15)]
    assert agg.created == 3


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("reduce", None), ("aggregate", (0, 0)), ("process", [])],
)
def test_function_invoked_with_empty_input_when_everything_evicted(kind: str, expected: Any) -> None:
    assigner = TumblingEventTimeWindows.of(10)
    opts = dict(key_selector=lambda v: "k", evictor=TimeEvictor.of(0))
    if kind == "reduce":
        h = WindowHarness.reduce(assigner, lambda a, b: a + b, **opts)
    elif kind == "aggregate":
        h = WindowHarness.aggregate(assigner, Avg(), **opts)
    else:
        h = WindowHarness.process(assigner, Seen(), **opts)
    h.process_element(1, 1)
    h.process_element(2, 5)
    h.process_watermark(9)
    assert h.extract_output_values() == [expected]
    assert h.get_output()[0].timestamp == 9


def test_reduce_window_function_receives_single_none_when_everything_evicted() -> None:
    got: List[Any] = []

    class Capture(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            got.append(list(elements))
            return []

    h = WindowHarness.reduce(
        TumblingEventTimeWindows.of(10),
        lambda a, b: a + b,
        key_selector=lambda v: "k",
        window_function=Capture(),
        evictor=TimeEvictor.of(0),
    )
    h.process_element(1, 1)
    h.process_watermark(9)
    assert got == [[None]]


def test_after_everything_evicted_later_firings_produce_nothing() -> None:
    # window [0,100), ContinuousEventTimeTrigger(10), TimeEvictor(0): e(5)
    # W=10: fires with [] (everything evicted before) -> buffer now empty -> later FIREs invoke nothing
    invoked: List[List[Any]] = []

    class Count(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            invoked.append(list(elements))
            yield len(invoked)

    h = WindowHarness.process(
        TumblingEventTimeWindows.of(100),
        Count(),
        key_selector=lambda v: "k",
        trigger=ContinuousEventTimeTrigger.of(10),
        evictor=TimeEvictor.of(0),
    )
    h.process_element("a", 5)
    h.process_watermark(10)
    assert invoked == [[]]
    h.process_watermark(99)  # pending firings at 20..90 and the maxTs firing: contents are null
    assert invoked == [[]]
    assert h.extract_output_values() == [1]
    assert h.snapshot() == {}


def test_evict_after_then_purge_clears_buffer() -> None:
    # PurgingTrigger(CountTrigger(2)) + CountEvictor(1, after): each firing sees only the new pair
    h = WindowHarness.process(
        GlobalWindows.create(),
        Seen(),
        key_selector=lambda v: "k",
        trigger=PurgingTrigger.of(CountTrigger.of(2)),
        evictor=CountEvictor.of(1, do_evict_after=True),
    )
    for i in range(1, 5):
        h.process_element(i, i)
    assert h.extract_output_values() == [[1, 2], [3, 4]]


def test_evictor_sees_timestamps_of_buffered_elements() -> None:
    seen: List[List[tuple]] = []

    class Spy(CountEvictor):
        def evict_before(self, elements, size, window, ctx) -> None:  # type: ignore[no-untyped-def]
            seen.append([(e.value, e.timestamp) for e in elements])
            assert size == len(elements)
            assert window == TimeWindow(0, 10)
            assert ctx.get_current_watermark() == 9

    h = WindowHarness.process(TumblingEventTimeWindows.of(10), Seen(), key_selector=lambda v: "k", evictor=Spy(100))
    h.process_element("a", 3)
    h.process_element("b", 1)
    h.process_watermark(9)
    assert seen == [[("a", 3), ("b", 1)]]


# ---------------------------------------------------------------------------------------------------
# count windows (KeyedStream.count_window)


def _keyed(values: List[Any]):  # type: ignore[no-untyped-def]
    env = StreamExecutionEnvironment.get_execution_environment()
    return env.from_collection(values).key_by(lambda v: v[0])


def test_count_window_tumbling_builds_purging_count_trigger() -> None:
    ws = _keyed([("k", 1)]).count_window(3)
    assert ws._assigner == GlobalWindows.create()
    assert ws._trigger == PurgingTrigger.of(CountTrigger.of(3))
    assert ws._evictor is None


def test_count_window_sliding_builds_count_trigger_and_count_evictor() -> None:
    ws = _keyed([("k", 1)]).count_window(5, 2)
    assert ws._assigner == GlobalWindows.create()
    assert ws._trigger == CountTrigger.of(2)
    assert ws._evictor == CountEvictor.of(5)
    assert ws._evictor.do_evict_after is False


@pytest.mark.parametrize(("size", "slide"), [(0, 0), (-1, 0), (3, -1)])
def test_count_window_validation(size: int, slide: int) -> None:
    with pytest.raises(InvalidArgumentError):
        _keyed([("k", 1)]).count_window(size, slide)


def _run(values: List[Any], size: int, slide: Optional[int] = None) -> List[Any]:
    ks = _keyed(values)
    ws = ks.count_window(size) if slide is None else ks.count_window(size, slide)
    return list(ws.reduce(lambda a, b: (a[0], a[1] + b[1])).execute_and_collect())


def test_count_window_tumbling_remainder_never_emitted() -> None:
    data = [("a", i) for i in range(1, 8)] + [("b", 100), ("b", 200)]
    assert sorted(_run(data, 3)) == [("a", 6), ("a", 15)]  # a: 7 and all of b (2 < 3) never emitted


def test_count_window_sliding() -> None:
    data = [("a", i) for i in range(1, 8)]
    # fires after 2, 4, 6 elements over the last min(count, 3): [1,2], [2,3,4], [4,5,6]; 7 never
    assert _run(data, 3, 2) == [("a", 3), ("a", 9), ("a", 15)]


def test_count_window_slide_larger_than_size() -> None:
    data = [("a", i) for i in range(1, 8)]
    # fires after 3 and 6 elements, over the last 2: [2,3], [5,6]
    assert _run(data, 2, 3) == [("a", 5), ("a", 11)]


def test_count_window_is_per_key() -> None:
    data = [("a", 1), ("b", 10), ("a", 2), ("b", 20), ("b", 30), ("a", 3)]
    assert _run(data, 3) == [("b", 60), ("a", 6)]


def test_count_window_results_carry_long_max_timestamp() -> None:
    # the same configuration as count_window(2), through the harness to see timestamps
    h = WindowHarness.reduce(
        GlobalWindows.create(), lambda a, b: a + b, key_selector=lambda v: "k", trigger=PurgingTrigger.of(CountTrigger.of(2))
    )
    for i in range(1, 6):
        h.process_element(i, i)
    h.end_input()
    assert h.extract_output_values() == [3, 7]
    assert [r.timestamp for r in h.get_output()] == [LONG_MAX, LONG_MAX]
    # GlobalWindow is never cleaned up: the remainder stays in state
    assert h.snapshot()["k"]["state"]


def test_count_window_global_window_in_context() -> None:
    windows: List[Any] = []

    class W(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            windows.append(context.window())
            return []

    h = WindowHarness.process(GlobalWindows.create(), W(), key_selector=lambda v: "k", trigger=CountTrigger.of(1))
    h.process_element(1, 1)
    assert windows == [GlobalWindow()]
