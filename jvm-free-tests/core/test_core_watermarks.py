"""Watermark generation and combination (spec §2, §3, §18.1, §18.13)."""

from __future__ import annotations

from typing import Any, List, Tuple

import pytest

from pyspark_flinkish.common import Duration, Time, Watermark, WatermarkGenerator, WatermarkStrategy
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.core.errors import InvalidArgumentError, InvalidTypeError
from pyspark_flinkish.core.javamath import LONG_MAX, LONG_MIN
from pyspark_flinkish.core.watermark_alignment import SplitWatermarks, StatusWatermarkValve
from pyspark_flinkish.core.watermarks import (
    AscendingTimestampsWatermarks,
    BoundedOutOfOrdernessWatermarks,
    IdlenessTimer,
    WatermarkOutput,
    WatermarksWithIdleness,
)


class RecordingOutput(WatermarkOutput):
    """Records what a generator emits, as ``("wm", ts)``, ``("idle",)``, ``("active",)``."""

    def __init__(self) -> None:
        self.events: List[Tuple[Any, ...]] = []

    def emit_watermark(self, watermark: Any) -> None:
        self.events.append(("wm", watermark.timestamp if isinstance(watermark, Watermark) else watermark))

    def mark_idle(self) -> None:
        self.events.append(("idle",))

    def mark_active(self) -> None:
        self.events.append(("active",))

    def watermarks(self) -> List[int]:
        return [e[1] for e in self.events if e[0] == "wm"]


class DedupOutput(RecordingOutput):
    """Like the runtime's output: forwards only strictly increasing watermarks, starting from MIN."""

    def __init__(self) -> None:
        super().__init__()
        self.current = LONG_MIN

    def emit_watermark(self, watermark: Any) -> None:
        ts = watermark.timestamp if isinstance(watermark, Watermark) else watermark
        if ts > self.current:
            self.current = ts
            super().emit_watermark(ts)


# ------------------------------------------------------------------ bounded out-of-orderness


def test_bounded_emits_max_minus_bound_minus_one() -> None:
    gen = BoundedOutOfOrdernessWatermarks(5)
    out = RecordingOutput()
    gen.on_event("a", 100, out)
    gen.on_event("b", 90, out)  # out of order: max stays 100
    assert out.events == []  # on_event of a periodic generator emits nothing
    gen.on_periodic_emit(out)
    assert out.watermarks() == [94]
    gen.on_event("c", 120, out)
    gen.on_periodic_emit(out)
    assert out.watermarks() == [94, 114]


def test_bounded_before_first_event_is_min_and_never_forwarded() -> None:
    gen = BoundedOutOfOrdernessWatermarks(7)
    assert gen.max_timestamp == LONG_MIN + 7 + 1
    raw = RecordingOutput()
    gen.on_periodic_emit(raw)
    assert raw.watermarks() == [LONG_MIN]  # maxTs - B - 1 == MIN exactly, no overflow
    out = DedupOutput()
    gen.on_periodic_emit(out)
    gen.on_periodic_emit(out)
    assert out.watermarks() == []  # MIN is never emitted
    gen.on_event(None, 10, out)
    gen.on_periodic_emit(out)
    assert out.watermarks() == [2]


def test_bounded_zero_means_ts_equal_to_max_is_on_time() -> None:
    gen = BoundedOutOfOrdernessWatermarks(0)
    out = RecordingOutput()
    gen.on_event(None, 50, out)
    gen.on_periodic_emit(out)
    (w,) = out.watermarks()
    assert w == 49
    # a later record with ts == max_seen is not behind the watermark (not ts <= W)
    assert not 50 <= w


@pytest.mark.parametrize("bound", [-1, -1000])
def test_negative_bound_rejected(bound: int) -> None:
    with pytest.raises(InvalidArgumentError):
        BoundedOutOfOrdernessWatermarks(bound)
    with pytest.raises(InvalidArgumentError):
        WatermarkStrategy.for_bounded_out_of_orderness(bound)
    with pytest.raises(InvalidArgumentError):
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(bound))


