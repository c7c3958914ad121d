"""The JVM-free engine: micro-batch execution model (conformance README §3), per-partition watermarks,
idleness, union, assign_timestamps_and_watermarks, chained windows (spec §1–§3, §16)."""

from __future__ import annotations

from typing import Any, Callable, Iterable, List, Optional, Tuple

import pytest

from pyspark_flinkish.common import Watermark, WatermarkGenerator, WatermarkStrategy
from pyspark_flinkish.core.errors import FlinkishError, InvalidArgumentError, InvalidTypeError
from pyspark_flinkish.core.javamath import LONG_MAX, LONG_MIN
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import KeyedProcessFunction, ProcessFunction, ProcessWindowFunction
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

LATE = OutputTag("late")


class Probe(KeyedProcessFunction):
    """value = (key, ts, ...). Per element: ('in', key, ts, W) and an event timer at ts.
    Per timer: ('fire', ts, W, processing time)."""

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        ctx.timer_service().register_event_time_timer(ctx.timestamp())
        yield ("in", value[0], ctx.timestamp(), ctx.timer_service().current_watermark())

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        ts = ctx.timer_service()
        yield ("fire", timestamp, ts.current_watermark(), ts.current_processing_time())


class Stamp(ProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        yield (value, ctx.timestamp())


class Describe(ProcessWindowFunction):
    """(start, end, sorted timestamps or values, watermark at firing)."""

    def __init__(self, pick: Callable[[Any], Any]) -> None:
        self.pick = pick

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        w = context.window()
        yield (w.start, w.end, sorted(self.pick(e) for e in elements), context.current_watermark())


def ts1(v: Any) -> int:
    return v[1]


def env_manual() -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_manual_clock(0)
    return env


def explicit(env: StreamExecutionEnvironment, batches: List[MicroBatch], end: bool = True, name: str = "src") -> Any:
    strategy = WatermarkStrategy.no_watermarks().with_timestamp_assigner(ts1)
    return env.from_source(MicroBatchSource(batches, end_of_input=end), strategy, name)


def bounded(idle: Optional[int] = None) -> WatermarkStrategy:
    s = WatermarkStrategy.for_bounded_out_of_orderness(0).with_timestamp_assigner(ts1)
    return s if idle is None else s.with_idleness(idle)


def collect_windows(stream: Any, size: int = 10) -> Tuple[List[Any], List[Any]]:
    win = stream.key_by(lambda v: "k").window(TumblingEventTimeWindows.of(size)).side_output_late_data(LATE)
    main = win.process(Describe(ts1))
    late: List[Any] = []
    main.get_side_output(LATE).add_sink(late.append)
    return list(main.execute_and_collect()), late


# ------------------------------------------------------------------------ per-partition watermarks


def lagging_source(env: StreamExecutionEnvironment, partitions: Tuple[int, int]) -> Any:
    batches = [
        MicroBatch([("x", 100), ("y", 5)], partitions=list(partitions)),
        MicroBatch([("y", 7)], partitions=[partitions[1]]),
    ]
    return env.from_source(MicroBatchSource(batches, partitions=sorted(set(partitions))), bounded(), "lagging")


def test_lagging_partition_events_are_not_late() -> None:
    env = env_manual()
    main, late = collect_windows(lagging_source(env, (0, 1)))
    # watermark after batch 0 = min(99, 4) = 4: the lagging partition's ts 7 is on time
    assert main == [(0, 10, [5, 7], LONG_MAX), (100, 110, [100], LONG_MAX)]
    assert late == []


def test_single_partition_has_global_watermark_and_drops_late() -> None:
    env = env_manual()
    main, late = collect_windows(lagging_source(env, (0, 0)))
    # one partition: watermark 99 after batch 0, so ts 7 is late (what a global max-based watermark does)
    assert main == [(0, 10, [5], 99), (100, 110, [100], LONG_MAX)]
    assert late == [("y", 7)]


def idle_batches() -> List[MicroBatch]:
    return [
        MicroBatch([("a", 100)], partitions=[0], processing_time=0),
        MicroBatch([("a", 110)], partitions=[0], processing_time=50),
        MicroBatch([], processing_time=101),
        MicroBatch([("b", 50)], partitions=[1], processing_time=150),
        MicroBatch([("a", 200)], partitions=[0], processing_time=160),
    ]


def run_idle(idle: Optional[int]) -> List[Any]:
    env = env_manual()
    src = env.from_source(MicroBatchSource(idle_batches(), partitions=[0, 1]), bounded(idle), "idle")
    return list(src.key_by(lambda v: v[0]).process(Probe()).execute_and_collect())


def test_idleness_driven_by_batch_processing_time() -> None:
    assert run_idle(100) == [
        ("in", "a", 100, LONG_MIN),
        ("in", "a", 110, LONG_MIN),
        # pt 101: partition 1 (quiet since its first check at 0) is idle (101 - 0 > 100): W = 109
        ("fire", 100, 109, 101),
        # partition 1 returns behind the watermark: no regression; its record is not dropped
        ("in", "b", 50, 109),
        # partition 1 is back in the min (49): W does not advance to 199
        ("in", "a", 200, 109),
        ("fire", 50, LONG_MAX, 160),
        ("fire", 110, LONG_MAX, 160),
        ("fire", 200, LONG_MAX, 160),
    ]


def test_without_idleness_empty_partition_holds_event_time() -> None:
    out = run_idle(None)
    fires = [o for o in out if o[0] == "fire"]
    assert fires == [
        ("fire", 50, LONG_MAX, 160),
        ("fire", 100, LONG_MAX, 160),
        ("fire", 110, LONG_MAX, 160),
        ("fire", 200, LONG_MAX, 160),
    ]
    # partition 1's first record (batch 3) lets the min rise to 49; 100 and 110 still wait for the end
    assert [o[3] for o in out if o[0] == "in"] == [LONG_MIN, LONG_MIN, LONG_MIN, 49]


def test_idleness_boundary_is_strict() -> None:
    batches = idle_batches()
    batches[2] = MicroBatch([], processing_time=100)  # 100 - 0 == 100: not idle yet
    env = env_manual()
    src = env.from_source(MicroBatchSource(batches[:3], partitions=[0, 1]), bounded(100), "idle")
    out = list(src.key_by(lambda v: v[0]).process(Probe()).execute_and_collect())
    assert [o for o in out if o[0] == "fire"] == [("fire", 100, LONG_MAX, 100), ("fire", 110, LONG_MAX, 100)]


def test_processing_time_needs_manual_clock() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    src = env.from_source(MicroBatchSource([MicroBatch([("a", 1)], processing_time=5)]), bounded(), "s")
    with pytest.raises(FlinkishError, match="ManualClock"):
        list(src.execute_and_collect())


# ------------------------------------------------------------------------------------------ union


def test_union_is_min_over_inputs_and_idle_input_leaves_the_min() -> None:
    env = env_manual()
    a = env.from_source(
        MicroBatchSource(
            [
                MicroBatch([("a", 100)], processing_time=0),
                MicroBatch([("a", 200)], processing_time=50),
                MicroBatch([("a", 300)], processing_time=200),
                MicroBatch([], processing_time=210),
            ]
        ),
        bounded(100),
        "A",
    )
    b = env.from_source(
        MicroBatchSource([MicroBatch([("b", 10)]), MicroBatch([]), MicroBatch([]), MicroBatch([])]),
        bounded(100),
        "B",
    )
    out = list(a.union(b).key_by(lambda v: v[0]).process(Probe()).execute_and_collect())
    assert out == [
        ("in", "a", 100, LONG_MIN),
        ("in", "b", 10, LONG_MIN),
        # W = min(99, 9) = 9 after batch 0, held by B through batch 1 (B's quiet clock starts at pt 50)
        ("in", "a", 200, 9),
        ("in", "a", 300, 9),
        # batch 2 at pt 200: B idle (200 - 50 > 100) leaves the min: W = A's 299
        ("fire", 10, 299, 200),
        ("fire", 100, 299, 200),
        ("fire", 200, 299, 200),
        ("fire", 300, LONG_MAX, 210),
    ]


def test_union_without_idleness_waits_for_slowest_input() -> None:
    env = env_manual()
    a = env.from_source(MicroBatchSource([MicroBatch([("a", 100)]), MicroBatch([("a", 200)])]), bounded(), "A")
    b = env.from_source(MicroBatchSource([MicroBatch([("b", 10)]), MicroBatch([("b", 150)])]), bounded(), "B")
    out = list(a.union(b).key_by(lambda v: v[0]).process(Probe()).execute_and_collect())
    assert out == [
        ("in", "a", 100, LONG_MIN),
        ("in", "b", 10, LONG_MIN),
        ("in", "a", 200, 9),
        ("in", "b", 150, 9),
        ("fire", 10, 149, 0),  # min(199, 149)
        ("fire", 100, 149, 0),
        ("fire", 150, LONG_MAX, 0),
        ("fire", 200, LONG_MAX, 0),
    ]


# --------------------------------------------------------------------- assign_timestamps_and_watermarks


def test_assign_timestamps_and_watermarks_drops_upstream_watermarks_except_max() -> None:
    env = env_manual()
    src = explicit(
        env,
        [MicroBatch([("a", 1)], watermark=1000), MicroBatch([("a", 5)], watermark=2000), MicroBatch([], watermark=3000)],
    )
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(0).with_timestamp_assigner(lambda v: v[1] * 10)
    out = list(src.assign_timestamps_and_watermarks(strategy).key_by(lambda v: v[0]).process(Probe()).execute_and_collect())
    assert out == [
        ("in", "a", 10, LONG_MIN),  # re-stamped
        ("in", "a", 50, 9),  # generated watermark 9, not the upstream 1000
        ("fire", 10, 49, 0),
        ("fire", 50, LONG_MAX, 0),  # upstream MAX is forwarded
    ]


def test_last_batch_generated_watermark_precedes_end_of_input() -> None:
    """Per batch, the periodic emission runs in topological order and only *then* does a bounded source
    that ran out of batches emit LONG_MAX (executor docstring, conformance README §3): the last batch's
    watermark generated downstream (49) is emitted before the end of input."""
    env = env_manual()
    src = explicit(env, [MicroBatch([("a", 1)], watermark=1000), MicroBatch([("a", 5)], watermark=2000)])
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(0).with_timestamp_assigner(lambda v: v[1] * 10)
    out = list(src.assign_timestamps_and_watermarks(strategy).key_by(lambda v: v[0]).process(Probe()).execute_and_collect())
    assert out == [
        ("in", "a", 10, LONG_MIN),
        ("in", "a", 50, 9),
        ("fire", 10, 49, 0),
        ("fire", 50, LONG_MAX, 0),
    ]


def test_assign_timestamps_and_watermarks_without_end_of_input() -> None:
    env = env_manual()
    src = explicit(env, [MicroBatch([("a", 1)], watermark=1000), MicroBatch([("a", 5)], watermark=2000)], end=False)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(0).with_timestamp_assigner(lambda v: v[1] * 10)
    out = list(src.assign_timestamps_and_watermarks(strategy).key_by(lambda v: v[0]).process(Probe()).execute_and_collect())
    assert [o for o in out if o[0] == "fire"] == [("fire", 10, 49, 0)]


class Punctuated(WatermarkGenerator):
    """Emits a watermark at the event's timestamp for every event keyed 'P'."""

    def on_event(self, event: Any, event_timestamp: int, output: Any) -> None:
        if event[0] == "P":
            output.emit_watermark(Watermark(event_timestamp))

    def on_periodic_emit(self, output: Any) -> None:
        return None


def test_assign_timestamps_punctuated_watermark_follows_its_record() -> None:
    env = env_manual()
    src = explicit(env, [MicroBatch([("a", 5), ("P", 10), ("a", 8)], watermark=0), MicroBatch([], watermark=1)])
    strategy = WatermarkStrategy.for_generator(Punctuated).with_timestamp_assigner(ts1)
    out = list(src.assign_timestamps_and_watermarks(strategy).key_by(lambda v: v[0]).process(Probe()).execute_and_collect())
    assert out == [
        ("in", "a", 5, LONG_MIN),
        ("in", "P", 10, LONG_MIN),  # the record goes first, then its watermark
        ("fire", 5, 10, 0),
        ("fire", 10, 10, 0),
        ("in", "a", 8, 10),  # mid-batch: the next record already sees W = 10
        ("fire", 8, LONG_MAX, 0),  # registered at ts <= W: fires at the next advance
    ]


# ------------------------------------------------------------------------------------ chained windows


def test_chained_windows_second_fires_from_first_output_watermark() -> None:
    env = env_manual()
    src = explicit(
        env,
        [
            MicroBatch([("a", 1, 1), ("a", 5, 2), ("b", 12, 3)], watermark=9),
            MicroBatch([("a", 15, 4)], watermark=19),
            MicroBatch([], watermark=30),
        ],
    )
    first = (
        src.key_by(lambda v: v[0])
        .window(TumblingEventTimeWindows.of(10))
        .reduce(lambda x, y: (x[0], max(x[1], y[1]), x[2] + y[2]))
    )
    first_stamped: List[Any] = []
    first.process(Stamp()).add_sink(first_stamped.append)
    second = (
        first.map(lambda v: ("all", v[2]))
        .key_by(lambda v: v[0])
        .window(TumblingEventTimeWindows.of(20))
        .side_output_late_data(LATE)
        .process(Describe(lambda v: v[1]))
    )
    late: List[Any] = []
    second.get_side_output(LATE).add_sink(late.append)
    out = list(second.process(Stamp()).execute_and_collect())
    # first window results carry end - 1
    assert sorted(first_stamped) == [(("a", 5, 3), 9), (("a", 15, 4), 19), (("b", 12, 3), 19)]
    # they are on time downstream, and the second window fires at the first's forwarded watermark 19
    assert out == [((0, 20, [3, 3, 4], 19), 19)]
    assert late == []


# ----------------------------------------------------------------------------------- source checks


def test_explicit_watermarks_with_generating_strategy_rejected() -> None:
    env = env_manual()
    source = MicroBatchSource([MicroBatch([("a", 1)], watermark=5)])
    with pytest.raises(InvalidTypeError):
        env.from_source(source, WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ts1), "s")
    with pytest.raises(InvalidTypeError):
        env.from_source(source, WatermarkStrategy.for_bounded_out_of_orderness(3), "s")
    env.from_source(source, WatermarkStrategy.no_watermarks().with_timestamp_assigner(ts1), "s")  # fine


