"""Throughput benchmark: a 1-minute event-time tumbling count+sum per key, native Spark vs pyspark_flinkish.

Run (from the repository root)::

    .venv/bin/python benchmarks/bench_tumbling.py                 # 2M events, 10k keys, 200k-row batches, 3 repeats
    .venv/bin/python benchmarks/bench_tumbling.py --quick         # smoke run: 100k events, 1k keys, 20k-row batches
    .venv/bin/python benchmarks/bench_tumbling.py --json out/bench.json

This is a benchmark, not a test: nothing here passes or fails on speed. It exits non-zero only when the engines
disagree on the windows (then no ratio is printed).

Input (generated once per run, seeded): ``--events`` rows ``(key, ts, value, seq)`` with keys uniform in
``[0, --keys)``, event times (epoch ms) spread over one hour with *bounded disorder*: a non-decreasing base time
minus a uniform lag in ``[0, B]`` (``B = --disorder-ms``), so every event is at most ``B`` ms older than the
largest timestamp seen before it. ``seq`` is the arrival position (the package's ``order_columns``). The rows are
written as Parquet, one file per micro-batch of ``--batch-rows`` rows; every engine reads them as a real streaming
query with ``maxFilesPerTrigger=1`` and ``trigger(availableNow=True)``.

Engines (each a fresh streaming query and checkpoint, all in one SparkSession, ``spark.sql.shuffle.partitions=2``):

* ``native``: ``withWatermark(ts, "B+1 milliseconds")`` + ``groupBy(key, window(ts, "1 minute"))``, ``count`` and
  ``sum``, append mode, memory sink.
* ``foreach_batch``: ``env.from_dataframe(df, for_bounded_out_of_orderness(B), timestamp_column="ts",
  order_columns=["seq"])`` → ``key_by(lambda r: r.key)`` → ``TumblingEventTimeWindows.of(1 min)`` →
  ``aggregate(ColumnAggregate(Count(), Sum("value")), WithWindow())`` → ``add_sink(list.append)`` (the sink runs on
  the driver, like the memory sink). This is the columnar path (``spark/columnar.py``): Spark pre-aggregates the
  on-time rows, Python merges one partial per (key, window) and calls ``WithWindow`` once per window.
* ``foreach_batch_python_agg``: the same with a user ``AggregateFunction`` (``CountSum``, Python ``add`` per
  element): every element is a Python ``Row``, windows run batch-wise (``core/batch_window.py``).
* ``apply_in_pandas_with_state``: the same pipeline on ``get_execution_environment(spark,
  backend="apply_in_pandas_with_state")`` (one ``applyInPandasWithState`` call per key and micro-batch, the key's
  snapshot in Spark's ``GroupState``), same ``add_sink``. Reported as ``n/a (not implemented)`` with a package
  version that has no ``backend`` option.
* ``foreach_batch_general``: the same executor with list window contents, a Python trigger and a Python
  ``ProcessWindowFunction`` (the general, non-vectorizable path): ``.trigger(EarlyCountEventTimeTrigger(N))``
  ``.process(CountSumProcess())``. The trigger is Flink's ``EventTimeTrigger`` plus the early firings of a
  ``CountTrigger.of(N)`` (``--count-trigger``, default 3). A bare ``CountTrigger`` cannot be compared with the other
  engines: it never fires on event time (a window with fewer than N elements never fires, and a window's last
  elements after its last multiple of N are never emitted). With ~3.3 events per key and window at the default
  size, ``CountTrigger.of(100)`` would never fire at all; N=3 makes early firings happen in most windows.
  Contents are not purged, so each firing emits the window's running count and sum; the window function flags
  the firing at the watermark (``current_watermark() >= window.max_timestamp()``) as final, and only final rows
  are compared. Early firings are counted and reported.

Same watermark on both sides: Flink's bounded out-of-orderness ``B`` gives ``W = max_ts - B - 1``; Spark with
``withWatermark(ts, "B+1 ms")`` gives ``max_ts - (B+1)``, the same value, computed from the batches before the
current one in both. Because no event is more than ``B`` ms behind the maximum before it, no event is ever behind
either watermark: neither engine drops anything (Spark's and Flink's lateness rules differ by 1 ms at a window's
end, which therefore never matters here).

Emitting every window: native append mode only emits a window once the watermark passes its end, and the package's
``from_dataframe`` source has no end of input, so both would hold the last windows back. The input therefore ends
with two one-row *sentinel* files: key ``-1`` at ``max_ts + B + 2 minutes``. After the first one, Flink's
watermark is past every real window (the package fires them all at the end of that batch); native Spark uses the
new watermark in the next batch, which the second sentinel file guarantees (whether or not Spark runs a no-data
batch under availableNow). The sentinel's own window is never emitted and key ``-1`` is ignored. All engines'
windows ``(key, window start ms, count, sum)`` must equal each other and an independent pandas group-by of the
generated data before any ratio is printed.

Measurements, per engine and repeat (repeats run the engines in turn, so each ratio pairs runs of one repeat):

* ``wall s``: ``start()`` to the end of ``awaitTermination()`` (query start-up, every batch, the sentinel tail).
* ``events/s``: steady throughput from ``query.recentProgress``: the data batches except the first (warm-up),
  events / sum of their ``durationMs.triggerExecution``.
* ``cpu s``: CPU seconds of this process and its descendants (JVM, Python workers) during the run, from /proc.
* ``floor``: the per-micro-batch latency floor: median ``triggerExecution`` of tiny batches (``--tiny-files``
  files of ``--tiny-rows`` rows, the first ``--tiny-skip`` batches excluded) in a separate query per engine.

Ratios are engine / native within one repeat (events/s: higher is better; floor: lower is better); the table gives
the median and [min-max] over repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import (  # re-exported: profile_foreach_batch.py uses them as bench.*
    ENGINES,
    NOT_IMPLEMENTED,
    CountSum,
    CountSumProcess,
    EarlyCountEventTimeTrigger,
    InputInfo,
    Run,
    WithWindow,
    _floor,
    _machine,
    _progress,
    _real,
    _spread,
    _steady,
    _tree_cpu,
    check_windows,
    generate,
    generate_tiny,
    run_engine,
    run_native,
)

__all__ = ["CountSum", "CountSumProcess", "EarlyCountEventTimeTrigger", "WithWindow", "generate", "generate_tiny", "run_engine"]


def summarize(runs: List[Run], engines: List[str]) -> List[Dict[str, Any]]:
    by = {(r.engine, r.repeat): r for r in runs}
    repeats = sorted({r.repeat for r in runs})
    table = []
    for engine in engines:
        mine = [by[(engine, i)] for i in repeats if (engine, i) in by]
        row: Dict[str, Any] = {"engine": engine}
        if engine in NOT_IMPLEMENTED or not mine:
            row["na"] = "n/a (not implemented)" if engine in NOT_IMPLEMENTED else "n/a (not run)"
            table.append(row)
            continue
        ratios, floor_ratios, cpu_ratios = [], [], []
        for r in mine:
            native = by.get(("native", r.repeat))
            if native is None:
                continue
            if r.steady_events_per_s and native.steady_events_per_s:
                ratios.append(r.steady_events_per_s / native.steady_events_per_s)
            if r.floor_ms and native.floor_ms:
                floor_ratios.append(r.floor_ms / native.floor_ms)
            if r.cpu_s > 0 and native.cpu_s > 0:
                cpu_ratios.append((r.events / r.cpu_s) / (native.events / native.cpu_s))
        row.update(
            events=mine[0].events,
            wall_s=[r.wall_s for r in mine],
            cpu_s=[r.cpu_s for r in mine],
            events_per_s=[r.steady_events_per_s for r in mine if r.steady_events_per_s],
            ratio=ratios,
            events_per_cpu_s_ratio=cpu_ratios,
            floor_ms=[r.floor_ms for r in mine if r.floor_ms],
            floor_ratio=floor_ratios,
            windows=mine[0].windows,
            early_firings=mine[0].early_firings,
        )
        table.append(row)
    return table


def print_table(table: List[Dict[str, Any]]) -> None:
    head = ["engine", "events", "wall s", "events/s (steady)", "ratio vs native", "ev/CPU-s ratio", "floor ms", "floor ratio"]
    lines = []
    for row in table:
        if "na" in row:
            lines.append([row["engine"], row["na"], "", "", "", "", "", ""])
            continue
        lines.append(
            [
                row["engine"],
                f"{row['events']:,}",
                _spread(row["wall_s"], ".1f"),
                _spread(row["events_per_s"], ",.0f"),
                _spread(row["ratio"], ".3f") + ("x" if row["ratio"] else ""),
                _spread(row["events_per_cpu_s_ratio"], ".3f") + ("x" if row["events_per_cpu_s_ratio"] else ""),
                _spread(row["floor_ms"], ".0f"),
                _spread(row["floor_ratio"], ".2f") + ("x" if row["floor_ratio"] else ""),
            ]
        )
    widths = [max(len(str(x[i])) for x in [head, *lines]) for i in range(len(head))]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for line in lines:
        print("| " + " | ".join(str(x).ljust(w) for x, w in zip(line, widths)) + " |")


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=2_000_000, help="events in total (default 2,000,000)")
    p.add_argument("--keys", type=int, default=10_000, help="distinct keys (default 10,000)")
    p.add_argument("--batch-rows", type=int, default=200_000, help="rows per micro-batch / Parquet file (default 200,000)")
    p.add_argument("--repeats", type=int, default=3, help="runs of each engine (default 3)")
    p.add_argument("--quick", action="store_true", help="smoke run: 100k events, 1k keys, 20k-row batches, 1 repeat")
    p.add_argument("--disorder-ms", type=int, default=5_000, help="bounded out-of-orderness B in ms (default 5000)")
    p.add_argument("--count-trigger", type=int, default=3, help="early-firing count of the general path (default 3)")
    p.add_argument("--engines", default=",".join(ENGINES), help=f"comma-separated subset of {ENGINES}")
    p.add_argument("--tiny-files", type=int, default=12, help="tiny micro-batches for the latency floor (default 12)")
    p.add_argument("--tiny-rows", type=int, default=100, help="rows per tiny micro-batch (default 100)")
    p.add_argument("--tiny-skip", type=int, default=2, help="first tiny batches excluded from the floor (default 2)")
    p.add_argument("--no-floor", action="store_true", help="skip the latency-floor runs")
    p.add_argument("--shuffle-partitions", type=int, default=2, help="spark.sql.shuffle.partitions (default 2)")
    p.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    p.add_argument("--driver-memory", default="6g", help="spark.driver.memory (default 6g)")
    p.add_argument("--timeout-s", type=float, default=3600, help="give up on one query after this long (default 3600)")
    p.add_argument("--key-type", choices=("none", "long"), default="none",
                   help="this package's key_by key_type (default none: untyped; long: Types.LONG(), keys as columns)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--workdir", default=None, help="where to put input and checkpoints (default: a temp dir, removed)")
    p.add_argument("--json", dest="json_out", default=None, metavar="OUT", help="write the results as JSON here")
    args = p.parse_args(argv)
    if args.quick:
        args.events, args.keys, args.batch_rows, args.repeats = 100_000, 1_000, 20_000, 1
    args.engine_list = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = set(args.engine_list) - set(ENGINES)
    if unknown:
        p.error(f"unknown engines {sorted(unknown)}; choose from {ENGINES}")
    if "native" not in args.engine_list:
        p.error("native is needed: every ratio is against it")
    return args


def _result(
    args: argparse.Namespace,
    machine: Dict[str, Any],
    info: InputInfo,
    runs: List[Run],
    table: List[Dict[str, Any]],
    problems: List[str],
    mismatches: List[str],
    complete: bool,
) -> Dict[str, Any]:
    return {
        "complete": complete,
        "benchmark": "bench_tumbling",
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "config": {k: v for k, v in vars(args).items() if k != "engine_list"},
        "machine": machine,
        "input": {
            "events": info.events,
            "data_files": info.data_files,
            "windows": len(info.expected),
            "min_ts": info.min_ts,
            "max_ts": info.max_ts,
            "sentinel_ts": info.sentinel_ts,
        },
        "windows_match": not mismatches,
        "mismatches": mismatches,
        "problems": problems,
        "table": table,
        "runs": [asdict(r) for r in runs],
    }


def _write_json(path: str, result: Dict[str, Any]) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=1)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    from pyspark_flinkish.spark import session as flinkish_session

    machine = _machine()

    work = args.workdir or tempfile.mkdtemp(prefix="bench-tumbling-")
    os.makedirs(work, exist_ok=True)
    print(f"generating {args.events:,} events, {args.keys:,} keys, {args.batch_rows:,}-row batches in {work}", flush=True)
    t = time.perf_counter()
    info = generate(os.path.join(work, "input"), args.events, args.keys, args.batch_rows, args.disorder_ms, args.seed)
    tiny_dir = os.path.join(work, "tiny")
    generate_tiny(tiny_dir, args.tiny_files, args.tiny_rows, args.keys, args.seed + 1)
    print(
        f"  {info.data_files} data files + {info.sentinel_files} sentinel files, {len(info.expected):,} windows "
        f"expected ({time.perf_counter() - t:.1f} s)",
        flush=True,
    )

    os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")  # pandas concat warnings from Spark's workers
    spark = flinkish_session(
        "bench_tumbling",
        master=args.master,
        shuffle_partitions=args.shuffle_partitions,
        spark__default__parallelism=str(args.shuffle_partitions),
        spark__driver__memory=args.driver_memory,
        spark__sql__streaming__numRecentProgressUpdates="10000",
    )
    spark.sparkContext.setLogLevel("ERROR")
    runs: List[Run] = []
    problems: List[str] = []  # timeouts
    mismatches: List[str] = []
    try:
        # warm-up: one tiny native query so that JVM start-up and first-job costs do not land on repeat 0
        run_native(spark, tiny_dir, args.disorder_ms, os.path.join(work, "ck"), args.timeout_s)
        for repeat in range(args.repeats):
            for engine in args.engine_list:
                if engine in NOT_IMPLEMENTED:
                    continue
                print(f"repeat {repeat}: {engine} ...", end=" ", flush=True)
                load0 = os.getloadavg()[0]
                cpu0 = _tree_cpu()
                try:
                    query, rows, wall, early = run_engine(engine, spark, info.directory, args, os.path.join(work, "ck"))
                except TimeoutError as exc:
                    print(f"timeout ({exc})", flush=True)
                    problems.append(f"{engine} repeat {repeat}: {exc}")
                    continue
                cpu = _tree_cpu() - cpu0
                progress = _progress(query)
                run = Run(
                    engine,
                    repeat,
                    args.events,
                    wall,
                    cpu,
                    _steady(progress, info.data_files),
                    progress,
                    len(_real(rows)),
                    early,
                    load_avg=[load0, os.getloadavg()[0]],
                )
                problem = check_windows(engine, rows, info.expected)
                if problem:
                    mismatches.append(f"repeat {repeat}: {problem}")
                if not args.no_floor:
                    fq = run_engine(engine, spark, tiny_dir, args, os.path.join(work, "ck"))[0]
                    run.floor_batches = _progress(fq)
                    run.floor_ms = _floor(run.floor_batches, args.tiny_skip)
                runs.append(run)
                if args.json_out:  # partial results survive an interrupted run
                    partial = _result(args, machine, info, runs, summarize(runs, args.engine_list), problems, mismatches, False)
                    _write_json(args.json_out, partial)
                eps = f"{run.steady_events_per_s:,.0f} events/s" if run.steady_events_per_s else "n/a events/s"
                floor = f", floor {run.floor_ms:.0f} ms" if run.floor_ms else ""
                print(
                    f"load {load0:.1f}, wall {wall:.1f} s, cpu {cpu:.1f} s, steady {eps}{floor}, {run.windows:,} windows"
                    + (f" ({early:,} early firings)" if engine == "foreach_batch_general" else "")
                    + ("" if not problem else "  MISMATCH"),
                    flush=True,
                )
    finally:
        spark.stop()
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)

    table = summarize(runs, args.engine_list)
    result = _result(args, machine, info, runs, table, problems, mismatches, complete=True)
    if args.json_out:
        _write_json(args.json_out, result)
    if mismatches:
        print("\nWINDOWS DIFFER: no ratios printed", file=sys.stderr)
        for p in mismatches:
            print("  " + p, file=sys.stderr)
        return 1
    print(f"\nall engines produced the same {len(info.expected):,} windows (and match a pandas group-by of the input)")
    for p in problems:
        print("  note: " + p)
    print()
    print_table(table)
    if args.json_out:
        print(f"\nwrote {args.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
