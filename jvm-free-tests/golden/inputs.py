"""Fixed inputs of the golden-file tests: values of every codec tag, and keyed operators of every state kind
driven by fixed elements on a manual clock (so their snapshots are the same on every run).

Changing anything here changes the golden files: regenerate them deliberately (see ``conftest.golden``).
"""

from __future__ import annotations

import decimal
from typing import Any, Dict, Iterator, List, Tuple

from pyspark_flinkish.common import Row, RowKind
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.core.interval_join import IntervalJoinOperator
from pyspark_flinkish.core.state import VOID_NAMESPACE, TtlValue
from pyspark_flinkish.core.tagged_union import UnionKeySelector, tag_left, tag_right
from pyspark_flinkish.core.windows import CountWindow, GlobalWindow, TimeWindow
from pyspark_flinkish.datastream.functions import (
    AggregateFunction,
    KeyedProcessFunction,
    ProcessJoinFunction,
    ProcessWindowFunction,
)
from pyspark_flinkish.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from pyspark_flinkish.datastream.window import (
    CountTrigger,
    EventTimeSessionWindows,
    GlobalWindows,
    TumblingEventTimeWindows,
)
from pyspark_flinkish.testing.harness import KeyedProcessHarness, OneInputHarness, WindowHarness

__all__ = ["KEYS", "VALUES", "keyed_operators"]

# name -> value: every tag of core/codec.py, and JSON scalars at their limits
VALUES: Dict[str, Any] = {
    "none": None,
    "true": True,
    "int": 42,
    "long_min": -(2**63),
    "long_max": 2**63 - 1,
    "float": 1.5,
    "nan": float("nan"),
    "inf": float("inf"),
    "minus_inf": float("-inf"),
    "str": "päivää \"quoted\"",
    "list": [1, "a", None],
    "tuple": (1, ("nested", 2.5)),
    "dict_with_tuple_keys": {("a", 1): [1, 2], "b": {"c": 3}},
    "time_window": TimeWindow(-10, 20),
    "global_window": GlobalWindow(),
    "count_window": CountWindow(3),
    "void_namespace": VOID_NAMESPACE,
    "ttl_value": TtlValue(("acc", 3), 1_000),
    "bytes": b"\x00\xffbinary",
    "set": {3},
    "frozenset": frozenset({"x"}),
    "pickled_user_object": decimal.Decimal("1.50"),
    "row_named": Row(name="a", count=2, nested=Row("x", [1])),
    "row_positional_update_before": Row.of_kind(RowKind.UPDATE_BEFORE, "a", 1.5),
}

# keys as the Spark executors encode them (``key`` column of the state store, crc32 state partition)
KEYS: Dict[str, Any] = {
    "int": 7,
    "negative_int": -3,
    "str": "user-ä",
    "tuple": ("eu", 2),
    "float": 0.25,
    "none": None,
}


class EveryState(KeyedProcessFunction):  # type: ignore[type-arg]
    """Keeps one state of each kind (a TTL value among them) and registers both kinds of timer."""

    def open(self, runtime_context: Any) -> None:
        ttl = StateTtlConfig.new_builder(5_000).build()
        with_ttl = ValueStateDescriptor("with_ttl")
        with_ttl.enable_time_to_live(ttl)
        self.value = runtime_context.get_state(ValueStateDescriptor("value"))
        self.list = runtime_context.get_list_state(ListStateDescriptor("list"))
        self.map = runtime_context.get_map_state(MapStateDescriptor("map"))
        self.reducing = runtime_context.get_reducing_state(ReducingStateDescriptor("reducing", lambda a, b: a + b))
        self.aggregating = runtime_context.get_aggregating_state(AggregatingStateDescriptor("aggregating", Average()))
        self.with_ttl = runtime_context.get_state(with_ttl)

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        key, n = value
        self.value.update({"last": n, "seen": (key, n)})
        self.list.add(n)
        self.map.put(f"m{n}", [n, n * 2])
        self.reducing.add(n)
        self.aggregating.add(n)
        self.with_ttl.update(n * 10)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 100)
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 50)
        yield n


