"""The benchmark suite: pyspark_flinkish against native Spark and Apache Flink (PyFlink), in one command.

    .venv/bin/python benchmarks/run_all.py [--quick] [--json out.json] [--png out.png] [--parts 1,...,10]

This is a benchmark, not a test: it prints figures and never passes or fails on speed. Before any timing of a part
is reported, every engine's results are compared with the others' and with an independent pandas computation of
the input; an engine that disagrees, fails or is unavailable is reported as such (never left out), and the run
exits non-zero when results disagree. ``docs/benchmarks.md`` describes every part; in short:

1. *tumbling*: 1-minute event-time tumbling count+sum per key: native Spark ``groupBy(window)``, this package's
   foreachBatch executor (columnar ``ColumnAggregate(Count(), Sum("value"))``) and applyInPandasWithState executor,
   PyFlink's DataStream API (Python ``AggregateFunction``) and Flink SQL's ``TUMBLE``.
2. *general*: ``count_window(100, 10)`` + a Python ``ProcessWindowFunction``; session windows with an early-firing
   ``CountTrigger`` and allowed lateness: this package (foreachBatch) vs PyFlink's Python DataStream API.
3. *scaling*: part 1's pipeline at 1k..1M keys (events/s, state bytes per open window) and 0.5M..8M events.
4. *exactly-once*: part 1's pipeline into Delta with ``DeltaSink`` vs a plain Delta append in ``foreach_batch``.
5. *latency*: Kafka -> Delta at a fixed rate: produce-to-commit latency p50/p99 and the micro-batch time.
6. *joins and async*: (a) an interval join of two keyed streams, this package's foreachBatch executor vs native
   Spark's time-bounded stream-stream join (equal pairs first); (b) ``AsyncDataStream.unordered_wait`` enriching
   events from a local HTTP server with a fixed latency, throughput against the capacity limit (capacity / latency).
7. *state growth*: K idle keys (a ``KeyedProcessFunction`` with a ``ValueState`` and a timer per key), then small
   micro-batches touching a few keys: time and checkpoint bytes written per small batch, this package's
   foreachBatch executor vs native ``groupBy(key).count()`` with the HDFS-backed and the RocksDB state store.
8. *savepoint*: part 7's job with K keys stopped with a savepoint, the savepoint read back with ``read_state`` and
   restored into more state partitions, against native Spark's state data source reader and a restart on the same
   checkpoint (HDFS-backed and RocksDB stores).
9. *large batch*: issue 25's keyed job with timers (``large_batch_job.py``, the job ``tests/spark/test_large_batches.py``
   runs) with 1M and 5M events in one ``availableNow`` micro-batch: results equal pandas', the driver's peak memory
   growth below the test's bound (a miss is reported as a mismatch), the batch's phases.
10. *largest batch* (not in ``--quick``): ``bench_largest_batch.py``: the largest micro-batch the package and native
   Spark (``applyInPandasWithState``) complete with a 4 GB driver, each size in a subprocess of its own.

Repeats (``--repeats``, default 3; ``--quick``: 1 and small sizes) run the engines in turn, and every ratio pairs
two runs of one repeat; tables give the median and [min-max] over repeats. PyFlink runs in its own virtualenv
(``benchmarks/.venv-pyflink``, made by :func:`ensure_pyflink` on first use: its pins conflict with pyspark's) as a
subprocess running ``benchmarks/pyflink_job.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common as bc
import bench_joins_async as bja
import bench_savepoint as bsp
import bench_state_growth as bsg
import large_batch_job as lbj

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.window import EventTimeSessionWindows

HERE = os.path.dirname(os.path.abspath(__file__))
PYFLINK_VENV = os.path.join(HERE, ".venv-pyflink")
PYFLINK_VERSION = "2.3.0"
# PyFlink's Python worker keeps 1,000 keyed states by default (python.state.cache-size); with 10k keys every state
# access became a gRPC round trip to the JVM. A larger cache took part 1's DataStream job from 75 to 55 s on 50k
# events; a user tuning PyFlink would set it.
PYFLINK_CONF = ["python.state.cache-size=1000000"]
PYFLINK_WORKER_MODE = "process"
PARTS = ["tumbling", "general", "scaling", "exactly_once", "latency", "joins_async", "state_growth", "savepoint",
         "large_batch", "largest_batch"]
SLOW_PARTS = {"largest_batch"}  # not in --quick unless named in --parts


# ----------------------------------------------------------------------------------------------- PyFlink
def ensure_pyflink(venv: str = PYFLINK_VENV, install: bool = True) -> Tuple[Optional[str], str]:
    """PyFlink's interpreter, creating ``venv`` (``python3 -m venv`` + ``pip install apache-flink==2.3.0``) if needed.

    Returns ``(python, "")`` or ``(None, reason)``; never raises (an unavailable Flink is reported, not fatal)."""
    python = os.path.join(venv, "bin", "python")

    def importable() -> bool:
        try:
            out = subprocess.run([python, "-c", "import pyflink.version"], capture_output=True, timeout=120)
        except (OSError, subprocess.SubprocessError):
            return False
        return out.returncode == 0

    if os.path.exists(python) and importable():
        return python, ""
    if not install:
        return None, f"no PyFlink in {venv} (and --no-pyflink-install)"
    print(f"setting up PyFlink {PYFLINK_VERSION} in {venv} (once; several minutes) ...", flush=True)
    base = shutil.which("python3.11") or shutil.which("python3") or "python3"
    try:
        if not os.path.exists(python):
            subprocess.run([base, "-m", "venv", venv], check=True, capture_output=True, timeout=300)
        subprocess.run(
            [python, "-m", "pip", "install", "-q", f"apache-flink=={PYFLINK_VERSION}"],
            check=True, capture_output=True, text=True, timeout=3600,
        )
    except subprocess.CalledProcessError as exc:
        return None, f"PyFlink set-up failed: {(exc.stderr or '')[-500:]}"
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"PyFlink set-up failed: {exc}"
    return (python, "") if importable() else (None, "PyFlink installed but `import pyflink` fails")


def run_pyflink(
    python: str, mode: str, csv: str, work: str, timeout_s: float, conf: Optional[List[str]] = None, **params: Any
) -> Dict[str, Any]:
    """One ``pyflink_job.py`` run; returns its result JSON (rows, wall_s, cpu_s). Raises RuntimeError on failure."""
    out = os.path.join(work, f"pyflink-{mode}-{uuid.uuid4().hex[:6]}.json")
    cmd = [python, os.path.join(HERE, "pyflink_job.py"), "--mode", mode, "--csv", csv, "--out", out]
    for pair in conf or []:
        cmd += ["--conf", pair]
    for k, v in params.items():
        cmd += [f"--{k.replace('_', '-')}", str(v)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_"))}
    env.pop("PYTHONPATH", None)
    # A local mini-cluster would run the Python workers inside this client process ("loopback", one GIL shared with
    # the client); "process" starts them as separate processes, as on a Flink cluster. PyFlink reads the mode from
    # this variable. Part 1's DataStream job: 47 s in process mode against 55 s in loopback mode (50k events).
    env["_python_worker_execution_mode"] = PYFLINK_WORKER_MODE
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=work)
    except subprocess.TimeoutExpired as exc:
        msg = f"PyFlink {mode} did not finish in {timeout_s} s"
        raise RuntimeError(msg) from exc
    if proc.returncode != 0 or not os.path.exists(out):
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-8:])
        msg = f"PyFlink {mode} failed (exit {proc.returncode}): {tail}"
        raise RuntimeError(msg)
    with open(out) as f:
        return json.load(f)  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------------------------- reporting helpers
def spread(values: List[float], fmt: str) -> str:
    return bc._spread([v for v in values if v is not None], fmt)


def median(values: List[float]) -> Optional[float]:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def print_table(title: str, head: List[str], lines: List[List[str]]) -> None:
    print(f"\n### {title}\n")
    widths = [max(len(str(x[i])) if i < len(x) else 0 for x in [head, *lines]) for i in range(len(head))]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for line in lines:
        line = list(line) + [""] * (len(head) - len(line))
        print("| " + " | ".join(str(x).ljust(w) for x, w in zip(line, widths)) + " |")


class Part:
    """Runs of one part: per engine and repeat, a dict of measurements, or the reason the engine has none."""

    def __init__(self, name: str, engines: List[str]) -> None:
        self.name = name
        self.engines = engines
        self.runs: Dict[str, List[Dict[str, Any]]] = {e: [] for e in engines}
        self.unavailable: Dict[str, str] = {}
        self.mismatches: List[str] = []
        self.notes: List[str] = []

    def record(self, engine: str, repeat: int, **values: Any) -> None:
        self.runs[engine].append({"repeat": repeat, **values})

    def fail(self, engine: str, reason: str) -> None:
        self.unavailable.setdefault(engine, reason)
        print(f"  {engine}: {reason}", flush=True)

    def values(self, engine: str, key: str) -> List[Any]:
        return [r[key] for r in self.runs[engine] if r.get(key) is not None]

    def paired(self, engine: str, base: str, key: str, invert: bool = False) -> List[float]:
        """engine/base of ``key`` within each repeat (base/engine when ``invert``)."""
        by = {r["repeat"]: r for r in self.runs.get(base, [])}
        out = []
        for r in self.runs[engine]:
            b = by.get(r["repeat"])
            if b and r.get(key) and b.get(key):
                out.append(b[key] / r[key] if invert else r[key] / b[key])
        return out

    def status(self, engine: str) -> Optional[str]:
        if engine in self.unavailable:
            return self.unavailable[engine]
        return None if self.runs[engine] else "not run"

    def as_json(self) -> Dict[str, Any]:
        return {
            "engines": self.engines,
            "runs": self.runs,
            "unavailable": self.unavailable,
            "results_match": not self.mismatches,
            "mismatches": self.mismatches,
            "notes": self.notes,
        }


def _try(part: Part, engine: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:
        part.fail(engine, f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}")
        if os.environ.get("BENCH_TRACEBACK"):
            traceback.print_exc()
        return None


def _compare(part: Part, engine: str, repeat: int, got: List[Any], expected: List[Any], what: str) -> bool:
    got = sorted(got)
    if got == expected:
        return True
    g, e = set(got), set(expected)
    part.mismatches.append(
        f"{engine} repeat {repeat}: {len(got)} {what}, expected {len(expected)}; missing {len(e - g)} "
        f"(e.g. {sorted(e - g)[:2]}), unexpected {len(g - e)} (e.g. {sorted(g - e)[:2]})"
    )
    print(f"  {engine}: MISMATCH ({part.mismatches[-1]})", flush=True)
    return False


# ----------------------------------------------------------------------------------------------- part 1: tumbling
TUMBLING_SPARK = ["native", "foreach_batch", "apply_in_pandas_with_state"]
TUMBLING_FLINK = {"pyflink_datastream": "tumbling_datastream", "pyflink_sql": "tumbling_sql"}


def _spark_args(args: argparse.Namespace, **over: Any) -> argparse.Namespace:
    ns = argparse.Namespace(disorder_ms=args.disorder_ms, timeout_s=args.timeout_s, count_trigger=3)
    for k, v in over.items():
        setattr(ns, k, v)
    return ns


def run_spark_tumbling(
    part: Part, engine: str, repeat: int, spark: Any, info: bc.InputInfo, args: argparse.Namespace, work: str
) -> Optional[str]:
    """One Spark engine over bench_common's input; records wall, cpu, steady events/s; returns the checkpoint path."""
    if engine in bc.NOT_IMPLEMENTED:
        part.fail(engine, "n/a (not implemented)")
        return None
    cpu0 = bc._tree_cpu()
    ck = os.path.join(work, "ck")
    res = _try(part, engine, lambda: bc.run_engine(engine, spark, info.directory, _spark_args(args), ck))
    if res is None:
        return None
    query, rows, wall, _ = res
    cpu = bc._tree_cpu() - cpu0
    ok = _compare(part, engine, repeat, bc._real(rows), info.expected, "windows")
    part.record(
        engine, repeat, events=info.events, wall_s=wall, cpu_s=cpu, events_per_s=info.events / wall,
        steady_events_per_s=bc._steady(bc._progress(query), info.data_files), windows=len(bc._real(rows)), match=ok,
        query_id=str(query.id),
    )
    print(f"  {engine}: wall {wall:.1f} s, cpu {cpu:.1f} s, {info.events / wall:,.0f} events/s", flush=True)
    return ck


