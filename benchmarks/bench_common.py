"""Shared parts of the benchmark suite: the generated input, the user functions, the Spark engines, measuring.

``bench_tumbling.py`` (the tumbling benchmark on its own) and ``run_all.py`` (the whole suite) import this module;
``bench_tumbling.py``'s module docstring describes the input and the engines. Imported modules are not ``__main__``, so
Spark would not ship their classes to the workers by value: this module registers itself with cloudpickle for that.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_cpu import tree_cpu

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.aggregates import ColumnAggregate, Count, Sum
from pyspark_flinkish.datastream.functions import AggregateFunction, ProcessWindowFunction
from pyspark_flinkish.datastream.window import (
    CountTrigger,
    EventTimeTrigger,
    TimeWindow,
    Trigger,
    TriggerResult,
    TumblingEventTimeWindows,
)

INPUT_DDL = "key long, ts long, value long, seq long"
WINDOW_MS = 60_000
SENTINEL_KEY = -1
ENGINES = ["native", "foreach_batch", "foreach_batch_python_agg", "apply_in_pandas_with_state", "foreach_batch_general"]


def _not_implemented() -> set:  # type: ignore[type-arg]
    import inspect

    from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment

    has_backend = "backend" in inspect.signature(SparkStreamExecutionEnvironment.__init__).parameters
    return set() if has_backend else {"apply_in_pandas_with_state"}


NOT_IMPLEMENTED = _not_implemented()
Window = Tuple[int, int, int, int]  # key, window start (ms), count, sum


# ----------------------------------------------------------------------------------------------- user functions
class CountSum(AggregateFunction):  # type: ignore[type-arg]
    """Incremental (count, sum of value)."""

    def create_accumulator(self) -> Tuple[int, int]:
        return (0, 0)

    def add(self, value: Any, accumulator: Tuple[int, int]) -> Tuple[int, int]:
        return (accumulator[0] + 1, accumulator[1] + value.value)

    def get_result(self, accumulator: Tuple[int, int]) -> Tuple[int, int]:
        return accumulator

    def merge(self, a: Tuple[int, int], b: Tuple[int, int]) -> Tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])


class WithWindow(ProcessWindowFunction):  # type: ignore[type-arg]
    """Attaches key and window start to the pre-aggregated (count, sum)."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        count, total = next(iter(elements))
        yield (key, context.window().start, count, total)


