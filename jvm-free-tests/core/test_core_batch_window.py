"""The batched window operator gives exactly the per-element WindowOperator's outputs (spec §6-§10).

Random batches of elements (in arrival order, at the batch's input watermark) and watermark advances are fed
to both; main outputs (with the watermark they were emitted at), late side outputs and counters must agree.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pyspark_flinkish.core.aggregates import ColumnAggregate, Count, Max, Min, Sum
from pyspark_flinkish.core.assigners import (
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from pyspark_flinkish.core.batch_window import BatchWindowOperator, batch_eligibility
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.core.codec import decode_snapshot, encode_snapshot
from pyspark_flinkish.core.evictors import CountEvictor
from pyspark_flinkish.core.functions import AggregateFunction, ProcessWindowFunction
from pyspark_flinkish.core.javamath import LONG_MAX
from pyspark_flinkish.core.records import OutputTag, StreamRecord
from pyspark_flinkish.core.state_descriptors import ValueStateDescriptor
from pyspark_flinkish.core.triggers import CountTrigger, EventTimeTrigger, PurgingTrigger
from pyspark_flinkish.core.typeinfo import Types
from pyspark_flinkish.core.window_operator import PassThroughWindowFunction, WindowContents, WindowOperator

LATE = OutputTag("late")


class Collect:
    def __init__(self, op: WindowOperator) -> None:
        self.op = op
        self.main: List[Tuple[Any, int]] = []
        self.side: List[Tuple[Any, Optional[int]]] = []

    def collect(self, record: StreamRecord) -> None:
        self.main.append((record.value, self.op.timers.current_watermark))

    def collect_side(self, tag: OutputTag, record: StreamRecord) -> None:
        self.side.append((record.value, record.timestamp))

    def emit_watermark(self, watermark: int) -> None:
        return None

    def emit_idle(self, idle: bool) -> None:
        return None


class WithWindow(ProcessWindowFunction):  # type: ignore[type-arg]
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        w = context.window()
        yield (key, w.start, w.end, next(iter(elements)), context.current_watermark())


class ListWithWindow(ProcessWindowFunction):  # type: ignore[type-arg]
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        w = context.window()
        yield (key, w.start, w.end, [e["v"] for e in elements], context.current_watermark())


class SumList(AggregateFunction):  # type: ignore[type-arg]
    """Order-sensitive accumulator: catches any reordering of adds."""

    def create_accumulator(self) -> Any:
        return []

    def add(self, value: Any, accumulator: Any) -> Any:
        return [*accumulator, value["v"]]

    def get_result(self, accumulator: Any) -> Any:
        return tuple(accumulator)

    def merge(self, a: Any, b: Any) -> Any:
        return a + b


COUNT = ValueStateDescriptor("count", Types.INT())


def bump(store: Any) -> int:
    """A module-level helper keeping a count in a state store (what bytecode scanning of the function missed)."""
    state = store.get_state(COUNT)
    n = (state.value() or 0) + 1
    state.update(n)
    return n


def bump_global(context: Any) -> int:
    return bump(context.global_state())


class Counting(ProcessWindowFunction):  # type: ignore[type-arg]
    """Emits its window and how many times it (``window``), or its key (``global_helper``), fired so far."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        w = context.window()
        n = bump_global(context) if self.mode == "global_helper" else bump(context.window_state())
        yield (key, w.start, [e["v"] for e in elements], n)


class CountingPerWindow(Counting):
    """``Counting("window")`` that drops its per-window count at the window's cleanup."""

    def __init__(self) -> None:
        super().__init__("window")

    def clear(self, context: Any) -> None:
        context.window_state().get_state(COUNT).clear()


def _operator(
    assigner: Any, contents: WindowContents, lateness: int, late: bool, wf: Any = None, purge: bool = False
) -> WindowOperator:
    trigger = PurgingTrigger.of(EventTimeTrigger()) if purge else EventTimeTrigger()
    return WindowOperator(
        "w", lambda e: e["k"], assigner, trigger, contents, wf or WithWindow(), None, lateness, LATE if late else None
    )


def _run_reference(op: WindowOperator, batches: List[Tuple[List[dict], int]]) -> Collect:  # type: ignore[type-arg]
    out = Collect(op)
    op.open(out, ManualClock(0))
    for events, wm in batches:
        for e in events:
            op.process_element(StreamRecord(e, e["ts"]))
        if wm > op.timers.current_watermark:
            op.process_watermark(wm)
    return out


def _run_batched(op: WindowOperator, batches: List[Tuple[List[dict], int]], restore: bool) -> Collect:  # type: ignore[type-arg]
    out = Collect(op)
    op.open(out, ManualClock(0))
    b = BatchWindowOperator(op)
    for events, wm in batches:
        if restore:  # state goes through a snapshot between batches, as on Spark (a fresh operator each time)
            table, keyed, watermark = b.snapshot(), b.snapshot_keyed(), b.watermark
            purge = type(op.trigger) is PurgingTrigger
            fresh = _operator(op.assigner, op.contents, op.allowed_lateness, op.late_data_tag is not None,
                              op.window_function, purge)
            fresh.open(out, ManualClock(0))
            fresh.metrics = op.metrics
            out.op, op = fresh, fresh
            b = BatchWindowOperator(fresh)
            b.restore(table, watermark, [(k, decode_snapshot(encode_snapshot(s))) for k, s in keyed])
        for e in events:
            b.process_element(e["k"], e, e["ts"])
        b.advance_watermark(wm)
    return out


