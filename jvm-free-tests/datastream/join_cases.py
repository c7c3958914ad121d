"""The join scenarios of ``flink_joins.json`` (real Apache Flink 2.3.0's outputs, written by
``benchmarks/flink_joins.py`` through Flink's Java DataStream API), built with pyspark_flinkish for any environment.

Used by ``test_flink_joins.py`` (local engine) and ``tests/spark/test_spark_joins.py`` (foreachBatch executor). A
scenario's steps become micro-batches with explicit watermarks of one source, split into the left and right streams
of ``(key, name, timestamp)`` elements; every output stream is stamped ``[timestamp, watermark, ...]`` as the Flink
program stamps it.
"""

from __future__ import annotations

import json
from itertools import groupby
from pathlib import Path
from typing import Any, Dict, List

from pyspark_flinkish.common import Duration, WatermarkStrategy
from pyspark_flinkish.core.javamath import LONG_MIN
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag
from pyspark_flinkish.datastream.functions import (
    CoGroupFunction,
    FlatJoinFunction,
    JoinFunction,
    ProcessFunction,
    ProcessJoinFunction,
)
from pyspark_flinkish.datastream.window import (
    CountEvictor,
    CountTrigger,
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)

ORACLE = Path(__file__).with_name("flink_joins.json")
LEFT_LATE = OutputTag("left-late")
RIGHT_LATE = OutputTag("right-late")


def load() -> Dict[str, Any]:
    return json.loads(ORACLE.read_text())  # type: ignore[no-any-return]


class Stamp(ProcessFunction):  # type: ignore[type-arg]
    """``[timestamp, watermark, *value]``, as the Flink program's ``Stamp``."""

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        yield [ctx.timestamp(), ctx.timer_service().current_watermark(), *value]


class Names(JoinFunction):  # type: ignore[type-arg]
    def join(self, first, second):  # type: ignore[no-untyped-def]
        return [first[1], second[1]]


class InOrder(FlatJoinFunction):  # type: ignore[type-arg]
    """The pair, if the left element is not later than the right one."""

    def join(self, first, second):  # type: ignore[no-untyped-def]
        if first[2] <= second[2]:
            yield [first[1], second[1]]


class Groups(CoGroupFunction):  # type: ignore[type-arg]
    def co_group(self, first, second):  # type: ignore[no-untyped-def]
        yield [[e[1] for e in first], [e[1] for e in second]]


class Pairs(ProcessJoinFunction):  # type: ignore[type-arg]
    def process_element(self, left, right, ctx):  # type: ignore[no-untyped-def]
        yield [left[1], right[1], ctx.get_left_timestamp(), ctx.get_right_timestamp(), ctx.get_timestamp()]


def _assigner(w: Dict[str, Any]) -> Any:
    if w["type"] == "tumbling":
        return TumblingEventTimeWindows.of(Duration.of_millis(w["size"]))
    if w["type"] == "sliding":
        return SlidingEventTimeWindows.of(Duration.of_millis(w["size"]), Duration.of_millis(w["slide"]))
    return EventTimeSessionWindows.with_gap(Duration.of_millis(w["gap"]))


def source(env: Any, scenario: Dict[str, Any]) -> Any:
    """The scenario's script as one source: a micro-batch per step, with the step's watermark (a step without one
    keeps the previous watermark), then end of input."""
    batches, watermark = [], LONG_MIN
    for step in scenario["steps"]:
        watermark = step["watermark"] if step["watermark"] is not None else watermark
        batches.append(MicroBatch([tuple(r) for r in step["records"]], watermark=watermark))
    strategy = WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda r, _: r[3])
    return env.from_source(MicroBatchSource(batches), strategy, "join-script")


def build(env: Any, scenario: Dict[str, Any]) -> Dict[str, Any]:
    """``scenario``'s pipeline on ``env``: its output streams by name (``main``, and ``left_late``/``right_late`` when
    the scenario has late-data side outputs), stamped."""
    scripted = source(env, scenario)
    left = scripted.filter(lambda r: r[0] == "L").map(lambda r: (r[1], r[2], r[3]))
    right = scripted.filter(lambda r: r[0] == "R").map(lambda r: (r[1], r[2], r[3]))
    outputs: Dict[str, Any] = {}
    if scenario["kind"] == "interval":
        iv = scenario["interval"]
        joined = left.key_by(lambda e: e[0]).interval_join(right.key_by(lambda e: e[0])).between(
            Duration.of_millis(iv["lower"]), Duration.of_millis(iv["upper"])
        )
        if iv.get("lower_exclusive"):
            joined = joined.lower_bound_exclusive()
        if iv.get("upper_exclusive"):
            joined = joined.upper_bound_exclusive()
        if scenario.get("late_side_outputs"):
            joined = joined.side_output_left_late_data(LEFT_LATE).side_output_right_late_data(RIGHT_LATE)
        result = joined.process(Pairs())
        outputs["main"] = result
        if scenario.get("late_side_outputs"):
            outputs["left_late"] = result.get_side_output(LEFT_LATE).map(lambda e: [e[0], e[1]])
            outputs["right_late"] = result.get_side_output(RIGHT_LATE).map(lambda e: [e[0], e[1]])
    else:
        two = left.join(right) if scenario["kind"] == "join" else left.co_group(right)
        windowed = two.where(lambda e: e[0]).equal_to(lambda e: e[0]).window(_assigner(scenario["window"]))
        if scenario.get("count_trigger"):
            windowed = windowed.trigger(CountTrigger.of(scenario["count_trigger"]))
        if scenario.get("count_evictor"):
            windowed = windowed.evictor(CountEvictor.of(scenario["count_evictor"]))
        if scenario.get("allowed_lateness"):
            windowed = windowed.allowed_lateness(Duration.of_millis(scenario["allowed_lateness"]))
        if scenario["kind"] == "co_group":
            function: Any = Groups()
        elif scenario.get("function") == "flat":
            function = InOrder()
        elif scenario["name"].startswith("tumbling"):
            function = lambda a, b: [a[1], b[1]]  # noqa: E731 (a plain callable stands for a JoinFunction)
        else:
            function = Names()
        outputs["main"] = windowed.apply(function)
    return {name: stream.process(Stamp()) for name, stream in outputs.items()}


def comparable(scenario: Dict[str, Any], name: str, rows: List[Any]) -> List[Any]:
    """Rows as compared with Flink's: as they are where Flink's order is defined (``order: exact``, and side
    outputs), else per watermark (the stamp's second field) as a sorted multiset, lists inside sorted too."""
    rows = [json.loads(json.dumps(r)) for r in rows]
    if scenario["order"] == "exact" or name != "main":
        return rows

    def canonical(row: List[Any]) -> List[Any]:
        return [sorted(v) if isinstance(v, list) else v for v in row]

    return [(wm, sorted(map(canonical, group), key=json.dumps)) for wm, group in groupby(rows, key=lambda r: r[1])]
