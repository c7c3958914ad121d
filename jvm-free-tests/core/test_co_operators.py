"""Two-input operators' rules in the core: the combined watermark (min of the inputs over the non-idle ones), broadcast
state's read-only side, the PyFlink API's checks, and what a function may not do (keyed state without a key, timers on
a non-keyed stream)."""

from __future__ import annotations

import json
from typing import Any, List

import pytest

from pyspark_flinkish.common import WatermarkStrategy
from pyspark_flinkish.core.broadcast_state import BroadcastStateStore
from pyspark_flinkish.core.errors import InvalidArgumentError, InvalidPipelineError, InvalidTypeError, UserFunctionError
from pyspark_flinkish.core.javamath import LONG_MIN
from pyspark_flinkish.core.two_input_watermarks import TwoInputWatermarkValve
from pyspark_flinkish.core.watermark_alignment import StatusWatermarkValve
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import (
    BroadcastProcessFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
)
from pyspark_flinkish.datastream.state import MapStateDescriptor, ValueStateDescriptor


def test_combined_watermark_is_the_minimum_and_only_increases() -> None:
    c = TwoInputWatermarkValve()
    assert c.input_watermark(0, 10) is None  # input 1 still at MIN
    assert c.input_watermark(1, 5) == 5
    assert c.input_watermark(1, 20) == 10
    assert c.input_watermark(0, 15) == 15
    assert c.input_watermark(0, 12) is None  # a smaller watermark never regresses an input


def test_an_idle_input_leaves_the_minimum_and_all_idle_emits_nothing() -> None:
    """Unlike a union's valve, which flushes the maximum when its last channel goes idle."""
    c = TwoInputWatermarkValve()
    c.input_watermark(0, 10)
    c.input_watermark(1, 3)
    assert c.input_idle(1, True) == (10, None)
    assert c.input_idle(0, True) == (None, True)
    assert c.input_idle(1, False) == (None, False)  # back at 3: below the combined 10, nothing is emitted
    assert c.input_watermark(1, 11) == 11
    valve = StatusWatermarkValve(2)
    valve.input_watermark(0, 10)
    valve.input_watermark(1, 30)
    valve.input_idle(1, True)
    assert valve.input_idle(0, True)[0] == 30  # the valve's rule, not the two-input operator's


def test_combined_watermark_round_trips_through_its_document() -> None:
    c = TwoInputWatermarkValve()
    c.input_watermark(0, 7)
    c.input_idle(1, True)
    back = TwoInputWatermarkValve.from_dict(json.loads(json.dumps(c.to_dict())))
    assert back.to_dict() == c.to_dict()
    assert TwoInputWatermarkValve().last_output == LONG_MIN


def test_broadcast_state_read_only_view_refuses_writes_and_undeclared_descriptors() -> None:
    rules = MapStateDescriptor("rules")
    store = BroadcastStateStore([rules])
    store.view(rules, writable=True).put("a", 1)
    ro = store.view(rules, writable=False)
    assert ro.get("a") == 1 and "a" in ro and list(ro) == ["a"] and not ro.is_empty()
    with pytest.raises(InvalidPipelineError, match="read-only"):
        ro.put("b", 2)
    with pytest.raises(InvalidPipelineError, match="read-only"):
        ro.remove("a")
    with pytest.raises(InvalidArgumentError, match=r"does not exist.*broadcast"):
        store.view(MapStateDescriptor("other"), writable=True)


def _env_streams() -> Any:
    env = StreamExecutionEnvironment.get_execution_environment()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
    a = env.from_source(MicroBatchSource([MicroBatch([("k", 1), ("j", 2)])]), strategy, "a")
    b = env.from_source(MicroBatchSource([MicroBatch([("r", 0)])]), strategy, "b")
    return env, a, b


def test_api_checks_follow_pyflink() -> None:
    _, a, b = _env_streams()
    desc = MapStateDescriptor("rules")

    class K(KeyedCoProcessFunction):  # type: ignore[type-arg]
        def process_element1(self, value: Any, ctx: Any) -> Any:
            return []

        def process_element2(self, value: Any, ctx: Any) -> Any:
            return []

    class B(BroadcastProcessFunction):  # type: ignore[type-arg]
        def process_element(self, value: Any, ctx: Any) -> Any:
            return []

        def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
            return []

    with pytest.raises(InvalidPipelineError, match="key_by"):
        a.connect(b).process(K())
    with pytest.raises(InvalidTypeError, match="non-keyed"):
        a.key_by(lambda e: e[0]).connect(b.broadcast(desc)).process(B())
    with pytest.raises(InvalidPipelineError, match="Cannot override partitioning"):
        a.key_by(lambda e: e[0]).broadcast(desc)
    with pytest.raises(InvalidTypeError, match="MapStateDescriptor"):
        b.broadcast(ValueStateDescriptor("v"))
    with pytest.raises(InvalidPipelineError, match=r"^connect\(\) right after broadcast\(\).*MapStateDescriptor"):
        a.connect(b.broadcast())  # a plain broadcast() is a partitioning, not a BroadcastStream
    with pytest.raises(InvalidTypeError, match="map1"):
        a.connect(b).map(lambda v: v)
    other = StreamExecutionEnvironment.get_execution_environment().from_collection([1])
    with pytest.raises(InvalidPipelineError, match="different environments"):
        a.connect(other)