def test_bound_accepts_duration_time_and_int() -> None:
    clock = ManualClock(0)
    for b in (Duration.of_seconds(2), Time.seconds(2), 2000):
        gen = WatermarkStrategy.for_bounded_out_of_orderness(b).create_watermark_generator(clock)
        out = RecordingOutput()
        gen.on_event(None, 10_000, out)
        gen.on_periodic_emit(out)
        assert out.watermarks() == [7_999]


def test_monotonous_is_bound_zero() -> None:
    gen = WatermarkStrategy.for_monotonous_timestamps().create_watermark_generator(ManualClock(0))
    assert isinstance(gen, AscendingTimestampsWatermarks)
    out = DedupOutput()
    gen.on_periodic_emit(out)
    assert out.watermarks() == []
    for ts in (3, 8, 8, 5):
        gen.on_event(None, ts, out)
    gen.on_periodic_emit(out)
    assert out.watermarks() == [7]


def test_no_watermarks_never_emits() -> None:
    s = WatermarkStrategy.no_watermarks()
    assert s.generates_watermarks is False
    gen = s.create_watermark_generator(ManualClock(0))
    out = RecordingOutput()
    gen.on_event(None, 100, out)
    gen.on_periodic_emit(out)
    assert out.events == []


# --------------------------------------------------------------------------- custom generator


class Punctuated(WatermarkGenerator):
    """Emits a watermark on every event whose value is 'P' (at its timestamp)."""

    def on_event(self, event: Any, event_timestamp: int, output: Any) -> None:
        if event == "P":
            output.emit_watermark(Watermark(event_timestamp))

    def on_periodic_emit(self, output: Any) -> None:
        return None


def test_for_generator_custom_punctuated() -> None:
    s = WatermarkStrategy.for_generator(Punctuated)
    assert s.generates_watermarks is True
    g1 = s.create_watermark_generator(ManualClock(0))
    g2 = s.create_watermark_generator(ManualClock(0))
    assert isinstance(g1, Punctuated)
    assert g1 is not g2
    out = RecordingOutput()
    g1.on_event("x", 5, out)
    g1.on_event("P", 7, out)
    g1.on_periodic_emit(out)
    assert out.watermarks() == [7]


def test_for_generator_supplier_with_context_argument() -> None:
    seen: List[Any] = []

    def supplier(ctx: Any) -> WatermarkGenerator:
        seen.append(ctx)
        return Punctuated()

    gen = WatermarkStrategy.for_generator(supplier).create_watermark_generator(ManualClock(0))
    assert isinstance(gen, Punctuated)
    assert len(seen) == 1


def test_for_generator_rejects_non_generators() -> None:
    with pytest.raises(InvalidTypeError):
        WatermarkStrategy.for_generator(42)  # type: ignore[arg-type]
    s = WatermarkStrategy.for_generator(lambda: "not a generator")
    with pytest.raises(InvalidTypeError):
        s.create_watermark_generator(ManualClock(0))


# ------------------------------------------------------------------------ strategy immutability


def test_with_builders_return_new_strategies() -> None:
    base = WatermarkStrategy.for_bounded_out_of_orderness(5)
    idle = base.with_idleness(100)
    assert idle is not base
    assert base.idleness_ms is None
    assert idle.idleness_ms == 100
    assigned = base.with_timestamp_assigner(lambda v, ts: v * 10)
    assert assigned is not base
    assert base.timestamp_assigner is None
    assert assigned.timestamp_assigner is not None
    assert assigned.idleness_ms is None
    both = idle.with_timestamp_assigner(lambda v: v * 10)
    assert both.idleness_ms == 100
    assert both.timestamp_assigner is not None
    assert idle.timestamp_assigner is None
    # base still generates an un-wrapped generator; idle wraps
    clock = ManualClock(0)
    assert isinstance(base.create_watermark_generator(clock), BoundedOutOfOrdernessWatermarks)
    assert isinstance(idle.create_watermark_generator(clock), WatermarksWithIdleness)
    # a no_watermarks strategy stays non-generating through the builders
    nw = WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda v: v)
    assert nw.generates_watermarks is False


