"""Differential property test: random pipelines give the same outputs on the local engine and on the Spark
executors' real bodies — the foreachBatch executor's (``foreach_batch_harness``: route, driver watermarks, keyed
levels, the batch-wise window path with ``vectorize`` on, the general path with it off) and the
applyInPandasWithState executor's (``stateful_harness``, ``vectorize`` on and off) — or are refused up front on
Spark.

Pipelines: one or two replay sources (two: ``union``, the watermark is the minimum; the same number of batches, see
``docs/differences.md`` for sources of different lengths) with random micro-batches and
source partitions, a built-in or a custom (per-event) watermark generator, optionally a stateless map/filter and
``assign_timestamps_and_watermarks``, then one keyed operator — a window (tumbling, sliding, session, count and
global windows; default, purging, count and continuous triggers; count and time evictors; allowed lateness and a
late-data side output; reduce, aggregate, process, and both combined; window functions keeping counts in
``window_state()`` and ``global_state()``, directly and through module-level helpers, clearing in ``clear()``) or
a ``KeyedProcessFunction`` with event-time or processing-time timers and runtime-context state. Processing time is
replayed (``MicroBatch.processing_time`` on a manual clock) for pipelines that use it (processing-time timers,
processing-time tumbling windows, ``ContinuousProcessingTimeTrigger``): it must drive them alike on both engines.

Outputs are compared as multisets per sink, and those that carry their key first also in order per key (as a
sink sees them): Flink does not order the firings of different keys, or of one key's timers with equal
timestamps (so neither the order nor ``global_state()`` counters are checked with ``ContinuousEventTimeTrigger``).

A second property test runs ``from_dataframe`` sources into windows of ``ColumnAggregate`` through the columnar
path (``vectorize=True``) and the fused route with the general operator (``vectorize=False``).

``FLINKISH_DIFFERENTIAL_EXAMPLES`` sets the number of examples (default 15, a few seconds).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import pandas as pd
import pytest
from foreach_batch_harness import PandasStream, local_outputs, run_foreach_batch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import Row
from pyspark.sql.types import LongType, StringType, StructField, StructType
from stateful_harness import run_apply_in_pandas_with_state

from pyspark_flinkish.common import Duration, Types, Watermark, WatermarkGenerator, WatermarkStrategy
from pyspark_flinkish.core.errors import UnsupportedFeatureError
from pyspark_flinkish.datastream import MicroBatch, OutputTag
from pyspark_flinkish.datastream.aggregates import ColumnAggregate, Count, Max, Min, Sum
from pyspark_flinkish.datastream.functions import AggregateFunction, KeyedProcessFunction, ProcessWindowFunction
from pyspark_flinkish.datastream.state import ValueStateDescriptor
from pyspark_flinkish.datastream.window import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountEvictor,
    CountTrigger,
    EventTimeSessionWindows,
    GlobalWindows,
    PurgingTrigger,
    SlidingEventTimeWindows,
    TimeEvictor,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment

EXAMPLES = int(os.environ.get("FLINKISH_DIFFERENTIAL_EXAMPLES", "15"))
COUNT = ValueStateDescriptor("count", Types.INT())
ELEMENT_TYPE = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])
TOTAL = ValueStateDescriptor("total", Types.LONG())


# ------------------------------------------------------------------------------------------ user functions
def bump(store: Any) -> int:
    """A count kept in ``store`` (a window's, a key's or the runtime context's state store), incremented."""
    state = store.get_state(COUNT)
    n = (state.value() or 0) + 1
    state.update(n)
    return n


def bump_key(context: Any) -> int:
    """The key's count, reached through the context's global state inside this helper."""
    return bump(context.global_state())


class Fired(ProcessWindowFunction):
    """``(key, window end, elements, n)``; ``n`` counts this window's firings (``window``), the key's
    (``global``, ``global_helper``) or is 0 (``none``)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        if self.mode == "window":
            n = bump(context.window_state())
        elif self.mode == "global":
            n = bump(context.global_state())
        elif self.mode == "global_helper":
            n = bump_key(context)
        else:
            n = 0
        yield key, context.window().max_timestamp(), list(elements), n


class FiredAndCleared(Fired):
    """``Fired("window")`` dropping the window's count at its cleanup time."""

    def __init__(self) -> None:
        super().__init__("window")

    def clear(self, context: Any) -> None:
        context.window_state().get_state(COUNT).clear()


class CountAndSum(AggregateFunction):
    def create_accumulator(self) -> Any:
        return (0, 0)

    def add(self, value: Any, accumulator: Any) -> Any:
        return (accumulator[0] + 1, accumulator[1] + value[2])

    def get_result(self, accumulator: Any) -> Any:
        return accumulator

    def merge(self, a: Any, b: Any) -> Any:
        return (a[0] + b[0], a[1] + b[1])


def add_values(a: Any, b: Any) -> Any:
    return (a[0], max(a[1], b[1]), a[2] + b[2])


class Timers(KeyedProcessFunction):
    """Keeps a running total in runtime-context state; a timer ``delay`` after every element (event time, or
    processing time with ``processing``) emits the total and how many timers of the key fired before."""

    def __init__(self, delay: int, processing: bool = False) -> None:
        self.delay = delay
        self.processing = processing

    def open(self, runtime_context: Any) -> None:
        self.total = runtime_context.get_state(TOTAL)
        self.context = runtime_context

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.total.update((self.total.value() or 0) + value[2])
        timers = ctx.timer_service()
        if self.processing:
            timers.register_processing_time_timer(timers.current_processing_time() + self.delay)
        elif ctx.timestamp() is not None:
            timers.register_event_time_timer(ctx.timestamp() + self.delay)
        yield value[0], "in", value[1], ctx.timer_service().current_watermark()

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield ctx.get_current_key(), "timer", timestamp, self.total.value(), bump(self.context)


class Punctuated(WatermarkGenerator):
    """A per-event generator: a watermark just below an element whose value is 0 (reads the event)."""

    def on_event(self, event: Any, event_timestamp: int, output: Any) -> None:
        if event[2] == 0:
            output.emit_watermark(Watermark(event_timestamp - 1))

    def on_periodic_emit(self, output: Any) -> None:
        return None


class PerElement(WatermarkGenerator):
    """Flink's ``PerElementWatermarkGenerator``: a watermark at every element's timestamp (ignores the event)."""

    def on_event(self, event: Any, event_timestamp: int, output: Any) -> None:
        output.emit_watermark(Watermark(event_timestamp))

    def on_periodic_emit(self, output: Any) -> None:
        return None


# ------------------------------------------------------------------------------------------ pipelines
@dataclass(frozen=True)
class Pipeline:
    batches: Tuple[Tuple[Tuple[Tuple[str, int, int], int], ...], ...]  # per batch: ((element, partition), ...)
    partitions: int
    second: Optional[Tuple[Tuple[Tuple[str, int, int], ...], ...]]  # a second source's batches (union)
    strategy: Tuple[Any, ...]  # ("bounded", ms) | ("monotonous",) | ("custom", "punctuated" | "per_element")
    pre: Optional[str]  # None | "map" | "filter" | "typed_flat_map" (a declared output type)
    restamp: Optional[Tuple[Any, ...]]  # assign_timestamps_and_watermarks: a strategy as above
    operator: Dict[str, Any]
    proc_times: Optional[Tuple[int, ...]] = None  # MicroBatch.processing_time per batch (replayed processing time)

    @property
    def custom_generator(self) -> bool:
        return self.strategy[0] == "custom" or (self.restamp is not None and self.restamp[0] == "custom")

    @property
    def processing_time(self) -> bool:
        """Whether the keyed operator uses processing time (timers, windows or triggers)."""
        op = self.operator
        if op["kind"] == "process":
            return bool(op.get("processing"))
        return op["assigner"][0] == "proc_tumbling" or (op["trigger"] is not None and op["trigger"][0] == "continuous_proc")


def _strategy(spec: Tuple[Any, ...]) -> WatermarkStrategy:
    if spec[0] == "bounded":
        base = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(spec[1]))
    elif spec[0] == "monotonous":
        base = WatermarkStrategy.for_monotonous_timestamps()
    else:
        base = WatermarkStrategy.for_generator(Punctuated if spec[1] == "punctuated" else PerElement)
    return base.with_timestamp_assigner(lambda e, _: e[1])


