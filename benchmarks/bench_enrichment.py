"""Benchmark 11 (standalone), per-record enrichment (issue 25): every record goes out, with keyed state, into Delta.

    .venv/bin/python benchmarks/bench_enrichment.py [--events 2000000] [--keys 10000] [--batch-rows 200000]
        [--repeats 3] [--engines flinkish,apply_in_pandas_with_state,transform_with_state_in_pandas]

A ``KeyedProcessFunction`` keeps a running count per key in ``ValueState`` and emits every record with its count to
a ``DeltaSink`` (append), fed ``--events`` events over ``--keys`` keys in ``--batch-rows``-event micro-batches from
Parquet files (``maxFilesPerTrigger`` 1, ``availableNow``). The same job natively: ``applyInPandasWithState`` and
``transformWithStateInPandas`` (RocksDB state store) with the count in Spark's state, written with Spark's own Delta
sink. ``--engines flinkish,flinkish_pickled`` compares this package with its records crossing from the route to the
keyed stage as Arrow columns (the default: a ``from_dataframe`` source's rows of basic columns) and with every
record pickled (``columnar_records=False``), side by side.

Each run is its own driver process (so that its peak memory is its own): the script reports the whole query's
wall time and CPU time (the driver's process tree: JVM and Python workers, from /proc), the median micro-batch time
(Spark's ``triggerExecution``, the first batch left out), events per second and the driver's peak memory (the
driver's Python process, ``ru_maxrss``; the JVM is another process). Before any figure is printed, every engine's
table is compared with pandas' running count per key in ``seq`` order: a mismatch is reported and the script exits
non-zero. A benchmark, not a test: it never passes or fails on speed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
INPUT_DDL = "key long, ts long, value long, seq long"
ENGINES = ("flinkish", "apply_in_pandas_with_state", "transform_with_state_in_pandas")
OTHER_ENGINES = ("flinkish_pickled",)  # by name only: this package with every record pickled between stages


# ------------------------------------------------------------------------------------------------------ input
def generate(directory: str, events: int, keys: int, batch_rows: int, seed: int = 7) -> None:
    """One Parquet file per micro-batch of ``key, ts, value, seq`` (ordered for the file source by mtime)."""
    rng = np.random.default_rng(seed)
    os.makedirs(directory, exist_ok=True)
    for i, start in enumerate(range(0, events, batch_rows)):
        n = min(batch_rows, events - start)
        seq = np.arange(start, start + n, dtype=np.int64)
        table = pa.table({
            "key": pa.array(rng.integers(0, keys, n, dtype=np.int64)),
            "ts": pa.array(1_767_225_600_000 + seq),
            "value": pa.array(rng.integers(0, 1000, n, dtype=np.int64)),
            "seq": pa.array(seq),
        })
        path = os.path.join(directory, f"batch-{i:06d}.parquet")
        pq.write_table(table, path)
        os.utime(path, (1_000_000 + i, 1_000_000 + i))


def expected_counts(directory: str) -> Dict[int, int]:
    """``seq -> running count of its key`` (1 for a key's first record), in ``seq`` order."""
    frame = pq.read_table(directory).to_pandas().sort_values("seq")
    frame["count"] = frame.groupby("key").cumcount() + 1
    return dict(zip(frame["seq"].tolist(), frame["count"].tolist()))


# ------------------------------------------------------------------------------------------------------ engines
def _flinkish(spark: Any, source: Any, out: str, work: str, columnar_records: bool = True, key_type: str = "none") -> Any:
    from pyspark_flinkish.common import Types, WatermarkStrategy
    from pyspark_flinkish.datastream import StreamExecutionEnvironment
    from pyspark_flinkish.datastream.connectors.delta import DeltaSink
    from pyspark_flinkish.datastream.functions import KeyedProcessFunction
    from pyspark_flinkish.datastream.state import ValueStateDescriptor

    class RunningCount(KeyedProcessFunction):  # type: ignore[misc]
        def open(self, context: Any) -> None:
            self.count = context.get_state(ValueStateDescriptor("count", Types.LONG()))

        def process_element(self, value: Any, ctx: Any) -> Any:
            n = (self.count.value() or 0) + 1
            self.count.update(n)
            yield value.key, value.seq, value.value, n

    out_type = Types.ROW_NAMED(["key", "seq", "value", "count"], [Types.LONG()] * 4)
    # columnar_records=False: every record crosses the stages pickled (flinkish_pickled)
    env = StreamExecutionEnvironment.get_execution_environment(spark, columnar_records=columnar_records)
    stream = env.from_dataframe(source, WatermarkStrategy.no_watermarks(), order_columns=["seq"])
    declared = Types.LONG() if key_type == "long" else None  # --key-type long: the key crosses as a column
    keyed = stream.key_by(lambda r: r.key, key_type=declared)
    keyed.process(RunningCount(), output_type=out_type).sink_to(DeltaSink.for_path(out))
    handle = env.execute("enrichment", checkpoint_location=os.path.join(work, "ck"), trigger={"availableNow": True})
    handle.await_termination()
    return handle.query


def _apply_in_pandas_with_state(spark: Any, source: Any, out: str, work: str) -> Any:
    import pandas as pd
    from pyspark.sql.streaming.state import GroupStateTimeout

    def count(key: Any, frames: Any, state: Any) -> Any:
        n = state.get[0] if state.exists else 0
        for pdf in frames:
            pdf = pdf.sort_values("seq")
            counts = np.arange(n + 1, n + 1 + len(pdf), dtype=np.int64)
            n += len(pdf)
            yield pd.DataFrame({"key": pdf["key"].values, "seq": pdf["seq"].values, "value": pdf["value"].values,
                                "count": counts})
        state.update((n,))

    frame = source.groupBy("key").applyInPandasWithState(
        count, "key long, seq long, value long, count long", "n long", "append", GroupStateTimeout.NoTimeout
    )
    writer = (frame.writeStream.format("delta").outputMode("append")
              .option("checkpointLocation", os.path.join(work, "ck")).trigger(availableNow=True))
    query = writer.start(out)
    query.awaitTermination()
    return query


def _transform_with_state_in_pandas(spark: Any, source: Any, out: str, work: str) -> Any:
    import pandas as pd
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.types import LongType, StructField, StructType

    class Count(StatefulProcessor):  # type: ignore[misc]
        def init(self, handle: Any) -> None:
            self.n = handle.getValueState("n", StructType([StructField("n", LongType())]))

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:  # noqa: N802, N803 (Spark's names)
            n = self.n.get()[0] if self.n.exists() else 0
            pdf = pd.concat(list(rows)).sort_values("seq")
            counts = np.arange(n + 1, n + 1 + len(pdf), dtype=np.int64)
            self.n.update((n + len(pdf),))
            yield pd.DataFrame({"key": pdf["key"].values, "seq": pdf["seq"].values, "value": pdf["value"].values,
                                "count": counts})

        def close(self) -> None:
            pass

    frame = source.groupBy("key").transformWithStateInPandas(
        Count(), "key long, seq long, value long, count long", "append", "None"
    )
    writer = (frame.writeStream.format("delta").outputMode("append")
              .option("checkpointLocation", os.path.join(work, "ck")).trigger(availableNow=True))
    query = writer.start(out)
    query.awaitTermination()
    return query


def run_one(engine: str, input_dir: str, work: str, result: str, partitions: int, key_type: str = "none") -> None:
    """One engine's run in this process (the driver): writes its figures as JSON to ``result``."""
    from pyspark_flinkish.spark import session

    conf: Dict[str, str] = {}
    if engine == "transform_with_state_in_pandas":
        conf["spark__sql__streaming__stateStore__providerClass"] = (
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
        )
    spark = session("bench-enrichment", master="local[2]", shuffle_partitions=partitions, **conf)
    spark.sparkContext.setLogLevel("ERROR")
    source = spark.readStream.schema(INPUT_DDL).option("maxFilesPerTrigger", 1).parquet(input_dir)
    out = os.path.join(work, "out")
    run = {"flinkish": lambda *a: _flinkish(*a, key_type=key_type),
           "apply_in_pandas_with_state": _apply_in_pandas_with_state,
           "transform_with_state_in_pandas": _transform_with_state_in_pandas,
           "flinkish_pickled": lambda *a: _flinkish(*a, columnar_records=False, key_type=key_type)}[engine]
    sys.path.insert(0, HERE)
    from proc_cpu import tree_cpu

    started, cpu0 = time.perf_counter(), tree_cpu()
    query = run(spark, source, out, work)
    wall, cpu = time.perf_counter() - started, tree_cpu() - cpu0
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    batches = [p["durationMs"].get("triggerExecution", 0) / 1000 for p in query.recentProgress if p["numInputRows"]]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    table = spark.read.format("delta").load(out).select("seq", "count").toPandas()
    with open(result, "w") as f:
        json.dump({"wall_s": wall, "cpu_s": cpu, "batches_s": batches, "driver_peak_mb": peak_mb,
                   "seq": table["seq"].tolist(), "count": table["count"].tolist()}, f)


# ------------------------------------------------------------------------------------------------------ the suite
def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=2_000_000)
    p.add_argument("--keys", type=int, default=10_000)
    p.add_argument("--batch-rows", type=int, default=200_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--partitions", type=int, default=2, help="shuffle / state partitions (default 2: one per core)")
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--key-type", choices=("none", "long"), default="none",
                   help="this package's key_by key_type (default none: untyped; long: Types.LONG(), keys as columns)")
    p.add_argument("--run", help=argparse.SUPPRESS)  # internal: one engine's run in this process
    p.add_argument("--input", help=argparse.SUPPRESS)
    p.add_argument("--work", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.run:
        run_one(args.run, args.input, args.work, args.result, args.partitions, args.key_type)
        return 0

    work = tempfile.mkdtemp(prefix="bench-enrichment-")
    try:
        input_dir = os.path.join(work, "input")
        generate(input_dir, args.events, args.keys, args.batch_rows)
        expected = expected_counts(input_dir)
        engines = [e for e in args.engines.split(",") if e]
        load = os.getloadavg()[0]
        print(f"benchmark 11, per-record enrichment: {args.events:,} events, {args.keys:,} keys, {args.batch_rows:,}-event "
              f"batches, {args.partitions} partitions; load average {load:.1f} at the start", flush=True)
        results: Dict[str, List[Dict[str, Any]]] = {e: [] for e in engines}
        bad: List[str] = []
        for repeat in range(args.repeats):
            for engine in engines:  # in turn, so that each repeat pairs runs made side by side
                run_dir = os.path.join(work, f"{engine}-{repeat}")
                os.makedirs(run_dir)
                result = os.path.join(run_dir, "result.json")
                cmd = [sys.executable, os.path.abspath(__file__), "--run", engine, "--input", input_dir,
                       "--work", run_dir, "--result", result, "--partitions", str(args.partitions),
                       "--key-type", args.key_type]
                done = subprocess.run(cmd, capture_output=True, text=True)
                if done.returncode != 0:
                    bad.append(f"{engine} (repeat {repeat}) failed:\n{done.stderr[-3000:]}")
                    continue
                with open(result) as f:
                    figures = json.load(f)
                got = dict(zip(figures.pop("seq"), figures.pop("count")))
                if got != expected:
                    wrong = sum(1 for s, c in expected.items() if got.get(s) != c)
                    bad.append(f"{engine} (repeat {repeat}): {wrong:,} of {len(expected):,} counts differ from pandas")
                    continue
                results[engine].append(figures)
                steady = statistics.median(figures["batches_s"][1:] or figures["batches_s"])
                print(f"  repeat {repeat} {engine:34s} {figures['wall_s']:7.1f} s  cpu {figures['cpu_s']:7.1f} s  "
                      f"steady batch {steady:6.2f} s  driver peak {figures['driver_peak_mb']:6.0f} MB", flush=True)
        print()
        print(f"{'engine':34s} {'events/s (whole)':>18s} {'steady batch s':>15s} {'driver peak MB':>15s}")
        summary: Dict[str, Any] = {}
        for engine, runs in results.items():
            if not runs:
                continue
            rate = [args.events / r["wall_s"] for r in runs]
            steady = [statistics.median(r["batches_s"][1:] or r["batches_s"]) for r in runs]
            peak = [r["driver_peak_mb"] for r in runs]
            summary[engine] = {"events_per_s": rate, "steady_batch_s": steady, "driver_peak_mb": peak,
                               "wall_s": [r["wall_s"] for r in runs], "cpu_s": [r["cpu_s"] for r in runs]}
            print(f"{engine:34s} {statistics.median(rate):>18,.0f} {statistics.median(steady):>15.2f} "
                  f"{statistics.median(peak):>15.0f}   [{min(rate):,.0f}-{max(rate):,.0f} events/s]")
        native = [e for e in ("apply_in_pandas_with_state", "transform_with_state_in_pandas") if results.get(e)]
        if results.get("flinkish") and native:
            print("\nratios per repeat (this package's events/s over the other's, runs of one repeat side by side):")
            for other in [e for e in results if e != "flinkish" and results[e]]:
                pairs = zip(results["flinkish"], results[other])
                ratios = [b["wall_s"] / a["wall_s"] for a, b in pairs]
                print(f"  vs {other:34s} " + " ".join(f"{r:.2f}x" for r in ratios))
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"events": args.events, "keys": args.keys, "batch_rows": args.batch_rows,
                           "load_at_start": load, "engines": summary, "failures": bad}, f, indent=1)
        for b in bad:
            print("MISMATCH OR FAILURE:", b, file=sys.stderr)
        return 1 if bad else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
