"""The ``window_all`` pipelines of ``pyflink_all_windows.json`` (real PyFlink 2.3.0's outputs, written by
``benchmarks/pyflink_all_windows.py``), built with pyspark_flinkish for any environment.

Used by ``test_pyflink_all_windows.py`` (local engine) and ``tests/spark/test_spark_all_windows.py`` (Spark). PyFlink's
STREAMING cases saw a watermark after every element (``max - bound - 1``); here every element is its own micro-batch
with ``for_bounded_out_of_orderness(bound)``, whose periodic emission ends each micro-batch: the same watermarks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag
from pyspark_flinkish.datastream.functions import AggregateFunction, AllWindowFunction, ProcessAllWindowFunction
from pyspark_flinkish.datastream.window import (
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    CountTumblingWindowAssigner,
    EventTimeSessionWindows,
    GlobalWindows,
    PurgingTrigger,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)

ORACLE = Path(__file__).with_name("pyflink_all_windows.json")


def load() -> Dict[str, Any]:
    return json.loads(ORACLE.read_text())  # type: ignore[no-any-return]


class Elements(ProcessAllWindowFunction):  # type: ignore[type-arg]
    def process(self, context, elements):  # type: ignore[no-untyped-def]
        w = context.window()
        yield ["main", getattr(w, "start", None), getattr(w, "end", None), [e[2] for e in elements]]


class Reduced(ProcessAllWindowFunction):  # type: ignore[type-arg]
    def process(self, context, elements):  # type: ignore[no-untyped-def]
        w = context.window()
        for e in elements:
            yield ["main", w.start, w.end, e[2]]


class Summed(AllWindowFunction):  # type: ignore[type-arg]
    def apply(self, window, inputs):  # type: ignore[no-untyped-def]
        yield ["main", window.start, window.end, sum(e[2] for e in inputs)]


class CountSum(AggregateFunction):  # type: ignore[type-arg]
    def create_accumulator(self):  # type: ignore[no-untyped-def]
        return [0, 0]

    def add(self, value, accumulator):  # type: ignore[no-untyped-def]
        return [accumulator[0] + 1, accumulator[1] + value[2]]

    def get_result(self, accumulator):  # type: ignore[no-untyped-def]
        return accumulator

    def merge(self, a, b):  # type: ignore[no-untyped-def]
        return [a[0] + b[0], a[1] + b[1]]


class Aggregated(ProcessAllWindowFunction):  # type: ignore[type-arg]
    def process(self, context, elements):  # type: ignore[no-untyped-def]
        w = context.window()
        for count, total in elements:
            yield ["main", w.start, w.end, count, total]


def add(a: Any, b: Any) -> Any:
    return (a[0], max(a[1], b[1]), a[2] + b[2])


def build(env: Any, case: Dict[str, Any], elements: List[Any], bound_ms: int, per_element: bool = True) -> Any:
    """``case``'s pipeline over ``elements`` (``[name, ts, value]``) on ``env``: one micro-batch per element (or one
    for all with ``per_element=False``), watermarks ``for_bounded_out_of_orderness(bound_ms)``. The caller sets the
    runtime mode. Returns the stream whose rows the oracle lists (main rows, then late rows through a union)."""
    rows = [tuple(e) for e in elements]
    batches = [MicroBatch([r]) for r in rows] if per_element else [MicroBatch(rows)]
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(bound_ms)).with_timestamp_assigner(
        lambda e, _: e[1]
    )
    stream = env.from_source(MicroBatchSource(batches), strategy, "all-window-input")
    kind = case["window"]
    if kind == "tumbling":
        windowed = stream.window_all(TumblingEventTimeWindows.of(Duration.of_seconds(10)))
    elif kind == "sliding":
        windowed = stream.window_all(SlidingEventTimeWindows.of(Duration.of_seconds(10), Duration.of_seconds(5)))
    elif kind == "session":
        windowed = stream.window_all(EventTimeSessionWindows.with_gap(Duration.of_seconds(3)))
    elif kind == "count_all":
        windowed = stream.count_window_all(case["size"])
    elif kind == "count_tumbling":
        windowed = stream.window_all(CountTumblingWindowAssigner.of(case["size"]))
    else:
        windowed = stream.window_all(GlobalWindows.create()).trigger(ContinuousProcessingTimeTrigger.of(Duration.of_hours(1)))
    late = OutputTag("late", Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()]))
    if case.get("lateness"):
        windowed = windowed.allowed_lateness(case["lateness"])
    if case.get("late_tag"):
        windowed = windowed.side_output_late_data(late)
    fn = case["function"]
    if fn == "reduce":
        out = windowed.reduce(add).map(lambda e: ["main", e[2]])
    elif fn == "reduce_process":
        out = windowed.reduce(add, window_function=Reduced())
    elif fn == "aggregate_process":
        out = windowed.aggregate(CountSum(), window_function=Aggregated())
    elif fn == "apply":
        out = windowed.apply(Summed())
    else:
        out = windowed.process(Elements())
    if case.get("late_tag"):
        out = out.union(out.get_side_output(late).map(lambda e: ["late", e[1], e[2]]))
    return out


def count_all_java_rule(env: Any, elements: List[Any], size: int) -> Any:
    """Java's ``countWindowAll(size)`` is ``window_all(GlobalWindows) + PurgingTrigger(CountTrigger(size))``, the
    pipeline PyFlink ran for the ``count_all`` cases (PyFlink has no ``count_window_all``)."""
    stream = env.from_collection([tuple(e) for e in elements])
    return stream.window_all(GlobalWindows.create()).trigger(PurgingTrigger.of(CountTrigger.of(size))).process(Elements())