def build(p: Pipeline, out: Dict[str, List[Any]]) -> Any:
    def build_on(env: Any) -> None:
        times = p.proc_times or (None,) * len(p.batches)
        batches = [
            MicroBatch([e for e, _ in b], partitions=[part for _, part in b], processing_time=t)
            for b, t in zip(p.batches, times)
        ]
        strategy = _strategy(p.strategy)
        ds = env.from_micro_batches(batches, strategy, partitions=list(range(p.partitions)))
        if p.second is not None:
            ds = ds.union(env.from_micro_batches([list(b) for b in p.second], strategy, source_name="Second"))
        if p.pre == "map":
            ds = ds.map(lambda e: (e[0], e[1], e[2] * 2))
        elif p.pre == "typed_flat_map":  # its lists are handed on as the declared TUPLE, as Flink's serializers do
            ds = ds.flat_map(lambda e: [] if e[2] % 3 == 0 else [[e[0], e[1], e[2] * 2]], output_type=ELEMENT_TYPE)
        elif p.pre == "filter":
            ds = ds.filter(lambda e: e[2] % 3 != 0)
        if p.restamp is not None:
            ds = ds.assign_timestamps_and_watermarks(_strategy(p.restamp))
        keyed = ds.key_by(lambda e: e[0])
        op = p.operator
        if op["kind"] == "process":
            keyed.process(Timers(op["delay"], bool(op.get("processing")))).add_sink(out["main"].append)
            return
        assigner = op["assigner"]
        if assigner[0] == "count":
            windowed = keyed.count_window(*assigner[1:])
        else:
            windowed = keyed.window(
                {
                    "tumbling": lambda a: TumblingEventTimeWindows.of(Duration.of_millis(a[1])),
                    "sliding": lambda a: SlidingEventTimeWindows.of(Duration.of_millis(a[1]), Duration.of_millis(a[2])),
                    "session": lambda a: EventTimeSessionWindows.with_gap(Duration.of_millis(a[1])),
                    "global": lambda a: GlobalWindows.create(),
                    "proc_tumbling": lambda a: TumblingProcessingTimeWindows.of(Duration.of_millis(a[1])),
                }[assigner[0]](assigner)
            )
        trigger = op["trigger"]
        if trigger is not None:
            made = {
                "count": lambda t: CountTrigger.of(t[1]),
                "continuous": lambda t: ContinuousEventTimeTrigger.of(Duration.of_millis(t[1])),
                "continuous_proc": lambda t: ContinuousProcessingTimeTrigger.of(Duration.of_millis(t[1])),
                "purging": lambda t: None,
            }[trigger[0]](trigger)
            if trigger[0] == "purging":
                from pyspark_flinkish.datastream.window import EventTimeTrigger

                made = EventTimeTrigger.create()
            windowed = windowed.trigger(PurgingTrigger.of(made) if trigger[-1] == "purge" or trigger[0] == "purging" else made)
        evictor = op["evictor"]
        if evictor is not None:
            windowed = windowed.evictor(
                CountEvictor.of(evictor[1]) if evictor[0] == "count" else TimeEvictor.of(Duration.of_millis(evictor[1]))
            )
        late = OutputTag("late")
        if op["lateness"]:
            windowed = windowed.allowed_lateness(op["lateness"])
        if op["late_output"]:
            windowed = windowed.side_output_late_data(late)
        fn = op["function"]
        wf = FiredAndCleared() if op["mode"] == "window" else Fired(op["mode"])
        if fn == "reduce":
            result = windowed.reduce(add_values)
        elif fn == "aggregate":
            result = windowed.aggregate(CountAndSum())
        elif fn == "reduce_process":
            result = windowed.reduce(add_values, wf)
        elif fn == "aggregate_process":
            result = windowed.aggregate(CountAndSum(), wf)
        else:
            result = windowed.process(wf)
        result.add_sink(out["main"].append)
        if op["late_output"]:
            result.get_side_output(late).add_sink(out["late"].append)

    return build_on


