"""Builds a conformance scenario's pipeline through the public API — the calls a user writes.

The window function reports ``ctx.current_watermark()``, which is how the expected files pin down
*when* each firing happened.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from pyspark_flinkish.common import WatermarkStrategy
from pyspark_flinkish.datastream import (
    DataStream,
    MicroBatch,
    MicroBatchSource,
    OutputTag,
    StreamExecutionEnvironment,
)
from pyspark_flinkish.datastream.functions import AggregateFunction, ProcessWindowFunction, ReduceFunction
from pyspark_flinkish.datastream.window import (
    ContinuousEventTimeTrigger,
    CountEvictor,
    CountTrigger,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindows,
    PurgingTrigger,
    SlidingEventTimeWindows,
    TimeEvictor,
    TimeWindow,
    Trigger,
    TumblingEventTimeWindows,
    WindowAssigner,
)

Event = Dict[str, Any]
LATE = OutputTag("late-data")


class SumValues(ReduceFunction):  # type: ignore[type-arg]
    def reduce(self, value1: Event, value2: Event) -> Event:
        return {"key": value1["key"], "ts": value1["ts"], "value": value1["value"] + value2["value"]}


class CountAndSum(AggregateFunction):  # type: ignore[type-arg]
    """Accumulator = result = ``[count, sum]``."""

    def create_accumulator(self) -> List[int]:
        return [0, 0]

    def add(self, value: Event, accumulator: List[int]) -> List[int]:
        return [accumulator[0] + 1, accumulator[1] + value["value"]]

    def get_result(self, accumulator: List[int]) -> List[int]:
        return list(accumulator)

    def merge(self, acc_a: List[int], acc_b: List[int]) -> List[int]:
        return [acc_a[0] + acc_b[0], acc_a[1] + acc_b[1]]


class EmitFiring(ProcessWindowFunction):  # type: ignore[type-arg]
    """Emits one record per firing: key, window bounds, result and the watermark at firing time."""

    def __init__(self, result: Callable[[List[Any]], Any]) -> None:
        self.result = result

    def process(self, key: str, context: ProcessWindowFunction.Context, elements: Iterable[Any]) -> Iterable[Dict[str, Any]]:
        window = context.window()
        timed = isinstance(window, TimeWindow)
        yield {
            "key": key,
            "window_start": window.start if timed else None,
            "window_end": window.end if timed else None,
            "result": self.result(list(elements)),
            "watermark": context.current_watermark(),
        }


def _reduced(elements: List[Optional[Event]]) -> Optional[int]:
    return None if elements[0] is None else elements[0]["value"]


def _listed(elements: List[Event]) -> List[int]:
    return sorted(e["value"] for e in elements)


def assigner_of(spec: Dict[str, Any]) -> WindowAssigner:  # type: ignore[type-arg]
    kind = spec["type"]
    if kind == "tumbling":
        return TumblingEventTimeWindows.of(spec["size"], spec.get("offset", 0))
    if kind == "sliding":
        return SlidingEventTimeWindows.of(spec["size"], spec["slide"], spec.get("offset", 0))
    if kind == "session":
        return EventTimeSessionWindows.with_gap(spec["gap"])
    if kind == "global":
        return GlobalWindows.create()
    msg = f"no assigner for {spec!r}"
    raise ValueError(msg)


def trigger_of(spec: Dict[str, Any]) -> Trigger:  # type: ignore[type-arg]
    kind = spec["type"]
    if kind == "event_time":
        return EventTimeTrigger.create()
    if kind == "count":
        return CountTrigger.of(spec["count"])
    if kind == "continuous_event_time":
        return ContinuousEventTimeTrigger.of(spec["interval"])
    if kind == "purging":
        return PurgingTrigger.of(trigger_of(spec["nested"]))
    msg = f"no trigger for {spec!r}"
    raise ValueError(msg)


def evictor_of(spec: Dict[str, Any]) -> Any:
    if spec["type"] == "count":
        return CountEvictor.of(spec["max_count"], do_evict_after=spec["do_evict_after"])
    return TimeEvictor.of(spec["window_size"], do_evict_after=spec["do_evict_after"])


def generated_bound(scenario: Dict[str, Any]) -> Optional[int]:
    """The out-of-orderness bound the scenario's watermarks were generated with, if they were."""
    generation = scenario.get("watermark_generation") or {}
    if generation.get("mode") == "bounded_out_of_orderness" and isinstance(generation.get("bound"), int):
        return int(generation["bound"])
    return None


