"""Large micro-batches (issue 25): a keyed job with a ``ValueState`` and an event-time timer per key completes one
micro-batch of many events, with results equal to pandas' and the driver's memory bounded.

Spark runs a task for every input split, also one that reads no row: with ``spark.sql.files.maxPartitionBytes=1m``
a Parquet file of more than 1 MB is read in several splits, and only a split that holds the middle of a row group
reads rows. The task turning such a split into the common source rows (``spark/source_rows.py``; a pipeline with
several sources, or with processing-time ticks in a continuing query) returned a frame whose columns pandas typed
``float64``, which pyarrow cannot write as ``ord array<long>``: the batch failed with ``NumPyConverter doesn't
implement <list<element: int64>> conversion`` while the driver collected its statistics. Both tests here read
Parquet files larger than a split with one row group each, so most splits are empty.

``FLINKISH_LARGE_BATCH_EVENTS`` sets the events of the large batch: default 200,000 (50-85 s for the run on the shared
2-core machine, by its load); issue 25's 1,000,000 took 81 s there and 5,000,000 (by hand) 797 s, the driver's peak
12-13 MB above its memory before the run at every size.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.state import ValueStateDescriptor

pytestmark = pytest.mark.spark

EVENTS = int(os.environ.get("FLINKISH_LARGE_BATCH_EVENTS", "200000"))
KEYS = 10_000
TIMER_BASE = 1_000
"""Key ``k``'s timer, registered with its first element, is at ``TIMER_BASE + k`` whichever element comes first, so
that the result does not depend on the order in which the key's elements are processed."""
SPLIT_BYTES = 1 << 20
TOTAL = ValueStateDescriptor("total", Types.LONG())
COUNT = ValueStateDescriptor("count", Types.LONG())
OUTPUT = Types.TUPLE([Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG()])

DRIVER_BASE_BYTES = 40 << 20
DRIVER_BYTES_PER_KEY = 2 << 10
"""The bound on the driver process's peak resident memory during the run above its resident memory before it:
``DRIVER_BASE_BYTES + DRIVER_BYTES_PER_KEY * KEYS`` (about 60 MB for 10,000 keys).

What the driver must hold grows with the keys, not with the events: one output row per key (collected for
``add_sink``, about 480 bytes as a collected ``Row``, and the delivered tuple), one statistics row per source split
and one metric row per state partition; the base covers what any batch allocates in this process (query planning
through py4j, the collects' Arrow buffers). Measured on the 2-core machine: 12 MB at 200,000 and at 1,000,000
events. Holding the batch's events instead would cost at least about 480 bytes per event (a collected row with the
pickled element and its order; the unpickled element as much again), 96 MB at the default 200,000 events: above the
bound."""


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


def _events(n: int, seed: int) -> pd.DataFrame:
    """``n`` events ``(k, t, v)``: keys in ``[0, KEYS)``, event times a permutation of ``0..n-1`` (out of order),
    values up to 2^40 (so that the Parquet files hold about 17 bytes per event, several splits each)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "k": rng.integers(0, KEYS, n, dtype=np.int64),
            "t": rng.permutation(n).astype(np.int64),
            "v": rng.integers(0, 1 << 40, n, dtype=np.int64),
        }
    )


def _write(directory: Path, events: pd.DataFrame) -> None:
    """One Parquet file of one row group, larger than a split: all splits but one read nothing."""
    directory.mkdir(parents=True)
    path = directory / "part-0.parquet"
    pq.write_table(pa.Table.from_pandas(events, preserve_index=False), path, row_group_size=len(events))
    assert path.stat().st_size > SPLIT_BYTES, "the test needs a file read in several splits"


def _expected(events: pd.DataFrame) -> List[Tuple[int, int, int, int]]:
    """What the job emits, from pandas: every key's timer fires in the batch (its time is below the watermark
    after it, ``max(t) - 1``), with the key's count and sum."""
    by_key = events.groupby("k")["v"].agg(["count", "sum"])
    assert TIMER_BASE + KEYS <= events["t"].max() - 1
    return sorted((int(k), TIMER_BASE + int(k), int(r["count"]), int(r["sum"])) for k, r in by_key.iterrows())