def run_flink_tumbling(
    part: Part, engine: str, repeat: int, python: str, csv: str, info: bc.InputInfo, args: argparse.Namespace, work: str
) -> None:
    mode = TUMBLING_FLINK[engine]
    res = _try(
        part, engine,
        lambda: run_pyflink(python, mode, csv, work, args.timeout_s, conf=args.pyflink_conf,
                            disorder_ms=args.disorder_ms, parallelism=args.parallelism,
                            warmup_rows=args.pyflink_warmup_rows),
    )
    if res is None:
        return
    rows = [tuple(r) for r in res["rows"]]
    ok = _compare(part, engine, repeat, rows, info.expected, "windows")
    part.record(
        engine, repeat, events=info.events, wall_s=res["wall_s"], cpu_s=res["cpu_s"],
        events_per_s=info.events / res["wall_s"], startup_run_s=res.get("warmup_s"), windows=len(rows), match=ok,
        flink=res.get("flink"),
    )
    print(f"  {engine}: wall {res['wall_s']:.1f} s, cpu {res['cpu_s']:.1f} s", flush=True)


def part_tumbling(
    spark: Any, args: argparse.Namespace, work: str, pyflink: Tuple[Optional[str], str]
) -> List[Part]:
    """Part 1 at ``--events``; when PyFlink's DataStream job is too slow for that size (``--pyflink-datastream-events``),
    it is reported as not run there and a second table (part 1b) runs *every* engine on a smaller input instead, so
    that its ratios still pair runs on the same events."""
    ds_max = args.pyflink_datastream_events
    small = bool(ds_max) and args.events > ds_max and pyflink[0] is not None
    skip = {"pyflink_datastream": f"not run at {args.events:,} events (> --pyflink-datastream-events {ds_max:,}): see 1b"}
    parts = [_tumbling("tumbling", spark, args, work, pyflink, args.events, args.batch_rows, skip if small else {})]
    if small:
        rows = max(1, args.batch_rows * ds_max // args.events)  # as many micro-batches as the full-size input
        parts.append(_tumbling("tumbling_small", spark, args, work, pyflink, ds_max, rows, {}))
    return parts


def _tumbling(
    name: str, spark: Any, args: argparse.Namespace, work: str, pyflink: Tuple[Optional[str], str], events: int,
    batch_rows: int, skip: Dict[str, str],
) -> Part:
    engines = TUMBLING_SPARK + list(TUMBLING_FLINK)
    part = Part(name, engines)
    d = os.path.join(work, name)
    csv = os.path.join(d, "events.csv")
    info = bc.generate(os.path.join(d, "input"), events, args.keys, batch_rows, args.disorder_ms, args.seed, csv=csv)
    part.input = {"events": info.events, "keys": args.keys, "batch_rows": batch_rows, "files": info.data_files,
                  "windows": len(info.expected)}
    print(f"part 1 ({name}): {info.events:,} events, {args.keys:,} keys, {info.data_files} files, "
          f"{len(info.expected):,} windows")
    python, why = pyflink
    for engine, reason in skip.items():
        part.fail(engine, reason)
    for engine in TUMBLING_FLINK:
        if python is None:
            part.fail(engine, f"unavailable: {why}")
    for repeat in range(args.repeats):
        print(f"repeat {repeat}", flush=True)
        for engine in engines:
            if engine in part.unavailable:
                continue
            if engine in TUMBLING_FLINK:
                run_flink_tumbling(part, engine, repeat, python, csv, info, args, work)  # type: ignore[arg-type]
            else:
                run_spark_tumbling(part, engine, repeat, spark, info, args, work)
    lines = []
    for e in engines:
        st = part.status(e)
        if st:
            lines.append([e, st])
            continue
        lines.append([
            e, spread(part.values(e, "wall_s"), ".1f"), spread(part.values(e, "events_per_s"), ",.0f"),
            spread(part.paired(e, "native", "events_per_s"), ".3f"),
            spread(part.paired(e, "pyflink_datastream", "events_per_s"), ".2f"),
            spread([r["events"] / r["cpu_s"] for r in part.runs[e] if r["cpu_s"]], ",.0f"),
            spread(part.values(e, "steady_events_per_s"), ",.0f") if e not in TUMBLING_FLINK else "n/a (no micro-batches)",
        ])
    part.table = (["engine", "wall s", "events/s (wall)", "ratio vs native", "ratio vs PyFlink DataStream",
                   "events/CPU-s", "events/s (steady batches)"], lines)
    return part


# ----------------------------------------------------------------------------------------------- part 2: general path
def generate_general(
    directory: str, csv: str, events: int, keys: int, batch_rows: int, args: argparse.Namespace
) -> Dict[str, Any]:
    """Part 2's input: ``(key, ts, value, seq)``, per-key gaps for sessions, bounded disorder B plus a share of late
    events (``--late-share``, lagging up to ``--late-ms`` more), within the allowed lateness (see the docs)."""
    rng = np.random.default_rng(args.seed + 7)
    t0 = 1_767_225_600_000
    base = t0 + np.sort(rng.integers(0, 3_600_000, events, dtype=np.int64))
    lag = rng.integers(0, args.disorder_ms + 1, events, dtype=np.int64)
    late = rng.random(events) < args.late_share
    lag[late] += rng.integers(0, args.late_ms + 1, int(late.sum()), dtype=np.int64)
    ts = base - lag
    key = rng.integers(0, keys, events, dtype=np.int64)
    value = rng.integers(0, 1000, events, dtype=np.int64)
    seq = np.arange(events, dtype=np.int64)
    os.makedirs(directory, exist_ok=True)
    files = 0
    for start in range(0, events, batch_rows):
        sl = slice(start, start + batch_rows)
        bc.write_batch(directory, files, {"key": key[sl], "ts": ts[sl], "value": value[sl], "seq": seq[sl]})
        files += 1
    sentinel = int(ts.max()) + args.lateness_ms + args.gap_ms + 2 * bc.WINDOW_MS
    for i in range(2):
        one = np.array([0], dtype=np.int64)
        bc.write_batch(directory, files + i, {"key": one + bc.SENTINEL_KEY, "ts": one + sentinel + i * bc.WINDOW_MS,
                                         "value": one, "seq": one + events + i})
    bc.write_csv(csv, key, ts, value, seq)
    frame = pd.DataFrame({"key": key, "ts": ts, "value": value, "seq": seq})
    # count windows (size, slide): full windows only, per key in arrival order (see pyflink_job.py)
    counts = []
    for k, g in frame.groupby("key", sort=True):
        v, s = g["value"].to_numpy(), g["seq"].to_numpy()
        csum = np.concatenate([[0], np.cumsum(v)])
        for c in range(args.size, len(g) + 1, args.slide):
            counts.append((int(k), int(s[c - 1]), args.size, int(csum[c] - csum[c - args.size])))
    # sessions: sorted by time, a new session where the gap to the previous event is >= gap
    sessions = []
    for k, g in frame.sort_values(["key", "ts"]).groupby("key", sort=True):
        t, v = g["ts"].to_numpy(), g["value"].to_numpy()
        breaks = np.flatnonzero(np.diff(t) >= args.gap_ms) + 1
        for a, b in zip(np.concatenate([[0], breaks]), np.concatenate([breaks, [len(t)]])):
            sessions.append((int(k), int(t[a]), int(t[b - 1]) + args.gap_ms, int(b - a), int(v[a:b].sum())))
    return {"directory": directory, "csv": csv, "events": events, "files": files, "late": int(late.sum()),
            "count_windows": sorted(counts), "sessions": sorted(sessions)}


def final_sessions(rows: List[Tuple[int, ...]]) -> List[Tuple[int, ...]]:
    """The last firing of every final session: per (key, start, end) the largest count, then only windows that no
    other window of the key contains (earlier firings of sessions merged later)."""
    best: Dict[Tuple[int, int, int], Tuple[int, ...]] = {}
    for r in rows:
        k = (r[0], r[1], r[2])
        if k not in best or r[3] > best[k][3]:
            best[k] = tuple(r)
    by_key: Dict[int, List[Tuple[int, ...]]] = {}
    for r in best.values():
        by_key.setdefault(r[0], []).append(r)
    out = []
    for rs in by_key.values():
        for r in rs:
            if not any(o is not r and o[1] <= r[1] and r[2] <= o[2] for o in rs):
                out.append(r)
    return sorted(out)


def run_flinkish_general(
    spark: Any, gen: Dict[str, Any], mode: str, args: argparse.Namespace, work: str
) -> Tuple[Any, List[Any], float]:
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    stream = env.from_dataframe(
        bc._source(spark, gen["directory"]),
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(args.disorder_ms)),
        timestamp_column="ts",
        order_columns=["seq"],
    )
    keyed = stream.key_by(lambda r: r.key)
    out: List[Any] = []
    if mode == "count_window":
        counts = keyed.count_window(args.size, args.slide)
        counts.process(bc.LastCount(), output_type=Types.TUPLE([Types.LONG()] * 4)).add_sink(out.append)
    else:
        (
            keyed.window(EventTimeSessionWindows.with_gap(Duration.of_millis(args.gap_ms)))
            .trigger(bc.EarlyCountEventTimeTrigger(args.count))
            .allowed_lateness(args.lateness_ms)
            .process(bc.SessionTotals(), output_type=Types.TUPLE([Types.LONG()] * 5))
            .add_sink(out.append)
        )
    name = f"bench_{mode}_" + uuid.uuid4().hex[:8]
    t = time.perf_counter()
    handle = env.execute(name, checkpoint_location=os.path.join(work, "ck", name), trigger={"availableNow": True})
    if not handle.query.awaitTermination(args.timeout_s):
        handle.stop()
        msg = f"did not finish in {args.timeout_s} s"
        raise TimeoutError(msg)
    wall = time.perf_counter() - t
    if handle.driver is not None:
        handle.driver.raise_if_failed()
    if handle.query.exception() is not None:
        raise RuntimeError(str(handle.query.exception()))
    return handle.query, [tuple(int(x) for x in r) for r in out if r[0] != bc.SENTINEL_KEY], wall


