"""Real PyFlink's plain ``DataStream.broadcast()`` (Flink's ``BroadcastPartitioner``) at several parallelisms, as the
oracle for pyspark_flinkish.

Runs with PyFlink's own interpreter (``benchmarks/.venv-pyflink``, see ``pyflink_oracle.py``; Java 17)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_broadcast_partitioning.py \
        --out jvm-free-tests/datastream/pyflink_broadcast_partitioning.json

The jobs are those of ``jvm-free-tests/datastream/broadcast_partitioning_cases.py``, built here with PyFlink's classes.
The JSON file holds, per collected case, the strings the job emitted, sorted (Flink does not order the outputs of
parallel instances); per printed case, the values printed, sorted, and the first run's raw lines (with Flink's subtask
prefixes; which subtask prints an element that is not broadcast to it varies), sorted; per operator setting on
``broadcast()``'s stream, what PyFlink raised. Each job runs ``--runs`` times and all runs must agree (on the values).
A printed case runs in a child interpreter, before this one starts a JVM: ``print()`` writes from the JVM. ``jvm-free-tests/datastream/test_pyflink_broadcast_partitioning.py`` compares; it does not need
PyFlink.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from types import SimpleNamespace
from typing import Any, Dict, List

import pyflink_oracle as oracle

cases = oracle.import_cases("broadcast_partitioning_cases")


def api() -> Any:
    from pyflink.common import Types
    from pyflink.datastream.functions import ProcessFunction
    from pyflink.datastream.window import CountTrigger, GlobalWindows

    def source(env: Any, values: List[Any], type_info: Any) -> Any:
        return env.from_collection(values, type_info=type_info)

    return SimpleNamespace(
        Types=Types, ProcessFunction=ProcessFunction, GlobalWindows=GlobalWindows, CountTrigger=CountTrigger,
        source=source,
    )


def collected(a: Any, name: str) -> List[str]:
    with cases.collected_job(a, oracle.environment(cases), name).execute_and_collect() as results:
        return sorted(str(v) for v in results)


def printed(a: Any, name: str) -> Dict[str, List[str]]:
    """The case run in a new interpreter: ``print()`` writes from the JVM, which must start inside
    ``captured_print``."""
    # without what this process's PyFlink set for its in-process Python workers (they refuse to start a gateway)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYFLINK_GATEWAY")}
    child = subprocess.run([sys.executable, __file__, "--print-case", name], capture_output=True, text=True, env=env)
    if child.returncode != 0:
        msg = f"{name}: the job failed:\n{child.stderr[-3000:]}"
        raise SystemExit(msg)
    return json.loads(child.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def print_case(a: Any, name: str) -> None:
    with oracle.captured_print() as lines:
        env = oracle.environment(cases)
        cases.printed_job(a, env, name)
        env.execute(name)
    mine = sorted(ln for ln in lines if ln.startswith(name))
    print(json.dumps({"values": cases.printed_values(lines, name), "lines": mine}))


def setting(a: Any, call: str) -> str:
    try:
        cases.setting(a, oracle.environment(cases), call)()
    except Exception as exc:
        java = [ln.strip() for ln in str(exc).splitlines() if "Exception:" in ln]
        return f"{type(exc).__name__}: {(java[0] if java else str(exc).splitlines()[0])[:300]}"
    return "(accepted)"


def agreed(runs: int, f: Any, *args: Any) -> Any:
    """``f(*args)`` (the first run's) when every run agrees on it (a printed case: on its values; which subtask
    printed which value may differ)."""
    outputs = [f(*args) for _ in range(runs)]
    compared = [o["values"] if isinstance(o, dict) else o for o in outputs]
    if any(c != compared[0] for c in compared):
        msg = f"{args[-1]}: PyFlink's outputs differ between runs: {outputs}"
        raise SystemExit(msg)
    print(f"{args[-1]}: {outputs[0]}", file=sys.stderr, flush=True)
    return outputs[0]


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out")
    parser.add_argument("--print-case", help="run one printed case; its values as JSON on stdout (internal)")
    parser.add_argument("--runs", type=int, default=2, help="run each job this often; all runs must agree")
    args = parser.parse_args(argv)
    a = api()
    if args.print_case:
        print_case(a, args.print_case)
        return 0
    if not args.out:
        parser.error("--out is required")
    printed_cases = {name: agreed(args.runs, printed, a, name) for name in cases.PRINTED}  # before a JVM starts here
    body = {
        "collected": {name: agreed(args.runs, collected, a, name) for name in cases.COLLECTED},
        "printed": printed_cases,
        "settings": {call: setting(a, call) for call in cases.SETTINGS},
    }
    oracle.record(args.out, __file__, body)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
