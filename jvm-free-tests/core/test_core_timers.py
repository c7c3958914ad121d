"""InternalTimerService (spec §4, §18.11)."""

from __future__ import annotations

from typing import Any, Callable, Hashable, List, Optional, Tuple

from pyspark_flinkish.core.javamath import LONG_MAX, LONG_MIN
from pyspark_flinkish.core.timers import InternalTimerService


class Svc:
    """A timer service with a settable current key and recorded firings."""

    def __init__(self) -> None:
        self.key: Any = None
        self.fired: List[Tuple[str, int, Any, Hashable]] = []
        self.on_event: Optional[Callable[[int, Any, Hashable], None]] = None
        self.on_proc: Optional[Callable[[int, Any, Hashable], None]] = None
        self.ts = InternalTimerService(lambda: self.key, self._event, self._proc)

    def _event(self, ts: int, key: Any, ns: Hashable) -> None:
        self.key = key  # the owner switches to the timer's key
        self.fired.append(("event", ts, key, ns))
        if self.on_event is not None:
            self.on_event(ts, key, ns)

    def _proc(self, ts: int, key: Any, ns: Hashable) -> None:
        self.key = key
        self.fired.append(("proc", ts, key, ns))
        if self.on_proc is not None:
            self.on_proc(ts, key, ns)

    def reg(self, key: Any, ts: int, ns: Hashable = "n") -> None:
        self.key = key
        self.ts.register_event_time_timer(ns, ts)

    def reg_proc(self, key: Any, ts: int, ns: Hashable = "n") -> None:
        self.key = key
        self.ts.register_processing_time_timer(ns, ts)

    def times(self) -> List[int]:
        return [f[1] for f in self.fired]


def test_event_timers_fire_in_timestamp_order_across_keys_and_namespaces() -> None:
    s = Svc()
    s.reg("b", 30, "w1")
    s.reg("a", 10, "w2")
    s.reg("c", 20, "w1")
    s.reg("a", 25, "w1")
    s.reg("b", 5, "w2")
    s.ts.advance_watermark(25)
    assert s.fired == [
        ("event", 5, "b", "w2"),
        ("event", 10, "a", "w2"),
        ("event", 20, "c", "w1"),
        ("event", 25, "a", "w1"),  # inclusive: ts == W fires
    ]
    s.ts.advance_watermark(29)
    assert len(s.fired) == 4  # 30 > 29
    s.ts.advance_watermark(30)
    assert s.fired[-1] == ("event", 30, "b", "w1")
    assert len(s.ts.event_timers) == 0


def test_current_watermark_is_set_before_firing() -> None:
    s = Svc()
    assert s.ts.current_watermark == LONG_MIN
    seen: List[int] = []
    s.on_event = lambda ts, k, ns: seen.append(s.ts.current_watermark)
    s.reg("a", 3)
    s.reg("a", 7)
    s.ts.advance_watermark(10)
    assert seen == [10, 10]
    assert s.ts.current_watermark == 10


def test_duplicate_timers_fire_once() -> None:
    s = Svc()
    s.reg("a", 10, "w")
    s.reg("a", 10, "w")
    s.reg("a", 10, "w")
    assert len(s.ts.event_timers) == 1
    s.reg("b", 10, "w")  # other key: a distinct timer
    s.reg("a", 10, "v")  # other namespace: a distinct timer
    s.ts.advance_watermark(100)
    assert sorted((f[2], f[3]) for f in s.fired) == [("a", "v"), ("a", "w"), ("b", "w")]


def test_delete_missing_is_noop_and_delete_works() -> None:
    s = Svc()
    s.key = "a"
    s.ts.delete_event_time_timer("n", 10)  # nothing registered: no-op
    s.ts.delete_processing_time_timer("n", 10)
    s.reg("a", 10)
    s.reg("a", 20)
    s.reg("b", 10)
    s.key = "a"
    s.ts.delete_event_time_timer("n", 10)
    s.ts.delete_event_time_timer("other-ns", 20)  # other namespace: no-op
    s.key = "zzz"
    s.ts.delete_event_time_timer("n", 20)  # other key: no-op
    s.ts.advance_watermark(100)
    assert [(f[1], f[2]) for f in s.fired] == [(10, "b"), (20, "a")]


def test_delete_then_reregister_fires_once() -> None:
    s = Svc()
    s.reg("a", 10)
    s.key = "a"
    s.ts.delete_event_time_timer("n", 10)
    s.reg("a", 10)
    s.ts.advance_watermark(10)
    assert s.times() == [10]
    s.ts.advance_watermark(20)
    assert s.times() == [10]