element = st.tuples(st.sampled_from("abc"), st.integers(0, 60), st.integers(0, 9))


@st.composite
def pipelines(draw: Any) -> Pipeline:
    partitions = draw(st.integers(1, 2))
    batches = draw(
        st.lists(st.lists(st.tuples(element, st.integers(0, partitions - 1)), max_size=6).map(tuple), min_size=1, max_size=5)
    )
    # the second source has keys of its own: Flink leaves the interleaving of two inputs unspecified
    other = st.tuples(st.sampled_from("xy"), st.integers(0, 60), st.integers(0, 9))
    # ... and as many batches: a shorter replayed source ends one micro-batch later on Spark (docs/differences.md)
    n = len(batches)
    second = draw(st.none() | st.lists(st.lists(other, max_size=3).map(tuple), min_size=n, max_size=n).map(tuple))
    watermarks = st.one_of(
        st.tuples(st.just("bounded"), st.integers(0, 6)),
        st.just(("monotonous",)),
        st.tuples(st.just("custom"), st.sampled_from(["punctuated", "per_element"])),
    )
    strategy = draw(watermarks)
    restamp = draw(st.none() | watermarks)
    if draw(st.integers(0, 4)) == 0:
        operator: Dict[str, Any] = {"kind": "process", "delay": draw(st.integers(0, 12)), "processing": draw(st.booleans())}
    else:
        tumbling = st.tuples(st.just("tumbling"), st.integers(3, 20))
        sliding = st.integers(3, 20).flatmap(lambda size: st.tuples(st.just("sliding"), st.just(size), st.integers(2, size)))
        assigner = draw(
            st.one_of(
                tumbling,
                sliding,
                tumbling,  # the batch-wise path's shapes, twice as often
                sliding,
                st.tuples(st.just("session"), st.integers(2, 10)),
                st.tuples(st.just("count"), st.integers(1, 3)),
                st.tuples(st.just("count"), st.integers(2, 4), st.integers(1, 2)),
                st.just(("global",)),
                st.tuples(st.just("proc_tumbling"), st.integers(3, 20)),
            )
        )
        time_based = assigner[0] in ("tumbling", "sliding", "session")
        if assigner[0] == "global":
            trigger: Optional[Tuple[Any, ...]] = draw(
                st.tuples(st.just("count"), st.integers(1, 3), st.sampled_from(["keep", "purge"]))
                | st.tuples(st.just("continuous_proc"), st.integers(3, 10), st.just("keep"))
            )
        elif time_based:
            trigger = draw(
                st.none()
                | st.none()
                | st.just(("purging",))
                | st.tuples(st.just("count"), st.integers(1, 3), st.sampled_from(["keep", "purge"]))
                | st.tuples(st.just("continuous"), st.integers(3, 10), st.sampled_from(["keep", "purge"]))
            )
        else:
            trigger = None  # count_window sets its own
        evictor = draw(
            st.none() | st.none() | st.tuples(st.just("count"), st.integers(1, 3)) | st.tuples(st.just("time"), st.integers(1, 10))
        )
        if assigner[0] == "count" and len(assigner) == 3:
            evictor = None  # count_window(size, slide) sets its own
        modes = ["none", "global", "global_helper"]
        if assigner[0] != "session":
            modes.append("window")  # window_state() is not allowed with merging windows (Flink throws too)
        if assigner[0] == "proc_tumbling" or (trigger is not None and trigger[0] == "continuous_proc"):
            modes = ["none", "window"]  # several keys' windows fire at one processing time: no key order, no counters
        if trigger is not None and trigger[0] == "continuous":
            modes = ["none", "window"] if assigner[0] != "session" else ["none"]  # equal-time firings: no key order
        operator = {
            "kind": "window",
            "assigner": assigner,
            "trigger": trigger,
            "evictor": evictor,
            "lateness": draw(st.integers(0, 15)) if time_based else 0,
            "late_output": draw(st.booleans()) if time_based else False,
            "function": draw(st.sampled_from(["reduce", "aggregate", "process", "reduce_process", "aggregate_process"])),
            "mode": draw(st.sampled_from(modes)),
        }
    p = Pipeline(
        batches=tuple(batches),
        partitions=partitions,
        second=second,
        strategy=strategy,
        pre=draw(st.sampled_from([None, "map", "filter", "typed_flat_map"])),
        restamp=restamp,
        operator=operator,
    )
    if p.processing_time:  # replayed processing time: non-decreasing, some batches without one (the clock stays)
        steps = st.none() | st.integers(0, 15)
        deltas = draw(st.lists(steps, min_size=n, max_size=n))
        times, now = [], 0
        for d in deltas:
            if d is not None:
                now += d
            times.append(None if d is None else now)
        p = dataclasses.replace(p, proc_times=tuple(times))
    return p


