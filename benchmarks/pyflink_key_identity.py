"""Real PyFlink's identity of keys (which keys share keyed state), as the oracle for pyspark_flinkish.

Runs with PyFlink's own interpreter (``benchmarks/.venv-pyflink``, see ``pyflink_count_windows.py``; Java 17)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_key_identity.py \
        --out jvm-free-tests/datastream/pyflink_key_identity.json

The jobs are those of ``jvm-free-tests/datastream/key_identity_cases.py`` (a STREAMING keyed ``reduce`` counting
records per key, parallelism 1, one job per case), built here with PyFlink's classes. The JSON file holds, per case,
the strings the job emitted, in their order; per case of ``CURRENT_KEY_CASES`` the keys as a
``KeyedProcessFunction`` got them (``current_keys``); and per error case (``error_cases``: keys of a form PyFlink
fails on) the Python error PyFlink's job failed with. ``jvm-free-tests/datastream/test_pyflink_key_identity.py`` compares;
it does not need PyFlink. ``--only NAME`` (repeatable) runs only those cases and updates them in an existing file.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List

CASES_DIR = Path(__file__).resolve().parents[1] / "jvm-free-tests" / "datastream"
sys.path.insert(0, str(CASES_DIR))
import key_identity_cases as cases  # noqa: E402


def api() -> Any:
    from pyflink.common import Row, Types
    from pyflink.datastream import KeyedProcessFunction

    return SimpleNamespace(Types=Types, Row=Row, KeyedProcessFunction=KeyedProcessFunction)


def environment() -> Any:
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    env.set_python_executable(sys.executable)  # the Python workers run in this venv too
    env.add_python_file(str(CASES_DIR / "key_identity_cases.py"))  # the workers import the case module
    return env


def python_error(text: str) -> str:
    """The Python exception a failed PyFlink job's error text reports (``AttributeError: ...``), else its first
    line."""
    for match in re.finditer(r"(?<![\w.])([A-Z]\w*(?:Error|Exception)): ([^\n]*)", text):
        return f"{match.group(1)}: {match.group(2).strip()}"
    return text.splitlines()[0] if text else ""


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", action="append", default=[], help="run only this case (repeatable), updating --out")
    args = parser.parse_args(argv)
    import pyflink.version

    a = api()
    results: Dict[str, List[str]] = {}
    errors: Dict[str, str] = {}
    for name in cases.case_keys(a):
        if args.only and name not in args.only:
            continue
        with cases.build(a, environment(), name).execute_and_collect() as collected:
            results[name] = list(collected)
        print(f"{name}: {results[name]}", file=sys.stderr, flush=True)
    current: Dict[str, List[str]] = {}
    for name in cases.CURRENT_KEY_CASES:
        if args.only and name not in args.only:
            continue
        with cases.build_current_key(a, environment(), name).execute_and_collect() as collected:
            current[name] = list(collected)
        print(f"current key {name}: {current[name]}", file=sys.stderr, flush=True)
    for name in cases.error_cases(a):
        if args.only and name not in args.only:
            continue
        try:
            with cases.build(a, environment(), name).execute_and_collect() as collected:
                got = list(collected)
        except Exception as exc:  # the job's failure is what is recorded
            errors[name] = python_error(str(exc))
        else:
            errors[name] = f"no error: {got}"
        print(f"{name}: {errors[name]}", file=sys.stderr, flush=True)
    doc = {
        "pyflink_version": pyflink.version.__version__,
        "command": "benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_key_identity.py --out " + args.out,
        "parallelism": 1,
        "runtime_mode": "STREAMING",

        "cases": results,
        "current_keys": current,
        "errors": errors,
    }
    if args.only:  # update the named cases of the existing file, in the cases' order
        with open(args.out) as f:
            old = json.load(f)
        merged = {**old.get("cases", {}), **results}
        doc["cases"] = {n: merged[n] for n in cases.case_keys(a) if n in merged}
        doc["current_keys"] = {**old.get("current_keys", {}), **current}
        doc["errors"] = {**old.get("errors", {}), **errors}
        doc["command"] = old["command"]
    with open(args.out, "w") as out:
        json.dump(doc, out, indent=1, ensure_ascii=False)
        out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
