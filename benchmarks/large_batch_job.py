"""Issue 25's large-batch job, one definition for ``tests/spark/test_large_batches.py``, the benchmark suite's
large-batch part (``run_all.py``) and ``bench_largest_batch.py``.

A keyed job with a ``ValueState`` and an event-time timer per key: ``events`` events ``(k, t, v)`` over
:data:`KEYS` keys, from two Parquet sources (each one file of one row group, larger than a 1 MB split, so most
splits read no row), unioned, keyed by ``k``; each key's timer fires at the end of the batch and emits
``(key, timer, count, sum)``. Run with ``availableNow``, all events are one micro-batch; the output equals pandas'
(:func:`expected`) and the driver's peak resident memory stays below :func:`driver_bound` above its memory before
the run (records stay on the executors; the driver holds one output row per key).

Imported modules are not ``__main__``: this module registers itself with cloudpickle so that Spark ships
:class:`KeyTotal` to the Python workers by value.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from proc_cpu import tree_cpu_by_pid

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.state import ValueStateDescriptor

__all__ = [
    "DRIVER_BASE_BYTES",
    "DRIVER_BYTES_PER_KEY",
    "KEYS",
    "SPLIT_BYTES",
    "TIMER_BASE",
    "CpuSampler",
    "KeyTotal",
    "LargeBatchRun",
    "build_job",
    "driver_bound",
    "events",
    "expected",
    "memory",
    "prepare",
    "reset_peak",
    "run_large_batch",
    "run_native",
    "write_sources",
]

KEYS = 10_000
TIMER_BASE = 1_000
"""Key ``k``'s timer, registered with its first element, is at ``TIMER_BASE + k`` whichever element comes first, so
that the result does not depend on the order in which the key's elements are processed."""
SPLIT_BYTES = 1 << 20
"""``spark.sql.files.maxPartitionBytes`` of the run (issue 25's setting): each source file is read in several
splits, all but one empty."""
TOTAL = ValueStateDescriptor("total", Types.LONG())
COUNT = ValueStateDescriptor("count", Types.LONG())
OUTPUT = Types.TUPLE([Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG()])

DRIVER_BASE_BYTES = 40 << 20
DRIVER_BYTES_PER_KEY = 2 << 10
"""The bound on the driver process's peak resident memory during the run above its resident memory before it:
``DRIVER_BASE_BYTES + DRIVER_BYTES_PER_KEY * keys`` (about 60 MB for 10,000 keys).

What the driver must hold grows with the keys, not with the events: one output row per key (collected for
``add_sink``, about 480 bytes as a collected ``Row``, and the delivered tuple), one statistics row per source split
and one metric row per state partition; the base covers what any batch allocates in this process (query planning
through py4j, the collects' Arrow buffers). Measured on the 2-core machine: 0-19 MB at 200,000, 1,000,000, 2,000,000 and
5,000,000 events. Holding the batch's events instead would cost at least about 480 bytes per event (a collected row
with the pickled element and its order; the unpickled element as much again), 96 MB at 200,000 events: above the
bound."""


def driver_bound(keys: int = KEYS) -> int:
    """The bound on the driver's peak resident memory growth during a run over ``keys`` keys, in bytes."""
    return DRIVER_BASE_BYTES + DRIVER_BYTES_PER_KEY * keys


class KeyTotal(KeyedProcessFunction):  # type: ignore[type-arg]
    """Per key: the sum and count of ``v`` in ``ValueState``s and one event-time timer; when it fires, emits
    ``(key, timer, count, sum)`` and clears the state."""

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        self.total = runtime_context.get_state(TOTAL)
        self.count = runtime_context.get_state(COUNT)

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        if self.count.value() is None:
            ctx.timer_service().register_event_time_timer(TIMER_BASE + value.k)
        self.total.update((self.total.value() or 0) + value.v)
        self.count.update((self.count.value() or 0) + 1)
        yield from ()

    def on_timer(self, timestamp, ctx):  # type: ignore[no-untyped-def]
        yield ctx.get_current_key(), timestamp, self.count.value(), self.total.value()
        self.total.clear()
        self.count.clear()


def events(n: int, seed: int, keys: int = KEYS) -> pd.DataFrame:
    """``n`` events ``(k, t, v)``: keys in ``[0, keys)``, event times a permutation of ``0..n-1`` (out of order),
    values up to 2^40 (so that the Parquet files hold about 17 bytes per event, several splits each)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "k": rng.integers(0, keys, n, dtype=np.int64),
            "t": rng.permutation(n).astype(np.int64),
            "v": rng.integers(0, 1 << 40, n, dtype=np.int64),
        }
    )


def write_source(directory: Path, frame: pd.DataFrame) -> None:
    """One Parquet file of one row group, larger than a split: all splits but one read nothing."""
    directory.mkdir(parents=True)
    path = directory / "part-0.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=len(frame))
    if path.stat().st_size <= SPLIT_BYTES:
        msg = f"the large-batch job needs a file read in several splits; {path} has {path.stat().st_size} bytes"
        raise ValueError(msg)


def write_sources(directory: Path, frame: pd.DataFrame) -> List[Path]:
    """The job's two sources, ``directory/a`` and ``directory/b``: the halves of ``frame``."""
    half = len(frame) // 2
    paths = [directory / "a", directory / "b"]
    for path, part in zip(paths, [frame.iloc[:half], frame.iloc[half:]]):
        write_source(path, part)
    return paths