def _outputs() -> Dict[str, List[Any]]:
    return {"main": [], "late": []}


def _canonical(out: Dict[str, List[Any]]) -> Dict[str, List[str]]:
    return {name: sorted(map(repr, values)) for name, values in out.items()}


def _per_key(out: Dict[str, List[Any]]) -> Dict[Tuple[str, Any], List[Any]]:
    """Each sink's outputs that carry their key first, in order, per key: Flink's order within a key."""
    keyed: Dict[Tuple[str, Any], List[Any]] = {}
    for name, values in out.items():
        for v in values:
            if isinstance(v, tuple) and v and isinstance(v[0], str):
                keyed.setdefault((name, v[0]), []).append(v)
    return keyed


def _ordered(p: Pipeline) -> bool:
    """Whether Flink orders all of a key's outputs: not with ContinuousEventTimeTrigger, whose timers of several
    windows of a key can fall on one timestamp (Flink leaves equal timers unordered)."""
    trigger = p.operator.get("trigger")
    return not (trigger is not None and trigger[0] == "continuous")


def _window(**operator: Any) -> Dict[str, Any]:
    base = {"kind": "window", "trigger": None, "evictor": None, "lateness": 0, "late_output": False}
    return {**base, **operator}


# issue 12's two silent differences, always run: a key's count in global_state() through a helper over three
# tumbling windows in three micro-batches (the batch-wise path dropped it), and PyFlink's
# test_side_output_late_data with a per-element generator in assign_timestamps_and_watermarks
COUNT_THROUGH_HELPER = Pipeline(
    batches=(((("a", 1, 1), 0),), ((("a", 12, 1), 0),), ((("a", 25, 1), 0),)),
    partitions=1,
    second=None,
    strategy=("bounded", 0),
    pre=None,
    restamp=None,
    operator=_window(assigner=("tumbling", 10), function="process", mode="global_helper"),
)
PER_ELEMENT_GENERATOR = Pipeline(
    batches=(((("a", 0, 0), 0), (("a", 8, 0), 0), (("a", 4, 0), 0), (("a", 6, 0), 0)),),
    partitions=1,
    second=None,
    strategy=("bounded", 0),
    pre=None,
    restamp=("custom", "per_element"),
    operator=_window(assigner=("tumbling", 5), late_output=True, function="process", mode="none"),
)

