"""Real PyFlink's ``Row``, typed values, ``print()``, rolling aggregations (``KeyedStream.sum/min/max/min_by/
max_by``) and keyed state in ``KeyedStream.map/flat_map/filter/reduce``, as the oracle for pyspark_flinkish.

Runs with PyFlink's own interpreter (``benchmarks/.venv-pyflink``, see ``pyflink_count_windows.py``; Java 17)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_rows.py --out jvm-free-tests/datastream/pyflink_rows.json

The pipelines are those of ``jvm-free-tests/datastream/rows_cases.py``, built here with PyFlink's classes. For each
case the JSON file holds the collected elements (``execute_and_collect``, encoded by ``rows_cases.encode``) and the
lines PyFlink's ``print(case)`` wrote (captured from the Java process's stdout), in order (parallelism 1); and the
messages of what PyFlink refuses on a ``KeyedStream``. ``jvm-free-tests/datastream/test_pyflink_rows.py`` (local
engine) and ``tests/spark/test_spark_rows.py`` (foreachBatch executor) compare; neither needs PyFlink.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List

CASES_DIR = Path(__file__).resolve().parents[1] / "jvm-free-tests" / "datastream"
sys.path.insert(0, str(CASES_DIR))
import rows_cases  # noqa: E402


def api() -> Any:
    from pyflink.common import Row, Types
    from pyflink.datastream.functions import FilterFunction, FlatMapFunction, MapFunction, ReduceFunction
    from pyflink.datastream.state import ValueStateDescriptor

    return SimpleNamespace(
        Types=Types, Row=Row, MapFunction=MapFunction, FlatMapFunction=FlatMapFunction,
        FilterFunction=FilterFunction, ReduceFunction=ReduceFunction, ValueStateDescriptor=ValueStateDescriptor,
    )


def environment() -> Any:
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.set_python_executable(sys.executable)  # the Python workers run in this venv too
    env.add_python_file(str(CASES_DIR / "rows_cases.py"))  # the workers import the case module's functions
    return env


def refusals(a: Any) -> Dict[str, str]:
    """The messages PyFlink raises for operator settings on a KeyedStream."""
    keyed = environment().from_collection([("a", 1)]).key_by(lambda e: e[0])
    out = {}
    for call, f in [("name", lambda: keyed.name("x")), ("uid", lambda: keyed.uid("x")),
                    ("set_parallelism", lambda: keyed.set_parallelism(2)), ("get_name", lambda: keyed.get_name())]:
        try:
            f()
            out[call] = "(accepted)"
        except Exception as exc:  # noqa: BLE001 - recording PyFlink's plain Exception
            out[call] = f"{type(exc).__name__}: {exc}"
    return out


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    # print() runs in the Java process, which inherits file descriptor 1: send it to a file to read back.
    captured = tempfile.NamedTemporaryFile(prefix="pyflink-print-", suffix=".txt", delete=False)
    saved_stdout = os.dup(1)
    os.dup2(captured.fileno(), 1)
    try:
        import pyflink.version

        a = api()
        names = rows_cases.case_names(a)
        env = environment()
        for name in names:
            rows_cases.build(a, env, name).print(name)
        env.execute("print")
        values = {}
        for name in names:
            with rows_cases.build(a, environment(), name).execute_and_collect() as results:
                values[name] = [rows_cases.encode(r) for r in results]
            print(f"{name}: {values[name]}", file=sys.stderr, flush=True)
        refused = refusals(a)
        sys.stdout.flush()
    finally:
        os.dup2(saved_stdout, 1)
    printed: Dict[str, List[str]] = {n: [] for n in names}
    for line in Path(captured.name).read_text().splitlines():
        prefix, sep, rest = line.partition("> ")
        if sep and prefix in printed:
            printed[prefix].append(rest)
    os.unlink(captured.name)
    doc = {
        "pyflink_version": pyflink.version.__version__,
        "command": "benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_rows.py --out " + args.out,
        "parallelism": 1,
        "cases": [{"name": n, "values": values[n], "printed": printed[n]} for n in names],
        "keyed_stream_refusals": refused,
    }
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