def test_timestamp_assigner_forms() -> None:
    from pyspark_flinkish.common import TimestampAssigner

    class TA(TimestampAssigner):
        def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
            return value + 1

    base = WatermarkStrategy.for_monotonous_timestamps()
    assert base.extract_timestamp(5, 99) == 99  # no assigner: keeps the previous timestamp
    assert base.extract_timestamp(5, None) is None
    assert base.with_timestamp_assigner(lambda v: v * 2).extract_timestamp(5, None) == 10
    two = base.with_timestamp_assigner(lambda v, ts: ts)
    assert two.extract_timestamp(5, None) == LONG_MIN  # no previous timestamp -> MIN
    assert two.extract_timestamp(5, 42) == 42
    assert base.with_timestamp_assigner(TA()).extract_timestamp(5, None) == 6
    with pytest.raises(InvalidTypeError):
        base.with_timestamp_assigner(lambda v: "12").extract_timestamp(5, None)
    with pytest.raises(InvalidTypeError):
        base.with_timestamp_assigner(lambda v: True).extract_timestamp(5, None)
    with pytest.raises(InvalidTypeError):
        base.with_timestamp_assigner(3)


@pytest.mark.parametrize("timeout", [0, -5])
def test_idleness_timeout_must_be_positive(timeout: int) -> None:
    with pytest.raises(InvalidArgumentError):
        WatermarkStrategy.for_monotonous_timestamps().with_idleness(timeout)


# ----------------------------------------------------------------------------------- idleness


def test_idleness_timer_first_quiet_check_starts_clock_strictly_greater() -> None:
    clock = ManualClock(1000)
    timer = IdlenessTimer(clock, 100)
    assert timer.check_if_idle() is False  # first quiet check: starts the clock at 1000
    clock.set(1100)
    assert timer.check_if_idle() is False  # 100 > 100 is false
    clock.set(1101)
    assert timer.check_if_idle() is True


def test_idleness_timer_activity_resets() -> None:
    clock = ManualClock(0)
    timer = IdlenessTimer(clock, 100)
    assert timer.check_if_idle() is False  # start = 0
    clock.set(90)
    timer.activity()
    assert timer.check_if_idle() is False  # activity since the last check: reset
    clock.set(150)
    assert timer.check_if_idle() is False  # first quiet check after activity: start = 150
    clock.set(250)
    assert timer.check_if_idle() is False
    clock.set(251)
    assert timer.check_if_idle() is True
    # continuous activity keeps it active however long the clock runs
    for now in (1000, 5000, 100000):
        clock.set(now)
        timer.activity()
        assert timer.check_if_idle() is False


def test_with_idleness_marks_idle_once_then_event_and_watermark_reactivate() -> None:
    clock = ManualClock(0)
    gen = WatermarksWithIdleness(BoundedOutOfOrdernessWatermarks(0), 100, clock)
    out = RecordingOutput()
    gen.on_event(None, 10, out)
    gen.on_periodic_emit(out)  # activity: emits 9
    clock.set(50)
    gen.on_periodic_emit(out)  # first quiet check: starts the clock at 50, still emits
    clock.set(150)
    gen.on_periodic_emit(out)  # 100 > 100 false: still active
    assert out.events == [("wm", 9), ("wm", 9), ("wm", 9)]
    clock.set(151)
    gen.on_periodic_emit(out)
    assert out.events[-1] == ("idle",)
    clock.set(500)
    gen.on_periodic_emit(out)
    clock.set(900)
    gen.on_periodic_emit(out)
    assert out.events == [("wm", 9), ("wm", 9), ("wm", 9), ("idle",)]  # idle once, emits stop
    gen.on_event(None, 30, out)  # the next event ends idleness
    clock.set(1000)
    gen.on_periodic_emit(out)  # ... and the next watermark goes out
    assert out.events[-1] == ("wm", 29)
    assert out.events.count(("idle",)) == 1


def test_idleness_through_split_output_reactivates_on_next_watermark() -> None:
    clock = ManualClock(0)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(0).with_idleness(10)
    splits = SplitWatermarks(strategy, clock)
    splits.on_event(0, None, 5)
    assert splits.on_periodic_emit() == 4
    clock.set(1)
    assert splits.on_periodic_emit() is None  # starts the clock at 1
    clock.set(12)
    assert splits.on_periodic_emit() is None
    assert splits.idle is True
    assert splits.partition_watermarks() == {0: None}
    splits.on_event(0, None, 20)
    clock.set(13)
    assert splits.on_periodic_emit() == 19
    assert splits.idle is False
    assert splits.partition_watermarks() == {0: 19}