# two sources unioned before a punctuated assigner (found by this test): the second source's element comes after the
# first's and its watermark, as on the local engine, only if the replayed rows carry their source's place in the order
UNION_BEFORE_PUNCTUATED = Pipeline(
    batches=(((("a", 0, 0), 0),),),
    partitions=1,
    second=((("x", 0, 0),),),
    strategy=("bounded", 0),
    pre=None,
    restamp=("custom", "punctuated"),
    operator={"kind": "process", "delay": 0, "processing": False},
)


# a replayed source with two partitions: per-partition watermarks (the local engine's minimum holds a[2] on time);
# applyInPandasWithState has one global watermark and must refuse it
TWO_PARTITIONS = Pipeline(
    batches=(((("a", 20, 1), 0),), ((("a", 2, 1), 0),)),
    partitions=2,
    second=None,
    strategy=("bounded", 0),
    pre=None,
    restamp=None,
    operator=_window(assigner=("tumbling", 10), late_output=True, function="reduce", mode="none"),
)

# replayed processing time (issue 16): processing-time timers and a processing-time window fire in the batch whose
# MicroBatch.processing_time passes them, on both engines
PROCESSING_TIMERS = Pipeline(
    batches=(((("a", 1, 1), 0),), ((("a", 2, 2), 0),), ((("b", 3, 3), 0),), ()),
    partitions=1,
    second=None,
    strategy=("bounded", 0),
    pre=None,
    restamp=None,
    operator={"kind": "process", "delay": 5, "processing": True},
    proc_times=(0, 3, 10, 20),
)
PROCESSING_WINDOW = Pipeline(
    batches=(((("a", 1, 1), 0), (("b", 2, 1), 0)), ((("a", 3, 2), 0),), ()),
    partitions=1,
    second=None,
    strategy=("bounded", 0),
    pre=None,
    restamp=None,
    operator=_window(assigner=("proc_tumbling", 10), function="reduce", mode="none"),
    proc_times=(1, 5, 12),
)

