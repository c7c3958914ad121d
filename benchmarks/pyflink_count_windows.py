"""Real PyFlink's count windows, as the oracle for pyspark_flinkish's ``CountTumblingWindowAssigner`` /
``CountSlidingWindowAssigner`` (and the record of how PyFlink's ``count_window`` differs from Java Flink's).

Runs with PyFlink's own interpreter (``benchmarks/.venv-pyflink``, which ``run_all.py``'s ``ensure_pyflink`` creates:
``python3 -m venv benchmarks/.venv-pyflink && benchmarks/.venv-pyflink/bin/pip install apache-flink==2.3.0``; Java 17)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_count_windows.py \
        --out jvm-free-tests/datastream/pyflink_count_windows.json

Every case keys one input (several keys, remainders at the end) and windows it by count; the JSON file holds the input,
each case's spec and PyFlink's output in emission order (parallelism 1). ``jvm-free-tests/datastream/
test_pyflink_count_windows.py`` (local engine) and ``tests/spark/test_spark_count_windows.py`` (foreachBatch executor)
build the same pipelines from the specs and compare; neither needs PyFlink.

Output rows are JSON strings: a ProcessWindowFunction emits ``[key, window id, [values]]``, a reduce ``[key, sum]``,
a reduce with a ProcessWindowFunction ``[key, window id, sum]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List

import pyflink_oracle as oracle
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.window import CountSlidingWindowAssigner, CountTumblingWindowAssigner

# a: 8 elements, b: 5, c: 2 -- interleaved, so that keys' counters are independent and remainders are left over.
INPUT = [
    ["a", 1], ["b", 10], ["a", 2], ["c", 100], ["a", 3], ["b", 20], ["a", 4], ["b", 30],
    ["a", 5], ["c", 200], ["a", 6], ["b", 40], ["a", 7], ["b", 50], ["a", 8],
]

# window: count_window(size[, slide]) | tumbling: CountTumblingWindowAssigner.of(size)
#         | sliding: CountSlidingWindowAssigner.of(size, slide)
# function: process (ProcessWindowFunction) | reduce (sum) | reduce_process (sum, then a ProcessWindowFunction)
CASES: List[Dict[str, Any]] = [
    {"name": "count_window_tumbling_3", "window": "count_window", "size": 3, "slide": 0, "function": "process"},
    {"name": "count_window_sliding_3_2", "window": "count_window", "size": 3, "slide": 2, "function": "process"},
    {"name": "count_window_sliding_3_2_reduce", "window": "count_window", "size": 3, "slide": 2, "function": "reduce"},
    {"name": "tumbling_2_process", "window": "tumbling", "size": 2, "function": "process"},
    {"name": "tumbling_3_reduce", "window": "tumbling", "size": 3, "function": "reduce"},
    {"name": "sliding_3_2_process", "window": "sliding", "size": 3, "slide": 2, "function": "process"},
    {"name": "sliding_4_1_reduce", "window": "sliding", "size": 4, "slide": 1, "function": "reduce"},
    {"name": "sliding_2_3_process", "window": "sliding", "size": 2, "slide": 3, "function": "process"},
    {"name": "sliding_3_3_reduce_process", "window": "sliding", "size": 3, "slide": 3, "function": "reduce_process"},
    {"name": "sliding_5_2_process", "window": "sliding", "size": 5, "slide": 2, "function": "process"},
]


class Elements(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield json.dumps([key, context.window().id, [e[1] for e in elements]])


class Reduced(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        for e in elements:
            yield json.dumps([key, context.window().id, e[1]])


def run_case(case: Dict[str, Any]) -> List[Any]:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.set_python_executable(sys.executable)  # the Python workers run in this venv too
    row = Types.TUPLE([Types.STRING(), Types.INT()])
    keyed = env.from_collection([tuple(e) for e in INPUT], type_info=row).key_by(lambda e: e[0], key_type=Types.STRING())
    if case["window"] == "count_window":
        windowed = keyed.count_window(case["size"], case["slide"])
    elif case["window"] == "tumbling":
        windowed = keyed.window(CountTumblingWindowAssigner.of(case["size"]))
    else:
        windowed = keyed.window(CountSlidingWindowAssigner.of(case["size"], case["slide"]))

    def add(a: Any, b: Any) -> Any:
        return (a[0], a[1] + b[1])

    if case["function"] == "process":
        out = windowed.process(Elements(), output_type=Types.STRING())
    elif case["function"] == "reduce":
        out = windowed.reduce(add, output_type=row).map(lambda e: json.dumps([e[0], e[1]]), output_type=Types.STRING())
    else:
        out = windowed.reduce(add, window_function=Reduced(), output_type=Types.STRING())
    with out.execute_and_collect() as results:
        return [json.loads(r) for r in results]


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    cases = []
    for case in CASES:
        output = run_case(case)
        print(f"{case['name']}: {output}", flush=True)
        cases.append({**case, "output": output})
    oracle.record(args.out, __file__, {"parallelism": 1, "input": INPUT, "cases": cases})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
