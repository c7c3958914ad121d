"""The pieces of the suite's part 7 (``run_all.py --parts 7``): how the cost of a small micro-batch grows with the
keyed state a query holds (issue 13's baseline).

* :func:`generate` writes, up front, the Parquet files of one run: ``K`` idle keys (one event each, in
  ``load_batches`` files), then ``small_batches`` files of ``batch_events`` events touching ``touched`` keys each.
  Columns ``(key, ts, mark, seq)``: event time grows with ``seq``; ``mark`` is 1 on the last event of each touched
  key in a small batch, else 0.
* :func:`run_engine` runs one engine over them, one file per micro-batch: it links the next file into the query's
  (initially empty) source directory, waits with ``processAllAvailable``, and walks the checkpoint directory before
  and after, so that each batch's *bytes written* are the sizes of the files it created or changed (deleted files
  are not counted). The batch's time is Spark's ``triggerExecution`` for it (the same clock for every engine); the
  wall time from linking the file to the end of ``processAllAvailable`` is kept too.
* The engines: ``foreach_batch`` is this package's default executor running :class:`IdleKeys` (a
  ``KeyedProcessFunction`` with a ``ValueState`` count and one event-time timer per key, far in the future);
  ``native_hdfs`` is Spark's ``groupBy(key).count()`` (update mode, ``noop`` sink) with the default HDFS-backed
  state store; ``native_rocksdb`` the same with the RocksDB state store and changelog checkpointing. All three keep
  one state row per key.
* Correctness before figures: the package's emitted ``(key, count)`` rows (one per touched key and small batch, on
  the marked event) must equal the counts computed from the input, its ``numKeys`` must be ``K`` and
  ``read_state`` must give ``K`` keys summing to the events; Spark's state data source must give ``K`` rows
  summing to the events, with the touched keys' counts as computed.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pyspark_flinkish.common import Types, WatermarkStrategy
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.state import ValueStateDescriptor

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
TIMER_AT = T0 + 365 * 86_400_000  # every key's event-time timer: a year after the first event, never reached
INPUT_DDL = "key long, ts long, mark long, seq long"
ENGINES = ["foreach_batch", "native_hdfs", "native_rocksdb"]
ROCKSDB_CONF = {
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
}
COUNT = ValueStateDescriptor("count", Types.LONG())
UID = "idle_keys"


# ----------------------------------------------------------------------------------------------- input
@dataclass
class GrowthInput:
    """The files of one run (in ``staging``, in batch order) and what a correct engine computes from them."""

    keys: int
    staging: str
    files: List[str]
    rows: List[int]
    load_batches: int
    touched: List[List[int]]
    """The keys each small batch touches."""
    emitted: List[Tuple[int, int]] = field(default_factory=list)
    """Sorted ``(key, count so far)``: one per touched key and small batch, at its marked (last) event."""
    final: Dict[int, int] = field(default_factory=dict)
    """The final count of every touched key (every other key: 1)."""

    @property
    def events(self) -> int:
        return sum(self.rows)


def _write(path: str, key: np.ndarray, ts: np.ndarray, mark: np.ndarray, seq: np.ndarray) -> None:
    table = pa.table({"key": pa.array(key, pa.int64()), "ts": pa.array(ts, pa.int64()),
                      "mark": pa.array(mark, pa.int64()), "seq": pa.array(seq, pa.int64())})
    pq.write_table(table, path)


def generate(
    directory: str, keys: int, load_batches: int, small_batches: int, batch_events: int, touched: int, seed: int
) -> GrowthInput:
    """``keys`` idle keys (keys ``0..keys-1``, one event each, spread over ``load_batches`` files), then
    ``small_batches`` files of ``batch_events`` events over ``touched`` random keys each (as many events per key,
    shuffled; the last event of each key is marked)."""
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(seed + 17)
    files, rows = [], []
    seq0 = 0
    for i, part in enumerate(np.array_split(np.arange(keys, dtype=np.int64), load_batches)):
        name = f"load-{i:04d}.parquet"
        seq = np.arange(seq0, seq0 + len(part), dtype=np.int64)
        _write(os.path.join(directory, name), part, T0 + seq, np.zeros(len(part), np.int64), seq)
        files.append(name)
        rows.append(len(part))
        seq0 += len(part)
    counts: Dict[int, int] = {}
    touched_per_batch, emitted = [], []
    per_key = batch_events // touched
    for b in range(small_batches):
        chosen = np.sort(rng.choice(keys, size=touched, replace=False)).astype(np.int64)
        key = rng.permutation(np.repeat(chosen, per_key))
        seq = np.arange(seq0, seq0 + len(key), dtype=np.int64)
        mark = np.zeros(len(key), np.int64)
        last = {int(k): i for i, k in enumerate(key)}  # the last position of each key
        mark[list(last.values())] = 1
        name = f"small-{b:04d}.parquet"
        _write(os.path.join(directory, name), key, T0 + seq, mark, seq)
        files.append(name)
        rows.append(len(key))
        seq0 += len(key)
        for k in chosen.tolist():
            counts[k] = counts.get(k, 1) + per_key
            emitted.append((k, counts[k]))
        touched_per_batch.append(chosen.tolist())
    return GrowthInput(keys, directory, files, rows, load_batches, touched_per_batch, sorted(emitted), counts)


# ----------------------------------------------------------------------------------------------- the package's job
class IdleKeys(KeyedProcessFunction):  # type: ignore[type-arg]
    """Counts the events of each key in a ``ValueState`` and registers one event-time timer per key at
    :data:`TIMER_AT` (never reached here: the keys stay idle); emits ``(key, count)`` on a marked event."""

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        self.count = runtime_context.get_state(COUNT)

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        n = self.count.value()
        if n is None:
            ctx.timer_service().register_event_time_timer(TIMER_AT)
            n = 0
        self.count.update(n + 1)
        if value["mark"] == 1:
            yield (value["key"], n + 1)

    def on_timer(self, timestamp, ctx):  # type: ignore[no-untyped-def]
        self.count.clear()
        yield from ()


# ----------------------------------------------------------------------------------------------- measuring
def snapshot(root: str) -> Dict[str, Tuple[int, int]]:
    """Every file under ``root``: relative path -> (size, mtime in ns)."""
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            try:
                st = os.stat(p)
            except FileNotFoundError:  # removed while walking (old versions pruned)
                continue
            out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns)
    return out


def area(rel: str) -> str:
    """Where a checkpoint file belongs: ``state`` (Spark's state store or the package's keyed state), ``flinkish/<x>``
    (the package's other files) or Spark's logs (``offsets``, ``commits``, ``sources``, ``metadata``)."""
    parts = rel.split(os.sep)
    if parts[0] == "state" or parts[:2] == ["flinkish", "state"]:
        return "state"
    if parts[0] == "flinkish" and len(parts) > 1:
        return "flinkish/" + parts[1]
    return parts[0]


def written(before: Dict[str, Tuple[int, int]], after: Dict[str, Tuple[int, int]]) -> Dict[str, int]:
    """Bytes of the files created or changed between two snapshots, per :func:`area`."""
    out: Dict[str, int] = {}
    for rel, (size, mtime) in after.items():
        if before.get(rel) != (size, mtime):
            a = area(rel)
            out[a] = out.get(a, 0) + size
    return out


@dataclass
class Query:
    """A started query of one engine: ``process_all_available``, ``stop`` and its Spark ``StreamingQuery``."""

    query: Any
    process_all_available: Callable[[], None]
    stop: Callable[[], None]
    check: Callable[[], List[str]]
    """Correctness checks after the last batch: the problems found (empty: all good)."""


def _source(spark: Any, directory: str) -> Any:
    return spark.readStream.schema(INPUT_DDL).option("maxFilesPerTrigger", 1).parquet(directory)


def start_foreach_batch(spark: Any, inp: GrowthInput, source: str, ck: str) -> Query:
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    stream = env.from_dataframe(
        _source(spark, source), WatermarkStrategy.for_monotonous_timestamps(), timestamp_column="ts",
        order_columns=["seq"],
    )
    out: List[Any] = []
    (
        stream.key_by(lambda r: r["key"], key_type=Types.LONG())
        .process(IdleKeys(), output_type=Types.TUPLE([Types.LONG(), Types.LONG()]))
        .uid(UID)
        .add_sink(out.append)
    )
    handle = env.execute("bench_state_growth_" + uuid.uuid4().hex[:8], checkpoint_location=ck)

    def check() -> List[str]:
        from pyspark.sql import functions as F

        from pyspark_flinkish.spark import read_state

        problems = []
        got = sorted((int(k), int(n)) for k, n in out)
        if got != inp.emitted:
            problems.append(f"emitted {len(got)} (key, count) rows, expected {len(inp.emitted)}; first differing: "
                            f"{next(((g, e) for g, e in zip(got, inp.emitted) if g != e), None)}")
        progress = handle.recent_progress()
        keys = progress[-1]["operators"].get(UID, {}).get("numKeys") if progress else None
        if keys != inp.keys:
            problems.append(f"numKeys {keys} after the last batch, expected {inp.keys}")
        row = read_state(spark, ck, UID, COUNT, key_type=Types.LONG()).agg(F.count("*"), F.sum("value")).first()
        if (int(row[0]), int(row[1] or 0)) != (inp.keys, inp.events):
            problems.append(f"read_state: {row[0]} keys summing to {row[1]}, expected {inp.keys} and {inp.events}")
        return problems

    def stop() -> None:
        handle.stop()

    return Query(handle.query, handle.process_all_available, stop, check)


def start_native(spark: Any, inp: GrowthInput, source: str, ck: str, rocksdb: bool) -> Query:
    from pyspark.sql import functions as F

    saved = {k: spark.conf.get(k, None) for k in ROCKSDB_CONF}
    try:
        if rocksdb:
            for k, v in ROCKSDB_CONF.items():
                spark.conf.set(k, v)
        query = (
            _source(spark, source).groupBy("key").count()
            .writeStream.format("noop").outputMode("update").option("checkpointLocation", ck).start()
        )
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)

    def check() -> List[str]:
        problems = []
        state = spark.read.format("statestore").load(ck)
        row = state.agg(F.count("*"), F.sum("value.count")).first()
        if (int(row[0]), int(row[1] or 0)) != (inp.keys, inp.events):
            problems.append(f"state data source: {row[0]} keys summing to {row[1]}, expected {inp.keys} and {inp.events}")
        touched = sorted(inp.final)
        got = {int(r[0]): int(r[1]) for r in state.where(F.col("key.key").isin(touched))
               .select("key.key", "value.count").collect()}
        if got != inp.final:
            problems.append(f"touched keys' counts differ: got {sorted(got.items())[:3]}..., "
                            f"expected {sorted(inp.final.items())[:3]}...")
        return problems

    return Query(query, query.processAllAvailable, query.stop, check)


def start(engine: str, spark: Any, inp: GrowthInput, source: str, ck: str) -> Query:
    if engine == "foreach_batch":
        return start_foreach_batch(spark, inp, source, ck)
    if engine in ("native_hdfs", "native_rocksdb"):
        return start_native(spark, inp, source, ck, rocksdb=engine == "native_rocksdb")
    msg = f"unknown engine {engine!r}; choose from {ENGINES}"
    raise ValueError(msg)


def _progress_ms(query: Any) -> Dict[int, Tuple[int, int]]:
    """Spark's progress of the batches that ran (``addBatch`` timed; not the idle triggers' progress), per batch id:
    (input rows, triggerExecution ms)."""
    import json

    out = {}
    for p in query.recentProgress or []:
        if not isinstance(p, dict):
            p = json.loads(p.json)
        if "addBatch" in p["durationMs"]:
            out[int(p["batchId"])] = (int(p["numInputRows"]), int(p["durationMs"].get("triggerExecution", 0)))
    return out


def run_engine(engine: str, spark: Any, inp: GrowthInput, work: str, log: Callable[[str], None] = print) -> Dict[str, Any]:
    """One engine over ``inp``, one file per micro-batch. Returns per-batch figures (``batches``: rows, ms, wall_s,
    bytes written per area), the problems the correctness checks found (``problems``) and the load and small-batch
    summaries. Raises what the query raised."""
    run = os.path.join(work, f"{engine}-{inp.keys}-{uuid.uuid4().hex[:6]}")
    source, ck = os.path.join(run, "input"), os.path.join(run, "ck")
    os.makedirs(source)
    q = start(engine, spark, inp, source, ck)
    batches = []
    try:
        before = snapshot(ck)
        for i, name in enumerate(inp.files):
            t = time.perf_counter()
            try:
                os.link(os.path.join(inp.staging, name), os.path.join(source, name))  # atomic: the file appears whole
            except OSError:
                tmp = os.path.join(run, name)
                shutil.copyfile(os.path.join(inp.staging, name), tmp)
                os.replace(tmp, os.path.join(source, name))
            q.process_all_available()
            wall = time.perf_counter() - t
            after = snapshot(ck)
            batches.append({"file": name, "wall_s": wall, "bytes": written(before, after)})
            before = after
            if i < inp.load_batches or i == len(inp.files) - 1:
                log(f"    {engine} K={inp.keys:,}: batch {i} ({name}) {wall:.1f} s, "
                    f"{sum(batches[-1]['bytes'].values()):,} bytes written")
        problems = q.check()
        progress = _progress_ms(q.query)
    finally:
        q.stop()
    ran = sorted(progress)
    if len(ran) != len(inp.files):
        problems.append(f"{len(ran)} micro-batches ran (input rows {[progress[b][0] for b in ran]}), expected one per "
                        f"file {inp.rows}")
    else:
        for b, batch_id in zip(batches, ran):
            b["batch_id"], (b["spark_input_rows"], b["ms"]) = batch_id, progress[batch_id]
    small = batches[inp.load_batches:]
    shutil.rmtree(run, ignore_errors=True)
    return {"batches": batches, "problems": problems, **summary(batches[: inp.load_batches], small, inp)}


def summary(load: List[Dict[str, Any]], small: List[Dict[str, Any]], inp: GrowthInput) -> Dict[str, Any]:
    """Load time and bytes; per small batch the median (and range) of time, wall time and bytes written."""
    def med(values: List[float]) -> Optional[float]:
        return statistics.median(values) if values else None

    ms = [b["ms"] for b in small if b.get("ms") is not None]
    total = [sum(b["bytes"].values()) for b in small]
    state = [b["bytes"].get("state", 0) for b in small]
    touched = len(inp.touched[0]) if inp.touched else 0
    return {
        "load_s": sum(b["wall_s"] for b in load), "load_bytes": sum(sum(b["bytes"].values()) for b in load),
        "batch_ms": med(ms), "batch_ms_min": min(ms, default=None), "batch_ms_max": max(ms, default=None),
        "batch_wall_s": med([b["wall_s"] for b in small]),
        "bytes": med(total), "bytes_min": min(total, default=None), "bytes_max": max(total, default=None),
        "state_bytes": med(state), "state_bytes_per_touched_key": med(state) / touched if touched and state else None,
    }


from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # ship this module's classes to workers by value