# an operator with a declared output type (its records handed on as that type, PyFlink's serializers' rule) before a
# session window with allowed lateness, its input routed by two Spark tasks: the order of a key's late records
# decides what its late firings hold (the shape of the Kafka -> Delta end-to-end test, whose from_kafka source is
# followed by a ROW-typed process function routing malformed records)
TYPED_FLAT_MAP_ORDER = Pipeline(
    batches=(
        ((("a", 1, 1), 0), (("a", 2, 2), 0), (("b", 3, 4), 0)),
        ((("a", 30, 4), 0),),
        ((("a", 3, 3), 0), (("a", 5, 5), 0), (("a", 6, 1), 0), (("a", 4, 8), 0), (("b", 40, 1), 0)),
    ),
    partitions=1,
    second=None,
    strategy=("bounded", 0),
    pre="typed_flat_map",
    restamp=None,
    operator=_window(assigner=("session", 5), lateness=60, function="process", mode="none"),
)

# a punctuated generator at a source with two partitions, several elements per batch: the source's watermark (the
# minimum over its partitions) goes on right after the element whose on_event advanced it, in the route as on the
# local engine (Flink's source: its split's immediate output)
PUNCTUATED_TWO_PARTITIONS = Pipeline(
    batches=(
        ((("a", 5, 0), 0), (("a", 3, 1), 1), (("b", 9, 0), 1), (("a", 4, 2), 0), (("b", 2, 3), 1)),
        ((("a", 12, 0), 1), (("b", 6, 1), 0), (("a", 11, 0), 0), (("b", 8, 2), 1)),
    ),
    partitions=2,
    second=None,
    strategy=("custom", "punctuated"),
    pre="map",
    restamp=None,
    operator=_window(assigner=("tumbling", 5), late_output=True, function="process", mode="none"),
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(pipelines())
@example(TYPED_FLAT_MAP_ORDER)
@example(PROCESSING_TIMERS)
@example(PROCESSING_WINDOW)
@example(COUNT_THROUGH_HELPER)
@example(PER_ELEMENT_GENERATOR)
@example(UNION_BEFORE_PUNCTUATED)
@example(TWO_PARTITIONS)
@example(PUNCTUATED_TWO_PARTITIONS)
def test_local_engine_and_foreach_batch_bodies_agree(tmp_path_factory: Any, p: Pipeline) -> None:
    expected = _outputs()
    local_outputs(build(p, expected))
    for vectorize in (True, False):
        got = _outputs()
        checkpoint = tmp_path_factory.mktemp("checkpoint")
        try:
            run_foreach_batch(build(p, got), str(checkpoint), vectorize)  # custom generators too (spark/generators.py)
        except UnsupportedFeatureError as exc:
            # a custom generator's mid-batch watermarks at a source meeting the union's other input (no valve in a
            # task, spark/generators.py's refuse_unaligned_generators), nothing else
            assert p.strategy[0] == "custom" and p.second is not None, exc  # noqa: PT017
            assert got == _outputs()
            continue
        assert _canonical(got) == _canonical(expected), f"vectorize={vectorize}"
        if _ordered(p):
            assert _per_key(got) == _per_key(expected), f"order within a key, vectorize={vectorize}"
    for vectorize in (True, False):
        got = _outputs()
        try:
            run_apply_in_pandas_with_state(build(p, got), vectorize)
        except UnsupportedFeatureError as exc:
            # what this executor cannot express (docs/spark-executors.md), nothing else
            # (a custom generator in assign_timestamps_and_watermarks runs: spark/stateful_generators.py)
            source_generator = p.strategy[0] == "custom"
            builtin_restamp = p.restamp is not None and p.restamp[0] != "custom"
            known = source_generator or p.second is not None or builtin_restamp or p.partitions > 1
            assert known or p.processing_time, exc  # noqa: PT017 (a drawn pipeline may or may not be refused)
            assert got == _outputs()
            continue
        assert _canonical(got) == _canonical(expected), f"apply_in_pandas_with_state, vectorize={vectorize}"
        if _ordered(p):
            assert _per_key(got) == _per_key(expected), f"apply_in_pandas_with_state: order within a key, vectorize={vectorize}"
        assert p.strategy[0] != "custom", "a custom WatermarkGenerator at a source must be refused on applyInPandasWithState"


def test_the_generator_covers_every_feature() -> None:
    """The strategy reaches every kind of pipeline this test promises (guards against a strategy that silently
    stopped generating one)."""
    seen: set = set()  # type: ignore[type-arg]

    @settings(max_examples=300, deadline=None, database=None, derandomize=True)
    @given(pipelines())
    def collect(p: Pipeline) -> None:
        op = p.operator
        seen.add(op["kind"])
        if p.processing_time:
            seen.add("processing-time-" + op["kind"])
            if p.proc_times and any(t is not None and t > 0 for t in p.proc_times):
                seen.add("replayed-processing-time")
        seen.add(p.strategy[0])
        if p.pre is not None:
            seen.add("pre-" + p.pre)
        if p.restamp is not None:
            seen.add("restamp-" + p.restamp[0])
        if p.second is not None:
            seen.add("union")
        if op["kind"] == "window":
            seen.update({op["assigner"][0], op["function"], "mode-" + op["mode"]})
            seen.add("trigger-" + (op["trigger"][0] if op["trigger"] else "default"))
            if op["evictor"]:
                seen.add("evictor-" + op["evictor"][0])
            if op["late_output"] and op["lateness"]:
                seen.add("lateness+late_output")

    collect()
    wanted = {
        "process", "window", "bounded", "monotonous", "custom", "restamp-custom", "restamp-bounded", "union",
        "tumbling", "sliding", "session", "count", "global", "reduce", "aggregate", "reduce_process",
        "aggregate_process", "mode-none", "mode-window", "mode-global", "mode-global_helper", "trigger-default",
        "trigger-purging", "trigger-count", "trigger-continuous", "evictor-count", "evictor-time",
        "lateness+late_output", "proc_tumbling", "trigger-continuous_proc", "processing-time-process",
        "processing-time-window", "replayed-processing-time", "pre-map", "pre-filter", "pre-typed_flat_map",
    }
    assert wanted <= seen, wanted - seen


# ------------------------------------------------------------------------------------------ DataFrame sources
SCHEMA = StructType([StructField("user", StringType()), StructField("ts", LongType()), StructField("amount", LongType())])


def build_from_rows(batches: List[List[Tuple[str, int, int]]], operator: Dict[str, Any], out: Dict[str, List[Any]]) -> Any:
    """``from_dataframe(..., timestamp_column="ts")`` on Spark (a ``PandasStream``), the same ``Row`` elements from
    a replayed unbounded source on the local engine; ``key_by(user)``, a window aggregating fields."""

    def build_on(env: Any) -> None:
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(operator["bound"]))
        if isinstance(env, SparkStreamExecutionEnvironment):
            frames = [pd.DataFrame(b, columns=SCHEMA.fieldNames()).astype({"ts": "int64", "amount": "int64"}) for b in batches]
            ds = env.from_dataframe(PandasStream(SCHEMA, frames), strategy, timestamp_column="ts")
        else:
            rows = [[Row(user=u, ts=t, amount=a) for u, t, a in b] for b in batches]
            ds = env.from_micro_batches(rows, strategy.with_timestamp_assigner(lambda r, _: r.ts), end_of_input=False)
        assigner = operator["assigner"]
        windowed = ds.key_by(lambda r: r.user).window(
            TumblingEventTimeWindows.of(Duration.of_millis(assigner[1]))
            if assigner[0] == "tumbling"
            else SlidingEventTimeWindows.of(Duration.of_millis(assigner[1]), Duration.of_millis(assigner[2]))
        )
        late = OutputTag("late")
        if operator["lateness"]:
            windowed = windowed.allowed_lateness(operator["lateness"])
        if operator["late_output"]:
            windowed = windowed.side_output_late_data(late)
        aggregate = ColumnAggregate(Count(), Sum("amount"), Min("amount"), Max("amount"))
        mode = operator["mode"]
        if mode is None:
            result = windowed.aggregate(aggregate)
        else:
            result = windowed.aggregate(aggregate, FiredAndCleared() if mode == "window" else Fired(mode))
        result.add_sink(out["main"].append)
        if operator["late_output"]:
            result.get_side_output(late).add_sink(out["late"].append)

    return build_on


