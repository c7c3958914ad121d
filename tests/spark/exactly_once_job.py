"""A stateful windowed job run as its own Spark driver process by ``test_exactly_once.py``.

The pipeline reads a seeded replay source (out-of-order and late events over 3 source partitions) and
writes four output streams with ``foreach_batch``, each batch to ``<out>/<stream>/batch_id=NNNNNN.parquet``,
replacing what an earlier attempt of the same batch id wrote (idempotent per batch id):

* ``sessions``: event-time session windows with allowed lateness (late firings included);
* ``late``: the session windows' late-data side output;
* ``tumbling``: a tumbling-window aggregate;
* ``timers``: a KeyedProcessFunction's event-time timer outputs;
* ``enriched``: every event enriched by an async request (``AsyncDataStream.ordered_wait`` of :class:`Enrich`, a
  few ms of ``asyncio.sleep`` each, several in flight per partition), i.e. requests run on the executors inside
  each micro-batch.

``--kill-after-sink N`` SIGKILLs this driver (its JVM, then itself: ``pyspark_flinkish.testing.sigkill.crash``) right after its N-th sink write (counted across batches), i.e.
inside a micro-batch after part of its output was written; ``--kill-after-commit N`` right after the driver
committed its state for its N-th batch, before Spark commits the batch (so Spark replays it);
``--kill-after-planning N`` once Spark then starts planning the next batch (its file source logs a new entry).
``--hold-async-from-id N`` makes every async request for an event with ``id >= N`` write a marker file into
``--async-markers`` as it starts and then never complete (it awaits ``asyncio.sleep`` until the process dies), so
the micro-batch holding that event cannot commit: the test SIGKILLs the job once it sees a marker, i.e. with
requests in flight.
``--local`` runs the same pipeline on the JVM-free engine instead and prints the outputs as JSON (the test
imports :func:`build` and :func:`run_local` directly).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from typing import Any, Dict, List, Optional

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.datastream import (
    AsyncDataStream,
    MicroBatch,
    MicroBatchSource,
    OutputTag,
    StreamExecutionEnvironment,
)
from pyspark_flinkish.datastream.functions import (
    AggregateFunction,
    AsyncFunction,
    KeyedProcessFunction,
    ProcessWindowFunction,
)
from pyspark_flinkish.datastream.window import EventTimeSessionWindows, TumblingEventTimeWindows
from pyspark_flinkish.testing.sigkill import crash, crash_on_new_entry

SEED = 20240611
N_BATCHES = 32 if os.environ.get("FLINKISH_KILL_TESTS") == "full" else 16  # make test's smaller default
PARTITIONS = [0, 1, 2]
KEYS = ["k0", "k1", "k2", "k3", "k4", "k5"]
STREAMS = ["sessions", "late", "tumbling", "timers", "enriched"]  # the order of the sinks (and of their writes per batch)
ASYNC_CAPACITY = 3  # fewer than a batch's events per partition: the capacity limit is reached
ASYNC_TIMEOUT_MS = 90_000  # a held request (``--hold-async-from-id``) fails the job only if the test never kills it

EVENT_TYPE = Types.ROW_NAMED(["id", "k", "t", "v"], [Types.LONG(), Types.STRING(), Types.LONG(), Types.LONG()])
SESSION_TYPE = Types.ROW_NAMED(
    ["k", "start", "end", "n", "total", "id_sum", "wm"],
    [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG()],
)
TUMBLING_TYPE = Types.ROW_NAMED(
    ["k", "start", "end", "n", "total", "max_t"],
    [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG()],
)
TIMER_TYPE = Types.ROW_NAMED(
    ["k", "at", "n", "total", "first_id", "last_id"],
    [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG()],
)
ENRICHED_TYPE = Types.ROW_NAMED(
    ["id", "k", "t", "lookup"], [Types.LONG(), Types.STRING(), Types.LONG(), Types.LONG()]
)
TYPES = {
    "sessions": SESSION_TYPE,
    "late": EVENT_TYPE,
    "tumbling": TUMBLING_TYPE,
    "timers": TIMER_TYPE,
    "enriched": ENRICHED_TYPE,
}
LATE = OutputTag("late-events", EVENT_TYPE)


def make_batches(seed: int = SEED, n_batches: int = N_BATCHES) -> List[MicroBatch]:
    """About 10 events per batch (350 in the full run's 32 batches); event time advances ~50 ms per batch, with jitter (out of order across and within
    partitions) and ~8% stragglers 100-400 ms behind (some within the allowed lateness, most beyond it)."""
    rng = random.Random(seed)
    batches, next_id = [], 0
    for i in range(n_batches):
        elements, parts = [], []
        base = 1_000 + i * 50
        for _ in range(rng.randint(6, 14)):
            if i > 2 and rng.random() < 0.08:
                t = base - rng.randint(100, 400)
            else:
                t = base + rng.randint(-30, 60)
            elements.append({"id": next_id, "k": rng.choice(KEYS), "t": t, "v": rng.randint(1, 9)})
            parts.append(rng.choice(PARTITIONS))
            next_id += 1
        batches.append(MicroBatch(elements, partitions=parts))
    return batches


class SessionSummary(ProcessWindowFunction):  # type: ignore[type-arg]
    def process(self, key, context, elements):  # type: ignore[no-untyped-def]
        elements = list(elements)
        w = context.window()
        yield {
            "k": key,
            "start": w.start,
            "end": w.end,
            "n": len(elements),
            "total": sum(e["v"] for e in elements),
            "id_sum": sum(e["id"] for e in elements),
            "wm": context.current_watermark(),
        }


class SumCount(AggregateFunction):  # type: ignore[type-arg]
    def create_accumulator(self):  # type: ignore[no-untyped-def]
        return (0, 0, -1)

    def add(self, value, acc):  # type: ignore[no-untyped-def]
        return (acc[0] + 1, acc[1] + value["v"], max(acc[2], value["t"]))

    def get_result(self, acc):  # type: ignore[no-untyped-def]
        return acc

    def merge(self, a, b):  # type: ignore[no-untyped-def]
        return (a[0] + b[0], a[1] + b[1], max(a[2], b[2]))


def tumbling_result(key, window, results):  # type: ignore[no-untyped-def]
    for n, total, max_t in results:
        yield {"k": key, "start": window.start, "end": window.end, "n": n, "total": total, "max_t": max_t}


class BurstTimer(KeyedProcessFunction):  # type: ignore[type-arg]
    """Per key: the first event of a burst sets an event-time timer 70 ms later; the timer emits the
    burst's count, total and first/last event ids, then clears the state."""

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        from pyspark_flinkish.datastream.state import ValueStateDescriptor

        self.acc = runtime_context.get_state(ValueStateDescriptor("acc"))

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        acc = self.acc.value()
        if acc is None:
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 70)
            acc = [0, 0, value["id"], value["id"]]
        self.acc.update([acc[0] + 1, acc[1] + value["v"], acc[2], value["id"]])

    def on_timer(self, timestamp, ctx):  # type: ignore[no-untyped-def]
        n, total, first, last = self.acc.value()
        yield {"k": ctx.get_current_key(), "at": timestamp, "n": n, "total": total, "first_id": first, "last_id": last}
        self.acc.clear()