def test_micro_batch_validation() -> None:
    with pytest.raises(InvalidArgumentError):
        MicroBatchSource([MicroBatch([1], watermark=10), MicroBatch([2], watermark=9)])
    MicroBatchSource([MicroBatch([1], watermark=10), MicroBatch([2], watermark=10)])  # equal is fine
    with pytest.raises(InvalidArgumentError):
        MicroBatchSource([MicroBatch([1], watermark=10), MicroBatch([2])])
    with pytest.raises(InvalidArgumentError):
        MicroBatch([1, 2], partitions=[0])
    with pytest.raises(InvalidArgumentError):
        MicroBatch([1], watermark=LONG_MAX)
    with pytest.raises(InvalidTypeError):
        MicroBatchSource(["not a batch"])  # type: ignore[list-item]


# ------------------------------------------------------------------------------------- basic API


def test_from_collection_and_execute_and_collect() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    out = list(
        env.from_collection([1, 2, 3]).map(lambda x: x * 2).filter(lambda x: x != 4).process(Stamp()).execute_and_collect()
    )
    assert out == [(2, None), (6, None)]
    env2 = StreamExecutionEnvironment.get_execution_environment()
    rolled = list(
        env2.from_collection([("a", 1), ("b", 2), ("a", 3)])
        .key_by(lambda v: v[0])
        .reduce(lambda x, y: (x[0], x[1] + y[1]))
        .execute_and_collect()
    )
    assert rolled == [("a", 1), ("b", 2), ("a", 4)]
    env3 = StreamExecutionEnvironment.get_execution_environment()
    # with limit, a list (PyFlink 2.3's execute_and_collect(limit=...) returns one)
    assert env3.from_collection([1, 2, 3]).flat_map(lambda x: [x] * x).execute_and_collect(limit=4) == [1, 2, 2, 3]