def expected(frame: pd.DataFrame) -> List[Tuple[int, int, int, int]]:
    """What the job emits, from pandas: every key's timer fires in the batch (its time is below the watermark
    after it, ``max(t) - 1``), with the key's count and sum."""
    by_key = frame.groupby("k")["v"].agg(["count", "sum"])
    if TIMER_BASE + int(by_key.index.max()) > frame["t"].max() - 1:
        msg = "too few events for every timer to fire in the batch"
        raise ValueError(msg)
    return sorted((int(k), TIMER_BASE + int(k), int(r["count"]), int(r["sum"])) for k, r in by_key.iterrows())


def prepare(app: str, n: int, driver_memory: str, directory: Path) -> Tuple[Any, List[Path], List[Tuple[int, int, int, int]]]:
    """A benchmark child's setup: a fresh ``local[2]`` SparkSession with ``driver_memory`` (2 shuffle partitions),
    ``n`` events (seed 25) written as the job's sources under ``directory``, and the expected output."""
    from pyspark_flinkish.spark import session

    spark = session(app, master="local[2]", shuffle_partitions=2, spark__default__parallelism="2",
                    spark__driver__memory=driver_memory)
    spark.sparkContext.setLogLevel("ERROR")
    frame = events(n, seed=25)
    return spark, write_sources(directory, frame), expected(frame)


def memory() -> Dict[str, int]:
    """This process's resident memory now and at its peak (``VmRSS``, ``VmHWM``), in bytes."""
    status = Path("/proc/self/status").read_text()
    return {name: int(re.search(rf"{name}:\s+(\d+) kB", status).group(1)) * 1024 for name in ("VmRSS", "VmHWM")}  # type: ignore[union-attr]