event = st.fixed_dictionaries({"k": st.sampled_from("abc"), "ts": st.integers(-30, 60), "v": st.integers(-5, 9)})
batches = st.lists(st.tuples(st.lists(event, max_size=8), st.integers(-40, 70)), min_size=1, max_size=6).map(
    lambda bs: bs + [([], LONG_MAX)] if bs[-1][1] % 2 == 0 else bs  # sometimes end of input
)
assigners = st.one_of(
    st.builds(TumblingEventTimeWindows, st.integers(1, 20), st.just(0)),
    st.integers(1, 20).flatmap(lambda size: st.builds(SlidingEventTimeWindows, st.just(size), st.integers(1, 25))),
    st.builds(TumblingEventTimeWindows, st.just(10), st.integers(-9, 9)),
)


@settings(max_examples=300, deadline=None)
@given(
    assigners, batches, st.integers(0, 15), st.booleans(), st.sampled_from(["reduce", "aggregate", "list", "state"]), st.booleans(),
    st.booleans(),
)
def test_batched_equals_window_operator(
    assigner: Any, bs: Any, lateness: int, late: bool, kind: str, restore: bool, purge: bool
) -> None:
    def contents() -> WindowContents:
        if kind in ("list", "state"):
            return WindowContents("list")
        if kind == "reduce":
            return WindowContents("reduce", reduce_fn=lambda a, b: {"k": a["k"], "ts": a["ts"], "v": a["v"] * 3 + b["v"]})
        return WindowContents("aggregate", agg_fn=SumList())

    wf = ListWithWindow() if kind == "list" else None
    if kind == "state":  # window or global state through a helper, clear(): kept across batches as on Spark
        wf = Counting("global_helper") if purge or lateness % 2 else CountingPerWindow()
    ref_op = _operator(assigner, contents(), lateness, late, wf, purge)
    new_op = _operator(assigner, contents(), lateness, late, wf, purge)
    ref = _run_reference(ref_op, bs)
    new = _run_batched(new_op, bs, restore)
    # emission order between records of the same watermark is not part of Flink's contract
    assert sorted(map(repr, new.main)) == sorted(map(repr, ref.main))
    assert sorted(map(repr, new.side)) == sorted(map(repr, ref.side))
    for metric in ("windows_fired", "late_records_side_output", "late_records_dropped"):
        assert new_op.metrics.get(metric, 0) == ref_op.metrics.get(metric, 0), metric


@settings(max_examples=200, deadline=None)
@given(assigners, st.lists(event, max_size=30), st.integers(-40, 40))
def test_column_aggregate_partials_equal_element_adds(assigner: Any, events: Any, wm: int) -> None:
    """Merging a pre-aggregated partial per window (on-time elements only) equals adding one by one."""
    fn = ColumnAggregate(Count(), Sum("v"), Min("v"), Max("v"))
    ref_op = _operator(assigner, WindowContents("aggregate", agg_fn=fn), 0, True)
    new_op = _operator(assigner, WindowContents("aggregate", agg_fn=fn), 0, True)
    batches_ = [([], wm), (events, LONG_MAX)]
    ref = _run_reference(ref_op, batches_)
    out = Collect(new_op)
    new_op.open(out, ManualClock(0))
    b = BatchWindowOperator(new_op)
    b.advance_watermark(wm)
    partials: dict = {}  # type: ignore[type-arg]
    for e in events:
        windows = assigner.assign_windows(e, e["ts"], None)
        if windows and all(w.max_timestamp() > wm for w in windows):  # no window: the late check applies
            for w in windows:
                slot = (e["k"], w.start)
                partials[slot] = fn.add(e, partials.get(slot, fn.create_accumulator()))
        else:
            b.process_element(e["k"], e, e["ts"])
    for (k, s), acc in partials.items():
        b.merge_partial(k, s, acc)
    b.advance_watermark(LONG_MAX)
    assert sorted(map(repr, out.main)) == sorted(map(repr, ref.main))
    assert sorted(map(repr, out.side)) == sorted(map(repr, ref.side))


def test_column_aggregate_skips_nulls_and_reads_fields() -> None:
    fn = ColumnAggregate(Count(), Sum("v"), Min("v"), Max("v"))
    acc = fn.create_accumulator()
    for v in ({"v": 3}, {"v": None}, {"v": -2}):
        acc = fn.add(v, acc)
    assert fn.get_result(acc) == (3, 1, -2, 3)
    assert fn.merge(acc, fn.create_accumulator()) == (3, 1, -2, 3)
    assert fn.fields() == ("v",)


