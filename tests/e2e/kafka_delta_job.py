"""Real Kafka in, real Delta out: the job ``test_kafka_to_delta_exactly_once.py`` runs (and SIGKILLs) as its own
Spark driver process.

The pipeline reads a 4-partition topic of JSON events (``id``, ``k``, ``t``, ``v``) with ``env.from_kafka``
(event time from ``t``, bounded out-of-orderness, a watermark per Kafka partition, ``max_offsets_per_trigger``
micro-batches) and writes three Delta tables under ``<lake>``:

* ``sessions`` (append): event-time session windows per key with allowed lateness; every firing (on time and
  late) is a row, with the watermark at the firing;
* ``late`` (append): the session windows' late-data side output (the events themselves);
* ``tumbling`` (merge on ``k``, ``start``): a tumbling 1-minute count/sum per key.

Kill hooks (all SIGKILL the driver's JVM, then the driver, as if its machine died: ``pyspark_flinkish.testing.sigkill``):

* ``--kill-after-delta-commit N``: right after the N-th Delta write of this process (3 per batch), i.e. inside a
  micro-batch after part (or all) of its output is committed to Delta, before the driver and Spark commit it;
* ``--kill-after-commit N``: right after the driver committed its state for its N-th batch, before Spark commits
  the batch (Spark replays a batch whose Delta commits are all done);
* ``--kill-after-planning N``: after the N-th batch, as soon as Spark writes the next batch's offsets
  (``spark/offsets/<id>``), i.e. a batch planned and not started.

``--checkpoint`` and ``--lake`` are paths or URIs (the test gives ``hdfs://`` ones, on its test HDFS): the tables
are ``<lake>/<name>``, and the planning hook lists the offsets log through the package's storage layer
(:mod:`pyspark_flinkish.spark.storage`: hdfs-native on ``hdfs://``, no JVM).

:func:`events` makes the seeded event stream the test produces; :func:`run_local` computes the same pipeline on
the JVM-free engine over given micro-batches (the test rebuilds them from Spark's offsets log).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Any, Dict, List, Sequence, Tuple

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import AggregateFunction, ProcessWindowFunction
from pyspark_flinkish.datastream.window import EventTimeSessionWindows, TumblingEventTimeWindows
from pyspark_flinkish.testing.sigkill import crash, crash_on_new_entry

SEED = 20250117
PARTITIONS = 4
N_KEYS = 40
T0 = 1_700_000_000_000  # event time of the first event (epoch ms)
BOUND_MS = 2_000  # bounded out-of-orderness
SESSION_GAP_MS = 5_000
ALLOWED_LATENESS_MS = 120_000
TABLES = ["sessions", "late", "tumbling"]  # the order of the sinks (and of their Delta writes per batch)
MERGE_KEYS = {"tumbling": ["k", "start"]}

EVENT_TYPE = Types.ROW_NAMED(["id", "k", "t", "v"], [Types.LONG(), Types.STRING(), Types.LONG(), Types.LONG()])
SESSION_TYPE = Types.ROW_NAMED(
    ["k", "start", "end", "n", "total", "id_sum", "wm"],
    [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG()],
)
TUMBLING_TYPE = Types.ROW_NAMED(
    ["k", "start", "end", "n", "total", "max_t"],
    [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG()],
)
TYPES = {"sessions": SESSION_TYPE, "late": EVENT_TYPE, "tumbling": TUMBLING_TYPE}
LATE = OutputTag("late-events", EVENT_TYPE)

Event = Dict[str, Any]


def events(n: int, seed: int = SEED) -> List[Tuple[int, Event]]:
    """``n`` (partition, event) pairs in production order, seeded.

    A clock advances 0-40 ms per event. Each of ``N_KEYS`` keys is active in on/off cycles (40-120 s, on 30-60 %
    of it), so its events form sessions; key ``kNN`` lives on partition ``NN % 4``, and partition 3 runs 30 s
    behind the others (Spark's global watermark would drop its records; Flink's per-partition one does not).
    Event times jitter up to 1.5 s backwards (within the 2 s bound); 2 % are stragglers 60-900 s behind, so some
    are on time, some late within the allowed lateness and most beyond it.
    """
    rng = random.Random(seed)
    keys = [f"k{i:02d}" for i in range(N_KEYS)]
    cycles = {}
    for k in keys:
        cycle = rng.randint(40_000, 120_000)
        cycles[k] = (cycle, int(cycle * rng.uniform(0.3, 0.6)), rng.randint(0, cycle))
    lag = {p: (-30_000 if p == 3 else 0) for p in range(PARTITIONS)}
    clock, out = T0, []
    for i in range(n):
        clock += rng.randint(0, 40)
        active = [k for k in keys if (clock + cycles[k][2]) % cycles[k][0] < cycles[k][1]] or keys
        k = rng.choice(active)
        p = int(k[1:]) % PARTITIONS
        t = clock + lag[p] - rng.randint(0, 1_500)
        if rng.random() < 0.02:
            t -= rng.randint(60_000, 900_000)
        out.append((p, {"id": i, "k": k, "t": t, "v": rng.randint(1, 9)}))
    return out


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


def strategy() -> WatermarkStrategy:
    # no idleness: it reads the driver's wall clock, which the JVM-free reference could not reproduce (and every
    # partition has records in every micro-batch anyway)
    return WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(BOUND_MS))


def build(events_stream: Any) -> Dict[str, Any]:
    """The pipeline after the source: the three output streams by table name."""
    sessions = (
        events_stream.key_by(lambda e: e["k"])
        .window(EventTimeSessionWindows.with_gap(Duration.of_millis(SESSION_GAP_MS)))
        .allowed_lateness(Duration.of_millis(ALLOWED_LATENESS_MS))
        .side_output_late_data(LATE)
        .process(SessionSummary(), output_type=SESSION_TYPE)
    )
    tumbling = (
        events_stream.key_by(lambda e: e["k"])
        .window(TumblingEventTimeWindows.of(Duration.of_minutes(1)))
        .aggregate(SumCount(), window_function=tumbling_result, output_type=TUMBLING_TYPE)
    )
    return {"sessions": sessions, "late": sessions.get_side_output(LATE), "tumbling": tumbling}


def run_local(topic: str, batches: Sequence[Sequence[Tuple[int, int, Event]]]) -> Dict[str, List[Any]]:
    """The pipeline on the JVM-free engine over ``batches`` of (partition, offset, event): one micro-batch each, in
    (partition, offset) order, each record in its Kafka partition's split ``<topic>-<partition>`` (as
    ``from_kafka`` names them); the stream does not end (a Kafka stream does not). Every stream's elements in
    emission order."""
    from pyspark.sql import Row

    micro = []
    for records in batches:
        ordered = sorted(records, key=lambda r: (r[0], r[1]))
        micro.append(MicroBatch([Row(**e) for _, _, e in ordered], partitions=[f"{topic}-{p}" for p, _, _ in ordered]))
    env = StreamExecutionEnvironment.get_execution_environment()
    source = MicroBatchSource(micro, end_of_input=False, partitions=[f"{topic}-{p}" for p in range(PARTITIONS)])
    stream = env.from_source(source, strategy().with_timestamp_assigner(lambda e, _: e["t"]), "replay")
    out: Dict[str, List[Any]] = {name: [] for name in TABLES}
    for name, s in build(stream).items():
        s.add_sink(out[name].append)
    env.execute("kafka-to-delta (JVM-free)")
    return out


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--lake", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--max-offsets-per-trigger", type=int, required=True)
    parser.add_argument("--kill-after-delta-commit", type=int, default=None)
    parser.add_argument("--kill-after-commit", type=int, default=None)
    parser.add_argument("--kill-after-planning", type=int, default=None)
    args = parser.parse_args(argv)

    from pyspark_flinkish.datastream.connectors.delta import DeltaSink
    from pyspark_flinkish.spark import delta as spark_delta
    from pyspark_flinkish.spark import session, storage

    t0 = time.monotonic()
    # a MERGE's file list and every Delta log checkpoint in 2 tasks instead of Delta's 50 (tests/conftest.py)
    spark = session("kafka-to-delta", master="local[2]", shuffle_partitions=2, spark__default__parallelism="2",
                    spark__databricks__delta__snapshotPartitions="2")
    spark.sparkContext.setLogLevel("ERROR")
    print(f"session ready t={time.monotonic() - t0:.1f}s", flush=True)

    writes = commits = 0
    write_batch = spark_delta.DeltaBatchWriter.__call__

    def counted(self: Any, spark: Any, frame: Any, batch_id: int, context: Dict[str, Any]) -> None:
        nonlocal writes
        write_batch(self, spark, frame, batch_id, context)
        writes += 1
        uid = context.get("sink_uid")
        print(f"delta {uid} batch_id={batch_id} rows={frame.count} write={writes} t={time.monotonic() - t0:.1f}s", flush=True)
        if args.kill_after_delta_commit is not None and writes >= args.kill_after_delta_commit:
            crash(f"after Delta write {writes}")

    spark_delta.DeltaBatchWriter.__call__ = counted  # type: ignore[method-assign]

    env: Any = StreamExecutionEnvironment.get_execution_environment(spark)
    source = env.from_kafka(
        args.topic,
        args.bootstrap_servers,
        strategy(),
        schema=EVENT_TYPE,
        timestamp_field="t",
        max_offsets_per_trigger=args.max_offsets_per_trigger,
    )
    for name, stream in build(source).items():
        sink = DeltaSink.for_path(storage.join(args.lake, name), merge_keys=MERGE_KEYS.get(name, ()))  # a URI stays one
        stream.sink_to(sink).uid(name)

    def progress(p: Any) -> None:
        nonlocal commits
        commits += 1
        print(f"committed batch_id={p['batch_id']} t={time.monotonic() - t0:.1f}s durations={p['durations_ms']}", flush=True)
        if args.kill_after_commit is not None and commits >= args.kill_after_commit:
            crash(f"after commit {commits}")
        if args.kill_after_planning is not None and commits == args.kill_after_planning:
            # listed through the package's storage layer: the checkpoint may be a path or an hdfs:// (or other) URI
            offsets_log = storage.join(args.checkpoint, "spark", "offsets")
            crash_on_new_entry(lambda: storage.list_names(offsets_log), "at planning: new offsets log entry")

    handle = env.execute("kafka-to-delta", checkpoint_location=args.checkpoint, trigger={"availableNow": True}, progress=progress)
    handle.await_termination()
    print(f"done: {handle.driver.batches_run} batches run in this process t={time.monotonic() - t0:.1f}s", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