def test_timer_deleted_during_firing_does_not_fire() -> None:
    s = Svc()
    s.reg("a", 5)
    s.reg("b", 8)

    def on_event(ts: int, key: Any, ns: Hashable) -> None:
        if ts == 5:
            s.key = "b"
            s.ts.delete_event_time_timer("n", 8)

    s.on_event = on_event
    s.ts.advance_watermark(10)
    assert s.times() == [5]


def test_timer_registered_during_firing_fires_in_same_advance() -> None:
    s = Svc()
    s.reg("a", 10)

    def on_event(ts: int, key: Any, ns: Hashable) -> None:
        if ts == 10 and key == "a":
            s.reg("a", 12)  # <= W: same loop
            s.reg("b", 10)  # == current timer's ts, other key: same loop
            s.reg("a", 7)  # in the past: still <= W, same loop
            s.reg("a", 16)  # > W: later

    s.on_event = on_event
    s.ts.advance_watermark(15)
    assert [(f[1], f[2]) for f in s.fired] == [(10, "a"), (7, "a"), (10, "b"), (12, "a")]
    s.ts.advance_watermark(16)
    assert s.times()[-1] == 16


def test_timer_registered_outside_firing_in_the_past_fires_at_next_advance() -> None:
    s = Svc()
    s.ts.advance_watermark(50)
    s.reg("a", 20)  # ts <= current W
    s.reg("a", 50)
    assert s.fired == []  # registering never fires
    s.ts.advance_watermark(51)
    assert [f[1] for f in s.fired] == [20, 50]


def test_end_of_input_fires_all_event_timers() -> None:
    s = Svc()
    s.reg("a", LONG_MAX)
    s.reg("a", 10**15)
    s.reg_proc("a", 5)
    s.ts.advance_watermark(LONG_MAX)
    assert s.fired == [("event", 10**15, "a", "n"), ("event", LONG_MAX, "a", "n")]
    assert len(s.ts.processing_timers) == 1  # event and processing queues are independent


def test_processing_timers_fire_only_when_now_is_past() -> None:
    s = Svc()
    s.reg_proc("a", 100)
    s.reg_proc("b", 50)
    s.reg_proc("a", 100)  # duplicate
    s.reg("a", 10)  # event timers are untouched by processing time
    assert s.ts.next_processing_time() == 50
    s.ts.advance_processing_time(50)
    assert s.fired == []  # now == ts: not yet (fires when now > ts)
    s.ts.advance_processing_time(51)
    assert s.fired == [("proc", 50, "b", "n")]
    s.ts.advance_processing_time(100)
    assert len(s.fired) == 1
    s.ts.advance_processing_time(1000)
    assert s.fired == [("proc", 50, "b", "n"), ("proc", 100, "a", "n")]
    assert s.ts.next_processing_time() is None
    assert len(s.ts.event_timers) == 1


def test_processing_timers_fire_in_order_and_registered_during_callback() -> None:
    s = Svc()
    s.reg_proc("a", 30)
    s.reg_proc("b", 10)
    s.reg_proc("c", 20)

    def on_proc(ts: int, key: Any, ns: Hashable) -> None:
        if ts == 10:
            s.reg_proc("d", 15)  # already due at now = 40

    s.on_proc = on_proc
    s.ts.advance_processing_time(40)
    assert [(f[1], f[2]) for f in s.fired] == [(10, "b"), (15, "d"), (20, "c"), (30, "a")]


def test_per_key_timers_restore_and_drop() -> None:
    s = Svc()
    s.reg("a", 30, "x")
    s.reg("a", 10, "y")
    s.reg("b", 20)
    s.reg_proc("a", 7)
    event, proc = s.ts.timers_for_key("a")
    assert event == [(10, "y"), (30, "x")]
    assert proc == [(7, "n")]
    assert s.ts.timers_for_key("nobody") == ([], [])

    s.ts.drop_key("a")
    assert s.ts.timers_for_key("a") == ([], [])
    assert len(s.ts.event_timers) == 1
    s.ts.advance_watermark(100)
    s.ts.advance_processing_time(100)
    assert s.fired == [("event", 20, "b", "n")]  # a's timers are gone

    s.ts.restore_key("a", event, proc)
    assert s.ts.timers_for_key("a") == (event, proc)
    s.ts.advance_watermark(200)
    s.ts.advance_processing_time(200)
    assert s.fired[1:] == [("event", 10, "a", "y"), ("event", 30, "a", "x"), ("proc", 7, "a", "n")]
    assert len(s.ts.event_timers) == 0
    assert len(s.ts.processing_timers) == 0


def test_restore_over_existing_key_does_not_duplicate() -> None:
    s = Svc()
    s.reg("a", 10)
    event, proc = s.ts.timers_for_key("a")
    s.ts.drop_key("a")
    s.ts.restore_key("a", event, proc)
    s.ts.restore_key("a", event, proc)
    s.ts.advance_watermark(10)
    assert s.times() == [10]