def part_general(spark: Any, args: argparse.Namespace, work: str, pyflink: Tuple[Optional[str], str]) -> Part:
    cases = {"count_window": "count windows", "session": "sessions"}
    engines = [f"{who}_{c}" for c in cases for who in ("foreach_batch", "pyflink")]
    part = Part("general", engines)
    d = os.path.join(work, "general")
    gen = generate_general(os.path.join(d, "input"), os.path.join(d, "events.csv"), args.general_events,
                           args.general_keys, args.batch_rows, args)
    print(f"part 2: {gen['events']:,} events ({gen['late']:,} late), {args.general_keys:,} keys, "
          f"{len(gen['count_windows']):,} full count windows, {len(gen['sessions']):,} sessions", flush=True)
    part.notes.append(
        "count_window: PyFlink's Python count_window(size, slide) emits only full windows; this package (like Java "
        "Flink) also emits the first partial windows: only full windows are compared, all firings are counted."
    )
    part.notes.append("session: only each final session's last firing is compared (earlier firings depend on watermark timing).")
    python, why = pyflink
    if python is None:
        for c in cases:
            part.fail(f"pyflink_{c}", f"unavailable: {why}")
    for repeat in range(args.repeats):
        print(f"repeat {repeat}", flush=True)
        for case in cases:
            expected = gen["count_windows"] if case == "count_window" else gen["sessions"]
            e = f"foreach_batch_{case}"
            cpu0 = bc._tree_cpu()
            res = _try(part, e, lambda case=case: run_flinkish_general(spark, gen, case, args, work))
            if res is not None:
                _, rows, wall = res
                cpu = bc._tree_cpu() - cpu0
                got = [r for r in rows if r[2] == args.size] if case == "count_window" else final_sessions(rows)
                ok = _compare(part, e, repeat, got, expected, cases[case])
                part.record(e, repeat, events=gen["events"], wall_s=wall, cpu_s=cpu, events_per_s=gen["events"] / wall,
                            firings=len(rows), match=ok)
                print(f"  {e}: wall {wall:.1f} s, {len(rows):,} firings", flush=True)
            e = f"pyflink_{case}"
            if e in part.unavailable:
                continue
            params = {"disorder_ms": args.disorder_ms, "parallelism": args.parallelism, "warmup_rows": args.pyflink_warmup_rows,
                      "size": args.size, "slide": args.slide, "gap_ms": args.gap_ms, "count": args.count,
                      "lateness_ms": args.lateness_ms}
            res = _try(
                part, e, lambda case=case, params=params: run_pyflink(
                    python, case, gen["csv"], work, args.timeout_s, conf=args.pyflink_conf, **params
                )
            )
            if res is not None:
                rows = [tuple(r) for r in res["rows"]]
                got = rows if case == "count_window" else final_sessions(rows)
                ok = _compare(part, e, repeat, got, expected, cases[case])
                part.record(e, repeat, events=gen["events"], wall_s=res["wall_s"], cpu_s=res["cpu_s"],
                            events_per_s=gen["events"] / res["wall_s"], firings=len(rows), startup_run_s=res.get("warmup_s"),
                            match=ok)
                print(f"  {e}: wall {res['wall_s']:.1f} s, {len(rows):,} firings", flush=True)
    lines = []
    for e in engines:
        st = part.status(e)
        if st:
            lines.append([e, st])
            continue
        other = e.replace("foreach_batch", "pyflink") if e.startswith("foreach_batch") else e.replace("pyflink", "foreach_batch")
        ratio = spread(part.paired(e, other, "events_per_s"), ".3f") if e.startswith("foreach_batch") else "1"
        lines.append([e, spread(part.values(e, "wall_s"), ".1f"), spread(part.values(e, "events_per_s"), ",.0f"),
                      spread([r["events"] / r["cpu_s"] for r in part.runs[e] if r["cpu_s"]], ",.0f"), ratio,
                      str(part.runs[e][0]["firings"])])
    part.table = (["engine", "wall s", "events/s (wall)", "events/CPU-s", "ratio vs PyFlink", "firings"], lines)
    part.input = {k: v for k, v in gen.items() if k not in ("count_windows", "sessions")}
    return part


# ----------------------------------------------------------------------------------------------- part 3: scaling
def state_per_window(checkpoint: str, batch: int) -> Tuple[int, int]:
    """(bytes, open windows) of the package's window state after ``batch``: the keys' and accumulators' bytes
    (uncompressed) and the window rows of the state files the batch's manifests name (``driver/b=<batch>.json``)."""
    import json

    from pyspark_flinkish.spark import state_store

    root = os.path.join(checkpoint, "flinkish", "state")
    with open(os.path.join(checkpoint, "flinkish", "driver", f"b={batch:012d}.json")) as f:
        ops = json.load(f)["state"]
    total = rows = 0
    for uid, op in ops.items():
        if op["layout"] != state_store.LAYOUT_WINDOWS:
            continue
        for sp, manifest in op["partitions"].items():
            table = state_store.manifest_rows(root, uid, int(sp), manifest)
            windows = table.filter(table["window_start"].is_valid())
            rows += len(windows)
            total += sum(len(k) + len(v) for k, v in zip(windows["key"].to_pylist(), windows["value"].to_pylist()))
    return total, rows


def part_scaling(spark: Any, args: argparse.Namespace, work: str) -> Part:
    engines = ["native", "foreach_batch"]
    part = Part("scaling", [f"{e}@{what}" for what in ("keys", "events") for e in engines])
    points = [("keys", k, args.events) for k in args.scale_keys] + [("events", args.keys, n) for n in args.scale_events]
    results: Dict[Tuple[str, str, int], List[Dict[str, Any]]] = {}
    for what, keys, events in points:
        x = keys if what == "keys" else events
        d = os.path.join(work, f"scaling-{what}-{x}")
        info = bc.generate(os.path.join(d, "input"), events, keys, args.batch_rows, args.disorder_ms, args.seed)
        print(f"part 3: {events:,} events, {keys:,} keys ({info.data_files} files)", flush=True)
        for repeat in range(args.repeats):
            for e in engines:
                name = f"{e}@{what}"
                sub = Part(name, [e])
                t_ck = os.path.join(work, "ck")
                before = set(os.listdir(t_ck)) if os.path.isdir(t_ck) else set()
                run_spark_tumbling(sub, e, repeat, spark, info, args, work)
                part.mismatches += [f"{what}={x}: {m}" for m in sub.mismatches]
                if e in sub.unavailable:
                    part.fail(name, f"{what}={x}: {sub.unavailable[e]}")
                    continue
                r = sub.runs[e][0]
                if e == "foreach_batch":
                    new = [os.path.join(t_ck, n) for n in set(os.listdir(t_ck)) - before]
                    ck = max(new, key=os.path.getmtime) if new else ""
                    nbytes, nwin = state_per_window(ck, info.data_files - 1)
                    r.update(state_bytes=nbytes, open_windows=nwin, bytes_per_window=nbytes / nwin if nwin else None)
                results.setdefault((what, e, x), []).append(r)
                part.record(name, repeat, x=x, **{k: v for k, v in r.items() if k != "repeat"})
    part.table_keys = []  # type: ignore[attr-defined]
    for what in ("keys", "events"):
        xs = args.scale_keys if what == "keys" else args.scale_events
        lines = []
        for x in xs:
            nat, fb = results.get((what, "native", x), []), results.get((what, "foreach_batch", x), [])
            ratio = [f["events_per_s"] / n["events_per_s"] for n, f in zip(nat, fb)]
            lines.append([
                f"{x:,}", spread([r["wall_s"] for r in nat], ".1f") if nat else "failed",
                spread([r["wall_s"] for r in fb], ".1f") if fb else "failed",
                spread([r["events_per_s"] for r in nat], ",.0f") if nat else "",
                spread([r["events_per_s"] for r in fb], ",.0f") if fb else "",
                spread(ratio, ".3f"),
                spread([r["bytes_per_window"] for r in fb if r.get("bytes_per_window")], ",.0f") if fb else "",
                spread([r["open_windows"] for r in fb], ",.0f") if fb else "",
            ])
        part.table_keys.append((what, lines))  # type: ignore[attr-defined]
    part.table = (["keys" , "native wall s", "foreach_batch wall s", "native events/s", "foreach_batch events/s",
                   "ratio", "state bytes/open window", "open windows"], [])
    return part


# ----------------------------------------------------------------------------------------------- part 4: exactly-once
def _delta_windows(spark: Any, path: str) -> List[Tuple[int, ...]]:
    rows = spark.read.format("delta").load(path).select("key", "start", "count", "sum").collect()
    return sorted(tuple(int(x) for x in r) for r in rows if r[0] != bc.SENTINEL_KEY)