def reset_peak() -> bool:
    """Reset the peak resident memory (``VmHWM``) to the current one (Linux ``clear_refs``); False if refused."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


class CpuSampler:
    """CPU seconds of this process and its descendants (the JVM, its Python workers) between :meth:`start` and
    :meth:`stop`, sampled per process every ``interval_s``: a Python worker that exits during the run keeps what it
    used until its last sample (a tree's total from ``/proc`` alone loses it when its parent does not wait for it)."""

    def __init__(self, interval_s: float = 0.5) -> None:
        self.interval_s = interval_s
        self._first: Dict[int, float] = {}
        self._last: Dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        for pid, cpu in tree_cpu_by_pid().items():
            self._first.setdefault(pid, cpu if not self._last else 0.0)  # a process born during the run: from 0
            self._last[pid] = cpu

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def start(self) -> None:
        self._sample()
        self._thread.start()

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        self._sample()
        return sum(self._last[pid] - self._first[pid] for pid in self._last)


def build_job(streams: List[Any], out: List[Any]) -> None:
    """The job on ``streams`` (unioned): keyed by ``k``, :class:`KeyTotal`, its output appended to ``out``."""
    union = streams[0].union(*streams[1:]) if len(streams) > 1 else streams[0]
    keyed = union.key_by(lambda r: r.k, key_type=Types.LONG())
    keyed.process(KeyTotal(), output_type=OUTPUT).uid("key_total").add_sink(out.append)


@dataclass
class LargeBatchRun:
    """One run of the job: its output rows, wall seconds, the driver's memory and each batch's progress."""

    rows: List[Tuple[int, ...]]
    seconds: float
    before_rss: int
    peak_rss: int
    peak_measured: bool
    progress: List[Dict[str, Any]] = field(default_factory=list)
    cpu_seconds: float = 0.0
    """CPU seconds of this process and its descendants (the JVM, its Python workers) during the run: on a shared
    machine a steadier measure of the work than the wall time."""

    @property
    def growth(self) -> int:
        """The driver's peak resident memory during the run above its resident memory before it, in bytes."""
        return self.peak_rss - self.before_rss

    def summary(self, n: int, keys: int = KEYS) -> str:
        """One line: events, seconds, the driver's memory and its bound, the batch's phases."""
        durations = {}
        for p in self.progress:  # the package's phases of its batch; native Spark's of each of its batches
            for k, v in (p.get("durations_ms") or p.get("durationMs") or {}).items():
                durations[k] = durations.get(k, 0.0) + v
        phases = ", ".join(f"{k} {v / 1000:.1f} s" for k, v in durations.items()) or "no progress"
        return (f"{n:,} events, {keys:,} keys: {self.seconds:.1f} s; driver resident memory "
                f"{self.before_rss / 2**20:.0f} MB before, peak {self.peak_rss / 2**20:.0f} MB "
                f"(+{self.growth / 2**20:.0f} MB, bound {driver_bound(keys) / 2**20:.0f} MB); "
                f"{self.cpu_seconds:.0f} CPU-s ({self.cpu_seconds / n * 1e6:.0f} CPU-us per event); phases: {phases}")


def run_large_batch(spark: Any, sources: List[Path], checkpoint: Path, source_name: str = "events") -> LargeBatchRun:
    """Run the job once with ``availableNow`` over ``sources`` (Parquet directories of ``k, t, v``), with
    ``spark.sql.files.maxPartitionBytes`` at :data:`SPLIT_BYTES` for the run (restored after it)."""
    name = "spark.sql.files.maxPartitionBytes"
    split_before: Optional[str] = spark.conf.get(name)
    spark.conf.set(name, str(SPLIT_BYTES))
    try:
        env = StreamExecutionEnvironment.get_execution_environment(spark)
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
        streams = [
            env.from_dataframe(spark.readStream.schema("k long, t long, v long").parquet(str(path)), strategy,
                               timestamp_column="t", source_name=f"{source_name}-{path.name}")
            for path in sources
        ]
        out: List[Any] = []
        build_job(streams, out)
        reported: List[Dict[str, Any]] = []
        measured = reset_peak()
        before = memory()
        cpu = CpuSampler()
        cpu.start()
        started = time.perf_counter()
        handle = env.execute("large-batch", checkpoint_location=str(checkpoint), trigger={"availableNow": True},
                             progress=reported.append)
        handle.await_termination()
        seconds = time.perf_counter() - started
        cpu_seconds = cpu.stop()
        after = memory()
    finally:
        spark.conf.set(name, split_before)
    rows = sorted(tuple(int(x) for x in row) for row in out)
    return LargeBatchRun(rows, seconds, before["VmRSS"], after["VmHWM"], measured, reported, cpu_seconds)


def run_native(spark: Any, sources: List[Path], checkpoint: Path) -> LargeBatchRun:
    """Native Spark's equivalent of the job, with ``availableNow`` over the same ``sources``: the union keyed by
    ``k`` in ``applyInPandasWithState`` keeping ``(count, sum)`` as the group's state and an event-time timeout at
    ``TIMER_BASE + k`` (the watermark is ``t`` with no delay); a timed-out group emits ``(k, timeout, count, sum)``
    and removes its state. Its output is collected to the driver in ``foreachBatch`` (as the job's ``add_sink``).

    Spark drops a row whose event time is at or below the watermark, also the first batch's watermark 0 (Flink's
    starts at ``Long.MIN_VALUE``): the event at ``t = 0`` was lost. Event times and timeouts are shifted by 1 ms
    here, which changes no result (every timeout still fires after the batch, in the same order)."""
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    def total(key: Any, frames: Any, state: Any) -> Any:
        if state.hasTimedOut:
            count, value_sum, timer = state.get
            state.remove()
            yield pd.DataFrame({"k": [key[0]], "timer": [timer], "count": [count], "sum": [value_sum]})
            return
        count, value_sum, timer = state.get if state.exists else (0, 0, TIMER_BASE + int(key[0]))
        for pdf in frames:
            count += len(pdf)
            value_sum += int(pdf["v"].sum())
        state.update((count, value_sum, timer))
        state.setTimeoutTimestamp(timer + 1)  # event times are shifted by 1 ms (see above)
        yield pd.DataFrame({"k": [], "timer": [], "count": [], "sum": []}, dtype="int64")

    name = "spark.sql.files.maxPartitionBytes"
    split_before: Optional[str] = spark.conf.get(name)
    spark.conf.set(name, str(SPLIT_BYTES))
    out: List[Any] = []
    try:
        frames = [spark.readStream.schema("k long, t long, v long").parquet(str(path)) for path in sources]
        union = frames[0]
        for frame in frames[1:]:
            union = union.unionByName(frame)
        grouped = (union.withColumn("event_time", F.timestamp_millis(F.col("t") + 1)).withWatermark("event_time", "0 seconds")
                   .groupBy("k").applyInPandasWithState(total, "k long, timer long, count long, sum long",
                                                        "count long, sum long, timer long", "append",
                                                        GroupStateTimeout.EventTimeTimeout))
        measured = reset_peak()
        before = memory()
        cpu = CpuSampler()
        cpu.start()
        started = time.perf_counter()
        query = (grouped.writeStream.foreachBatch(lambda df, _: out.extend(df.collect()))
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
        query.awaitTermination()
        seconds = time.perf_counter() - started
        cpu_seconds = cpu.stop()
        after = memory()
        progress = [dict(p) for p in query.recentProgress]
    finally:
        spark.conf.set(name, split_before)
    rows = sorted(tuple(int(x) for x in row) for row in out)
    return LargeBatchRun(rows, seconds, before["VmRSS"], after["VmHWM"], measured, progress, cpu_seconds)


from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # ship this module's classes to workers by value
