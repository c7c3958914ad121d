"""The Python workers' peak memory at one large micro-batch (issue 25's "any batch size"), before and after a change.

    .venv/bin/python benchmarks/bench_keyed_memory.py [--events 1000000] [--repeats 2] [--before DIR]
        [--driver-memory 4g] [--json out.json]

Each run is a child process with a fresh SparkSession (``local[2]``, 2 shuffle partitions, so 2 state partitions)
running ``large_batch_job.py``'s job (a keyed ``KeyedProcessFunction`` with two ``ValueState``s and an event-time
timer per key; ``availableNow``: the whole input one micro-batch). A thread samples the resident memory of every
Python worker (the processes under Spark's ``pyspark.daemon``) every 0.2 s, and their peak (``VmHWM``) is read
before the session stops: the largest is the figure (workers run route and keyed tasks alike; the keyed task's
input is what grew with the batch). With ``--before DIR`` (the package's tree at another commit, e.g.
``git archive <commit> | tar -x -C DIR``), each repeat runs that tree (``PYTHONPATH=DIR``) and then this one.
Timings are printed, never asserted; every run checks its results against pandas'.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

HERE = Path(__file__).resolve().parent


def _workers() -> Dict[int, int]:
    """The Python processes under this one (``pyspark.daemon`` and the workers it forks) and their peak resident
    memory so far (``VmHWM``), in bytes."""
    from proc_cpu import tree_cpu_by_pid

    out: Dict[int, int] = {}
    for pid in tree_cpu_by_pid():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"pyspark.daemon" not in f.read():
                    continue
            with open(f"/proc/{pid}/status") as f:
                hwm = re.search(r"VmHWM:\s+(\d+) kB", f.read())
        except OSError:
            continue
        if hwm:
            out[pid] = int(hwm.group(1)) * 1024
    return out


class WorkerPeaks:
    """The peak resident memory of every Python worker seen between :meth:`start` and :meth:`stop`."""

    def __init__(self, interval_s: float = 0.2) -> None:
        self.peaks: Dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.interval_s = interval_s

    def _sample(self) -> None:
        for pid, hwm in _workers().items():
            self.peaks[pid] = max(hwm, self.peaks.get(pid, 0))

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> List[int]:
        self._stop.set()
        self._thread.join()
        self._sample()
        return sorted(self.peaks.values(), reverse=True)


def child(n: int, driver_memory: str, work: Path) -> Dict[str, Any]:
    """One run in this process: a fresh SparkSession, the input, the run with the workers sampled, the check."""
    sys.path.insert(0, str(HERE))
    import large_batch_job as job

    import pyspark_flinkish

    spark, sources, expected = job.prepare("keyed-memory", n, driver_memory, work / "in")
    peaks = WorkerPeaks()
    peaks.start()
    run = job.run_large_batch(spark, sources, work / "ck")
    workers = peaks.stop()
    result = {"package": str(Path(pyspark_flinkish.__file__).parent.parent), "events": n, "equal": run.rows == expected,
              "seconds": round(run.seconds, 1), "cpu_seconds": round(run.cpu_seconds, 1),
              "worker_peaks_mb": [w >> 20 for w in workers], "driver_growth_mb": run.growth >> 20}
    spark.stop()
    return result


def run(n: int, before: Optional[str], args: argparse.Namespace) -> Dict[str, Any]:
    """One child process (``before``: the tree it imports the package from); its result or ``{"failed": ...}``."""
    env = dict(os.environ)
    if before:
        env["PYTHONPATH"] = before + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with tempfile.TemporaryDirectory(prefix=f"keyed-memory-{n}-") as work:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(n), args.driver_memory, work]
        # the work directory as the child's (and so its Python workers') current directory: a worker puts it first on
        # its path, which would otherwise import this checkout's package whatever ``PYTHONPATH`` says
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=work)
    lines = [x for x in done.stdout.splitlines() if x.startswith("{")]
    if done.returncode != 0 or not lines:
        errors = [x.strip() for x in done.stderr.splitlines() if "Error" in x or "Exception" in x]
        return {"failed": (errors or [f"exit code {done.returncode}"])[-1][:500]}
    return json.loads(lines[-1])  # type: ignore[no-any-return]


def _load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--before", default=None, help="the package's tree at the commit to compare with")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--json", default=None)
    parser.add_argument("--child", nargs=3, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        n, memory, work = args.child
        print(json.dumps(child(int(n), memory, Path(work))))
        return
    results: List[Dict[str, Any]] = []
    for repeat in range(args.repeats):
        for label, tree in ([("before", args.before)] if args.before else []) + [("after", None)]:
            load = _load()
            started = time.perf_counter()
            result = run(args.events, tree, args)
            result.update(label=label, repeat=repeat, load_before=load, load_after=_load(),
                          process_seconds=round(time.perf_counter() - started, 1))
            results.append(result)
            print(json.dumps(result), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
