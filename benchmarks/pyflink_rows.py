"""Real PyFlink's ``Row``, typed values, ``print()``, rolling aggregations (``KeyedStream.sum/min/max/min_by/
max_by``) and keyed state in ``KeyedStream.map/flat_map/filter/reduce``, as the oracle for pyspark_flinkish.

Runs with PyFlink's own interpreter (``benchmarks/.venv-pyflink``, see ``pyflink_oracle.py``; Java 17)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_rows.py --out jvm-free-tests/datastream/pyflink_rows.json

The pipelines are those of ``jvm-free-tests/datastream/rows_cases.py``, built here with PyFlink's classes. For each
case the JSON file holds the collected elements (``execute_and_collect``, encoded by ``rows_cases.encode``) and the
lines PyFlink's ``print(case)`` wrote (captured from the Java process's stdout), in order (parallelism 1); and the
messages of what PyFlink refuses on a ``KeyedStream``. ``jvm-free-tests/datastream/test_pyflink_rows.py`` (local
engine) and ``tests/spark/test_spark_rows.py`` (foreachBatch executor) compare; neither needs PyFlink.
"""

from __future__ import annotations

import argparse
import sys
from types import SimpleNamespace
from typing import Any, Dict, List

import pyflink_oracle as oracle

rows_cases = oracle.import_cases("rows_cases")


def api() -> Any:
    from pyflink.common import Row, Types
    from pyflink.datastream.functions import FilterFunction, FlatMapFunction, MapFunction, ReduceFunction
    from pyflink.datastream.state import ValueStateDescriptor

    return SimpleNamespace(
        Types=Types, Row=Row, MapFunction=MapFunction, FlatMapFunction=FlatMapFunction,
        FilterFunction=FilterFunction, ReduceFunction=ReduceFunction, ValueStateDescriptor=ValueStateDescriptor,
    )


def environment() -> Any:
    return oracle.environment(rows_cases, parallelism=1)


def refusals(a: Any) -> Dict[str, str]:
    """The messages PyFlink raises for operator settings on a KeyedStream."""
    keyed = environment().from_collection([("a", 1)]).key_by(lambda e: e[0])
    out = {}
    for call, f in [("name", lambda: keyed.name("x")), ("uid", lambda: keyed.uid("x")),
                    ("set_parallelism", lambda: keyed.set_parallelism(2)), ("get_name", lambda: keyed.get_name())]:
        try:
            f()
            out[call] = "(accepted)"
        except Exception as exc:
            out[call] = f"{type(exc).__name__}: {exc}"
    return out


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    with oracle.captured_print() as lines:  # print() runs in the Java process: read back from a file
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
    printed: Dict[str, List[str]] = {n: [] for n in names}
    for line in lines:
        prefix, sep, rest = line.partition("> ")
        if sep and prefix in printed:
            printed[prefix].append(rest)
    body = {
        "parallelism": 1,
        "cases": [{"name": n, "values": values[n], "printed": printed[n]} for n in names],
        "keyed_stream_refusals": refused,
    }
    oracle.record(args.out, __file__, body)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