class Enrich(AsyncFunction):  # type: ignore[type-arg]
    """An async lookup: waits 2-12 ms (by event id, so requests complete out of input order), then returns the
    event with ``lookup = v * 1000 + id``. With ``hold_from_id`` set, a request for an event with ``id >=
    hold_from_id`` writes ``<markers>/started-<id>-<pid>`` and then never completes (see the module docstring)."""

    def __init__(self, markers: Optional[str] = None, hold_from_id: Optional[int] = None) -> None:
        self.markers = markers
        self.hold_from_id = hold_from_id

    async def async_invoke(self, value):  # type: ignore[no-untyped-def]
        if self.hold_from_id is not None and value["id"] >= self.hold_from_id:
            marker = os.path.join(self.markers, f"started-{value['id']}-{os.getpid()}")  # type: ignore[arg-type]
            with open(marker, "w") as f:
                f.write(f"{time.time()}\n")
            while True:  # in flight until the test SIGKILLs this process
                await asyncio.sleep(0.05)
        await asyncio.sleep((2 + value["id"] * 7 % 11) / 1000)
        return [{"id": value["id"], "k": value["k"], "t": value["t"], "lookup": value["v"] * 1000 + value["id"]}]


def build(env: StreamExecutionEnvironment, async_function: Optional[Enrich] = None) -> Dict[str, Any]:
    """The pipeline on ``env``: the output streams by name (``async_function``: the ``enriched`` stream's, by
    default an :class:`Enrich` that holds no request)."""
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(30)).with_timestamp_assigner(lambda e, _: e["t"])
    events = env.from_source(MicroBatchSource(make_batches(), partitions=PARTITIONS), strategy, "events")
    sessions = (
        events.key_by(lambda e: e["k"])
        .window(EventTimeSessionWindows.with_gap(Duration.of_millis(25)))
        .allowed_lateness(Duration.of_millis(120))
        .side_output_late_data(LATE)
        .process(SessionSummary(), output_type=SESSION_TYPE)
    )
    tumbling = (
        events.key_by(lambda e: e["k"])
        .window(TumblingEventTimeWindows.of(Duration.of_millis(100)))
        .aggregate(SumCount(), window_function=tumbling_result, output_type=TUMBLING_TYPE)
    )
    timers = events.key_by(lambda e: e["k"]).process(BurstTimer(), output_type=TIMER_TYPE)
    enriched = AsyncDataStream.ordered_wait(
        events, async_function or Enrich(), ASYNC_TIMEOUT_MS, ASYNC_CAPACITY, output_type=ENRICHED_TYPE
    )
    return {
        "sessions": sessions,
        "late": sessions.get_side_output(LATE),
        "tumbling": tumbling,
        "timers": timers,
        "enriched": enriched,
    }