def test_process_function_side_outputs_reach_side_streams() -> None:
    odd, big = OutputTag("odd"), OutputTag("big")

    class Split(ProcessFunction):
        def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
            if value % 2:
                ctx.output(odd, value)
            if value > 3:
                yield big, value * 100
            yield value

    env = env_manual()
    src = explicit(env, [MicroBatch([("v", 1), ("v", 4), ("v", 5)], watermark=0)])
    main = src.map(lambda v: v[1]).process(Split())
    odd_out: List[Any] = []
    big_out: List[Any] = []
    main.get_side_output(odd).process(Stamp()).add_sink(odd_out.append)
    main.get_side_output(big).add_sink(big_out.append)
    assert list(main.execute_and_collect()) == [1, 4, 5]
    assert odd_out == [(1, 1), (5, 5)]  # side outputs keep the record's timestamp
    assert big_out == [400, 500]


def test_end_of_input_false_fires_nothing_at_the_end() -> None:
    batches = [MicroBatch([("a", 3), ("a", 12)], watermark=5), MicroBatch([("a", 25)], watermark=15)]
    env = env_manual()
    main, late = collect_windows(explicit(env, batches, end=False))
    assert main == [(0, 10, [3], 15)]
    assert late == []
    env = env_manual()
    main, _ = collect_windows(explicit(env, batches, end=True))
    assert main == [(0, 10, [3], 15), (10, 20, [12], LONG_MAX), (20, 30, [25], LONG_MAX)]
    env = env_manual()
    out = list(explicit(env, batches, end=False).key_by(lambda v: v[0]).process(Probe()).execute_and_collect())
    assert [o for o in out if o[0] == "fire"] == [("fire", 3, 5, 0), ("fire", 12, 15, 0)]


