"""Real PyFlink's identity of keys (which keys share keyed state), as the oracle for pyspark_flinkish.

Runs with PyFlink's own interpreter (``benchmarks/.venv-pyflink``, see ``pyflink_count_windows.py``; Java 17)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_key_identity.py \
        --out jvm-free-tests/datastream/pyflink_key_identity.json

The jobs are those of ``jvm-free-tests/datastream/key_identity_cases.py`` (a STREAMING keyed ``reduce`` counting
records per key, parallelism 1, one job per case), built here with PyFlink's classes. The JSON file holds, per case,
the strings the job emitted, in their order. ``jvm-free-tests/datastream/test_pyflink_key_identity.py`` compares;
it does not need PyFlink.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List

CASES_DIR = Path(__file__).resolve().parents[1] / "jvm-free-tests" / "datastream"
sys.path.insert(0, str(CASES_DIR))
import key_identity_cases as cases  # noqa: E402


def api() -> Any:
    from pyflink.common import Row, Types

    return SimpleNamespace(Types=Types, Row=Row)


def environment() -> Any:
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    env.set_python_executable(sys.executable)  # the Python workers run in this venv too
    env.add_python_file(str(CASES_DIR / "key_identity_cases.py"))  # the workers import the case module
    return env


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    import pyflink.version

    a = api()
    results: Dict[str, List[str]] = {}
    for name in cases.case_keys(a):
        with cases.build(a, environment(), name).execute_and_collect() as collected:
            results[name] = list(collected)
        print(f"{name}: {results[name]}", file=sys.stderr, flush=True)
    doc = {
        "pyflink_version": pyflink.version.__version__,
        "command": "benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_key_identity.py --out " + args.out,
        "parallelism": 1,
        "runtime_mode": "STREAMING",

        "cases": results,
    }
    with open(args.out, "w") as out:
        json.dump(doc, out, indent=1, ensure_ascii=False)
        out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