# ----------------------------------------------------------------------------- SplitWatermarks


def test_splits_min_over_partitions() -> None:
    splits = SplitWatermarks(WatermarkStrategy.for_bounded_out_of_orderness(0), ManualClock(0))
    splits.on_event(0, None, 100)
    splits.on_event(1, None, 50)
    assert splits.on_periodic_emit() == 49
    splits.on_event(1, None, 200)
    assert splits.on_periodic_emit() == 99
    assert splits.partition_watermarks() == {0: 99, 1: 199}
    assert splits.on_periodic_emit() is None  # no progress: nothing new
    assert splits.combined == 99


def test_split_without_data_holds_min_without_idleness() -> None:
    clock = ManualClock(0)
    splits = SplitWatermarks(WatermarkStrategy.for_bounded_out_of_orderness(0), clock)
    splits.add_partition(0)
    splits.add_partition(1)
    splits.on_event(0, None, 100)
    for now in (0, 10_000, 10_000_000):
        clock.set(now)
        assert splits.on_periodic_emit() is None
    assert splits.combined == LONG_MIN
    assert splits.idle is False
    assert splits.partition_watermarks() == {0: 99, 1: LONG_MIN}


def test_split_without_data_with_idleness_leaves_the_min() -> None:
    clock = ManualClock(0)
    splits = SplitWatermarks(WatermarkStrategy.for_bounded_out_of_orderness(0).with_idleness(100), clock)
    splits.add_partition(0)
    splits.add_partition(1)
    splits.on_event(0, None, 100)
    assert splits.on_periodic_emit() is None  # p1 starts its idleness clock at 0
    clock.set(50)
    splits.on_event(0, None, 150)
    assert splits.on_periodic_emit() is None  # 50 - 0 not > 100
    clock.set(101)
    splits.on_event(0, None, 160)
    assert splits.on_periodic_emit() == 159  # p1 idle: 101 > 100
    assert splits.idle is False
    assert splits.partition_watermarks() == {0: 159, 1: None}


def test_splits_all_idle_and_returning_partition() -> None:
    clock = ManualClock(0)
    splits = SplitWatermarks(WatermarkStrategy.for_bounded_out_of_orderness(0).with_idleness(10), clock)
    splits.on_event(0, None, 100)
    splits.on_event(1, None, 50)
    assert splits.on_periodic_emit() == 49
    clock.set(1)
    splits.on_event(0, None, 120)  # p0 stays busy, p1 goes quiet
    assert splits.on_periodic_emit() is None  # min still 49 (p1 quiet clock starts at 1)
    clock.set(12)
    splits.on_event(0, None, 130)
    assert splits.on_periodic_emit() == 129  # p1 idle leaves the min
    assert splits.idle is False
    # p1 returns behind: no regression, it rejoins the min
    splits.on_event(1, None, 60)
    splits.on_event(0, None, 300)
    clock.set(13)
    assert splits.on_periodic_emit() is None
    assert splits.combined == 129
    assert splits.partition_watermarks() == {0: 299, 1: 59}
    splits.on_event(1, None, 200)
    splits.on_event(0, None, 310)
    clock.set(14)
    assert splits.on_periodic_emit() == 199  # min over both again
    # both go quiet: all idle
    clock.set(15)
    assert splits.on_periodic_emit() is None
    clock.set(26)
    assert splits.on_periodic_emit() is None
    assert splits.idle is True
    assert splits.combined == 199


def test_split_removed_partition_leaves_the_min() -> None:
    splits = SplitWatermarks(WatermarkStrategy.for_bounded_out_of_orderness(0), ManualClock(0))
    splits.on_event(0, None, 100)
    splits.on_event(1, None, 10)
    assert splits.on_periodic_emit() == 9
    splits.remove_partition(1)
    assert splits.on_periodic_emit() == 99


