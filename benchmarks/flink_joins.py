"""Real Apache Flink 2.3.0's window joins, co-groups and interval joins, as the oracle for pyspark_flinkish's.

PyFlink has no join API, so ``benchmarks/flink_joins/FlinkJoins.java`` runs the scenarios below through Flink's Java
DataStream API (``join``/``coGroup``/``intervalJoin``) against the jars of the PyFlink virtualenv. This script
writes the scenarios to a temporary file, compiles and runs the program (``javac``/``java`` 17) and writes
``jvm-free-tests/datastream/flink_joins.json`` (the scenarios with Flink's outputs)::

    python benchmarks/flink_joins.py --flink-lib benchmarks/.venv-pyflink/lib/python3.11/site-packages/pyflink/lib \
        --out jvm-free-tests/datastream/flink_joins.json

It runs every scenario twice and fails if the two runs differ. A scenario is a script of steps: each step's records
``[side, key, name, timestamp]`` (side ``L`` or ``R``), then its explicit watermark; one source emits it (parallelism
1), split into the left and right streams of elements ``(key, name, timestamp)``, which are joined by key. Each output
stream is stamped ``[timestamp, watermark, ...]`` by a process function after the join (the watermark that operator
had when the result reached it). ``jvm-free-tests/datastream/join_cases.py`` builds the same pipelines with
pyspark_flinkish (local engine: ``test_flink_joins.py``; foreachBatch executor: ``tests/spark/test_spark_joins.py``).

``order``: ``exact`` when Flink's output order is defined (one key, no session merging: a join emits, per firing,
for each left element each right element, in arrival order), ``per_firing`` when results of one firing (same
watermark and timestamp) may come in another order (timer ties across keys, merged session contents and an interval
join's buffer, whose iteration order is the state backend's).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))


def _steps(*steps: Any) -> List[Dict[str, Any]]:
    return [{"records": [list(r) for r in records], "watermark": wm} for records, wm in steps]


SCENARIOS: List[Dict[str, Any]] = [
    {
        "name": "tumbling_join_late_dropped",
        "kind": "join",
        "window": {"type": "tumbling", "size": 10},
        "order": "exact",
        "steps": _steps(
            ([("L", "a", "l1", 1), ("R", "a", "r1", 3), ("L", "a", "l2", 5), ("R", "a", "r2", 12)], 8),
            ([("L", "a", "l3", 4), ("R", "a", "r3", 9)], 10),
            ([("L", "a", "l4", 2), ("L", "a", "l5", 15), ("R", "a", "r4", 19)], 25),
            ([("R", "a", "r5", 21), ("L", "a", "l6", 28)], None),
        ),
    },
    {
        "name": "tumbling_join_allowed_lateness",
        "kind": "join",
        "window": {"type": "tumbling", "size": 10},
        "allowed_lateness": 5,
        "order": "per_firing",
        "steps": _steps(
            ([("L", "a", "l1", 1), ("R", "a", "r1", 2), ("L", "b", "l2", 3), ("R", "b", "r2", 8)], 9),
            ([("R", "a", "r3", 6)], 13),
            ([("L", "b", "l3", 4)], 14),
            ([("L", "a", "l4", 5), ("R", "a", "r4", 11), ("L", "a", "l5", 18)], 30),
        ),
    },
    {
        "name": "sliding_join",
        "kind": "join",
        "window": {"type": "sliding", "size": 10, "slide": 5},
        "order": "exact",
        "steps": _steps(
            ([("L", "a", "l1", 1), ("R", "a", "r1", 3), ("L", "a", "l2", 6), ("R", "a", "r2", 8)], 4),
            ([("L", "a", "l3", 12), ("R", "a", "r3", 9)], 9),
            ([], 14),
            ([("R", "a", "r4", 13)], None),
        ),
    },
    {
        "name": "sliding_flat_join",
        "kind": "join",
        "function": "flat",
        "window": {"type": "sliding", "size": 6, "slide": 3},
        "order": "exact",
        "steps": _steps(
            ([("L", "a", "l1", 1), ("R", "a", "r1", 2), ("R", "a", "r2", 0), ("L", "a", "l2", 4)], 10),
        ),
    },
    {
        "name": "session_join_bridge_and_lateness",
        "kind": "join",
        "window": {"type": "session", "gap": 5},
        "allowed_lateness": 3,
        "order": "per_firing",
        "steps": _steps(
            ([("L", "a", "l1", 1), ("R", "a", "r1", 4), ("L", "a", "l2", 12)], 9),
            ([("R", "a", "r2", 7), ("L", "b", "l4", 20), ("R", "b", "r5", 22)], 16),
            ([("L", "a", "l3", 30), ("R", "a", "r3", 33), ("R", "a", "r4", 2)], 40),
        ),
    },
    {
        "name": "tumbling_join_count_trigger_evictor",
        "kind": "join",
        "window": {"type": "tumbling", "size": 100},
        "count_trigger": 3,
        "count_evictor": 2,
        "order": "exact",
        "steps": _steps(
            ([("L", "a", "l1", 1), ("R", "a", "r1", 2), ("L", "a", "l2", 3)], None),
            ([("R", "a", "r2", 4), ("R", "a", "r3", 5), ("L", "a", "l3", 6)], 50),
            ([("L", "a", "l4", 7), ("R", "a", "r4", 8)], None),
        ),
    },
    {
        "name": "co_group_tumbling",
        "kind": "co_group",
        "window": {"type": "tumbling", "size": 10},
        "order": "per_firing",
        "steps": _steps(
            ([("L", "a", "l1", 1), ("L", "a", "l2", 2), ("R", "b", "r1", 3), ("R", "a", "r2", 5), ("L", "c", "l3", 6)], 9),
            ([("R", "a", "r3", 4), ("L", "a", "l4", 11)], 20),
        ),
    },
    {
        "name": "co_group_session_lateness",
        "kind": "co_group",
        "window": {"type": "session", "gap": 3},
        "allowed_lateness": 4,
        "order": "per_firing",
        "steps": _steps(
            ([("L", "a", "l1", 1), ("R", "a", "r1", 2)], 5),
            ([("R", "a", "r2", 5)], 7),
            ([("L", "a", "l2", 0)], 12),
            ([("L", "a", "l3", 3), ("R", "a", "r3", 20)], None),
        ),
    },
    {
        "name": "interval_inclusive",
        "kind": "interval",
        "interval": {"lower": -2, "upper": 3},
        "order": "per_firing",
        "steps": _steps(
            (
                [
                    ("L", "a", "l1", 10), ("R", "a", "r1", 8), ("R", "a", "r2", 13), ("R", "a", "r3", 14),
                    ("L", "a", "l2", 12), ("L", "b", "l3", 10), ("R", "b", "r4", 11),
                ],
                10,
            ),
            ([("R", "a", "r5", 10), ("L", "a", "l4", 9)], 20),
            ([("L", "a", "l5", 21), ("R", "a", "r6", 20)], None),
        ),
    },
    {
        "name": "interval_exclusive_bounds",
        "kind": "interval",
        "interval": {"lower": -2, "upper": 3, "lower_exclusive": True, "upper_exclusive": True},
        "order": "per_firing",
        "steps": _steps(
            ([("L", "a", "l1", 10), ("R", "a", "r1", 8), ("R", "a", "r2", 9), ("R", "a", "r3", 12), ("R", "a", "r4", 13)], 10),
            ([("R", "a", "r5", 11), ("L", "a", "l2", 11)], None),
        ),
    },
    {
        "name": "interval_negative_bounds",
        "kind": "interval",
        "interval": {"lower": -5, "upper": -1},
        "order": "per_firing",
        "steps": _steps(
            ([("R", "a", "r1", 1), ("R", "a", "r2", 3), ("L", "a", "l1", 6), ("L", "a", "l2", 4)], 4),
            ([("R", "a", "r3", 5), ("R", "a", "r4", 4)], 6),
            ([("L", "a", "l3", 7), ("L", "a", "l4", 5)], 30),
        ),
    },
    {
        "name": "interval_late_side_outputs",
        "kind": "interval",
        "interval": {"lower": 0, "upper": 2},
        "late_side_outputs": True,
        "order": "per_firing",
        "steps": _steps(
            ([("L", "a", "l1", 5), ("R", "a", "r1", 6)], 6),
            ([("L", "a", "l2", 5), ("R", "a", "r2", 4), ("R", "a", "r3", 6), ("L", "b", "l3", 6)], 10),
            ([("R", "b", "r4", 9), ("L", "b", "l4", 10), ("R", "b", "r5", 12)], None),
        ),
    },
    {
        "name": "interval_cleanup_boundary",
        "kind": "interval",
        "interval": {"lower": 0, "upper": 5},
        "late_side_outputs": True,
        "order": "per_firing",
        "steps": _steps(
            ([("L", "a", "l1", 10)], 14),
            ([("R", "a", "r1", 14)], 15),
            ([("R", "a", "r2", 15), ("L", "a", "l2", 15)], 30),
        ),
    },
]


def run_flink(flink_lib: str, scenarios: List[Dict[str, Any]], workdir: str, pause_ms: int) -> List[Dict[str, Any]]:
    classes = os.path.join(workdir, "classes")
    os.makedirs(classes, exist_ok=True)
    cp = os.path.join(flink_lib, "*")
    src = os.path.join(HERE, "flink_joins", "FlinkJoins.java")
    subprocess.run(["javac", "-nowarn", "-d", classes, "-cp", cp, src], check=True)
    spec = os.path.join(workdir, "scenarios.json")
    out = os.path.join(workdir, "out.json")
    with open(spec, "w") as f:
        json.dump({"pause_ms": pause_ms, "scenarios": scenarios}, f)
    subprocess.run(["java", "-cp", f"{classes}{os.pathsep}{cp}", "FlinkJoins", spec, out], check=True)
    with open(out) as f:
        return json.load(f)  # type: ignore[no-any-return]


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flink-lib", required=True, help="the lib/ directory of PyFlink 2.3.0 (Flink's jars)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--pause-ms", type=int, default=25)
    args = parser.parse_args(argv)
    version = next(
        (n[len("flink-dist-") : -len(".jar")] for n in os.listdir(args.flink_lib) if n.startswith("flink-dist-")), None
    )
    runs = []
    for _ in range(2):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(run_flink(args.flink_lib, SCENARIOS, tmp, args.pause_ms))
    if runs[0] != runs[1]:
        print("Flink's outputs differ between two runs: the scenarios are not deterministic", file=sys.stderr)
        return 1
    outputs = {r["name"]: r["output"] for r in runs[0]}
    doc = {
        "flink_version": version,
        "command": "python benchmarks/flink_joins.py --flink-lib <pyflink>/lib --out " + args.out,
        "parallelism": 1,
        "scenarios": [{**s, "output": outputs[s["name"]]} for s in SCENARIOS],
    }
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
