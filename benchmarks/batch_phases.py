"""Per-batch phases of part 1's package engine: where each micro-batch's time goes, batch by batch.

Runs part 1's job (``bench_common.run_flinkish`` as part 1's ``foreach_batch`` engine: the columnar window path; ``--general``: its
``foreach_batch_general`` engine, an early-count trigger on the general path) once on its input (``--events`` events over ``--keys`` keys in ``--batch-rows``-row micro-batches, Parquet
files read with ``availableNow``) and prints, per batch, the driver's ``durations_ms`` (``open``, ``plan``,
``stats``, ``collect``, ``sort``, ``deliver``, ``commit``, ``total``; docs/architecture.md says what each is) and
the Spark jobs it ran per phase, then the phases' totals over the query, its wall time and the CPU seconds of the
process tree (JVM and Python workers). A figure, never a pass/fail::

    .venv/bin/python benchmarks/batch_phases.py --events 2000000

To compare two commits, run each from its own checkout (``git archive`` into a directory, ``PYTHONPATH`` set to
it), alternating; on a shared machine the CPU seconds and the phases' proportions compare, the wall times less.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_common as bc
from proc_cpu import tree_cpu

from pyspark_flinkish.spark.session import session


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--batch-rows", type=int, default=200_000)
    parser.add_argument("--general", action="store_true", help="the general path (an early-count trigger)")
    parser.add_argument("--timeout-s", type=float, default=1800)
    args = parser.parse_args(argv)
    spark = session(app_name="batch_phases", master="local[2]", shuffle_partitions=2)
    work = tempfile.mkdtemp(prefix="batch_phases_")
    bc.generate(os.path.join(work, "in"), args.events, args.keys, args.batch_rows, 5000, 1)
    handles: List[Any] = []
    cpu0 = tree_cpu()
    _, windows, wall, _ = bc.run_flinkish(
        spark, os.path.join(work, "in"), 5000, work, args.timeout_s, args.general, 100,
        column_aggregate=not args.general, handles=handles,
    )
    cpu = tree_cpu() - cpu0
    totals: Dict[str, float] = {}
    for progress in handles[0].driver.history:
        durations = progress.get("durations_ms", {})
        for phase, ms in durations.items():
            totals[phase] = totals.get(phase, 0.0) + ms
        print(progress["batch_id"], json.dumps(durations), json.dumps(progress.get("spark_jobs")))
    print("totals (ms):", json.dumps({k: round(v) for k, v in sorted(totals.items(), key=lambda kv: -kv[1])}))
    print(f"wall {wall:.1f} s, cpu {cpu:.1f} s (process tree), {len(windows):,} windows, load {os.getloadavg()[0]:.1f}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