def run_delta(spark: Any, info: bc.InputInfo, args: argparse.Namespace, work: str, exactly_once: bool) -> Tuple[Any, str, float]:
    from pyspark_flinkish.datastream.aggregates import ColumnAggregate, Count, Sum
    from pyspark_flinkish.datastream.connectors.delta import DeltaSink
    from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

    env = StreamExecutionEnvironment.get_execution_environment(spark)
    stream = env.from_dataframe(
        bc._source(spark, info.directory),
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(args.disorder_ms)),
        timestamp_column="ts",
        order_columns=["seq"],
    )
    out_type = Types.ROW_NAMED(["key", "start", "count", "sum"], [Types.LONG()] * 4)
    windows = (
        stream.key_by(lambda r: r.key)
        .window(TumblingEventTimeWindows.of(Duration.of_minutes(1)))
        .aggregate(ColumnAggregate(Count(), Sum("value")), bc.WithWindow(), output_type=out_type)
    )
    name = ("bench_delta_eo_" if exactly_once else "bench_delta_plain_") + uuid.uuid4().hex[:8]
    path = os.path.join(work, "delta", name)
    if exactly_once:
        windows.sink_to(DeltaSink.for_path(path)).uid("windows")
    else:

        def append(df: Any, batch_id: int) -> None:
            df.write.format("delta").mode("append").save(path)

        windows.foreach_batch(append)
    t = time.perf_counter()
    handle = env.execute(name, checkpoint_location=os.path.join(work, "ck", name), trigger={"availableNow": True})
    if not handle.query.awaitTermination(args.timeout_s):
        handle.stop()
        msg = f"did not finish in {args.timeout_s} s"
        raise TimeoutError(msg)
    wall = time.perf_counter() - t
    if handle.driver is not None:
        handle.driver.raise_if_failed()
    if handle.query.exception() is not None:
        raise RuntimeError(str(handle.query.exception()))
    return handle.query, path, wall


def part_exactly_once(spark: Any, args: argparse.Namespace, work: str) -> Part:
    engines = ["plain_append", "delta_sink"]
    part = Part("exactly_once", engines)
    info = bc.generate(os.path.join(work, "eo", "input"), args.events, args.keys, args.batch_rows, args.disorder_ms, args.seed)
    print(f"part 4: {info.events:,} events, {args.keys:,} keys", flush=True)
    for repeat in range(args.repeats):
        for e in engines:
            cpu0 = bc._tree_cpu()
            res = _try(part, e, lambda e=e: run_delta(spark, info, args, work, e == "delta_sink"))
            if res is None:
                continue
            query, path, wall = res
            cpu = bc._tree_cpu() - cpu0
            ok = _compare(part, e, repeat, _delta_windows(spark, path), info.expected, "windows")
            progress = bc._progress(query)
            part.record(e, repeat, events=info.events, wall_s=wall, cpu_s=cpu, events_per_s=info.events / wall,
                        steady_events_per_s=bc._steady(progress, info.data_files), match=ok,
                        commits=len(spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()))
            print(f"  {e}: wall {wall:.1f} s", flush=True)
    lines = []
    for e in engines:
        st = part.status(e)
        if st:
            lines.append([e, st])
            continue
        lines.append([e, spread(part.values(e, "wall_s"), ".1f"), spread(part.values(e, "steady_events_per_s"), ",.0f"),
                      spread(part.paired(e, "plain_append", "wall_s"), ".3f"), str(part.runs[e][0]["commits"])])
    part.table = (["sink", "wall s", "events/s (steady)", "wall ratio vs plain append", "Delta commits"], lines)
    return part


# ----------------------------------------------------------------------------------------------- part 5: latency
LAT_SCHEMA = "key BIGINT, ts BIGINT, value BIGINT, seq BIGINT, sent_ms BIGINT"


def _producer(servers: str, topic: str, rate: float, seconds: float, stop: threading.Event, sent: List[int]) -> None:
    """Sends ``rate`` events/s for ``seconds``, each stamped with its wall-clock send time (ms)."""
    import json as _json

    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=servers, acks=1, linger_ms=0)
    t0 = time.time()
    i = 0
    try:
        while not stop.is_set():
            now = time.time()
            if now - t0 >= seconds:
                break
            due = int((now - t0) * rate)
            while i < due:
                ms = int(time.time() * 1000)
                producer.send(topic, _json.dumps({"key": i % 100, "ts": ms, "value": i % 1000, "seq": i, "sent_ms": ms}).encode())
                i += 1
            time.sleep(0.005)
        producer.flush()
    finally:
        producer.close()
        sent.append(i)


def _latencies(spark: Any, path: str, skip_s: float, t0_ms: int) -> Tuple[List[float], int]:
    """Produce-to-visibility latency per row: the Delta commit timestamp of the row's version - its send time."""
    from pyspark.sql import functions as F

    cdf = (
        spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0).load(path)
        .where(F.col("_change_type") == "insert")
        .select("sent_ms", F.unix_millis("_commit_timestamp").alias("commit_ms"))
        .toPandas()
    )
    keep = cdf[cdf["sent_ms"] >= t0_ms + skip_s * 1000]
    return (keep["commit_ms"] - keep["sent_ms"]).astype(float).tolist(), len(cdf)


def run_latency(spark: Any, broker: Any, engine: str, args: argparse.Namespace, work: str) -> Dict[str, Any]:
    from pyspark.sql import functions as F

    topic = f"lat-{engine}-{uuid.uuid4().hex[:6]}"
    trigger = {"processingTime": f"{args.latency_trigger_s:g} seconds"} if args.latency_trigger_s else None
    broker.create_topic(topic, partitions=2)
    path = os.path.join(work, "latency", topic)
    ck = os.path.join(work, "ck", topic)
    if engine == "native":
        df = (
            spark.readStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap_servers)
            .option("subscribe", topic).option("startingOffsets", "earliest").load()
            .select(F.from_json(F.col("value").cast("string"), LAT_SCHEMA).alias("e")).select("e.*")
        )
        # the change data feed gives every row its commit's timestamp (DeltaSink turns it on for its tables)
        spark.sql(f"CREATE TABLE delta.`{path}` ({LAT_SCHEMA}) USING delta TBLPROPERTIES (delta.enableChangeDataFeed = true)")
        writer = df.writeStream.format("delta").option("checkpointLocation", ck)
        if trigger:
            writer = writer.trigger(**trigger)
        query = writer.start(path)
        stop_query = query.stop
    else:
        from pyspark_flinkish.datastream.connectors.delta import DeltaSink

        env = StreamExecutionEnvironment.get_execution_environment(spark)
        events = env.from_kafka(
            topic, broker.bootstrap_servers,
            WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5)),
            schema=LAT_SCHEMA, timestamp_field="ts",
        )
        row = Types.ROW_NAMED(["key", "ts", "value", "seq", "sent_ms"], [Types.LONG()] * 5)
        events.map(lambda e: e, output_type=row).sink_to(DeltaSink.for_path(path)).uid("latency")
        handle = env.execute(topic, checkpoint_location=ck, trigger=trigger)
        query, stop_query = handle.query, handle.stop
    try:
        time.sleep(args.latency_warmup_s)  # query start-up before any event
        stop, sent = threading.Event(), []  # type: ignore[var-annotated]
        t0_ms = int(time.time() * 1000)
        prod = threading.Thread(target=_producer, args=(broker.bootstrap_servers, topic, args.rate, args.latency_s, stop, sent))
        prod.start()
        prod.join()
        deadline = time.time() + max(60.0, args.latency_s)
        while time.time() < deadline:  # drain: until every sent event is visible
            if os.path.isdir(os.path.join(path, "_delta_log")) and spark.read.format("delta").load(path).count() >= sent[0]:
                break
            time.sleep(1)
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
    finally:
        stop_query()
    lat, rows = _latencies(spark, path, args.latency_skip_s, t0_ms)
    batches = [p for p in bc._progress(query) if p["rows"] > 0]
    phases = {} if engine == "native" else {p["batch_id"]: p.get("durations_ms") for p in handle.recent_progress()}
    detail = [{**p, "phases": phases.get(p["batchId"])} for p in batches]
    for p in sorted(detail, key=lambda p: -p["ms"])[:4]:  # where the tail comes from (docs: part 5)
        spark_ms = {k: v for k, v in p["durations"].items() if v >= 50 and k != "triggerExecution"}
        ours = {k: round(v) for k, v in (p["phases"] or {}).items() if v >= 50 and k != "total"}
        print(f"    slow batch {p['batchId']}: {p['ms']} ms, {p['rows']} rows; Spark {spark_ms}; phases {ours}", flush=True)
    if rows != sent[0]:
        msg = f"{rows} rows in Delta, {sent[0]} sent"
        raise RuntimeError(msg)
    return {"sent": sent[0], "rows": rows, "p50_ms": float(np.percentile(lat, 50)) if lat else None,
            "p99_ms": float(np.percentile(lat, 99)) if lat else None,
            "batch_ms": float(statistics.median(p["ms"] for p in batches)) if batches else None, "batches": len(batches),
            "batch_ms_p90": float(np.percentile([p["ms"] for p in batches], 90)) if batches else None,
            "batch_ms_max": max((p["ms"] for p in batches), default=None), "batch_detail": detail,
            # the share of each trigger interval the median batch is busy: 0.5 = half of this pipeline's capacity
            "busy": float(statistics.median(p["ms"] for p in batches)) / (args.latency_trigger_s * 1000)
            if batches and args.latency_trigger_s else None}


def part_latency(spark: Any, args: argparse.Namespace, work: str) -> Part:
    engines = ["native", "foreach_batch"]
    part = Part("latency", engines)
    part.notes.append(
        "latency = Delta commit timestamp of the row's version (change data feed `_commit_timestamp`) - the producer's "
        "wall-clock send time in the event; events of the first --latency-skip-s seconds are left out"
    )
    from pyspark_flinkish.testing.kafka import KafkaBroker

    try:
        broker = KafkaBroker().start()
    except Exception as exc:
        for e in engines:
            part.fail(e, f"unavailable: Kafka broker did not start: {exc}")
        broker = None
    trig = f"a {args.latency_trigger_s:g} s processing-time trigger" if args.latency_trigger_s else "the default trigger"
    print(f"part 5: {args.rate:,.0f} events/s for {args.latency_s:.0f} s, {trig}", flush=True)
    try:
        for repeat in range(args.repeats if broker else 0):
            for e in engines:
                r = _try(part, e, lambda e=e: run_latency(spark, broker, e, args, work))
                if r is not None:
                    part.record(e, repeat, **r)
                    print(f"  {e}: p50 {r['p50_ms']:.0f} ms, p99 {r['p99_ms']:.0f} ms, batch {r['batch_ms']} ms", flush=True)
    finally:
        if broker is not None:
            broker.stop()
    lines = []
    for e in engines:
        st = part.status(e)
        if st:
            lines.append([e, st])
            continue
        lines.append([e, spread(part.values(e, "p50_ms"), ",.0f"), spread(part.values(e, "p99_ms"), ",.0f"),
                      spread(part.paired(e, "native", "p50_ms"), ".2f"), spread(part.values(e, "batch_ms"), ",.0f"),
                      spread(part.paired(e, "native", "batch_ms"), ".2f"), spread(part.values(e, "batch_ms_p90"), ",.0f"),
                      spread(part.values(e, "batch_ms_max"), ",.0f"), spread(part.values(e, "busy"), ".2f"),
                      spread([v / (args.latency_trigger_s * 1000) for v in part.values(e, "p99_ms")], ".2f")
                      if args.latency_trigger_s else "n/a"])
    part.table = (["engine", "p50 ms", "p99 ms", "p50 ratio vs native", "micro-batch ms (median)", "batch ratio",
                   "micro-batch ms p90", "slowest micro-batch ms", "busy share of trigger", "p99 / trigger"], lines)
    return part