class Average(AggregateFunction):  # type: ignore[type-arg]
    def create_accumulator(self) -> Tuple[int, int]:
        return (0, 0)

    def add(self, value: int, accumulator: Tuple[int, int]) -> Tuple[int, int]:
        return (accumulator[0] + value, accumulator[1] + 1)

    def get_result(self, accumulator: Tuple[int, int]) -> float:
        return accumulator[0] / accumulator[1]

    def merge(self, a: Tuple[int, int], b: Tuple[int, int]) -> Tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])


class WithWindowAndGlobalState(ProcessWindowFunction):  # type: ignore[type-arg]
    """Counts firings in per-window state and in the key's global state."""

    def process(self, key: Any, context: Any, elements: Any) -> Iterator[Any]:
        fired = context.window_state().get_state(ValueStateDescriptor("fired_in_window"))
        fired.update((fired.value() or 0) + 1)
        total = context.global_state().get_state(ValueStateDescriptor("fired_for_key"))
        total.update((total.value() or 0) + 1)
        yield (key, sorted(elements))


def _drive(h: OneInputHarness, elements: List[Tuple[Any, int]]) -> OneInputHarness:
    for value, ts in elements:
        h.process_element(value, ts)
    return h


def keyed_operators() -> Dict[str, OneInputHarness]:
    """name -> a harness whose operator holds state of the kind the name says, after fixed input."""
    key = lambda v: v[0]  # noqa: E731
    pairs = [(("a", 1), 1), (("a", 2), 4), (("b", 5), 12)]
    clock = ManualClock(1_000)
    every = KeyedProcessHarness(EveryState(), key, clock)
    every.process_watermark(0)
    _drive(every, pairs)
    tumbling = WindowHarness.process(
        TumblingEventTimeWindows.of(10), WithWindowAndGlobalState(), key, trigger=CountTrigger.of(2),
        allowed_lateness=5, clock=ManualClock(0),
    )
    reduce = WindowHarness.reduce(TumblingEventTimeWindows.of(10), lambda a, b: (a[0], a[1] + b[1]), key,
                                  clock=ManualClock(0))
    aggregate = WindowHarness.aggregate(TumblingEventTimeWindows.of(10), _Pairs(), key, clock=ManualClock(0))
    session = WindowHarness.process(EventTimeSessionWindows.with_gap(5), WithWindowAndGlobalState(), key,
                                    clock=ManualClock(0))
    sliding_count = WindowHarness.process(GlobalWindows.create(), WithWindowAndGlobalState(), key,
                                          trigger=CountTrigger.of(1), clock=ManualClock(0))
    for h in (tumbling, reduce, aggregate, session, sliding_count):
        _drive(h, pairs)
    session.process_element(("a", 3), 3)  # merges the sessions of ts 1 and 4
    interval = OneInputHarness(
        IntervalJoinOperator("IntervalJoin", UnionKeySelector(key, key), -2, 3, _Joined()), ManualClock(0)
    )
    for (value, ts), tag in zip(pairs + [(("a", 9), 3)], (tag_left, tag_right, tag_left, tag_right)):
        interval.process_element(tag(value), ts)
    return {
        "keyed_process_every_state_kind": every,
        "tumbling_process_count_trigger_window_and_global_state": tumbling,
        "tumbling_reduce": reduce,
        "tumbling_aggregate": aggregate,
        "session_merging_window_set": session,
        "global_window_count_trigger": sliding_count,
        "interval_join_buffers_and_cleanup_timers": interval,
    }


class _Joined(ProcessJoinFunction):  # type: ignore[type-arg]
    def process_element(self, left: Any, right: Any, ctx: Any) -> Iterator[Any]:
        yield (left, right)


class _Pairs(AggregateFunction):  # type: ignore[type-arg]
    def create_accumulator(self) -> List[int]:
        return []

    def add(self, value: Any, accumulator: List[int]) -> List[int]:
        return [*accumulator, value[1]]

    def get_result(self, accumulator: List[int]) -> int:
        return sum(accumulator)

    def merge(self, a: List[int], b: List[int]) -> List[int]:
        return a + b