class CountSumProcess(ProcessWindowFunction):  # type: ignore[type-arg]
    """The general path: all of the window's elements, counted and summed in Python at each firing."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        count = total = 0
        for e in elements:
            count += 1
            total += e.value
        window = context.window()
        yield (key, window.start, count, total, context.current_watermark() >= window.max_timestamp())


class EarlyCountEventTimeTrigger(Trigger):  # type: ignore[type-arg]
    """``EventTimeTrigger`` plus ``CountTrigger.of(n)``'s early firings (neither purges)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.counter = CountTrigger.of(count)
        self.time = EventTimeTrigger.create()

    def _config(self) -> tuple:  # type: ignore[type-arg]
        return (self.count,)

    def on_element(self, element: Any, timestamp: int, window: TimeWindow, ctx: Any) -> TriggerResult:
        by_count = self.counter.on_element(element, timestamp, window, ctx)
        by_time = self.time.on_element(element, timestamp, window, ctx)
        return TriggerResult.FIRE if by_count.is_fire() or by_time.is_fire() else TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: TimeWindow, ctx: Any) -> TriggerResult:
        return self.time.on_event_time(time, window, ctx)

    def on_processing_time(self, time: int, window: TimeWindow, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:  # both parts merge, so this works on session windows too
        return True

    def on_merge(self, window: TimeWindow, ctx: Any) -> None:
        self.counter.on_merge(window, ctx)
        self.time.on_merge(window, ctx)

    def clear(self, window: TimeWindow, ctx: Any) -> None:
        self.counter.clear(window, ctx)
        self.time.clear(window, ctx)

    def __repr__(self) -> str:
        return f"EarlyCountEventTimeTrigger({self.count})"


class LastCount(ProcessWindowFunction):  # type: ignore[type-arg]
    """(key, max seq, count, sum) of a count window's contents."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        count = total = 0
        last = -1
        for e in elements:
            count += 1
            total += e.value
            last = max(last, e.seq)
        yield (key, last, count, total)


class SessionTotals(ProcessWindowFunction):  # type: ignore[type-arg]
    """(key, start, end, count, sum) at every firing of a session window."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        count = total = 0
        for e in elements:
            count += 1
            total += e.value
        w = context.window()
        yield (key, w.start, w.end, count, total)


from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # ship this module's classes to workers by value


# ----------------------------------------------------------------------------------------------- input
@dataclass
class InputInfo:
    directory: str
    events: int
    data_files: int
    sentinel_files: int
    min_ts: int
    max_ts: int
    sentinel_ts: int
    expected: List[Window]


def write_batch(directory: str, index: int, frame: Dict[str, np.ndarray]) -> None:
    """One micro-batch's Parquet file of ``key, ts, value, seq`` (int64), ordered for the file source by its mtime."""
    table = pa.table({c: pa.array(frame[c], pa.int64()) for c in ("key", "ts", "value", "seq")})
    path = os.path.join(directory, f"batch-{index:06d}.parquet")
    pq.write_table(table, path)
    os.utime(path, (1_000_000 + index, 1_000_000 + index))  # the file source orders files by modification time


def generate(
    directory: str, events: int, keys: int, batch_rows: int, disorder_ms: int, seed: int, csv: Optional[str] = None
) -> InputInfo:
    """The benchmark input: one Parquet file per micro-batch, then two sentinel files (see ``bench_tumbling.py``'s
    docstring). With ``csv``, the same events (without the sentinels) also go to that one CSV file in arrival order."""
    rng = np.random.default_rng(seed)
    t0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z, a minute boundary
    span = 3_600_000
    base = t0 + np.sort(rng.integers(0, span, events, dtype=np.int64))
    ts = base - rng.integers(0, disorder_ms + 1, events, dtype=np.int64)
    key = rng.integers(0, keys, events, dtype=np.int64)
    value = rng.integers(0, 1000, events, dtype=np.int64)
    seq = np.arange(events, dtype=np.int64)
    # bounded disorder: nothing is more than B behind the maximum before it
    prev_max = np.maximum.accumulate(ts)[:-1]
    assert events < 2 or bool(np.all(ts[1:] >= prev_max - disorder_ms))
    os.makedirs(directory, exist_ok=True)
    files = 0
    for start in range(0, events, batch_rows):
        sl = slice(start, start + batch_rows)
        write_batch(directory, files, {"key": key[sl], "ts": ts[sl], "value": value[sl], "seq": seq[sl]})
        files += 1
    max_ts = int(ts.max())
    sentinel = max_ts + disorder_ms + 2 * WINDOW_MS
    for i in range(2):
        one = np.array([0], dtype=np.int64)
        write_batch(directory, files + i, {"key": one + SENTINEL_KEY, "ts": one + sentinel, "value": one, "seq": one + events + i})
    if csv is not None:
        write_csv(csv, key, ts, value, seq)
    frame = pd.DataFrame({"key": key, "start": ts - ts % WINDOW_MS, "value": value})
    agg = frame.groupby(["key", "start"], sort=True)["value"].agg(["count", "sum"]).reset_index()
    expected = list(zip(*(agg[c].astype(int).tolist() for c in ("key", "start", "count", "sum"))))
    return InputInfo(directory, events, files, 2, int(ts.min()), max_ts, sentinel, expected)  # type: ignore[arg-type]


def write_csv(path: str, key: np.ndarray, ts: np.ndarray, value: np.ndarray, seq: np.ndarray) -> None:
    """``key,ts,value,seq`` lines without a header, in arrival order (the PyFlink jobs' input)."""
    pd.DataFrame({"key": key, "ts": ts, "value": value, "seq": seq}).to_csv(path, header=False, index=False)


def generate_tiny(directory: str, files: int, rows: int, keys: int, seed: int) -> None:
    """Tiny micro-batches for the latency floor: ``rows`` events per file, 1 s of event time per file."""
    rng = np.random.default_rng(seed)
    os.makedirs(directory, exist_ok=True)
    t0 = 1_767_225_600_000
    for i in range(files):
        ts = t0 + i * 1000 + np.sort(rng.integers(0, 1000, rows, dtype=np.int64))
        frame = {
            "key": rng.integers(0, keys, rows, dtype=np.int64),
            "ts": ts,
            "value": rng.integers(0, 1000, rows, dtype=np.int64),
            "seq": np.arange(i * rows, (i + 1) * rows, dtype=np.int64),
        }
        write_batch(directory, i, frame)


# ----------------------------------------------------------------------------------------------- measuring
def _tree_cpu() -> float:
    return tree_cpu()


def _progress(query: Any) -> List[Dict[str, Any]]:
    out = []
    for p in query.recentProgress:
        if not isinstance(p, dict):
            p = json.loads(p.json)
        out.append(
            {
                "batchId": p["batchId"],
                "rows": int(p["numInputRows"]),
                "ms": int(p["durationMs"].get("triggerExecution", 0)),
                "durations": dict(p["durationMs"]),
            }
        )
    return sorted(out, key=lambda p: p["batchId"])


@dataclass
class Run:
    engine: str
    repeat: int
    events: int
    wall_s: float
    cpu_s: float
    steady_events_per_s: Optional[float]
    batches: List[Dict[str, Any]] = field(default_factory=list)
    windows: int = 0
    early_firings: int = 0
    floor_ms: Optional[float] = None
    floor_batches: List[Dict[str, Any]] = field(default_factory=list)
    load_avg: List[float] = field(default_factory=list)  # 1-minute load average before and after the run


def _steady(progress: List[Dict[str, Any]], data_files: int) -> Optional[float]:
    data = [p for p in progress if p["rows"] > 0][:data_files]
    steady = data[1:]
    ms = sum(p["ms"] for p in steady)
    return sum(p["rows"] for p in steady) / (ms / 1000) if steady and ms > 0 else None


def _floor(progress: List[Dict[str, Any]], skip: int) -> Optional[float]:
    data = [p for p in progress if p["rows"] > 0][skip:]
    return float(statistics.median(p["ms"] for p in data)) if data else None


# ----------------------------------------------------------------------------------------------- engines
def _source(spark: Any, directory: str) -> Any:
    return spark.readStream.schema(INPUT_DDL).option("maxFilesPerTrigger", 1).parquet(directory)


def run_native(spark: Any, directory: str, disorder_ms: int, work: str, timeout_s: float) -> Tuple[Any, List[Window], float]:
    """Returns (query, windows, wall seconds)."""
    from pyspark.sql import functions as F

    name = "bench_native_" + uuid.uuid4().hex[:8]
    windows = (
        _source(spark, directory)
        .withColumn("et", F.timestamp_millis("ts"))
        .withWatermark("et", f"{disorder_ms + 1} milliseconds")
        .groupBy("key", F.window("et", "1 minute"))
        .agg(F.count(F.lit(1)).alias("count"), F.sum("value").alias("sum"))
        .select("key", F.unix_millis(F.col("window.start")).alias("start"), "count", "sum")
    )
    writer = (
        windows.writeStream.format("memory")
        .queryName(name)
        .outputMode("append")
        .option("checkpointLocation", os.path.join(work, name))
        .trigger(availableNow=True)
    )
    t = time.perf_counter()
    query = writer.start()
    finished = query.awaitTermination(timeout_s)
    wall = time.perf_counter() - t
    if not finished:
        query.stop()
        msg = f"native query did not finish in {timeout_s} s"
        raise TimeoutError(msg)
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    rows = [tuple(int(x) for x in r) for r in spark.sql(f"select key, start, count, sum from {name}").collect()]
    spark.catalog.dropTempView(name)
    return query, rows, wall


def run_flinkish(
    spark: Any,
    directory: str,
    disorder_ms: int,
    work: str,
    timeout_s: float,
    general: bool,
    count_trigger: int,
    backend: str = "foreach_batch",
    column_aggregate: bool = False,
    key_type: str = "none",
    handles: Optional[List[Any]] = None,
) -> Tuple[Any, List[Window], float, int]:
    """Returns (query, final windows, wall seconds, early firings); ``key_type`` ``long``: ``key_by`` declares
    ``Types.LONG()`` (its keys cross the stages as a column); ``handles``: the job's handle is appended to it (its
    driver's ``history`` holds each batch's progress)."""
    options = {} if backend == "foreach_batch" else {"backend": backend}
    env = StreamExecutionEnvironment.get_execution_environment(spark, **options)
    stream = env.from_dataframe(
        _source(spark, directory),
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(disorder_ms)),
        timestamp_column="ts",
        order_columns=["seq"],
    )
    declared = Types.LONG() if key_type == "long" else None
    windowed = stream.key_by(lambda r: r.key, key_type=declared).window(TumblingEventTimeWindows.of(Duration.of_minutes(1)))
    out: List[Any] = []
    if general:
        windowed.trigger(EarlyCountEventTimeTrigger(count_trigger)).process(
            CountSumProcess(), output_type=Types.TUPLE([Types.LONG()] * 4 + [Types.BOOLEAN()])
        ).add_sink(out.append)
    else:
        agg = ColumnAggregate(Count(), Sum("value")) if column_aggregate else CountSum()
        windowed.aggregate(agg, WithWindow(), output_type=Types.TUPLE([Types.LONG()] * 4)).add_sink(out.append)
    name = "bench_flinkish_" + uuid.uuid4().hex[:8]
    t = time.perf_counter()
    handle = env.execute(name, checkpoint_location=os.path.join(work, name), trigger={"availableNow": True})
    if handles is not None:
        handles.append(handle)
    finished = handle.query.awaitTermination(timeout_s)
    wall = time.perf_counter() - t
    if not finished:
        handle.stop()
        msg = f"pyspark_flinkish query did not finish in {timeout_s} s"
        raise TimeoutError(msg)
    if handle.driver is not None:
        handle.driver.raise_if_failed()
    if handle.query.exception() is not None:
        raise RuntimeError(str(handle.query.exception()))
    early = 0
    if general:
        early = sum(1 for r in out if not r[4])
        rows = [tuple(int(x) for x in r[:4]) for r in out if r[4]]
    else:
        rows = [tuple(int(x) for x in r) for r in out]
    return handle.query, rows, wall, early  # type: ignore[return-value]


