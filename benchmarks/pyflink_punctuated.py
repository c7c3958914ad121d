"""Real Apache Flink 2.3.0's outputs for keyed event-time windows whose watermarks come from a custom *punctuated*
``WatermarkGenerator``: the oracle for pyspark_flinkish's custom generators on the local engine and on Spark.

Runs with PyFlink's own interpreter (a virtualenv with ``apache-flink==2.3.0``, as ``run_all.py``'s ``ensure_pyflink``
creates in ``benchmarks/.venv-pyflink``; Java 17 and ``javac`` on ``PATH``)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_punctuated.py \
        --out jvm-free-tests/datastream/pyflink_punctuated.json

PyFlink has no Python ``WatermarkGenerator``, so the generator is Java (``java/MarkerPunctuated.java``, compiled
here against PyFlink's jars and loaded through the gateway): it tracks the largest timestamp and emits
``max - bound - 1`` only on events flagged as markers, or on every n-th event; never periodically. Each scenario is
a keyed window (``conformance/README.md``'s window specification) over ``(key, ts, value, marker)`` events; its
window function reports the key, the window, the result and ``current_watermark()`` at the firing, the late side
output the late events, in the conformance suite's expected-output format (compared as multisets, canonically
sorted). The scenario's ``batches`` are how pyspark_flinkish splits the events into micro-batches; Flink reads
them as one bounded stream (parallelism 1, one element per Python bundle so that every watermark reaches the window
operator before the next element). Every scenario runs twice and both runs must agree.
``jvm-free-tests/datastream/punctuated_cases.py`` builds the same pipelines with pyspark_flinkish.

With ``--at source`` the generator is given at the source instead (``--out
jvm-free-tests/datastream/pyflink_punctuated_source.json``): ``env.from_source`` over a ``FileSource`` (FLIP-27)
reading the scenario's events as lines of one text file (one split, read in order), the generator parsing the line
(``MarkerPunctuated.java``), a Python map turning the lines into the same rows after it. Flink's ``SourceOperator``
hands ``on_event`` the split's immediate output: the source's watermark is emitted right after the record, as the
assigner emits it (the outputs are the same). Two splits are not recorded: a ``FileSource`` reader at parallelism 1
reads one split after the other, each with a generator of its own (two files, a watermark at every event: all of
the second file's lines, then the first's, the watermark left at the finished split's last one while the next
split's generator is below it; the same in two runs), which pyspark_flinkish's partitions (all read together, none
finishing) have no counterpart for; a source with concurrent splits (Kafka) interleaves them by fetch timing, which
no run reproduces.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Any, Dict, List

import pyflink_generators as generators
import pyflink_oracle as oracle
from pyflink.common import Row, Time, Types, WatermarkStrategy
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction, ReduceFunction
from pyflink.datastream.window import EventTimeSessionWindows, SlidingEventTimeWindows, TumblingEventTimeWindows


def _w(key: str, ts: int, value: int, marker: bool = False) -> List[Any]:
    return [key, ts, value, marker]


# generator: {"emit_on": "marker" | "every", "every": n, "bound": b}; window: conformance/README.md section 2
SCENARIOS: List[Dict[str, Any]] = [
    {
        "name": "marker_tumbling_late",
        "description": "tumbling 10, lateness 0, late side output; watermarks only at markers, a repeated one at a "
                       "marker that raises no maximum; late events right after a marker",
        "generator": {"emit_on": "marker", "bound": 2},
        "window": {"assigner": {"type": "tumbling", "size": 10}, "trigger": None, "evictor": None,
                   "allowed_lateness": 0, "late_side_output": True, "function": "process_list"},
        "batches": [
            [_w("a", 1, 1), _w("b", 3, 2), _w("a", 12, 3, True), _w("b", 8, 4)],
            [_w("c", 5, 5), _w("c", 14, 6), _w("a", 11, 7), _w("b", 22, 8, True), _w("a", 19, 9)],
            [_w("c", 25, 10), _w("a", 21, 11, True), _w("b", 18, 12)],
            [_w("c", 31, 13, True), _w("a", 29, 14), _w("b", 27, 15), _w("c", 40, 16, True), _w("a", 35, 17)],
        ],
    },
    {
        "name": "marker_tumbling_lateness",
        "description": "tumbling 10, lateness 5, late side output, reduce; late-but-allowed events fire their "
                       "window again mid-stream, one fires a window at once (max timestamp = watermark), later "
                       "ones are dropped to the side output after the cleanup",
        "generator": {"emit_on": "marker", "bound": 1},
        "window": {"assigner": {"type": "tumbling", "size": 10}, "trigger": None, "evictor": None,
                   "allowed_lateness": 5, "late_side_output": True, "function": "reduce_sum"},
        "batches": [
            [_w("a", 2, 1, True), _w("a", 7, 2), _w("b", 9, 3), _w("a", 13, 4, True), _w("a", 8, 5)],
            [_w("b", 4, 6), _w("b", 17, 7, True), _w("a", 6, 8)],
            [_w("b", 12, 9), _w("a", 19, 10), _w("c", 21, 11, True), _w("b", 15, 12), _w("c", 16, 13)],
            [_w("a", 30, 14, True), _w("a", 3, 15), _w("c", 24, 16)],
        ],
    },
    {
        "name": "every3_sliding",
        "description": "sliding 10/5, lateness 0, late side output, aggregate; a watermark at every 3rd event "
                       "(markers ignored), bound 0; an event late for one window and on time for the other",
        "generator": {"emit_on": "every", "every": 3, "bound": 0},
        "window": {"assigner": {"type": "sliding", "size": 10, "slide": 5}, "trigger": None, "evictor": None,
                   "allowed_lateness": 0, "late_side_output": True, "function": "aggregate_avg"},
        "batches": [
            [_w("a", 1, 1), _w("b", 2, 2, True), _w("a", 6, 3), _w("b", 4, 4), _w("a", 12, 5)],
            [_w("c", 3, 6), _w("a", 2, 7), _w("b", 16, 8), _w("c", 9, 9)],
            [_w("a", 14, 10), _w("b", 25, 11), _w("a", 18, 12), _w("b", 11, 13)],
        ],
    },
    {
        "name": "marker_session",
        "description": "session gap 4, lateness 2, late side output; an event after its old session's cleanup "
                       "opens a window that fires at once, one bridges two sessions, one joins a session it only touches, the last "
                       "is late",
        "generator": {"emit_on": "marker", "bound": 1},
        "window": {"assigner": {"type": "session", "gap": 4}, "trigger": None, "evictor": None,
                   "allowed_lateness": 2, "late_side_output": True, "function": "process_list"},
        "batches": [
            [_w("a", 1, 1), _w("a", 3, 2), _w("b", 2, 3, True)],
            [_w("a", 10, 4, True), _w("a", 5, 5), _w("b", 7, 6), _w("b", 12, 7)],
            [_w("a", 13, 8, True), _w("b", 9, 9), _w("a", 6, 10), _w("c", 20, 11, True), _w("a", 2, 12)],
        ],
    },
]


def row_type() -> Any:
    return Types.ROW([Types.STRING(), Types.LONG(), Types.INT(), Types.BOOLEAN()])


class Firing(ProcessWindowFunction):
    """One JSON record per firing: key, window, result (by ``function``), the watermark at the firing."""

    def __init__(self, function: str) -> None:
        self.function = function

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        w = context.window()
        els = list(elements)
        if self.function == "reduce_sum":
            result = els[0][2]
        elif self.function == "aggregate_avg":
            result = list(els[0])
        else:
            result = sorted(e[2] for e in els)
        yield json.dumps({"key": key, "window_start": w.start, "window_end": w.end, "result": result,
                          "watermark": context.current_watermark()})


class Sum(ReduceFunction):
    def reduce(self, a: Any, b: Any) -> Any:
        return Row(a[0], a[1], a[2] + b[2], a[3])


def strategy(generator: Dict[str, Any]) -> WatermarkStrategy:
    """The Java generator (with field 1 as the timestamp, in Java: no Python operator before it)."""
    from pyflink.java_gateway import get_gateway

    every = generator["every"] if generator["emit_on"] == "every" else 0
    return WatermarkStrategy(get_gateway().jvm.flinkish.MarkerPunctuated.strategy(generator["bound"], every))


def new_env(jar: str) -> StreamExecutionEnvironment:
    from pyflink.common import Configuration

    config = Configuration()
    config.set_string("python.fn-execution.bundle.size", "1")  # see pyflink_all_windows.py
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(1)
    env.set_python_executable(sys.executable)
    env.add_jars("file://" + jar)
    generators.ship(env)
    return env


def parse(line: str) -> Row:
    key, ts, value, marker = line.split(",")
    return Row(key, int(ts), int(value), marker == "true")


def source_stream(env: StreamExecutionEnvironment, events: List[Any], generator: Dict[str, Any]) -> Any:
    """The events as lines ``key,ts,value,marker`` of one text file (one split), read by a ``FileSource`` (FLIP-27)
    with the generator given at the source; the lines parsed back into rows after it."""
    from pyflink.datastream.connectors.file_system import FileSource, StreamFormat

    path = os.path.join(tempfile.mkdtemp(prefix="flinkish-punctuated-"), "events.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(f"{k},{ts},{v},{str(m).lower()}\n" for k, ts, v, m in events)
    source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), path).build()
    return env.from_source(source, strategy(generator), "events", Types.STRING()).map(parse, output_type=row_type())


def run_scenario(jar: str, scenario: Dict[str, Any], at: str) -> Dict[str, List[Any]]:
    env = new_env(jar)
    events = [(e["key"], e["ts"], e["value"], e["marker"]) for batch in scenario["batches"] for e in batch["events"]]
    if at == "source":
        stream = source_stream(env, events, scenario["generator"])
    else:
        stream = env.from_collection(events, type_info=row_type()).assign_timestamps_and_watermarks(
            strategy(scenario["generator"]))
    window = scenario["window"]
    spec = window["assigner"]
    if spec["type"] == "tumbling":
        assigner = TumblingEventTimeWindows.of(Time.milliseconds(spec["size"]))
    elif spec["type"] == "sliding":
        assigner = SlidingEventTimeWindows.of(Time.milliseconds(spec["size"]), Time.milliseconds(spec["slide"]))
    else:
        assigner = EventTimeSessionWindows.with_gap(Time.milliseconds(spec["gap"]))
    windowed = stream.key_by(lambda e: e[0], key_type=Types.STRING()).window(assigner)
    if window["allowed_lateness"]:
        windowed = windowed.allowed_lateness(window["allowed_lateness"])
    late = OutputTag("late", row_type())
    if window["late_side_output"]:
        windowed = windowed.side_output_late_data(late)
    fn = window["function"]
    if fn == "reduce_sum":
        out = windowed.reduce(Sum(), window_function=Firing(fn), output_type=Types.STRING())
    elif fn == "aggregate_avg":
        out = windowed.aggregate(generators.CountSum(), window_function=Firing(fn), output_type=Types.STRING())
    else:
        out = windowed.process(Firing(fn), output_type=Types.STRING())
    late_rows = out.get_side_output(late).map(
        lambda e: json.dumps({"late": {"key": e[0], "ts": e[1], "value": e[2]}}), output_type=Types.STRING())
    with out.union(late_rows).execute_and_collect() as results:
        rows = [json.loads(r) for r in results]
    return {"main": [r for r in rows if "late" not in r], "late": [r["late"] for r in rows if "late" in r]}


def as_scenario(scenario: Dict[str, Any], at: str) -> Dict[str, Any]:
    """``scenario`` with its events as the conformance suite's ``{key, ts, value}`` records plus ``marker``, its
    batches as ``{"events": [...]}`` (no watermark: the generator makes them), and bounded input; at the source, named
    ``<name>_at_source`` with ``generator_at`` (how ``pyspark_flinkish.conformance.pipeline.build`` places it)."""
    batches = [{"events": [dict(zip(("key", "ts", "value", "marker"), e)) for e in b]} for b in scenario["batches"]]
    if at == "source":
        scenario = {**scenario, "name": scenario["name"] + "_at_source", "generator_at": "source"}
    return {**scenario, "end_of_input": True, "batches": batches}


def canonical(output: Dict[str, List[Any]]) -> Dict[str, List[Any]]:
    """``conformance/README.md``'s canonical order (no ``null`` in these outputs)."""
    return {
        "main": sorted(output["main"], key=lambda r: (r["watermark"], r["key"], r["window_start"], r["window_end"],
                                                      json.dumps(r["result"], sort_keys=True, separators=(",", ":")))),
        "late": sorted(output["late"], key=lambda r: (r["key"], r["ts"], r["value"])),
    }


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--at", choices=("assigner", "source"), default="assigner",
                        help="where the generator is given: assign_timestamps_and_watermarks after a collection "
                             "(default) or env.from_source's strategy of a one-split FileSource")
    parser.add_argument("--only", default=None, help="run only the scenario with this name (no output written)")
    args = parser.parse_args(argv)

    jar = generators.build_jar("MarkerPunctuated.java", "marker-punctuated.jar")
    scenarios = []
    for scenario in SCENARIOS:
        if args.only and scenario["name"] != args.only:  # the name without _at_source
            continue
        scenario = as_scenario(scenario, args.at)
        first, second = (canonical(run_scenario(jar, scenario, args.at)) for _ in range(2))
        if first != second:
            raise SystemExit(f"{scenario['name']}: two Flink runs disagree: {first} / {second}")
        print(f"{scenario['name']}: {json.dumps(first)}", flush=True)
        scenarios.append({**scenario, "expected": first})
    if args.only:
        return 0
    options = " --at source" if args.at == "source" else ""
    oracle.record(args.out, __file__, {"parallelism": 1, "scenarios": scenarios},
                  options=options)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