TYPED_KEY_SCHEMA = StructType(
    [StructField("user", StringType()), StructField("k", LongType()), StructField("ts", LongType()),
     StructField("amount", LongType())]
)  # fmt: skip
TYPED_KEY_BATCHES = [[("a", 1, 1, 1), ("b", 2, 2, 1)], [("a", 1, 3, 5), ("b", 2, 4, 1)], [("a", 1, 30, 1)]]


@pytest.mark.parametrize(
    ("key_type", "selector"),
    [
        (Types.DOUBLE(), lambda r: r.k),
        (Types.FLOAT(), lambda r: r.k),
        (Types.ROW_NAMED(["user", "k"], [Types.STRING(), Types.LONG()]), lambda r: (r.user, r.k)),
        (None, lambda r: r.k),
    ],
    ids=["DOUBLE of a LONG column", "FLOAT of a LONG column", "ROW of a tuple", "untyped"],
)
def test_a_declared_key_of_another_form_than_its_columns_finds_its_state_on_the_columnar_path(
    tmp_path: Any, key_type: Any, selector: Any
) -> None:
    """A ``key_type`` whose keys Flink holds in another form than the key columns' values (a ``DOUBLE`` key of a
    ``LONG`` column is ``1.0``; a ``ROW`` key of a tuple of columns a ``Row``): the columnar path looks the state of
    its keys up by the bytes of the key as Flink holds it, as the general path stores and finds it, so a window's
    contents carry over micro-batches (found: they were looked up by the columns' values and lost)."""

    def build(out: Dict[str, List[Any]]) -> Any:
        def build_on(env: Any) -> None:
            strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
            if isinstance(env, SparkStreamExecutionEnvironment):
                frames = [pd.DataFrame(b, columns=TYPED_KEY_SCHEMA.fieldNames()).astype(
                    {"k": "int64", "ts": "int64", "amount": "int64"}) for b in TYPED_KEY_BATCHES]
                ds = env.from_dataframe(PandasStream(TYPED_KEY_SCHEMA, frames), strategy, timestamp_column="ts")
            else:
                rows = [[Row(user=u, k=k, ts=t, amount=a) for u, k, t, a in b] for b in TYPED_KEY_BATCHES]
                ds = env.from_micro_batches(rows, strategy.with_timestamp_assigner(lambda r, _: r.ts), end_of_input=False)
            keyed = ds.key_by(selector, key_type=key_type) if key_type is not None else ds.key_by(selector)
            keyed.window(TumblingEventTimeWindows.of(Duration.of_millis(10))).allowed_lateness(100).aggregate(
                ColumnAggregate(Count(), Sum("amount"))
            ).add_sink(out["main"].append)

        return build_on

    expected = _outputs()
    local_outputs(build(expected))
    assert (2, 6) in expected["main"]  # the first window of key 1 holds both its records, of two micro-batches
    for vectorize in (True, False):
        got = _outputs()
        driver = run_foreach_batch(build(got), str(tmp_path / f"v{vectorize}"), vectorize)
        assert (driver.columnar is not None) == vectorize
        assert _canonical(got) == _canonical(expected), f"vectorize={vectorize}"