def test_deterministic_repeated_runs() -> None:
    def build() -> Tuple[StreamExecutionEnvironment, Any]:
        env = env_manual()
        src = env.from_source(MicroBatchSource(idle_batches(), partitions=[0, 1]), bounded(100), "idle")
        keyed = src.key_by(lambda v: v[0])
        probe = keyed.process(Probe())
        windows = keyed.window(TumblingEventTimeWindows.of(10)).process(Describe(ts1))
        return env, probe.union(windows.map(lambda w: ("window",) + tuple(map(str, w))))

    runs = []
    for _ in range(3):
        _, stream = build()
        runs.append(list(stream.execute_and_collect()))
    assert runs[0] == runs[1] == runs[2]
    assert len(runs[0]) == 11  # 8 probe records + 3 windows (b's [50, 60) is late for the window: dropped)
    # the same environment executed twice starts from scratch each time
    env, stream = build()
    env.set_manual_clock(0)
    first = list(stream.execute_and_collect())
    env.set_manual_clock(0)
    second = list(stream.execute_and_collect())
    assert first == second == runs[0]


def test_builtin_callables_are_functions_as_in_pyflink() -> None:
    """PyFlink takes any callable: ``map(int)``, ``map(str)``, ``filter(bool)``, ``key_by(len)``."""
    env = StreamExecutionEnvironment.get_execution_environment()
    out = list(env.from_collection(["1", "0", "22"]).map(int).filter(bool).map(str).execute_and_collect())
    assert out == ["1", "22"]
    env2 = StreamExecutionEnvironment.get_execution_environment()
    rolled = list(env2.from_collection(["a", "bb", "c"]).key_by(len).reduce(max).execute_and_collect())
    assert rolled == ["a", "bb", "c"]


def test_function_class_instead_of_instance_is_refused_up_front() -> None:
    from pyspark_flinkish.datastream.functions import MapFunction

    class Double(MapFunction):
        def map(self, value: Any) -> Any:
            return value * 2

    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(InvalidTypeError, match=r"got the class Double; pass Double\(...\)"):
        env.from_collection([1]).map(Double)
    assert list(env.from_collection([1, 2]).map(Double()).execute_and_collect()) == [2, 4]