# ------------------------------------------------------------------------- StatusWatermarkValve


def test_valve_min_over_channels_and_monotone() -> None:
    v = StatusWatermarkValve(3)
    assert v.input_watermark(0, 10) is None
    assert v.input_watermark(1, 5) is None
    assert v.input_watermark(2, 7) == 5
    assert v.input_watermark(1, 20) == 7
    assert v.input_watermark(1, 15) is None  # a lower watermark on a channel is ignored
    assert v.watermarks[1] == 20
    assert v.input_watermark(2, 7) is None  # equal: ignored
    assert v.input_watermark(2, 30) == 10
    assert v.input_watermark(0, 25) == 20
    assert v.last_output == 20


def test_valve_idle_channel_leaves_the_min() -> None:
    v = StatusWatermarkValve(2)
    assert v.input_watermark(0, 10) is None
    assert v.input_watermark(1, 4) == 4
    assert v.input_idle(1, True) == (10, None)
    assert v.input_watermark(1, 50) is None  # watermarks of an idle channel are ignored
    assert v.watermarks[1] == 4
    assert v.input_watermark(0, 12) == 12


def test_valve_all_idle_emits_max_then_idle() -> None:
    v = StatusWatermarkValve(2)
    v.input_watermark(0, 10)
    assert v.input_watermark(1, 30) == 10
    assert v.input_idle(1, True) == (None, None)  # channel 1 was not the min: 10 stays
    assert v.input_idle(0, True) == (30, True)  # the last idle channel held the min: flush max, go idle
    assert v.output_idle is True
    assert v.input_idle(0, True) == (None, None)  # already idle: no change


def test_valve_all_idle_no_flush_when_last_idle_channel_did_not_hold_the_min() -> None:
    """§3: all idle -> emit max(all c.wm) *when the last idle channel held the min* (Flink compares
    the channel's watermark with the last output)."""
    v = StatusWatermarkValve(3)
    assert v.input_idle(0, True) == (None, None)
    assert v.input_watermark(2, 10) is None
    assert v.input_watermark(1, 5) == 5
    assert v.input_idle(0, False) == (None, None)  # returns at MIN < 5: unaligned
    assert v.input_idle(2, True) == (None, None)  # not the min
    assert v.input_idle(1, True) == (None, None)  # channel 0 is unaligned: nothing to emit
    assert v.input_watermark(0, 3) is None  # 3 < 5: still unaligned
    # the last channel going idle holds 3, not the last output 5: no flush, just IDLE
    assert v.input_idle(0, True) == (None, True)
    assert v.last_output == 5


def test_valve_returning_channel_rejoins_only_when_caught_up() -> None:
    v = StatusWatermarkValve(2)
    v.input_watermark(0, 10)
    assert v.input_watermark(1, 20) == 10
    assert v.input_idle(0, True) == (20, None)
    assert v.input_watermark(1, 40) == 40
    assert v.input_idle(0, False) == (None, None)  # back at 10 < 40: unaligned, no regression
    assert v.aligned[0] is False
    assert v.input_watermark(1, 50) == 50  # channel 0 does not hold the min back
    assert v.input_watermark(0, 45) is None  # still behind
    assert v.aligned[0] is False
    assert v.input_watermark(1, 60) == 60
    assert v.input_watermark(0, 60) is None  # caught up (>= last output): aligned again
    assert v.aligned[0] is True
    assert v.input_watermark(1, 70) is None  # now channel 0 holds the min at 60
    assert v.input_watermark(0, 65) == 65


def test_valve_idle_output_returns_active() -> None:
    v = StatusWatermarkValve(2)
    v.input_watermark(0, 5)
    v.input_watermark(1, 5)
    assert v.input_idle(0, True) == (None, None)
    assert v.input_idle(1, True) == (None, True)
    assert v.input_idle(1, False) == (None, False)  # active again; 5 >= 5 so aligned
    assert v.aligned[1] is True
    assert v.input_watermark(1, 9) == 9


def test_valve_single_channel_max() -> None:
    v = StatusWatermarkValve(1)
    assert v.input_watermark(0, LONG_MAX) == LONG_MAX
    assert v.input_watermark(0, 5) is None