def build(
    env: StreamExecutionEnvironment,
    scenario: Dict[str, Any],
    generate_watermarks: bool = False,
    generator: Optional[WatermarkStrategy] = None,
) -> Tuple[DataStream, Optional[DataStream]]:
    """The scenario's pipeline on ``env``: returns (main output stream, late side-output stream or None).

    By default the source replays the scenario's explicit watermarks. With ``generate_watermarks`` the
    source generates them with ``for_bounded_out_of_orderness(bound)`` instead (for scenarios whose
    ``watermark_generation`` says that is how they were made), as an executor without explicit
    watermarks needs. With ``generator`` (e.g. ``WatermarkStrategy.for_generator(...)``) the watermarks come
    from that strategy alone, in ``assign_timestamps_and_watermarks`` right after the source (the batches'
    ``watermark`` is not read), as a Flink program over a bounded collection assigns them, or, if the scenario's
    ``generator_at`` is ``"source"``, as the source's own strategy (``from_source``: a generator per source
    partition, as Flink's FLIP-27 source runs one per split).
    """
    window = scenario["window"]
    bound = generated_bound(scenario) if generate_watermarks else None
    if generate_watermarks and bound is None:
        msg = f"{scenario['name']}: its watermarks were hand-picked, not generated; they can only be replayed"
        raise ValueError(msg)
    replay = not generate_watermarks and generator is None
    source = MicroBatchSource(
        [MicroBatch(b["events"], watermark=b["watermark"] if replay else None) for b in scenario["batches"]],
        end_of_input=scenario["end_of_input"],
    )
    base = WatermarkStrategy.for_bounded_out_of_orderness(bound) if bound is not None else WatermarkStrategy.no_watermarks()
    at_source = generator is not None and scenario.get("generator_at", "assigner") == "source"
    strategy = (generator if at_source else base).with_timestamp_assigner(lambda event, _ts: event["ts"])
    stream = env.from_source(source, strategy, scenario["name"])
    if generator is not None and not at_source:
        stream = stream.assign_timestamps_and_watermarks(generator.with_timestamp_assigner(lambda event, _ts: event["ts"]))
    keyed = stream.key_by(lambda event: event["key"])

    assigner = window["assigner"]
    if assigner["type"] == "count":
        windowed = keyed.count_window(assigner["size"], assigner.get("slide", 0))
    else:
        windowed = keyed.window(assigner_of(assigner))
        if window["trigger"] is not None:
            windowed = windowed.trigger(trigger_of(window["trigger"]))
        if window["evictor"] is not None:
            windowed = windowed.evictor(evictor_of(window["evictor"]))
        if window["allowed_lateness"] and assigner["type"] != "global":
            windowed = windowed.allowed_lateness(window["allowed_lateness"])
        if window["late_side_output"]:
            windowed = windowed.side_output_late_data(LATE)

    function = window["function"]
    if function == "reduce_sum":
        main = windowed.reduce(SumValues(), EmitFiring(_reduced))
    elif function == "aggregate_avg":
        main = windowed.aggregate(CountAndSum(), EmitFiring(lambda els: els[0]))
    else:
        main = windowed.process(EmitFiring(_listed))
    late = main.get_side_output(LATE) if window["late_side_output"] and assigner["type"] != "count" else None
    return main, late


__all__ = [
    "Event",
    "LATE",
    "SumValues",
    "CountAndSum",
    "EmitFiring",
    "assigner_of",
    "trigger_of",
    "evictor_of",
    "generated_bound",
    "build",
]