def _run(stream: Any) -> List[Any]:
    return list(stream.execute_and_collect())


def test_timers_need_keyed_connected_streams() -> None:
    _, a, b = _env_streams()

    class Timer(CoProcessFunction):  # type: ignore[type-arg]
        def process_element1(self, value: Any, ctx: Any) -> Any:
            ctx.timer_service().register_event_time_timer(10)
            return []

        def process_element2(self, value: Any, ctx: Any) -> Any:
            return []

    with pytest.raises(UserFunctionError, match="only supported on keyed streams"):
        _run(a.connect(b).process(Timer()))


def test_broadcast_side_has_no_key_and_keyed_side_reads_only() -> None:
    desc = MapStateDescriptor("rules")

    class KeyedStateOnBroadcastSide(KeyedBroadcastProcessFunction):  # type: ignore[type-arg]
        def open(self, runtime_context: Any) -> None:
            self.seen = runtime_context.get_state(ValueStateDescriptor("seen"))

        def process_element(self, value: Any, ctx: Any) -> Any:
            yield ctx.get_current_key(), ctx.get_broadcast_state(desc).get("r")

        def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
            ctx.get_broadcast_state(desc).put(value[0], value[1])
            self.seen.update(True)  # keyed state: there is no current key here
            return []

    _, a, b = _env_streams()
    with pytest.raises(UserFunctionError, match="no current key"):
        _run(a.key_by(lambda e: e[0]).connect(b.broadcast(desc)).process(KeyedStateOnBroadcastSide()))


def test_connect_a_stream_with_itself_delivers_each_element_to_both_inputs() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    s = env.from_collection([1, 2])

    class Tag(CoMapFunction):  # type: ignore[type-arg]
        def map1(self, value: Any) -> Any:
            return ("first", value)

        def map2(self, value: Any) -> Any:
            return ("second", value)

    assert sorted(_run(s.connect(s).map(Tag()))) == [("first", 1), ("first", 2), ("second", 1), ("second", 2)]


def test_co_map_and_co_flat_map_on_keyed_connected_streams_have_keyed_state() -> None:
    """As in PyFlink, which runs them as a KeyedCoProcessFunction after key_by."""
    from pyspark_flinkish.datastream.functions import CoFlatMapFunction

    class Count(CoMapFunction):  # type: ignore[type-arg]
        def open(self, runtime_context: Any) -> None:
            self.n = runtime_context.get_state(ValueStateDescriptor("n"))

        def _next(self, value: Any) -> Any:
            self.n.update((self.n.value() or 0) + 1)
            return value[0], self.n.value()

        def map1(self, value: Any) -> Any:
            return self._next(value)

        def map2(self, value: Any) -> Any:
            return self._next(value)

    class CountTwice(CoFlatMapFunction):  # type: ignore[type-arg]
        def open(self, runtime_context: Any) -> None:
            self.count = Count()
            self.count.open(runtime_context)

        def flat_map1(self, value: Any) -> Any:
            yield self.count.map1(value)
            yield value

        def flat_map2(self, value: Any) -> Any:
            yield self.count.map2(value)

    _, a, b = _env_streams()
    keyed = a.connect(b).key_by(lambda e: e[0], lambda e: e[0])
    assert sorted(_run(keyed.map(Count()))) == [("j", 1), ("k", 1), ("r", 1)]
    _, a, b = _env_streams()
    c = a.connect(a).key_by(lambda e: e[0], lambda e: e[0])
    # each element reaches both inputs of a stream connected with itself: counted twice per key
    assert sorted(_run(c.flat_map(CountTwice()))) == [("j", 1), ("j", 2), ("j", 2), ("k", 1), ("k", 1), ("k", 2)]
    with pytest.raises(UserFunctionError, match="keyed stream"):
        _run(a.connect(b).map(Count()))