def _memory() -> Dict[str, int]:
    """This process's resident memory now and at its peak (``VmRSS``, ``VmHWM``), in bytes."""
    status = Path("/proc/self/status").read_text()
    return {name: int(re.search(rf"{name}:\s+(\d+) kB", status).group(1)) * 1024 for name in ("VmRSS", "VmHWM")}  # type: ignore[union-attr]


def _reset_peak() -> bool:
    """Reset the peak resident memory (``VmHWM``) to the current one (Linux ``clear_refs``); False if refused."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


@pytest.fixture
def split_bytes(spark: Any) -> Iterator[int]:
    """``spark.sql.files.maxPartitionBytes`` at 1 MB for the test (issue 25's setting), restored after it."""
    name = "spark.sql.files.maxPartitionBytes"
    before = spark.conf.get(name)
    spark.conf.set(name, str(SPLIT_BYTES))
    yield SPLIT_BYTES
    spark.conf.set(name, before)


def _job(env: Any, streams: List[Any], out: List[Any]) -> None:
    events = streams[0].union(*streams[1:]) if len(streams) > 1 else streams[0]
    events.key_by(lambda r: r.k, key_type=Types.LONG()).process(KeyTotal(), output_type=OUTPUT).uid("key_total").add_sink(
        out.append
    )


def test_a_large_batch_in_one_available_now_run(spark: Any, tmp_path: Path, split_bytes: int) -> None:
    """``EVENTS`` events of two Parquet sources (each a file of one row group, most splits empty), unioned, keyed,
    one micro-batch of ``availableNow``: every key's total equals pandas', and the driver's peak memory stays
    below :data:`DRIVER_BASE_BYTES` + :data:`DRIVER_BYTES_PER_KEY` per key."""
    events = _events(EVENTS, seed=25)
    halves = [events.iloc[: EVENTS // 2], events.iloc[EVENTS // 2 :]]
    for name, half in zip("ab", halves):
        _write(tmp_path / name, half)
    expected = _expected(events)

    env = StreamExecutionEnvironment.get_execution_environment(spark)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
    streams = [
        env.from_dataframe(spark.readStream.schema("k long, t long, v long").parquet(str(tmp_path / name)), strategy,
                           timestamp_column="t", source_name=f"events-{name}")
        for name in "ab"
    ]
    out: List[Any] = []
    _job(env, streams, out)
    reported: List[Dict[str, Any]] = []

    peak_measured = _reset_peak()
    before = _memory()
    started = time.perf_counter()
    handle = env.execute("large-batch", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True},
                         progress=reported.append)
    handle.await_termination()
    seconds = time.perf_counter() - started
    after = _memory()

    assert [p["batch_id"] for p in reported] == [0], "one micro-batch"
    assert sorted(tuple(int(x) for x in row) for row in out) == expected
    growth = after["VmHWM"] - before["VmRSS"]
    bound = DRIVER_BASE_BYTES + DRIVER_BYTES_PER_KEY * KEYS
    print(f"\n{EVENTS:,} events, {KEYS:,} keys: {seconds:.1f} s; driver resident memory {before['VmRSS'] / 2**20:.0f} MB "
          f"before, peak {after['VmHWM'] / 2**20:.0f} MB (+{growth / 2**20:.0f} MB, bound {bound / 2**20:.0f} MB)")
    if peak_measured:
        assert growth < bound, f"the driver's peak memory grew by {growth / 2**20:.0f} MB (bound {bound / 2**20:.0f} MB)"


def test_a_continuing_query_reads_splits_without_rows(spark: Any, tmp_path: Path, split_bytes: int) -> None:
    """The state-growth benchmark's shape at a small size: one source and a continuing query (the default trigger),
    whose process function may register processing-time timers, so processing-time ticks join the source rows."""
    events = _events(100_000, seed=13)
    _write(tmp_path / "in", events)
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
    stream = env.from_dataframe(spark.readStream.schema("k long, t long, v long").parquet(str(tmp_path / "in")),
                                strategy, timestamp_column="t")
    out: List[Any] = []
    _job(env, [stream], out)
    handle = env.execute("large-batch-continuing", checkpoint_location=str(tmp_path / "ck"))
    try:
        handle.process_all_available()
    finally:
        handle.stop()
    assert sorted(tuple(int(x) for x in row) for row in out) == _expected(events)