row = st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 60), st.integers(-5, 9))
row_batches = st.lists(st.lists(row, max_size=6), min_size=1, max_size=5)
row_operators = st.fixed_dictionaries(
    {
        "bound": st.integers(0, 5),
        "assigner": st.one_of(
            st.tuples(st.just("tumbling"), st.integers(3, 20)),
            st.integers(3, 20).flatmap(lambda size: st.tuples(st.just("sliding"), st.just(size), st.integers(2, size))),
        ),
        "lateness": st.integers(0, 15),
        "late_output": st.booleans(),
        "mode": st.sampled_from([None, "none", "window", "global", "global_helper"]),
    }
)


@settings(max_examples=max(EXAMPLES // 2, 5), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(row_batches, row_operators)
@example(
    [[("a", 1, 1)], [("a", 12, 1)], [("a", 25, 1)], [("b", 40, 0)]],
    {"bound": 0, "assigner": ("tumbling", 10), "lateness": 0, "late_output": False, "mode": "global_helper"},
)
def test_dataframe_source_columnar_and_fused_paths_agree(tmp_path_factory: Any, batches: Any, operator: Any) -> None:
    """A ``from_dataframe`` source into a window of ``ColumnAggregate``: the columnar path (``vectorize=True``:
    on-time rows pre-aggregated, the rest one by one) and the fused route with the general operator
    (``vectorize=False``) give the local engine's outputs."""
    expected = _outputs()
    local_outputs(build_from_rows(batches, operator, expected))
    for vectorize in (True, False):
        got = _outputs()
        driver = run_foreach_batch(build_from_rows(batches, operator, got), str(tmp_path_factory.mktemp("df")), vectorize)
        assert (driver.columnar is not None) == vectorize
        assert _canonical(got) == _canonical(expected), f"vectorize={vectorize}"
        assert _per_key(got) == _per_key(expected), f"order within a key, vectorize={vectorize}"