class UsesWindowState(ProcessWindowFunction):  # type: ignore[type-arg]
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        return [context.window_state()]


@pytest.mark.parametrize(
    ("assigner", "trigger", "evictor", "contents", "wf", "reason"),
    [
        (EventTimeSessionWindows(5), EventTimeTrigger(), None, "aggregate", None, "assigner"),
        (TumblingEventTimeWindows(5), CountTrigger(2), None, "aggregate", None, "trigger"),
        (TumblingEventTimeWindows(5), EventTimeTrigger(), CountEvictor(2), "aggregate", None, "evictor"),
        (TumblingEventTimeWindows(5), PurgingTrigger.of(CountTrigger(2)), None, "list", None, "trigger"),
        (TumblingEventTimeWindows(5), PurgingTrigger.of(EventTimeTrigger()), None, "list", None, None),
        (TumblingEventTimeWindows(5), EventTimeTrigger(), None, "aggregate", UsesWindowState(), None),
        (TumblingEventTimeWindows(5), EventTimeTrigger(), None, "aggregate", Counting("global_helper"), None),
        (TumblingEventTimeWindows(5), PurgingTrigger.of(EventTimeTrigger()), None, "list", CountingPerWindow(), "clear"),
        (TumblingEventTimeWindows(5), PurgingTrigger.of(EventTimeTrigger()), None, "list", UsesWindowState(), None),
        (TumblingEventTimeWindows(5), EventTimeTrigger(), None, "aggregate", None, None),
    ],
)
def test_eligibility(assigner: Any, trigger: Any, evictor: Any, contents: str, wf: Any, reason: Optional[str]) -> None:
    c = WindowContents(contents, agg_fn=SumList()) if contents == "aggregate" else WindowContents("list")
    op = WindowOperator("w", lambda e: e, assigner, trigger, c, wf or PassThroughWindowFunction(), evictor, 0, None)
    got = batch_eligibility(op)
    if reason is None:
        assert got is None
    else:
        assert got is not None and reason in got


class Recording(ProcessWindowFunction):  # type: ignore[type-arg]
    """Records every call of the window function and of its ``clear()``, with the timer being fired."""

    def __init__(self, clears: bool) -> None:
        self.op: Any = None
        self.calls: List[Tuple[str, Any, int, Optional[int]]] = []
        if clears:
            self.clear = self._clear  # type: ignore[method-assign]

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        self.calls.append(("fire", key, context.window().start, self.op.firing_timer))
        return []

    def _clear(self, context: Any) -> None:
        self.calls.append(("clear", self.op.backend.get_current_key(), context.window().start, self.op.firing_timer))


@settings(max_examples=300, deadline=None)
@example(  # windows [5, 15) of a and b cleaned up at [10, 20)'s firing: the two starts' windows interleave
    SlidingEventTimeWindows(10, 5), [{"k": "a", "ts": 12, "v": 1}, {"k": "b", "ts": 12, "v": 1}], -40, 0, False, 90, True, 1
)
@given(
    assigners, st.lists(event, max_size=25), st.integers(-40, 30), st.integers(0, 15), st.booleans(), st.integers(-40, 90),
    st.booleans(), st.integers(0, 3),
)
def test_timers_run_in_flinks_order(
    assigner: Any, events: Any, wm: int, lateness: int, purge: bool, advance: int, clears: bool, slides: int
) -> None:
    """``advance_watermark`` runs the due timers as Flink's timer queue would: by time, then (same time) in the
    table's order, a window's firing before its cleanup; a purged window has nothing left to clean up. The
    expected sequence is computed timer by timer from the table and :meth:`BatchWindowOperator.timer_times`."""
    clears = clears and not purge  # a purging trigger with a clear() is not eligible
    if slides and isinstance(assigner, SlidingEventTimeWindows):
        lateness = slides * assigner.slide  # a window's cleanup at a later window's firing: the same time
    wf = Recording(clears)
    op = _operator(assigner, WindowContents("list"), lateness, False, wf, purge)
    wf.op = op
    op.open(Collect(op), ManualClock(0))
    b = BatchWindowOperator(op)
    b.advance_watermark(wm)
    for e in events:
        b.process_element(e["k"], e, e["ts"])
    wf.calls.clear()
    old, new = b.watermark, max(wm, advance)
    timers = []
    for i, (key, start, _) in enumerate(b.snapshot()):
        max_ts, cleanup = b.timer_times(start)
        if old < max_ts <= new:
            timers.append((max_ts, i, 0, key, start))
        if cleanup <= new and cleanup != LONG_MAX:
            timers.append((cleanup, i, 1, key, start))
    expected = []
    gone = set()
    for time, _, kind, key, start in sorted(timers, key=lambda t: t[:3]):
        if (key, start) in gone:
            continue
        if kind == 0:
            expected.append(("fire", key, start, time))
            if purge:
                gone.add((key, start))
        else:
            gone.add((key, start))
            if clears:
                expected.append(("clear", key, start, time))
    b.advance_watermark(new)
    assert wf.calls == expected
    assert op.firing_timer is None