def run_local() -> Dict[str, List[Any]]:
    """The same pipeline on the JVM-free engine: every stream's elements in emission order."""
    env = StreamExecutionEnvironment.get_execution_environment()
    out: Dict[str, List[Any]] = {name: [] for name in STREAMS}
    for name, stream in build(env).items():
        stream.add_sink(out[name].append)
    env.execute("exactly-once (local)")
    return out


def write_batch(df: Any, path: str) -> None:
    """Write one batch of one stream as ``path``, replacing what an earlier attempt of the same batch id wrote
    (atomically: a temporary file, then a rename). The DataFrame is a local relation built by the executor,
    so collecting it runs no Spark job (a ``df.write`` would cost a job per stream and batch)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import types as T

    arrow = {T.StringType: pa.string(), T.LongType: pa.int64()}
    schema = pa.schema([(f.name, arrow[type(f.dataType)]) for f in df.schema.fields])
    table = pa.Table.from_pylist([r.asDict() for r in df.collect()], schema=schema)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--kill-after-sink", type=int, default=None)
    parser.add_argument("--kill-after-commit", type=int, default=None)
    parser.add_argument("--kill-after-planning", type=int, default=None)
    parser.add_argument("--async-markers", default=None)
    parser.add_argument("--hold-async-from-id", type=int, default=None)
    args = parser.parse_args(argv)

    from pyspark_flinkish.spark import session

    t0 = time.monotonic()
    spark = session("exactly-once-job", master="local[2]", shuffle_partitions=2, spark__default__parallelism="2")
    spark.sparkContext.setLogLevel("ERROR")
    print(f"session ready t={time.monotonic() - t0:.1f}s", flush=True)
    env: Any = StreamExecutionEnvironment.get_execution_environment(spark)
    writes = commits = 0

    def writer(name: str) -> Any:
        def write(df: Any, batch_id: int) -> None:
            nonlocal writes
            write_batch(df, os.path.join(args.out, name, f"batch_id={batch_id:06d}.parquet"))
            writes += 1
            print(f"sink {name} batch_id={batch_id} write={writes} t={time.monotonic() - t0:.1f}s", flush=True)
            if args.kill_after_sink is not None and writes >= args.kill_after_sink:
                crash(f"after sink write {writes}")

        return write

    for name, stream in build(env, Enrich(args.async_markers, args.hold_async_from_id)).items():
        stream.foreach_batch(writer(name))

    def progress(p: Any) -> None:
        nonlocal commits
        commits += 1
        print(f"committed batch_id={p['batch_id']} replay_batch={p['replay_batch']} t={time.monotonic() - t0:.1f}s", flush=True)
        if args.kill_after_commit is not None and commits >= args.kill_after_commit:
            crash(f"after commit {commits}")
        if args.kill_after_planning is not None and commits == args.kill_after_planning:
            # Spark's file source logs the next batch's file (``spark/sources/0/<n>``) before ``spark/offsets/<batch
            # id>`` (some 10-100 ms apart): a crash in between leaves a source log entry no batch's offsets cover
            source_log = os.path.join(args.checkpoint, "spark", "sources", "0")
            crash_on_new_entry(lambda: os.listdir(source_log), "at planning: new source log entry")

    handle = env.execute("exactly-once", checkpoint_location=args.checkpoint, trigger={"availableNow": True}, progress=progress)
    handle.await_termination()
    print(f"done: {handle.driver.batches_run} batches run in this process t={time.monotonic() - t0:.1f}s", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--local"]:
        print(json.dumps(run_local(), default=str))
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