# ----------------------------------------------------------------------------------------------- part 6: joins and async
def _await(handle: Any, timeout_s: float) -> None:
    """Wait for the query of ``handle`` (a flinkish job) to end; raise what failed it."""
    if not handle.query.awaitTermination(timeout_s):
        handle.stop()
        msg = f"did not finish in {timeout_s} s"
        raise TimeoutError(msg)
    if handle.driver is not None:
        handle.driver.raise_if_failed()
    if handle.query.exception() is not None:
        raise RuntimeError(str(handle.query.exception()))


def run_native_interval_join(
    spark: Any, gen: Dict[str, Any], args: argparse.Namespace, work: str
) -> Tuple[Any, List[Any], float]:
    """Spark's time-bounded stream-stream inner join: both sides ``withWatermark`` (B + 1 ms, the package's
    ``max - B - 1``), equal keys and ``l.et + lower <= r.et <= l.et + upper``; a memory sink, read back."""
    from pyspark.sql import functions as F

    def side(path: str, p: str) -> Any:
        return (
            bc._source(spark, path)
            .select(F.col("key").alias(f"{p}key"), F.col("seq").alias(f"{p}seq"), F.timestamp_millis("ts").alias(f"{p}et"))
            .withWatermark(f"{p}et", f"{args.disorder_ms + 1} milliseconds")
        )

    cond = F.expr(
        f"lkey = rkey AND ret >= let + INTERVAL {args.join_lower_ms} MILLISECONDS "
        f"AND ret <= let + INTERVAL {args.join_upper_ms} MILLISECONDS"
    )
    joined = side(gen["left"], "l").join(side(gen["right"], "r"), cond).select("lseq", "rseq")
    name = "bench_native_join_" + uuid.uuid4().hex[:8]
    writer = (
        joined.writeStream.format("memory").queryName(name).outputMode("append")
        .option("checkpointLocation", os.path.join(work, "ck", name)).trigger(availableNow=True)
    )
    t = time.perf_counter()
    query = writer.start()
    if not query.awaitTermination(args.timeout_s):
        query.stop()
        msg = f"native join did not finish in {args.timeout_s} s"
        raise TimeoutError(msg)
    wall = time.perf_counter() - t
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    rows = [(int(a), int(b)) for a, b in spark.sql(f"select lseq, rseq from {name}").collect()]
    spark.catalog.dropTempView(name)
    return query, rows, wall


def run_flinkish_interval_join(
    spark: Any, gen: Dict[str, Any], args: argparse.Namespace, work: str
) -> Tuple[Any, List[Any], float]:
    """``left.key_by(key).interval_join(right.key_by(key)).between(lower, upper).process(SeqPair())`` on the
    foreachBatch executor; the pairs are collected to the driver."""
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(args.disorder_ms))
    left, right = (
        env.from_dataframe(bc._source(spark, gen[s]), strategy, timestamp_column="ts", order_columns=["seq"], source_name=s)
        for s in ("left", "right")
    )
    out: List[Any] = []
    (
        left.key_by(lambda r: r.key)
        .interval_join(right.key_by(lambda r: r.key))
        .between(Duration.of_millis(args.join_lower_ms), Duration.of_millis(args.join_upper_ms))
        .process(bja.SeqPair(), output_type=Types.TUPLE([Types.LONG(), Types.LONG()]))
        .add_sink(out.append)
    )
    name = "bench_interval_join_" + uuid.uuid4().hex[:8]
    t = time.perf_counter()
    handle = env.execute(name, checkpoint_location=os.path.join(work, "ck", name), trigger={"availableNow": True})
    _await(handle, args.timeout_s)
    wall = time.perf_counter() - t
    return handle.query, [(int(a), int(b)) for a, b in out], wall


def run_async_lookup(
    spark: Any, directory: str, server: Any, capacity: int, args: argparse.Namespace, work: str
) -> Tuple[Any, List[Any], float]:
    """``AsyncDataStream.unordered_wait(events, HttpLookup(port), timeout, capacity)`` on the foreachBatch
    executor; the enriched events are collected to the driver."""
    from pyspark_flinkish.datastream import AsyncDataStream

    env = StreamExecutionEnvironment.get_execution_environment(spark)
    events = env.from_dataframe(bc._source(spark, directory), order_columns=["seq"], source_name="events")
    out: List[Any] = []
    AsyncDataStream.unordered_wait(
        events, bja.HttpLookup(server.port), Duration.of_seconds(60), capacity,
        output_type=Types.TUPLE([Types.LONG()] * 3),
    ).add_sink(out.append)
    name = f"bench_async_{capacity}_" + uuid.uuid4().hex[:8]
    t = time.perf_counter()
    handle = env.execute(name, checkpoint_location=os.path.join(work, "ck", name), trigger={"availableNow": True})
    _await(handle, args.timeout_s)
    wall = time.perf_counter() - t
    return handle.query, [tuple(int(x) for x in r) for r in out], wall


def part_joins_async(spark: Any, args: argparse.Namespace, work: str) -> List[Part]:
    """Part 6: (a) an interval join, this package vs native Spark's stream-stream join; (b) an async enrichment
    against a local HTTP server with a fixed latency, at several capacities, against the capacity limit."""
    join = Part("interval_join", ["native", "foreach_batch"])
    d = os.path.join(work, "joins")
    gen = bja.generate_join(d, args.join_events, args.join_keys, args.join_batch_rows, args.disorder_ms,
                            args.join_lower_ms, args.join_upper_ms, args.seed)
    join.input = {"events_per_side": gen["events"], "keys": args.join_keys, "files_per_side": gen["files"],
                  "pairs": len(gen["pairs"]), "lower_ms": args.join_lower_ms, "upper_ms": args.join_upper_ms}
    print(f"part 6a: interval join of 2 x {gen['events']:,} events, {args.join_keys:,} keys, {gen['files']} files per "
          f"side, between({args.join_lower_ms}, {args.join_upper_ms}) ms: {len(gen['pairs']):,} pairs", flush=True)
    runners = {"native": run_native_interval_join, "foreach_batch": run_flinkish_interval_join}
    for repeat in range(args.repeats):
        for e, run in runners.items():
            cpu0 = bc._tree_cpu()
            res = _try(join, e, lambda run=run: run(spark, gen, args, work))
            if res is None:
                continue
            query, pairs, wall = res
            cpu = bc._tree_cpu() - cpu0
            ok = _compare(join, e, repeat, pairs, gen["pairs"], "pairs")
            events = 2 * gen["events"]
            join.record(e, repeat, events=events, pairs=len(pairs), wall_s=wall, cpu_s=cpu, events_per_s=events / wall,
                        steady_events_per_s=bc._steady(bc._progress(query), gen["files"]), match=ok)
            print(f"  {e}: wall {wall:.1f} s, {events / wall:,.0f} events/s, {len(pairs):,} pairs", flush=True)
    lines = []
    for e in join.engines:
        st = join.status(e)
        if st:
            lines.append([e, st])
            continue
        lines.append([e, spread(join.values(e, "wall_s"), ".1f"), spread(join.values(e, "events_per_s"), ",.0f"),
                      spread(join.paired(e, "native", "events_per_s"), ".3f"),
                      spread([r["events"] / r["cpu_s"] for r in join.runs[e] if r["cpu_s"]], ",.0f"),
                      spread(join.values(e, "steady_events_per_s"), ",.0f"), str(join.runs[e][0]["pairs"])])
    join.table = (["engine", "wall s", "events/s (wall, both sides)", "ratio vs native", "events/CPU-s",
                   "events/s (steady batches)", "pairs"], lines)

    capacities = [int(c) for c in str(args.async_capacities).split(",")]
    lookup = Part("async_lookup", [f"capacity_{c}" for c in capacities])
    d = os.path.join(work, "async", "input")
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(args.seed + 13)
    n = args.async_events
    key = rng.integers(0, args.join_keys, n, dtype=np.int64)
    seq = np.arange(n, dtype=np.int64)
    ts = bja.T0 + seq
    files = 0
    for start in range(0, n, args.async_batch_rows):
        sl = slice(start, start + args.async_batch_rows)
        bc.write_batch(d, files, {"key": key[sl], "ts": ts[sl], "value": key[sl] * 0, "seq": seq[sl]})
        files += 1
    expected = sorted((int(s), int(k), bja.lookup_value(int(k))) for s, k in zip(seq, key))
    lookup.input = {"events": n, "files": files, "latency_ms": args.async_latency_ms, "capacities": capacities}
    print(f"part 6b: async lookup of {n:,} events ({files} files) against a local HTTP server with "
          f"{args.async_latency_ms:g} ms latency, capacities {capacities}", flush=True)
    server = bja.LookupServer(args.async_latency_ms).start()
    try:
        for repeat in range(args.repeats):
            for c, e in zip(capacities, lookup.engines):
                server.reset()
                cpu0 = bc._tree_cpu()
                res = _try(lookup, e, lambda c=c: run_async_lookup(spark, d, server, c, args, work))
                if res is None:
                    continue
                query, rows, wall = res
                cpu = bc._tree_cpu() - cpu0
                ok = _compare(lookup, e, repeat, rows, expected, "enriched events")
                progress = bc._progress(query)
                steady = bc._steady(progress, files)
                limit = c / (args.async_latency_ms / 1000)
                clients = list(server.clients.values())
                rates = [r for r in (x.rate() for x in clients if x.requests >= c) if r is not None]
                per_task = median(rates)
                lookup.record(e, repeat, events=n, capacity=c, wall_s=wall, cpu_s=cpu, events_per_s=n / wall,
                              steady_events_per_s=steady, limit_per_task=limit, requests=server.requests,
                              tasks=len(clients), concurrent_tasks=server.peak_clients_in_flight,
                              peak_in_flight=server.peak_in_flight,
                              peak_in_flight_per_task=max((x.peak for x in clients), default=0),
                              task_requests_per_s=per_task, share_of_limit=per_task / limit if per_task else None,
                              match=ok)
                print(f"  {e}: wall {wall:.1f} s, {n / wall:,.0f} events/s (steady batches {steady or 0:,.0f}/s); "
                      f"{len(clients)} tasks, at most {server.peak_clients_in_flight} at once; per task "
                      f"{per_task or 0:,.0f} requests/s while requesting, limit {limit:,.0f}/s; peak "
                      f"{max((x.peak for x in clients), default=0)} in flight per task", flush=True)
    finally:
        server.stop()
    lines = []
    for e in lookup.engines:
        st = lookup.status(e)
        if st:
            lines.append([e, st])
            continue
        limit = lookup.runs[e][0]["limit_per_task"]
        lines.append([e, f"{limit:,.0f}", spread(lookup.values(e, "task_requests_per_s"), ",.0f"),
                      spread(lookup.values(e, "share_of_limit"), ".2f"),
                      spread(lookup.values(e, "peak_in_flight_per_task"), ".0f"),
                      spread(lookup.values(e, "concurrent_tasks"), ".0f"), spread(lookup.values(e, "wall_s"), ".1f"),
                      spread(lookup.values(e, "events_per_s"), ",.0f"),
                      spread(lookup.values(e, "steady_events_per_s"), ",.0f")])
    lookup.table = (["capacity", "limit per task (capacity / latency), req/s", "per task while requesting, req/s",
                     "share of limit", "peak in flight per task", "tasks at once", "wall s", "events/s (wall)",
                     "events/s (steady batches)"], lines)
    lookup.notes.append(
        "per task: requests / (last response - first request) of each operator instance (one per Spark task, "
        "told apart by an X-Client header), median over the tasks with at least `capacity` requests"
    )
    return [join, lookup]