def test_keyed_two_input_operators_are_refused_in_batch_mode() -> None:
    from pyspark_flinkish.core.errors import UnsupportedFeatureError
    from pyspark_flinkish.datastream import RuntimeExecutionMode

    env, a, b = _env_streams()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)

    class Count(CoMapFunction):  # type: ignore[type-arg]
        def map1(self, value: Any) -> Any:
            return value

        def map2(self, value: Any) -> Any:
            return value

    assert sorted(_run(a.connect(b).map(Count()))) == [("j", 2), ("k", 1), ("r", 0)]  # non-keyed: runs
    keyed = a.connect(b).key_by(lambda e: e[0], lambda e: e[0]).map(Count())
    with pytest.raises(UnsupportedFeatureError, match=r"BATCH runtime mode.*STREAMING"):
        _run(keyed)


class _Recording:
    def __init__(self) -> None:
        self.out: List[Any] = []

    def collect(self, record: Any) -> None:
        self.out.append(("main", record.value, record.timestamp))

    def collect_side(self, tag: Any, record: Any) -> None:
        self.out.append((tag.get_id(), record.value, record.timestamp))

    def emit_watermark(self, watermark: int) -> None:
        pass

    def emit_idle(self, idle: bool) -> None:
        pass


@pytest.mark.parametrize("copies", [0, 1, 3])
def test_what_process_broadcast_element_emits_is_sent_once_per_parallel_instance(copies: int) -> None:
    """Returned, yielded to a side output and written through ``ctx.output`` alike (Flink: every parallel instance
    runs it; 0 on a Spark state partition whose copies partition 0 sends); the state is updated once, and what
    ``process_element`` emits is sent once."""
    from pyspark_flinkish.core.clock import ManualClock
    from pyspark_flinkish.core.co_operators import KeyedBroadcastProcessOperator
    from pyspark_flinkish.core.records import OutputTag, StreamRecord

    desc = MapStateDescriptor("rules", None, None)
    side = OutputTag("side")

    class Rules(KeyedBroadcastProcessFunction):
        def process_element(self, value: Any, ctx: Any) -> Any:
            yield "event", value

        def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
            state = ctx.get_broadcast_state(desc)
            state.put("count", (state.get("count") or 0) + 1)
            ctx.output(side, ("through ctx", value))
            yield "rule", value, state.get("count")
            yield side, ("yielded", value)

    op = KeyedBroadcastProcessOperator("b", lambda v: v, Rules(), [desc], parallelism=3)
    op.broadcast_copies = copies
    recording = _Recording()
    op.open(recording, ManualClock(0))
    op.process_unkeyed(1, StreamRecord(["r1"], 5))
    op.process_unkeyed(1, StreamRecord(["r2"], 6))
    op.process_keyed_input(0, "k", StreamRecord("k", 7))
    once = [
        ("side", ("through ctx", ["r1"]), 5), ("main", ("rule", ["r1"], 1), 5), ("side", ("yielded", ["r1"]), 5),
    ]
    twice = [
        ("side", ("through ctx", ["r2"]), 6), ("main", ("rule", ["r2"], 2), 6), ("side", ("yielded", ["r2"]), 6),
    ]
    assert recording.out == once * copies + twice * copies + [("main", ("event", "k"), 7)]
    if copies > 1:  # every instance has values of its own, as Flink's deserialized copies
        assert recording.out[0][1][1] is not recording.out[3][1][1]
    assert op.broadcast_state.view(desc, False).get("count") == 2


def test_a_broadcast_operator_is_made_with_its_parallelism_and_its_factory_ships_without_the_plan() -> None:
    """Flink: an operator's parallelism is its ``set_parallelism``, else the environment's when it was made; Spark
    pickles the factory to its executors, so it must not drag the plan (sources, DataFrames) along."""
    from pyspark import cloudpickle

    desc = MapStateDescriptor("rules", None, None)

    class Rules(KeyedBroadcastProcessFunction):
        def process_element(self, value: Any, ctx: Any) -> Any:
            return []

        def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
            return []

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    events = env.from_collection(["a", "b"]).key_by(lambda e: e)
    rules = env.from_collection([1]).broadcast(desc)
    made_at_2 = events.connect(rules).process(Rules())
    set_to_3 = events.connect(rules).process(Rules()).set_parallelism(3)
    non_parallel = events.connect(rules).process(Rules()).force_non_parallel()
    env.set_parallelism(5)
    made_at_5 = events.connect(rules).process(Rules())
    copies = [s._t.factory().broadcast_copies for s in (made_at_2, set_to_3, non_parallel, made_at_5)]
    assert copies == [2, 3, 1, 5]
    env.set_parallelism(-1)  # Flink's "system default": the machine's cores in Flink, 1 here
    assert events.connect(rules).process(Rules())._t.factory().broadcast_copies == 1
    shipped = cloudpickle.dumps(set_to_3._t.factory)
    assert b"Transformation" not in shipped and b"from_collection" not in shipped
    assert cloudpickle.loads(shipped)().broadcast_copies == 3