def run_engine(
    engine: str, spark: Any, directory: str, args: argparse.Namespace, work: str
) -> Tuple[Any, List[Window], float, int]:
    if engine == "native":
        q, rows, wall = run_native(spark, directory, args.disorder_ms, work, args.timeout_s)
        return q, rows, wall, 0
    backend = "apply_in_pandas_with_state" if engine == "apply_in_pandas_with_state" else "foreach_batch"
    general = engine == "foreach_batch_general"
    column = engine == "foreach_batch"
    return run_flinkish(
        spark, directory, args.disorder_ms, work, args.timeout_s, general, args.count_trigger, backend, column,
        getattr(args, "key_type", "none"),
    )


# ----------------------------------------------------------------------------------------------- comparing and reporting
def _real(rows: List[Window]) -> List[Window]:
    return sorted(r for r in rows if r[0] != SENTINEL_KEY)


def check_windows(engine: str, rows: List[Window], expected: List[Window]) -> Optional[str]:
    got = _real(rows)
    if got == expected:
        return None
    g, e = set(got), set(expected)
    dup = len(got) - len(g)
    return (
        f"{engine}: {len(got)} windows, expected {len(expected)}; missing {len(e - g)} (e.g. {sorted(e - g)[:3]}), "
        f"unexpected {len(g - e)} (e.g. {sorted(g - e)[:3]}), duplicates {dup}"
    )


def _spread(values: List[float], fmt: str) -> str:
    if not values:
        return "n/a"
    med = statistics.median(values)
    if len(values) == 1:
        return format(med, fmt)
    return f"{format(med, fmt)} [{format(min(values), fmt)}-{format(max(values), fmt)}]"


# ----------------------------------------------------------------------------------------------- main
def _java_version() -> str:
    import subprocess

    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        return (out.stderr or out.stdout).splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return "unknown"


def _git_commit() -> str:
    import subprocess

    try:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        out = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=30)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _machine() -> Dict[str, Any]:
    """Recorded when the run starts (the package commit is the code the run measured)."""
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "pyspark": __import__("pyspark").__version__,
        "pandas": pd.__version__,
        "pyarrow": pa.__version__,
        "java": _java_version(),
        "package_commit": _git_commit(),
    }