# ----------------------------------------------------------------------------------------------- part 7: state growth
def _kb(n: Optional[float]) -> str:
    if n is None:
        return ""
    return f"{n / 1e6:,.2f} MB" if n >= 1e6 else f"{n / 1e3:,.1f} KB"


def _ms(n: Optional[float]) -> str:
    return "" if n is None else f"{n:,.0f}"


def _range(r: Dict[str, Any], key: str, fmt: Callable[[Optional[float]], str]) -> str:
    lo, hi = r.get(key + "_min"), r.get(key + "_max")
    return f"{fmt(r.get(key))} [{fmt(lo)}-{fmt(hi)}]" if lo is not None and lo != hi else fmt(r.get(key))


def part_state_growth(spark: Any, args: argparse.Namespace, work: str) -> Part:
    """Part 7: K idle keys, then small micro-batches on a few keys; per small batch the time and the bytes written
    under the checkpoint, this package (foreachBatch) vs native Spark with the HDFS-backed and the RocksDB store
    (``bench_state_growth.py``). One run per K and engine: the figures are medians over its small batches."""
    engines = bsg.ENGINES
    part = Part("state_growth", [f"{e}@{k}" for k in args.state_keys for e in engines])
    part.input = {"keys": args.state_keys, "load_rows": args.state_load_rows, "small_batches": args.state_batches,
                  "batch_events": args.state_batch_events, "touched_keys": args.state_touched_keys,
                  "state_partitions": args.shuffle_partitions}
    results: Dict[Tuple[str, int], Dict[str, Any]] = {}
    for k in args.state_keys:
        load_batches = -(-k // args.state_load_rows)
        inp = bsg.generate(os.path.join(work, "state_growth", f"k{k}"), k, load_batches, args.state_batches,
                           args.state_batch_events, args.state_touched_keys, args.seed)
        print(f"part 7: {k:,} idle keys in {inp.load_batches} batch(es), then {args.state_batches} batches of "
              f"{args.state_batch_events:,} events on {args.state_touched_keys} keys", flush=True)
        for e in engines:
            name = f"{e}@{k}"
            r = _try(part, name, lambda e=e, inp=inp: bsg.run_engine(e, spark, inp, work, log=lambda m: print(m, flush=True)))
            if r is None:
                continue
            for problem in r["problems"]:
                part.mismatches.append(f"{name}: {problem}")
                print(f"  {name}: MISMATCH ({problem})", flush=True)
            results[(e, k)] = r
            part.record(name, 0, keys=k, match=not r["problems"], **{x: v for x, v in r.items() if x != "problems"})
            print(f"  {name}: load {r['load_s']:.1f} s; per small batch {r['batch_ms'] or 0:,.0f} ms, "
                  f"{_kb(r['bytes'])} written ({_kb(r['state_bytes'])} state)", flush=True)
        shutil.rmtree(inp.staging, ignore_errors=True)
    lines = []
    for k in args.state_keys:
        for e in engines:
            name = f"{e}@{k}"
            st = part.status(name)
            if st:
                lines.append([f"{k:,}", e, st])
                continue
            r = results[(e, k)]
            lines.append([f"{k:,}", e, f"{r['load_s']:.1f}", _range(r, "batch_ms", _ms),
                          f"{r['batch_wall_s']:.2f}", _range(r, "bytes", _kb), _kb(r["state_bytes"]),
                          f"{r['state_bytes_per_touched_key']:,.0f}" if r["state_bytes_per_touched_key"] else "0"])
    part.table = (["keys K", "engine", "load s (wall)", "ms per small batch (median [min-max])",
                   "wall s per small batch", "bytes written per small batch", "of which state",
                   "state bytes per touched key"], lines)

    def ms(e: str, k: int) -> Optional[float]:
        r = results.get((e, k))
        return r["batch_ms"] if r else None

    def ratio(a: Optional[float], b: Optional[float]) -> str:
        return f"{a / b:.2f}" if a and b else "n/a"

    lo = args.state_keys[0]
    ratios = []
    for k in args.state_keys:
        fb = results.get(("foreach_batch", k))
        ratios.append([f"{k:,}", ratio(ms("foreach_batch", k), ms("foreach_batch", lo)),
                       ratio(ms("foreach_batch", k), ms("native_rocksdb", k)),
                       ratio(ms("foreach_batch", k), ms("native_hdfs", k)),
                       f"{fb['state_bytes_per_touched_key']:,.0f}" if fb and fb["state_bytes_per_touched_key"] else "n/a",
                       ratio(fb["state_bytes"] if fb else None, results[("native_rocksdb", k)]["state_bytes"]
                             if ("native_rocksdb", k) in results else None)])
    part.extra_tables = [(  # type: ignore[attr-defined]
        f"7. State growth: issue 13's ratios (targets: time at the largest K <= 1.5x the package's own at {lo:,} "
        "keys, <= 2x native RocksDB's; bytes per batch proportional to the keys touched)",
        ["keys K", f"package time / package at {lo:,}", "package / native RocksDB (time)",
         "package / native HDFS-backed (time)", "package state bytes per touched key",
         "package / native RocksDB (state bytes)"], ratios)]
    part.notes.append(
        "time: Spark's triggerExecution of each small batch; bytes: files created or changed under the checkpoint "
        "during the batch (background snapshot uploads land in the batch during which they happen)"
    )
    return part


# ----------------------------------------------------------------------------------------------- part 9: large batch
def part_large_batch(spark: Any, args: argparse.Namespace, work: str) -> Part:
    """Part 9: issue 25's keyed job with timers (``large_batch_job.py``) with ``--large-batch-events`` events each in
    one ``availableNow`` micro-batch, in this session; its output against pandas' and the driver's peak memory
    growth against ``large_batch_job.driver_bound`` (either miss is a mismatch). Timings are printed only."""
    sizes = args.large_batch_events
    part = Part("large_batch", [f"foreach_batch@{n}" for n in sizes])
    part.input = {"events": sizes, "keys": lbj.KEYS, "split_bytes": lbj.SPLIT_BYTES}
    lines = []
    for n in sizes:
        name = f"foreach_batch@{n}"
        directory = os.path.join(work, "large_batch", str(n))
        frame = lbj.events(n, seed=args.seed)
        sources = lbj.write_sources(Path(directory), frame)
        expected = lbj.expected(frame)
        del frame
        print(f"part 9: {n:,} events in one micro-batch (load {os.getloadavg()[0]:.1f})", flush=True)
        r = _try(part, name, lambda s=sources, d=directory: lbj.run_large_batch(spark, s, Path(d) / "ck"))
        shutil.rmtree(directory, ignore_errors=True)
        if r is None:
            lines.append([f"{n:,}", part.status(name) or "failed", "", "", ""])
            continue
        print(f"  {r.summary(n)}", flush=True)
        bound = lbj.driver_bound()
        if [p["batch_id"] for p in r.progress] != [0]:
            part.mismatches.append(f"{name}: {len(r.progress)} micro-batches, expected one")
        if r.rows != expected:
            part.mismatches.append(f"{name}: {len(r.rows)} rows, expected {len(expected)} (or values differ)")
        if r.peak_measured and r.growth >= bound:
            part.mismatches.append(f"{name}: the driver's peak memory grew by {r.growth >> 20} MB (bound {bound >> 20} MB)")
        phases = r.progress[-1]["durations_ms"] if r.progress else {}
        part.record(name, 0, events=n, seconds=r.seconds, driver_growth_mb=r.growth >> 20, driver_bound_mb=bound >> 20,
                    match=r.rows == expected, durations_ms=phases)
        lines.append([f"{n:,}", f"{r.seconds:.1f}", f"{r.seconds / n * 1e6:.0f}",
                      f"+{r.growth >> 20} MB" if r.peak_measured else "not measured", f"{bound >> 20} MB"])
    part.table = (["events in one micro-batch", "wall s", "us per event", "driver peak growth", "bound"], lines)
    part.notes.append("the job of tests/spark/test_large_batches.py (large_batch_job.py): two Parquet sources of "
                      f"{lbj.KEYS:,} keys read in 1 MB splits, a ValueState and an event-time timer per key")
    return part


def part_largest_batch(args: argparse.Namespace, work: str) -> Part:
    """Part 10: ``bench_largest_batch.py`` (subprocesses with ``--largest-driver-memory``), its report as a table."""
    import bench_largest_batch as blb

    largest_args = blb.parse_args(["--sizes", args.largest_sizes, "--driver-memory", args.largest_driver_memory,
                                   "--timeout-s", str(args.timeout_s), "--workdir", work])
    report = blb.largest(largest_args, log=lambda m: print(m, flush=True))
    part = Part("largest_batch", list(report))
    lines = []
    for engine, r in report.items():
        for x in r["runs"]:
            part.record(engine, 0, **{k: v for k, v in x.items() if k not in ("summary", "engine")})
            if "failed" in x and x["failed"] == "results differ from pandas'":
                part.mismatches.append(f"{engine}@{x['events']}: results differ from pandas'")
        lines.append([engine, f"{r['largest']:,}" if r["largest"] else "none", r["next"]])
    part.table = ([f"engine (driver memory {args.largest_driver_memory})", "largest completed (events)",
                   "the next size"], lines)
    return part


# ----------------------------------------------------------------------------------------------- part 8: savepoint
def part_savepoint(spark: Any, args: argparse.Namespace, work: str) -> Part:
    """Part 8: K keys in part 7's job, stopped with a savepoint, read back and restored into more state partitions,
    against native Spark's state data source reader and restart on the same keys (``bench_savepoint.py``). One run
    per engine, side by side; nothing is repeated."""
    k = args.savepoint_keys
    restore_partitions = args.savepoint_restore_partitions or args.shuffle_partitions + 1
    part = Part("savepoint", [f"{e}@{k}" for e in bsp.ENGINES])
    inp = bsp.generate(os.path.join(work, "savepoint", f"k{k}"), k, args.state_load_rows, args.savepoint_batches,
                       args.state_batch_events, args.state_touched_keys, args.seed)
    part.input = {"keys": k, "load_rows": args.state_load_rows, "load_batches": inp.load_batches,
                  "small_batches": args.savepoint_batches, "batch_events": args.state_batch_events,
                  "touched_keys": args.state_touched_keys, "state_partitions": args.shuffle_partitions,
                  "restore_partitions": restore_partitions, "load_avg_start": os.getloadavg()}
    print(f"part 8: {k:,} keys in {inp.load_batches} batch(es), savepoint, restore {args.shuffle_partitions} -> "
          f"{restore_partitions} state partitions, then {args.savepoint_batches} batches of "
          f"{args.state_batch_events:,} events on {args.state_touched_keys} keys", flush=True)
    results: Dict[str, Dict[str, Any]] = {}
    for e in bsp.ENGINES:
        name = f"{e}@{k}"
        r = _try(part, name, lambda e=e: bsp.run_engine(e, spark, inp, work, args.shuffle_partitions,
                                                        restore_partitions, log=lambda m: print(m, flush=True)))
        if r is None:
            continue
        for problem in r["problems"]:
            part.mismatches.append(f"{name}: {problem}")
            print(f"  {name}: MISMATCH ({problem})", flush=True)
        results[e] = r
        part.record(name, 0, keys=k, match=not r["problems"], load_avg=os.getloadavg(),
                    **{x: v for x, v in r.items() if x != "problems"})
    shutil.rmtree(inp.staging, ignore_errors=True)
    part.input["load_avg_end"] = os.getloadavg()

    def s(v: Optional[float], fmt: str = ".1f") -> str:
        return "" if v is None else format(v, fmt)

    lines = []
    for e in bsp.ENGINES:
        st = part.status(f"{e}@{k}")
        if st:
            lines.append([e, st])
            continue
        r = results[e]
        first, later = bsp.first_and_later(r)
        package = e == "package"
        lines.append([
            e, s(r["load_s"]),
            f"{s(r['savepoint_s'])} ({s(r['savepoint_write_s'])})" if package else "n/a (no savepoint)",
            _kb(r["savepoint_bytes"]) if package else "", s(r["read_s"]), f"{r['keys_read']:,}",
            f"{s(r['restore_s'])} ({s(r['restore_split_s'])})" if package else s(r["restore_s"]),
            _ms(first), s(r.get("restore_first_batch_s")),
            (f"{_ms(statistics.median(later))} [{_ms(min(later))}-{_ms(max(later))}]" if len(later) > 1
             else _ms(later[0]) if later else ""),
        ])
    part.table = (["engine", "load s (wall)", "stop with savepoint s (of which writing)", "savepoint size",
                   "read K keys s", "keys read", "restore / restart s (of which the split job)",
                   "first small batch ms", "restore / restart to first batch done s", "next small batches ms"], lines)

    def ratio(a: Optional[float], b: Optional[float]) -> str:
        return f"{a / b:.2f}" if a and b else "n/a"

    pkg = results.get("package", {})
    ratios = []
    for label, key in [("read K keys (package: read_state of the savepoint; native: state data source)", "read_s"),
                       ("restore / restart to first small batch done (wall)", "restore_first_batch_s")]:
        ratios.append([label] + [ratio(pkg.get(key), results.get(e, {}).get(key)) for e in bsp.ENGINES[1:]])
    for label, pick in [("first small batch after it (ms)", lambda r: bsp.first_and_later(r)[0]),
                        ("next small batches (median ms)",
                         lambda r: statistics.median(bsp.first_and_later(r)[1]) if bsp.first_and_later(r)[1] else None)]:
        ratios.append([label] + [ratio(pick(pkg) if pkg else None, pick(results[e]) if e in results else None)
                                 for e in bsp.ENGINES[1:]])
    part.extra_tables = [(  # type: ignore[attr-defined]
        f"8. Savepoint and restore: package / native, {k:,} keys", ["ratio", "/ native HDFS-backed",
                                                                      "/ native RocksDB"], ratios)]
    part.notes.append(
        "batch ms: Spark's triggerExecution; the package's first batch after the restore runs at watermark MIN "
        "(watermarks are not restored); native Spark has no savepoint: its restart is a new query on the same checkpoint"
    )
    return part


# ----------------------------------------------------------------------------------------------- output
def print_part(part: Part) -> None:
    titles = {"tumbling": "1. Tumbling 1-minute count+sum per key",
              "tumbling_small": "1b. Tumbling, every engine on a smaller input (PyFlink's DataStream job included)",
              "general": "2. General path (Python window functions)",
              "scaling": "3. Scaling", "exactly_once": "4. Exactly-once overhead (Delta)",
              "latency": "5. Kafka -> Delta latency",
              "interval_join": "6a. Interval join of two keyed streams",
              "async_lookup": "6b. Async enrichment against a local HTTP lookup (fixed latency)",
              "state_growth": "7. State growth: small micro-batches after K idle keys (per small batch)",
              "savepoint": "8. Savepoint and restore of K keys, against Spark's state reader and restart",
              "large_batch": "9. One large micro-batch: issue 25's keyed job with timers (availableNow)",
              "largest_batch": "10. The largest micro-batch each engine completes"}
    if part.name == "scaling":
        for what, lines in part.table_keys:  # type: ignore[attr-defined]
            head = list(part.table[0])
            head[0] = what
            print_table(f"{titles['scaling']}: {what}", head, lines)
    else:
        print_table(titles[part.name], *part.table)
    for title, head, lines in getattr(part, "extra_tables", []):
        print_table(title, head, lines)
    if part.name == "scaling":
        for e, why in part.unavailable.items():
            print(f"  {e}: {why}")
    for n in part.notes:
        print(f"  note: {n}")
    for m in part.mismatches:
        print(f"  RESULTS DIFFER: {m}")


def write_png(parts: List[Part], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, grid = plt.subplots(2, 6, figsize=(32, 9))
    axes = grid.ravel()

    def bars(ax: Any, part: Optional[Part], key: str, title: str, log: bool = False) -> None:
        ax.set_title(title, fontsize=10)
        if part is None:
            ax.text(0.5, 0.5, "not run", ha="center")
            return
        names, vals, errs = [], [], []
        for e in part.engines:
            v = part.values(e, key)
            names.append(e if v else f"{e}\n({part.status(e) or 'n/a'})"[:40])
            m = median(v) or 0
            vals.append(m)
            errs.append([m - min(v), max(v) - m] if v else [0, 0])
        ax.bar(range(len(names)), vals, yerr=np.array(errs).T, capsize=3)
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=7)
        if log:
            ax.set_yscale("log")

    def lines(ax: Any, part: Optional[Part], what: str, key: str, title: str, log_y: bool = True) -> None:
        ax.set_title(title, fontsize=10)
        if part is None:
            ax.text(0.5, 0.5, "not run", ha="center")
            return
        for name in part.engines:
            if not name.endswith("@" + what):
                continue
            pts: Dict[int, List[float]] = {}
            for r in part.runs[name]:
                if r.get(key) is not None:
                    pts.setdefault(r["x"], []).append(r[key])
            if pts:
                xs = sorted(pts)
                ax.plot(xs, [statistics.median(pts[x]) for x in xs], marker="o", label=name.split("@")[0])
        ax.set_xscale("log")
        if log_y:
            ax.set_yscale("log")
        ax.set_xlabel(what)
        ax.legend(fontsize=7)

    def growth(ax: Any, part: Optional[Part], key: str, title: str) -> None:
        ax.set_title(title, fontsize=10)
        if part is None:
            ax.text(0.5, 0.5, "not run", ha="center")
            return
        for engine in bsg.ENGINES:
            pts = sorted((r["keys"], r[key]) for name in part.engines if name.startswith(engine + "@")
                         for r in part.runs[name] if r.get(key))
            if pts:
                ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=engine)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("idle keys K")
        ax.legend(fontsize=7)

    by = {p.name: p for p in parts}
    bars(axes[0], by.get("tumbling"), "events_per_s", "1. tumbling: events/s (wall, log)", log=True)
    small = by.get("tumbling_small")
    bars(axes[1], small, "events_per_s", f"1b. tumbling, {small.input['events']:,} events: events/s (wall, log)"
         if small else "1b. tumbling, smaller input", log=True)
    bars(axes[2], by.get("general"), "events_per_s", "2. general path: events/s (wall, log)", log=True)
    lines(axes[3], by.get("scaling"), "keys", "events_per_s", "3. scaling: events/s (wall) vs keys")
    lines(axes[4], by.get("scaling"), "keys", "bytes_per_window", "3. scaling: state bytes per open window vs keys",
          log_y=False)
    lines(axes[5], by.get("scaling"), "events", "wall_s", "3. scaling: wall s vs events")
    bars(axes[6], by.get("exactly_once"), "wall_s", "4. exactly-once: wall s")
    bars(axes[7], by.get("latency"), "p50_ms", "5. Kafka->Delta latency p50 ms")
    bars(axes[8], by.get("interval_join"), "events_per_s", "6a. interval join: events/s (wall, both sides)")
    bars(axes[9], by.get("async_lookup"), "share_of_limit", "6b. async HTTP lookup: per-task requests/s / (capacity / latency)")
    growth(axes[10], by.get("state_growth"), "batch_ms", "7. state growth: ms per small batch vs idle keys K")
    growth(axes[11], by.get("state_growth"), "bytes", "7. state growth: bytes written per small batch vs K")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="smoke run: 1 repeat, small sizes (minutes, not hours)")
    p.add_argument("--parts", default=None, help=f"comma-separated subset of {PARTS} (or 1-10; default: all, "
                   f"without {sorted(SLOW_PARTS)} with --quick)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--events", type=int, default=2_000_000, help="parts 1, 3 (keys), 4 (default 2,000,000)")
    p.add_argument("--keys", type=int, default=10_000, help="parts 1, 3 (events), 4 (default 10,000)")
    p.add_argument("--batch-rows", type=int, default=200_000, help="rows per micro-batch / Parquet file")
    p.add_argument("--disorder-ms", type=int, default=5_000, help="bounded out-of-orderness B")
    p.add_argument("--general-events", type=int, default=60_000, help="part 2 (default 60,000: PyFlink's pace)")
    p.add_argument("--general-keys", type=int, default=100, help="part 2 (default 100)")
    p.add_argument("--size", type=int, default=100, help="part 2: count window size")
    p.add_argument("--slide", type=int, default=10, help="part 2: count window slide")
    p.add_argument("--gap-ms", type=int, default=30_000, help="part 2: session gap")
    p.add_argument("--count", type=int, default=10, help="part 2: early-firing CountTrigger count")
    p.add_argument("--lateness-ms", type=int, default=60_000, help="part 2: allowed lateness")
    p.add_argument("--late-share", type=float, default=0.02, help="part 2: share of events lagging beyond B")
    p.add_argument("--late-ms", type=int, default=25_000, help="part 2: extra lag of those events (< lateness - B)")
    p.add_argument("--scale-keys", default="1000,10000,100000,1000000", help="part 3")
    p.add_argument("--scale-events", default="500000,2000000,8000000", help="part 3")
    p.add_argument("--rate", type=float, default=2_000, help="part 5: events/s produced (below saturation)")
    p.add_argument("--latency-s", type=float, default=60, help="part 5: seconds of producing per run")
    p.add_argument("--latency-trigger-s", type=float, default=2.0,
                   help="part 5: processing-time trigger interval in s (0: Spark's default, back-to-back batches)")
    p.add_argument("--latency-skip-s", type=float, default=10, help="part 5: first seconds left out")
    p.add_argument("--latency-warmup-s", type=float, default=15, help="part 5: query start-up before producing")
    p.add_argument("--join-events", type=int, default=1_000_000, help="part 6: events per side of the interval join")
    p.add_argument("--join-keys", type=int, default=10_000, help="part 6: keys (default 10,000)")
    p.add_argument("--join-batch-rows", type=int, default=100_000, help="part 6: rows per micro-batch and side")
    p.add_argument("--join-lower-ms", type=int, default=-5_000, help="part 6: the interval join's lower bound")
    p.add_argument("--join-upper-ms", type=int, default=5_000, help="part 6: the interval join's upper bound")
    p.add_argument("--async-events", type=int, default=40_000, help="part 6: events enriched by async lookups")
    p.add_argument("--async-batch-rows", type=int, default=10_000, help="part 6: rows per micro-batch (one task)")
    p.add_argument("--async-latency-ms", type=float, default=10, help="part 6: the lookup server's latency")
    p.add_argument("--async-capacities", default="10,100", help="part 6: the async operator's capacities")
    p.add_argument("--state-keys", default="10000,100000,1000000", help="part 7: idle keys K (comma-separated)")
    p.add_argument("--state-load-rows", type=int, default=100_000,
                   help="part 7: at most this many keys per load micro-batch (default 100,000: 1M keys in 10 batches)")
    p.add_argument("--state-batches", type=int, default=5, help="part 7: small micro-batches after the load")
    p.add_argument("--state-batch-events", type=int, default=10_000, help="part 7: events per small micro-batch")
    p.add_argument("--state-touched-keys", type=int, default=10, help="part 7: keys each small micro-batch touches")
    p.add_argument("--savepoint-keys", type=int, default=1_000_000,
                   help="part 8: keys K in the savepoint (loaded in batches of --state-load-rows; default 1,000,000)")
    p.add_argument("--savepoint-batches", type=int, default=3,
                   help="part 8: small micro-batches after the restore (of --state-batch-events on --state-touched-keys)")
    p.add_argument("--savepoint-restore-partitions", type=int, default=None,
                   help="part 8: state partitions of the restored job (default: --shuffle-partitions + 1, a rescale)")
    p.add_argument("--large-batch-events", default="1000000,5000000",
                   help="part 9: events of each one-batch run (default 1,000,000 and 5,000,000; --quick too)")
    p.add_argument("--largest-sizes", default="1000000,2000000,5000000,10000000",
                   help="part 10: the sizes tried per engine, ascending; the last is the cap")
    p.add_argument("--largest-driver-memory", default="4g", help="part 10: spark.driver.memory of each run")
    p.add_argument("--parallelism", type=int, default=2, help="Flink parallelism (as local[2])")
    p.add_argument("--pyflink-warmup-rows", type=int, default=2000, help="PyFlink warm-up run (0: none)")
    p.add_argument("--pyflink-conf", action="append", default=None, metavar="KEY=VALUE",
                   help=f"a Flink option for every PyFlink job (repeatable; default {' '.join(PYFLINK_CONF)})")
    p.add_argument("--pyflink-datastream-events", type=int, default=200_000,
                   help="part 1: above this size PyFlink's DataStream job runs in part 1b instead (0: always in part 1)")
    p.add_argument("--no-pyflink", action="store_true", help="do not run (or install) PyFlink: reported as not run")
    p.add_argument("--no-pyflink-install", action="store_true", help="use benchmarks/.venv-pyflink only if it exists")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--shuffle-partitions", type=int, default=2)
    p.add_argument("--driver-memory", default="6g")
    p.add_argument("--timeout-s", type=float, default=3600)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--workdir", default=None, help="input and checkpoints (default: a temp dir, removed)")
    p.add_argument("--json", dest="json_out", default=None, metavar="OUT")
    p.add_argument("--png", dest="png_out", default=None, metavar="OUT")
    args = p.parse_args(argv)
    if args.quick:
        args.repeats = 1
        args.events, args.keys, args.batch_rows = 40_000, 500, 10_000
        args.general_events, args.general_keys = 10_000, 50
        args.scale_keys, args.scale_events = "100,1000", "20000,80000"
        args.rate, args.latency_s, args.latency_skip_s, args.latency_warmup_s = 200, 20, 5, 10
        args.pyflink_warmup_rows = 0
        args.join_events, args.join_keys, args.join_batch_rows = 20_000, 500, 5_000
        args.async_events, args.async_batch_rows = 2_000, 1_000
        args.state_keys, args.state_batches = "2000,20000", 3
        args.savepoint_keys = 20_000
    if args.pyflink_conf is None:
        args.pyflink_conf = list(PYFLINK_CONF)
    args.scale_keys = [int(x) for x in str(args.scale_keys).split(",")]
    args.scale_events = [int(x) for x in str(args.scale_events).split(",")]
    args.state_keys = [int(x) for x in str(args.state_keys).split(",")]
    args.large_batch_events = [int(x) for x in str(args.large_batch_events).split(",")]
    if args.parts is None:
        args.parts = ",".join(x for x in PARTS if not (args.quick and x in SLOW_PARTS))
    chosen = []
    for x in args.parts.split(","):
        x = x.strip()
        chosen.append(PARTS[int(x) - 1] if x.isdigit() else x)
    unknown = set(chosen) - set(PARTS)
    if unknown:
        p.error(f"unknown parts {sorted(unknown)}; choose from {PARTS}")
    args.part_list = [x for x in PARTS if x in chosen]
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    from pyspark_flinkish.spark import session as flinkish_session

    machine = bc._machine()
    started = time.time()
    pyflink: Tuple[Optional[str], str] = (None, "not run (--no-pyflink)")
    if not args.no_pyflink and {"tumbling", "general"} & set(args.part_list):
        pyflink = ensure_pyflink(install=not args.no_pyflink_install)
        if pyflink[0] is None:
            print(f"PyFlink unavailable: {pyflink[1]}", flush=True)
    work = args.workdir or tempfile.mkdtemp(prefix="bench-all-")
    os.makedirs(os.path.join(work, "ck"), exist_ok=True)
    os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")
    spark = flinkish_session(
        "bench_all", master=args.master, shuffle_partitions=args.shuffle_partitions,
        spark__default__parallelism=str(args.shuffle_partitions), spark__driver__memory=args.driver_memory,
        spark__sql__streaming__numRecentProgressUpdates="10000",
    )
    spark.sparkContext.setLogLevel("ERROR")
    parts: List[Part] = []
    runners = {
        "tumbling": lambda: part_tumbling(spark, args, work, pyflink),
        "general": lambda: part_general(spark, args, work, pyflink),
        "scaling": lambda: part_scaling(spark, args, work),
        "exactly_once": lambda: part_exactly_once(spark, args, work),
        "latency": lambda: part_latency(spark, args, work),
        "joins_async": lambda: part_joins_async(spark, args, work),
        "state_growth": lambda: part_state_growth(spark, args, work),
        "savepoint": lambda: part_savepoint(spark, args, work),
        "large_batch": lambda: part_large_batch(spark, args, work),
        "largest_batch": lambda: part_largest_batch(args, work),
    }
    try:
        tiny = os.path.join(work, "tiny")
        bc.generate_tiny(tiny, 4, 100, 100, args.seed)
        bc.run_native(spark, tiny, args.disorder_ms, os.path.join(work, "ck"), args.timeout_s)  # JVM warm-up
        for name in args.part_list:
            t = time.perf_counter()
            try:
                got = runners[name]()
                parts.extend(got if isinstance(got, list) else [got])
            except Exception as exc:
                traceback.print_exc()
                broken = Part(name, [])
                broken.notes.append(f"part failed: {type(exc).__name__}: {exc}")
                broken.table = (["part"], [[f"failed: {exc}"]])
                parts.append(broken)
            print(f"({name}: {time.perf_counter() - t:.0f} s)", flush=True)
            if args.json_out:
                _write(args, machine, parts, started, complete=False)
    finally:
        spark.stop()
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n## Results ({'quick smoke run' if args.quick else 'full run'}, {args.repeats} repeat(s), "
          f"median [min-max]; load average at the end {os.getloadavg()[0]:.1f})")
    for part in parts:
        print_part(part)
    if args.json_out:
        _write(args, machine, parts, started, complete=True)
        print(f"\nwrote {args.json_out}")
    if args.png_out:
        write_png(parts, args.png_out)
        print(f"wrote {args.png_out}")
    differ = [m for p in parts for m in p.mismatches]
    if differ:
        print("\nRESULTS DIFFER between engines: see above; the timings of those engines mean nothing.", file=sys.stderr)
    return 1 if differ else 0


def _write(args: argparse.Namespace, machine: Dict[str, Any], parts: List[Part], started: float, complete: bool) -> None:
    result = {
        "complete": complete,
        "benchmark": "run_all",
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "config": {k: v for k, v in vars(args).items()},
        "machine": machine,
        "duration_s": time.time() - started,
        "load_avg": os.getloadavg(),
        "parts": {p.name: {**p.as_json(), "table": getattr(p, "table", None),
                           "tables": getattr(p, "table_keys", None), "input": getattr(p, "input", None),
                           "extra_tables": getattr(p, "extra_tables", None)} for p in parts},
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.json_out)), exist_ok=True)
    with open(args.json_out, "w") as f:
        json.dump(result, f, indent=1, default=str)


if __name__ == "__main__":
    sys.exit(main())
