"""Real PyFlink's non-keyed windows (``window_all``) and BATCH runtime mode, as the oracle for pyspark_flinkish's
``AllWindowedStream`` and ``set_runtime_mode``.

Runs with PyFlink's own interpreter (a virtualenv with ``apache-flink==2.3.0``, as ``run_all.py``'s ``ensure_pyflink``
creates in ``benchmarks/.venv-pyflink``; Java 17 and ``javac`` on ``PATH``)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_all_windows.py \
        --out jvm-free-tests/datastream/pyflink_all_windows.json

The input is one list of ``(name, event time ms, value)`` elements. STREAMING cases read it with a watermark after
every element (``max - bound - 1``, Flink's bounded out-of-orderness, but punctuated: ``java/
PunctuatedOutOfOrderness.java``, compiled here against PyFlink's jars), so that lateness does not depend on timing;
pyspark_flinkish reproduces it with one micro-batch per element. BATCH cases run the same pipelines with
``set_runtime_mode(RuntimeExecutionMode.BATCH)``. ``probes`` record what Flink accepts or refuses in BATCH mode.

Each case's output is the list of JSON rows the job emitted, in emission order (parallelism 1): the main output as
``["main", ...]``, the late side output as ``["late", ts, value]`` (two outputs of one operator reach the collect sink
through a union, so only the order within each kind is Flink's). ``jvm-free-tests/datastream/all_window_cases.py``
builds the same pipelines with pyspark_flinkish; ``test_pyflink_all_windows.py`` (local engine) and
``tests/spark/test_spark_all_windows.py`` (Spark) compare.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List

import pyflink_generators as generators
import pyflink_oracle as oracle
from pyflink.common import Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.functions import AllWindowFunction, ProcessAllWindowFunction
from pyflink.datastream.window import (
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    CountTumblingWindowAssigner,
    EventTimeSessionWindows,
    GlobalWindows,
    PurgingTrigger,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)

BOUND_MS = 1000
# (name, event time ms, value): out of order; with a 1 s bound and 3 s allowed lateness on 10 s tumbling windows,
# 7000 and 19500 fire their windows again, 9000 and 18000 are too late.
INPUT = [
    ["a", 1000, 1], ["b", 4000, 2], ["a", 12000, 3], ["b", 7000, 4], ["c", 15000, 5], ["a", 9000, 6],
    ["b", 21000, 7], ["c", 19500, 8], ["a", 33000, 9], ["b", 18000, 10], ["c", 34500, 11], ["a", 2500, 12],
]

# window: tumbling (10 s) | sliding (10 s, 5 s) | session (gap 3 s) | count_all (GlobalWindows +
#   PurgingTrigger(CountTrigger(size)): Java's countWindowAll(size)) | count_tumbling (CountTumblingWindowAssigner)
#   | global_continuous_pt (GlobalWindows + ContinuousProcessingTimeTrigger.of(1 h))
# function: reduce | reduce_process | aggregate_process | process | apply
CASES: List[Dict[str, Any]] = [
    {"name": "tumbling_reduce", "window": "tumbling", "function": "reduce"},
    {"name": "tumbling_reduce_process", "window": "tumbling", "function": "reduce_process"},
    {"name": "tumbling_apply", "window": "tumbling", "function": "apply"},
    {"name": "tumbling_late", "window": "tumbling", "function": "process", "lateness": 3000, "late_tag": True},
    {"name": "sliding_process", "window": "sliding", "function": "process"},
    {"name": "session_aggregate", "window": "session", "function": "aggregate_process"},
    {"name": "count_all_3", "window": "count_all", "size": 3, "function": "process"},
    {"name": "count_tumbling_4_reduce", "window": "count_tumbling", "size": 4, "function": "reduce"},
    {"name": "global_processing_time_trigger", "window": "global_continuous_pt", "function": "process"},
    {"name": "batch_tumbling_late", "window": "tumbling", "function": "process", "lateness": 3000, "late_tag": True,
     "mode": "BATCH"},
    {"name": "batch_session_aggregate", "window": "session", "function": "aggregate_process", "mode": "BATCH"},
    {"name": "batch_count_all_3", "window": "count_all", "size": 3, "function": "process", "mode": "BATCH"},
    {"name": "batch_global_processing_time_trigger", "window": "global_continuous_pt", "function": "process",
     "mode": "BATCH"},
]



def row_type() -> Any:
    """A fresh type each time: one that reached the JVM holds a Java object and no longer pickles (OutputTag)."""
    return Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()])


class Elements(ProcessAllWindowFunction):
    def process(self, context: Any, elements: Any) -> Any:
        w = context.window()
        yield json.dumps(["main", getattr(w, "start", None), getattr(w, "end", None), [e[2] for e in elements]])


class Reduced(ProcessAllWindowFunction):
    def process(self, context: Any, elements: Any) -> Any:
        w = context.window()
        for e in elements:
            yield json.dumps(["main", w.start, w.end, e[2]])


class Summed(AllWindowFunction):
    def apply(self, window: Any, inputs: Any) -> Any:
        yield json.dumps(["main", window.start, window.end, sum(e[2] for e in inputs)])


class Aggregated(ProcessAllWindowFunction):
    def process(self, context: Any, elements: Any) -> Any:
        w = context.window()
        for count, total in elements:
            yield json.dumps(["main", w.start, w.end, count, total])


def punctuated_strategy(jar_dir: str) -> WatermarkStrategy:
    from pyflink.java_gateway import get_gateway

    gateway = get_gateway()
    supplier = gateway.jvm.flinkish.PunctuatedOutOfOrderness(BOUND_MS)
    j_strategy = gateway.jvm.org.apache.flink.api.common.eventtime.WatermarkStrategy.forGenerator(supplier)
    return WatermarkStrategy(j_strategy)


def build_jar() -> str:
    return generators.build_jar("PunctuatedOutOfOrderness.java", "punctuated.jar")


def new_env(jar: str, mode: str) -> StreamExecutionEnvironment:
    from pyflink.common import Configuration

    config = Configuration()
    # one element per Python bundle: each element leaves a Python operator before the next one enters, so the
    # watermark generated after an element reaches the window operator before the next element (default bundles
    # hold elements back until the bundle ends, which delays every watermark to the end of the input)
    config.set_string("python.fn-execution.bundle.size", "1")
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(1)
    env.set_python_executable(sys.executable)
    env.add_jars("file://" + jar)
    generators.ship(env)
    if mode == "BATCH":
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    return env


def run_case(jar: str, case: Dict[str, Any]) -> List[Any]:
    env = new_env(jar, case.get("mode", "STREAMING"))
    strategy = punctuated_strategy(jar).with_timestamp_assigner(_Ts())
    stream = env.from_collection([tuple(e) for e in INPUT], type_info=row_type()).assign_timestamps_and_watermarks(strategy)
    kind = case["window"]
    if kind == "tumbling":
        windowed = stream.window_all(TumblingEventTimeWindows.of(Time.seconds(10)))
    elif kind == "sliding":
        windowed = stream.window_all(SlidingEventTimeWindows.of(Time.seconds(10), Time.seconds(5)))
    elif kind == "session":
        windowed = stream.window_all(EventTimeSessionWindows.with_gap(Time.seconds(3)))
    elif kind == "count_all":
        windowed = stream.window_all(GlobalWindows.create()).trigger(PurgingTrigger.of(CountTrigger.of(case["size"])))
    elif kind == "count_tumbling":
        windowed = stream.window_all(CountTumblingWindowAssigner.of(case["size"]))
    else:
        windowed = stream.window_all(GlobalWindows.create()).trigger(
            ContinuousProcessingTimeTrigger.of(Time.hours(1)))
    late = OutputTag("late", row_type())
    if case.get("lateness"):
        windowed = windowed.allowed_lateness(case["lateness"])
    if case.get("late_tag"):
        windowed = windowed.side_output_late_data(late)

    def add(a: Any, b: Any) -> Any:
        return (a[0], max(a[1], b[1]), a[2] + b[2])

    fn = case["function"]
    if fn == "reduce":
        out = windowed.reduce(add, output_type=row_type()).map(lambda e: json.dumps(["main", e[2]]), output_type=Types.STRING())
    elif fn == "reduce_process":
        out = windowed.reduce(add, window_function=Reduced(), output_type=Types.STRING())
    elif fn == "aggregate_process":
        out = windowed.aggregate(generators.CountSum(), window_function=Aggregated(), output_type=Types.STRING())
    elif fn == "apply":
        out = windowed.apply(Summed(), output_type=Types.STRING())
    else:
        out = windowed.process(Elements(), output_type=Types.STRING())
    if case.get("late_tag"):
        late_rows = out.get_side_output(late).map(lambda e: json.dumps(["late", e[1], e[2]]), output_type=Types.STRING())
        out = out.union(late_rows)
    with out.execute_and_collect() as results:
        return [json.loads(r) for r in results]


class _Ts(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value[1])


def probe_batch_checkpointing(jar: str) -> str:
    env = new_env(jar, "BATCH")
    env.enable_checkpointing(1000)
    try:
        with env.from_collection([1, 2, 3], type_info=Types.INT()).map(lambda x: x + 1, Types.INT()).execute_and_collect() as r:
            return "accepted: " + json.dumps(list(r))
    except Exception as exc:
        return "refused: " + str(exc).splitlines()[0][:400]


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", default=None, help="run only the case with this name (no output written)")
    args = parser.parse_args(argv)

    jar = build_jar()
    cases = []
    for case in CASES:
        if args.only and case["name"] != args.only:
            continue
        output = run_case(jar, case)
        print(f"{case['name']}: {output}", flush=True)
        cases.append({**case, "output": output})
    if args.only:
        return 0
    probes = {"batch_with_checkpointing": probe_batch_checkpointing(jar)}
    print(probes, flush=True)
    body = {"parallelism": 1, "watermark_bound_ms": BOUND_MS, "input": INPUT, "cases": cases, "probes": probes}
    oracle.record(args.out, __file__, body)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
