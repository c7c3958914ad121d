"""The tick source's cost at a query's start and per trigger (issues 25/27; ``spark/ticks.py``).

Two figures, never a pass/fail:

* ``--imports N``: for the Python data source of versions before the file stream of tick files (``c0ec24e`` and
  earlier, ``spark/tick_source.py``): in N fresh Python processes, the import of Spark's streaming-source runner,
  then unpickling the tick source's class as that runner does (the ``spark.dataSource.register`` pickle): seconds
  and the ``pyspark_flinkish`` modules it imported. Since the tick source is Spark's file stream there is no such
  process: the figure is skipped.
* ``--rounds N``: a file source and a ``KeyedProcessFunction`` in a continuing query, on the wall clock (the tick
  source unioned in) and on a ``ManualClock`` (none), alternating: ``execute``, its return to Spark's first trigger
  and to the first output; then 4 s idle with ``noDataProgressEventInterval`` 0, each poll's ``latestOffset`` ms.

    .venv/bin/python benchmarks/bench_tick_start.py --imports 3 --rounds 3

To compare two commits, run each from its own ``git archive`` of the package, alternating, with ``PYTHONPATH`` set
to that directory (the script's directory, not the working directory, is first on ``sys.path``, and the virtualenv's
editable install names the main checkout).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from typing import Any, Dict, List

from pyspark import cloudpickle

from pyspark_flinkish.common import WatermarkStrategy
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.spark import ticks

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import pyspark.sql.streaming.python_streaming_source_runner  # noqa: F401
t1 = time.perf_counter()
before = set(sys.modules)
from pyspark import cloudpickle
cloudpickle.loads(open(sys.argv[1], "rb").read())
t2 = time.perf_counter()
print(json.dumps({"runner_s": t1 - t0, "unpickle_s": t2 - t1,
                  "package_modules": len([m for m in set(sys.modules) - before if m.startswith("pyspark_flinkish")])}))
"""


class _RegisteredError(Exception):
    pass


class _Registry:
    def register(self, cls: Any) -> None:
        self.cls = cls
        raise _RegisteredError


class _Session:
    """Only what ``tick_stream`` calls before it reaches Spark: the registration, which hands out the class."""

    def __init__(self) -> None:
        self.dataSource = _Registry()


def tick_source_pickle() -> bytes:
    """The tick source's class as ``tick_stream`` registers it, pickled as Spark pickles it."""
    fake = _Session()
    try:
        ticks.tick_stream(fake, tempfile.mkdtemp())
    except _RegisteredError:
        pass
    return bytes(cloudpickle.dumps(fake.dataSource.cls))


def reader_imports(n: int) -> None:
    if hasattr(ticks, "TickTimer"):
        print("reader process: none (the tick source is Spark's text file stream over <checkpoint>/flinkish/ticks)")
        return
    with tempfile.NamedTemporaryFile(suffix=".pkl", delete=False) as f:
        f.write(tick_source_pickle())
    try:
        for _ in range(n):
            out = subprocess.run([sys.executable, "-c", CHILD, f.name], check=True, capture_output=True, text=True)
            print("reader process:", json.loads(out.stdout.splitlines()[-1]), f"load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        os.unlink(f.name)


class Remind(KeyedProcessFunction):  # type: ignore[type-arg]
    """A processing-time timer far ahead: the job may register timers, so it gets the tick source."""

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 600_000)
        yield (value.k, value.v)


def _progress(p: Any) -> Dict[str, Any]:
    return p if isinstance(p, dict) else json.loads(p.json)  # type: ignore[no-any-return]


def query_start(spark: Any, work: str, manual: bool) -> Dict[str, Any]:
    src = os.path.join(work, "in")
    os.makedirs(src)
    with open(os.path.join(src, "p0.json"), "w") as f:
        f.write("\n".join(json.dumps({"k": k, "v": v}) for k, v in [("a", 1), ("b", 2)]))
    df = spark.readStream.schema("k string, v long").json(src)
    env = StreamExecutionEnvironment.get_execution_environment(spark, clock=ManualClock(0) if manual else None)
    out: List[Any] = []
    env.from_dataframe(df, WatermarkStrategy.no_watermarks()).key_by(lambda r: r.k).process(Remind()).add_sink(out.append)
    t0 = time.time()
    handle = env.execute("bench_tick_start", checkpoint_location=os.path.join(work, "ck"))
    returned = time.time()
    try:
        while not out and time.time() < returned + 120:
            time.sleep(0.02)
        first_out = time.time()
        while not handle.query.recentProgress and time.time() < returned + 120:
            time.sleep(0.02)
        if not handle.query.recentProgress:
            handle.driver.raise_if_failed()
            raise RuntimeError(f"no progress within 120 s: {handle.query.exception()}")
        first = _progress(handle.query.recentProgress[0])
        time.sleep(0 if manual else 4)  # idle: Spark polls its sources (no batch runs)
        later = [_progress(p) for p in handle.query.recentProgress]
    finally:
        handle.stop()
    at = datetime.strptime(first["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
    idle = sorted(p["durationMs"].get("latestOffset", 0) for p in later
                  if p["numInputRows"] == 0 and p["timestamp"] > first["timestamp"])
    kinds = [s["description"].split("[")[0].split("@")[0].rsplit(".", 1)[-1] for s in first["sources"]]
    return {"ticks": handle.driver.ticks, "sources": kinds, "execute_s": round(returned - t0, 3), "to_first_trigger_s": round(at - returned, 3),
            "to_first_output_s": round(first_out - returned, 3), "idle_polls": len(idle),
            "idle_latestOffset_ms_median": idle[len(idle) // 2] if idle else None, "idle_latestOffset_ms_max": max(idle, default=None)}


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--imports", type=int, default=3, help="fresh processes unpickling the tick source")
    parser.add_argument("--rounds", type=int, default=1, help="query starts per clock, alternating (0: none)")
    args = parser.parse_args(argv)
    print("package:", os.path.dirname(ticks.__file__))
    reader_imports(args.imports)
    if args.rounds:
        from pyspark_flinkish.spark.session import session

        spark = session(shuffle_partitions=2, connectors=False)
        spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "0")  # idle polls report progress
        query_start(spark, tempfile.mkdtemp(), True)  # warm-up: the JVM's first query, the first Python workers
        for r in range(args.rounds):
            for manual in (False, True):
                res = query_start(spark, tempfile.mkdtemp(), manual)
                print(f"round {r} load {os.getloadavg()[0]:.1f}", "manual clock" if manual else "wall clock", res, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
