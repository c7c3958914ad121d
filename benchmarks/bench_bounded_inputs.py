"""A bounded static DataFrame through a keyed tumbling window into a ``DeltaSink`` (issue 25: bounded inputs read by
the executors, ``spark/static_frames.py``): the driver's cost, never a pass/fail.

Each run is a fresh process (the driver): a BATCH job reading ``--rows`` rows of a Parquet file written once
(``key`` of ``--keys``, ``at`` milliseconds, ``v``) with ``from_dataframe``, summing ``v`` per key and minute, into a
new Delta table. Figures per run: wall seconds, CPU seconds of the driver's Python process, of the JVM, and of the whole
process tree with the Python workers (from /proc; the executors run in the JVM in ``local[2]``), the Python driver's peak resident memory (``ru_maxrss``),
and the bytes of task results the driver received (Spark's status store). The table's rows are checked against
the sums computed from the input.

    .venv/bin/python benchmarks/bench_bounded_inputs.py --rows 1000000 --rounds 2 --trees /tmp/before,/work/wt

With ``--trees``, each round runs once from each tree, alternating, with that tree as working directory and
``PYTHONPATH`` (the virtualenv's editable install names the main checkout): a ``git archive`` of the commit before,
and this one.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))


def write_input(path: str, rows: int, keys: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = np.arange(rows, dtype=np.int64)
    table = pa.table({"key": pa.array([f"k{i}" for i in ids % keys]), "at": ids * 7, "v": ids % 1000})
    pq.write_table(table, path, row_group_size=100_000)


def run_one(input_path: str, out: str, result: str) -> None:
    """One run in this process (the driver): writes its figures as JSON to ``result``."""
    from pyspark_flinkish.common import Duration, Types
    from pyspark_flinkish.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
    from pyspark_flinkish.datastream.connectors.delta import DeltaSink
    from pyspark_flinkish.datastream.window import TumblingEventTimeWindows
    from pyspark_flinkish.spark import session

    spark = session("bench-bounded-inputs", master="local[2]", shuffle_partitions=2)
    spark.sparkContext.setLogLevel("ERROR")
    jvm_pid = int(spark._jvm.ProcessHandle.current().pid())
    sys.path.insert(0, HERE)
    from proc_cpu import tree_cpu_by_pid

    def cpu() -> Dict[str, float]:
        by_pid = tree_cpu_by_pid(os.getpid())
        tree = tree_cpu_by_pid(os.getpid(), reaped=True)  # with the Python workers the JVM started and reaped
        return {"python": by_pid[os.getpid()], "jvm": by_pid.get(jvm_pid, 0.0), "tree": sum(tree.values())}

    def received() -> int:
        sc = spark.sparkContext._jsc.sc()
        sc.listenerBus().waitUntilEmpty()
        gw = spark.sparkContext._gateway
        stages = sc.statusStore().stageList(None, False, False, gw.new_array(gw.jvm.double, 0), None)
        return sum(int(s.resultSize()) for s in gw.jvm.scala.jdk.javaapi.CollectionConverters.asJava(stages))

    row = Types.ROW_NAMED(["key", "minute", "total"], [Types.STRING(), Types.LONG(), Types.LONG()])
    bytes0, cpu0, started = received(), cpu(), time.perf_counter()
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    (
        env.from_dataframe(spark.read.parquet(input_path), timestamp_column="at", source_name="static")
        .map(lambda r: (r["key"], r["at"] // 60_000, r["v"]), output_type=Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()]))
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(Duration.of_minutes(1)))
        .reduce(lambda a, b: (a[0], a[1], a[2] + b[2]))
        .map(lambda e: e, output_type=row)
        .sink_to(DeltaSink.for_path(out))
    )
    env.execute("bounded static frame")
    wall, cpu1, bytes1 = time.perf_counter() - started, cpu(), received()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    got = spark.read.format("delta").load(out).groupBy().sum("total").first()[0]
    want = spark.read.parquet(input_path).groupBy().sum("v").first()[0]
    import pyspark_flinkish

    with open(result, "w") as f:
        json.dump({"package": os.path.dirname(os.path.dirname(pyspark_flinkish.__file__)), "wall_s": wall, "python_cpu_s": cpu1["python"] - cpu0["python"], "jvm_cpu_s": cpu1["jvm"] - cpu0["jvm"],
                   "tree_cpu_s": cpu1["tree"] - cpu0["tree"],
                   "driver_peak_mb": peak_mb, "received_bytes": bytes1 - bytes0, "total_ok": got == want}, f)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--keys", type=int, default=1_000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--trees", default=os.path.dirname(HERE), help="comma-separated package trees, run alternating")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--run", nargs=3, help=argparse.SUPPRESS)  # internal: input, out, result
    args = p.parse_args(argv)
    if args.run:
        run_one(*args.run)
        return 0
    work = tempfile.mkdtemp(prefix="bench-bounded-")
    input_path = os.path.join(work, "input.parquet")
    write_input(input_path, args.rows, args.keys)
    figures: List[Dict[str, Any]] = []
    try:
        for r in range(args.rounds):
            for tree in args.trees.split(","):
                out, result = os.path.join(work, f"out-{r}-{len(figures)}"), os.path.join(work, "result.json")
                load = os.getloadavg()[0]
                env = {**os.environ, "PYTHONPATH": tree, "PYSPARK_PYTHON": sys.executable}
                subprocess.run([sys.executable, os.path.abspath(__file__), "--run", input_path, out, result],
                               cwd=tree, env=env, check=True)
                with open(result) as f:
                    run = {"tree": tree, "round": r, "load_1min": load, **json.load(f)}
                figures.append(run)
                print(json.dumps(run), flush=True)
                shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
