"""The largest micro-batch each engine completes with a 4 GB driver (issue 25's figure).

    .venv/bin/python benchmarks/bench_largest_batch.py [--sizes 1000000,2000000,5000000,10000000]
        [--driver-memory 4g] [--timeout-s 3600] [--engines flinkish,native] [--json out.json]

Runs ``large_batch_job.py``'s job (a keyed ``KeyedProcessFunction`` with two ``ValueState``s and an event-time timer
per key; ``availableNow``, the whole input one micro-batch) and native Spark's equivalent (``applyInPandasWithState``
with the same state and an event-time timeout, ``large_batch_job.run_native``) at growing sizes, each run in a
subprocess of its own with ``spark.driver.memory`` set (``local[2]``: the executors are the driver's JVM), and
reports per engine the largest size completed with results equal to pandas', and why the next failed: an error,
a wrong result, the timeout, or "not tried above the cap" (the largest of ``--sizes``). An engine stops at its first
failure. Timings are printed, never asserted; the driver Python process's memory growth is reported against the
test's bound (``large_batch_job.driver_bound``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

HERE = Path(__file__).resolve().parent
ENGINES = ["flinkish", "native"]


def child(engine: str, n: int, driver_memory: str, work: Path) -> Dict[str, Any]:
    """One run in this process: a fresh SparkSession with ``driver_memory``, the input, the run, the check."""
    sys.path.insert(0, str(HERE))
    import large_batch_job as job

    spark, sources, expected = job.prepare("largest-batch", n, driver_memory, work / "in")
    run = (job.run_large_batch if engine == "flinkish" else job.run_native)(spark, sources, work / "ck")
    result = {"engine": engine, "events": n, "equal": run.rows == expected, "seconds": round(run.seconds, 1),
              "driver_before_mb": run.before_rss >> 20, "driver_peak_mb": run.peak_rss >> 20,
              "driver_growth_mb": run.growth >> 20, "driver_bound_mb": job.driver_bound() >> 20,
              "peak_measured": run.peak_measured, "summary": run.summary(n)}
    spark.stop()
    return result


def _reason(stderr: str, returncode: int) -> str:
    """Why a child failed: the most telling line of its error output."""
    lines = [x.strip() for x in stderr.splitlines() if x.strip()]
    for needle in ("OutOfMemoryError", "MemoryError", "Killed", "Error:", "Exception:"):
        hits = [x for x in lines if needle in x]
        if hits:
            return hits[-1][:300]
    return f"exit code {returncode}" + (f": {lines[-1][:300]}" if lines else "")


def run(engine: str, n: int, args: argparse.Namespace) -> Dict[str, Any]:
    """One child process; its result, or ``{"failed": reason}``."""
    with tempfile.TemporaryDirectory(prefix=f"largest-{engine}-{n}-", dir=args.workdir) as work:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", engine, str(n), args.driver_memory, work]
        started = time.perf_counter()
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout_s)
        except subprocess.TimeoutExpired:
            return {"failed": f"did not finish within {args.timeout_s:.0f} s"}
        wall = time.perf_counter() - started
    lines = [x for x in done.stdout.splitlines() if x.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"failed": _reason(done.stderr, done.returncode)}
    result: Dict[str, Any] = json.loads(lines[-1])
    result["process_seconds"] = round(wall, 1)
    if not result["equal"]:
        result["failed"] = "results differ from pandas'"
    return result


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1000000,2000000,5000000,10000000", help="events per run, ascending; the last is the cap")
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--driver-memory", default="4g")
    p.add_argument("--timeout-s", type=float, default=3600.0, help="a run taking longer counts as failed")
    p.add_argument("--workdir", default=None)
    p.add_argument("--json", dest="json_out", default=None)
    args = p.parse_args(argv)
    args.sizes = sorted(int(x) for x in args.sizes.split(","))
    args.engines = [e.strip() for e in args.engines.split(",")]
    unknown = set(args.engines) - set(ENGINES)
    if unknown:
        p.error(f"unknown engines {sorted(unknown)}; choose from {ENGINES}")
    return args


def largest(args: argparse.Namespace, log: Any = print) -> Dict[str, Dict[str, Any]]:
    """Per engine: every run, the largest size completed and why the next did not."""
    report: Dict[str, Dict[str, Any]] = {}
    for engine in args.engines:
        runs: List[Dict[str, Any]] = []
        best, why = None, f"not tried above the cap ({args.sizes[-1]:,} events)"
        for n in args.sizes:
            log(f"{engine}: {n:,} events, driver memory {args.driver_memory} (load {os.getloadavg()[0]:.1f}) ...")
            r = run(engine, n, args)
            r.setdefault("events", n)
            runs.append(r)
            if "failed" in r:
                why = f"{n:,} events failed: {r['failed']}"
                log(f"  {why}")
                break
            best = n
            log(f"  {r['summary']}")
        report[engine] = {"runs": runs, "largest": best, "next": why}
    return report


def main(argv: Optional[List[str]] = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--child"]:
        engine, n, memory, work = argv[1], int(argv[2]), argv[3], Path(argv[4])
        print(json.dumps(child(engine, n, memory, work)), flush=True)
        return 0
    args = parse_args(argv)
    started = time.time()
    report = largest(args)
    print(f"\n## The largest micro-batch with a {args.driver_memory} driver (local[2]; load average at the end "
          f"{os.getloadavg()[0]:.1f}; {time.time() - started:.0f} s)")
    for engine, r in report.items():
        done = f"{r['largest']:,} events" if r["largest"] else "none"
        print(f"- {engine}: largest completed {done}; next: {r['next']}")
        for x in r["runs"]:
            if "failed" not in x:
                print(f"    {x['events']:,}: {x['seconds']} s, driver +{x['driver_growth_mb']} MB "
                      f"(bound {x['driver_bound_mb']} MB)")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"args": {k: v for k, v in vars(args).items()}, "report": report},
                                                  indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
