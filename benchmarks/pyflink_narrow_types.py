"""Real PyFlink's coders on every basic type (``Types.FLOAT()`` rounded to 32 bits, integers range-checked, SQL
times in milliseconds, ...), as the oracle for pyspark_flinkish.

Runs with PyFlink's own interpreter (``benchmarks/.venv-pyflink``, see ``pyflink_oracle.py``; Java 17)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_narrow_types.py \
        --out jvm-free-tests/datastream/pyflink_narrow_types.json

The pipelines and their values (a fixed seed) are those of ``jvm-free-tests/datastream/narrow_types_cases.py``,
built here with PyFlink's classes (parallelism 1; the cases whose last function makes strings after a ``key_by`` in
one job, unioned, the others one job each). The JSON file holds, per case, the strings the Python functions made of
what they were handed (``"float 110.0999984741211"``); per typed ``from_collection`` likewise; per refused
(type, value) the exception PyFlink raised (type and message); per chaining case (``chain_cases``) what the
function after a ``FLOAT``-declared one got; and what ``execute_and_collect()`` and ``print()`` give for ``FLOAT``
values. ``jvm-free-tests/datastream/test_narrow_types.py`` and ``jvm-free-tests/spark/
test_narrow_types_foreach_batch.py`` compare (local engine, foreachBatch executor's bodies); neither needs PyFlink.
"""

from __future__ import annotations

import argparse
import re
import sys
from types import SimpleNamespace
from typing import Any, Dict, List

import pyflink_oracle as oracle

cases = oracle.import_cases("narrow_types_cases")


def api() -> Any:
    from pyflink.common import Row, Types, WatermarkStrategy
    from pyflink.common.watermark_strategy import TimestampAssigner
    from pyflink.datastream import OutputTag
    from pyflink.datastream.functions import AggregateFunction, KeyedProcessFunction, ProcessFunction
    from pyflink.datastream.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor

    return SimpleNamespace(
        Types=Types, Row=Row, OutputTag=OutputTag, ProcessFunction=ProcessFunction,
        KeyedProcessFunction=KeyedProcessFunction, AggregateFunction=AggregateFunction,
        ValueStateDescriptor=ValueStateDescriptor, ListStateDescriptor=ListStateDescriptor,
        MapStateDescriptor=MapStateDescriptor, WatermarkStrategy=WatermarkStrategy, TimestampAssigner=TimestampAssigner,
    )


def environment() -> Any:
    return oracle.environment(cases, parallelism=1)


def source(env: Any, values: List[Any]) -> Any:
    return env.from_collection(list(values))


def collect(stream: Any) -> List[Any]:
    with stream.execute_and_collect() as results:
        return list(results)


PYTHON_ERROR = re.compile(r"^(\w+(?:Error|Exception)): (.*)$")


JAVA_CAUSE = re.compile(r"^Caused by: (?:\w+\.)*(\w+(?:Error|Exception)): (.*)$")


def python_error(exc: BaseException) -> List[str]:
    """The Python exception (type, message) in the traceback PyFlink's Java exception carries (its last one);
    if the Java side failed instead, the innermost Java cause (its class's simple name, message)."""
    found = [m.groups() for m in map(PYTHON_ERROR.match, str(exc).splitlines()) if m]
    python = [g for g in found if not g[0].startswith(("java", "org", "Py4J"))]
    if python:
        return list(python[-1])
    causes = [m.groups() for m in map(JAVA_CAUSE.match, str(exc).splitlines()) if m]
    return ["java " + causes[-1][0], causes[-1][1]] if causes else ["(none)", str(exc).splitlines()[0]]


def run_cases() -> Any:
    a = api()
    # all cases but the chained one in one job (a union after each case's last function, which makes strings)
    names = cases.case_names(a, source)
    env = environment()
    streams = [cases.build(a, source, env, n).map(lambda s, n=n: f"{n}|{s}", a.Types.STRING()) for n in names[1:]]
    streams = [s for s, n in zip(streams, names[1:]) if n != cases.CHAINED]
    first = cases.build(a, source, env, names[0]).map(lambda s, n=names[0]: f"{n}|{s}", a.Types.STRING())
    values: Dict[str, Any] = {n: [] for n in names}
    try:
        for line in collect(first.union(*streams)):
            name, _, shown = line.partition("|")
            values[name].append(shown)
    except Exception:
        for name in names:
            try:
                values[name] = collect(cases.build(a, source, environment(), name))
            except Exception as exc:
                values[name] = {"error": python_error(exc)}
    # PyFlink chains two Python functions only where the second's output does not go into a union: its own job
    values[cases.CHAINED] = collect(cases.build(a, source, environment(), cases.CHAINED))
    for name in names:
        print(f"{name}: {values[name]}", file=sys.stderr, flush=True)
    typed: Dict[str, Any] = {}
    for name in cases.BASIC_TYPES:
        try:
            typed[name] = collect(cases.from_collection_typed(a, environment(), name))
        except Exception as exc:
            typed[name] = {"error": python_error(exc)}
        print(f"from_collection {name}: {typed[name]}", file=sys.stderr, flush=True)
    refused = []
    for type_name, value in cases.REFUSED:
        try:
            got = collect(cases.refused(a, source, environment(), type_name, value))
            error = ["(accepted)", repr(got)]
        except Exception as exc:
            error = python_error(exc)
        print(f"refused {type_name} {value!r}: {error}", file=sys.stderr, flush=True)
        refused.append({"type": type_name, "value": repr(value), "error": error})

    # operator chaining: what the function after a FLOAT-declared one gets (one job per case)
    chained = {}
    for name, build in cases.chain_cases(a).items():
        got = collect(build(environment()))
        chained[name] = [v for v in got if v != "u"]  # union_after's other input
        print(f"chain {name}: {chained[name]}", file=sys.stderr, flush=True)

    # execute_and_collect() and print() of FLOAT values (the client converts them; print() is Java's)
    T = a.Types  # noqa: N806
    f = T.FLOAT()
    floats = [110.1, 0.1, 1e10, 1e-5, 3.4028235e38]
    shapes = {"FLOAT": (f, lambda x: x), "TUPLE": (T.TUPLE([T.STRING(), f]), lambda x: ("a", x)),
              "ROW": (T.ROW([f]), lambda x: a.Row(x)), "LIST": (T.LIST(f), lambda x: [x])}
    collected = {}
    for shape, (t, make) in shapes.items():
        collected[shape] = [repr(x) for x in collect(environment().from_collection(floats).map(make, t))]
    env = environment()
    for shape, (t, make) in shapes.items():
        env.from_collection(floats).map(make, t).print(shape)
    env.execute("print")
    return values, typed, refused, chained, {"values": [repr(x) for x in floats], "collected": collected}


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    with oracle.captured_print() as lines:  # print() runs in the Java process
        values, typed, refused, chained, float_collect = run_cases()
    printed: Dict[str, List[str]] = {}
    for line in lines:
        prefix, sep, rest = line.partition("> ")
        if sep and prefix in ("FLOAT", "TUPLE", "ROW", "LIST"):
            printed.setdefault(prefix, []).append(rest)
    float_collect["printed"] = printed

    body = {
        "parallelism": 1,
        "seed": cases.SEED,
        "cases": values,
        "from_collection": typed,
        "refused": refused,
        "chaining": chained,
        "float_collect": float_collect,
    }
    oracle.record(args.out, __file__, body, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
