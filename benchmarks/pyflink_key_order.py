"""Real PyFlink's order of keys in BATCH execution (a keyed operator's input sorted by the key's serialized bytes),
as the oracle for pyspark_flinkish.

Runs with PyFlink's own interpreter (``benchmarks/.venv-pyflink``, see ``pyflink_oracle.py``; Java 17)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_key_order.py \
        --out jvm-free-tests/datastream/pyflink_key_order.json

The jobs are those of ``jvm-free-tests/datastream/key_order_cases.py`` (a rolling ``reduce`` per key in
``RuntimeExecutionMode.BATCH``, parallelism 1, one job per case), built here with PyFlink's classes. The JSON file
holds, per case, the strings the job emitted, in their order. ``jvm-free-tests/datastream/test_pyflink_key_order.py``
compares (local engine and the foreachBatch executor's bodies); it does not need PyFlink.
"""

from __future__ import annotations

import argparse
import sys
from types import SimpleNamespace
from typing import Any, Dict, List

import pyflink_oracle as oracle

cases = oracle.import_cases("key_order_cases")


def api() -> Any:
    from pyflink.common import Row, Types

    return SimpleNamespace(Types=Types, Row=Row)


def environment() -> Any:
    return oracle.environment(cases, parallelism=1, batch=True)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    a = api()
    results: Dict[str, List[str]] = {}
    for name in cases.case_keys(a):
        with cases.build(a, environment(), name).execute_and_collect() as collected:
            results[name] = list(collected)
        print(f"{name}: {results[name]}", file=sys.stderr, flush=True)
    body = {"parallelism": 1, "runtime_mode": "BATCH", "seed": cases.SEED, "cases": results}
    oracle.record(args.out, __file__, body, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
