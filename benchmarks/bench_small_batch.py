"""Where part 7's small batch goes (``run_all.py --parts 7``'s job and input, ``bench_state_growth.py``), batch by
batch: Spark's ``triggerExecution``, the CPU seconds of this process tree (the driver's Python, its JVM, the Python
workers) over the batch, the package's phases (``durations_ms``) and the Spark jobs it ran (with their stages and
tasks, from Spark's status tracker). For before/after comparisons on a loaded machine: run it from each tree's own
directory, in turn, and compare the CPU seconds and the ratio to native RocksDB in the same process (``--native``).

    PYTHONPATH=. python benchmarks/bench_small_batch.py --keys 100000 --small-batches 8 --native --json out.json

(``PYTHONPATH``: the tree it is run from, not the one the virtualenv installed.)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_state_growth as bsg
from proc_cpu import tree_cpu

from pyspark_flinkish.common import Types, WatermarkStrategy
from pyspark_flinkish.datastream import StreamExecutionEnvironment


def _jobs(spark: Any, ids: List[int]) -> List[Dict[str, Any]]:
    """Each job's stages and their task counts (Spark's status tracker)."""
    tracker = spark.sparkContext.statusTracker()
    out = []
    for i in ids:
        info = tracker.getJobInfo(i)
        stages = [] if info is None else list(info.stageIds)
        tasks = [getattr(tracker.getStageInfo(s), "numTasks", None) for s in stages]
        out.append({"job": i, "stages": len(stages), "tasks": tasks})
    return out


def run_package(spark: Any, inp: bsg.GrowthInput, work: str) -> List[Dict[str, Any]]:
    """Part 7's package job over ``inp``; per small batch its figures."""
    run = os.path.join(work, f"package-{uuid.uuid4().hex[:6]}")
    source, ck = os.path.join(run, "input"), os.path.join(run, "ck")
    os.makedirs(source)
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    df = spark.readStream.schema(bsg.INPUT_DDL).option("maxFilesPerTrigger", 1).parquet(source)
    stream = env.from_dataframe(
        df, WatermarkStrategy.for_monotonous_timestamps(), timestamp_column="ts", order_columns=["seq"]
    )
    out: List[Any] = []
    (
        stream.key_by(lambda r: r["key"], key_type=Types.LONG())
        .process(bsg.IdleKeys(), output_type=Types.TUPLE([Types.LONG(), Types.LONG()]))
        .uid(bsg.UID)
        .add_sink(out.append)
    )
    reported: List[Dict[str, Any]] = []
    handle = env.execute("bench_small_batch", checkpoint_location=ck, progress=reported.append)
    rows = []
    try:
        for i, name in enumerate(inp.files):
            os.link(os.path.join(inp.staging, name), os.path.join(source, name))
            cpu, t = tree_cpu(), time.perf_counter()
            handle.process_all_available()
            wall, cpu = time.perf_counter() - t, tree_cpu() - cpu
            if i < inp.load_batches:
                continue
            p = reported[-1]
            jobs = p.get("spark_jobs") or {"count": None, "phases": {}}
            ids = sorted(j for js in jobs["phases"].values() for j in js)
            rows.append({"file": name, "wall_ms": round(wall * 1000), "cpu_s": round(cpu, 3),
                         "durations_ms": p["durations_ms"], "spark_jobs": jobs["phases"], "jobs": _jobs(spark, ids),
                         "load": os.getloadavg()[0]})
    finally:
        handle.stop()
    trigger = {int(b): ms for b, (_, ms) in _spark_ms(handle.query).items()}
    for r, b in zip(rows, sorted(trigger)[inp.load_batches:]):
        r["trigger_ms"] = trigger[b]
    got = sorted((int(k), int(n)) for k, n in out)
    if got != inp.emitted:
        raise AssertionError(f"emitted {len(got)} rows, expected {len(inp.emitted)}")
    shutil.rmtree(run, ignore_errors=True)
    return rows


def _spark_ms(query: Any) -> Dict[int, Any]:
    out = {}
    for p in query.recentProgress or []:
        p = p if isinstance(p, dict) else json.loads(p.json)
        if "addBatch" in p["durationMs"]:
            out[int(p["batchId"])] = (int(p["numInputRows"]), int(p["durationMs"].get("triggerExecution", 0)))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--load-rows", type=int, default=100_000)
    p.add_argument("--small-batches", type=int, default=8)
    p.add_argument("--batch-events", type=int, default=10_000)
    p.add_argument("--touched", type=int, default=10)
    p.add_argument("--native", action="store_true", help="native RocksDB on the same input, in the same process")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    from pyspark_flinkish.spark import session as flinkish_session

    work = tempfile.mkdtemp(prefix="bench-small-")
    spark = flinkish_session("bench_small_batch", master="local[2]", shuffle_partitions=2,
                             spark__default__parallelism="2", spark__driver__memory="6g",
                             spark__sql__streaming__numRecentProgressUpdates="10000")
    spark.sparkContext.setLogLevel("ERROR")
    inp = bsg.generate(os.path.join(work, "input"), args.keys, -(-args.keys // args.load_rows), args.small_batches,
                       args.batch_events, args.touched, 0)
    result: Dict[str, Any] = {"keys": args.keys, "package": run_package(spark, inp, work)}
    if args.native:
        r = bsg.run_engine("native_rocksdb", spark, inp, work, log=lambda m: None)
        result["native_rocksdb_ms"] = [b["ms"] for b in r["batches"][inp.load_batches:]]
    pkg = result["package"]
    line = (f"package: trigger {statistics.median(r['trigger_ms'] for r in pkg):,.0f} ms, "
            f"{statistics.median(r['cpu_s'] for r in pkg):.2f} CPU-s per small batch (medians of {len(pkg)}), "
            f"jobs {[len(j) for r in pkg for j in r['spark_jobs'].values()]}")
    if args.native:
        native = statistics.median(result["native_rocksdb_ms"])
        line += f"; RocksDB {native:,.0f} ms: {statistics.median(r['trigger_ms'] for r in pkg) / native:.2f}x"
    print(line, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
