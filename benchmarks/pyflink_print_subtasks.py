"""What real PyFlink's ``print()`` writes at a print sink parallelism above 1 (the subtask prefix of
``PrintSinkOutputWriter``), as the oracle for pyspark_flinkish.

Runs with PyFlink's own interpreter (``benchmarks/.venv-pyflink``, see ``pyflink_oracle.py``; Java 17)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_print_subtasks.py \
        --out jvm-free-tests/datastream/pyflink_print_subtasks.json

The jobs are those of ``jvm-free-tests/datastream/print_subtask_cases.py``; the JSON file holds, per case, the lines
the job printed, sorted, and per case whose lines differ between runs (``--runs``) every distinct set seen.
``jvm-free-tests/datastream/test_pyflink_print_subtasks.py`` compares; it does not need PyFlink.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from types import SimpleNamespace
from typing import Dict, List

import pyflink_oracle as oracle

cases = oracle.import_cases("print_subtask_cases")


class Printed:
    """What the ``print()`` sinks of each job write: descriptor 1 goes to one file for the whole run (the JVM starts
    once, inside it, and keeps it), and each job's lines are what the file grew by while it ran."""

    def __init__(self) -> None:
        self.captured = tempfile.NamedTemporaryFile(prefix="pyflink-print-", suffix=".txt", delete=False)
        self.saved_stdout = os.dup(1)
        os.dup2(self.captured.fileno(), 1)
        self.offset = 0

    def job(self, name: str) -> List[str]:
        from pyflink.common import Types

        api = SimpleNamespace(Types=Types)
        cases.job(api, lambda p: oracle.environment(cases, parallelism=p), name).execute(name)
        sys.stdout.flush()
        with open(self.captured.name, encoding="utf-8") as f:
            f.seek(self.offset)
            text = f.read()
        self.offset += len(text.encode("utf-8"))
        return sorted(text.splitlines())

    def close(self) -> None:
        os.dup2(self.saved_stdout, 1)
        os.close(self.saved_stdout)
        self.captured.close()
        os.unlink(self.captured.name)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--runs", type=int, default=3, help="runs per case, to see what varies")
    parser.add_argument("--only", nargs="*", help="record these cases only, keeping the others of --out as they are")
    args = parser.parse_args(argv)

    recorded: Dict[str, List[str]] = {}
    variants: Dict[str, List[List[str]]] = {}
    if args.only:
        with open(args.out, encoding="utf-8") as f:
            previous = json.load(f)
        recorded, variants = previous["cases"], previous["variants"]
    printed = Printed()
    try:
        for name in args.only or cases.CASES:
            seen: List[List[str]] = []
            for _ in range(args.runs):
                lines = printed.job(name)
                if lines not in seen:
                    seen.append(lines)
            recorded[name] = seen[0]
            if len(seen) > 1:
                variants[name] = seen
            print(f"{name}: {len(seen)} distinct; {seen[0]}", file=sys.stderr, flush=True)
    finally:
        printed.close()
    recorded = {name: recorded[name] for name in cases.CASES if name in recorded}
    variants = {name: variants[name] for name in cases.CASES if name in variants}
    oracle.record(args.out, __file__, {"cases": recorded, "variants": variants}, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
