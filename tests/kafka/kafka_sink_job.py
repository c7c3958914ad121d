"""A Kafka -> Kafka job run as its own Spark driver process by ``test_kafka_sink_kills.py``.

It reads the JSON events of a one-partition topic with ``env.from_kafka`` (``max_offsets_per_trigger`` micro-batches,
``availableNow``), sums them per key in tumbling event-time windows, and writes the window results and the windows'
late-data side output with two ``KafkaSink``s, ``EXACTLY_ONCE``, to two topics (key: the event's key, value: JSON).

Kill points (each SIGKILLs the driver's JVM and the driver, as if its machine died):

* ``--kill-during-write B``: in the first batch from ``B`` on whose window results have two writers with records
  (a writer takes at most 2 records: ``spark.flinkish.kafkaSink.recordsPerWriter``), once one writer committed its
  transaction and the other handed every record to its producer (they reach the broker in an open transaction),
  before it commits: that task kills the driver, then itself. The batch is left partly committed;
* ``--kill-after-sink-write N``: right after the N-th ``KafkaSink`` write of this process (its transactions
  committed; the batch's other sink, the driver's and Spark's commits not done);
* ``--kill-after-commit N``: right after the driver committed its N-th batch, before Spark commits it;
* ``--kill-after-planning N``: after the N-th batch, as soon as Spark writes the next batch's offsets (between
  batches).

:func:`events` makes the seeded events; :func:`run_local` runs the same pipeline on the JVM-free engine, writing
through the same ``KafkaSink`` to other topics.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from typing import Any, Dict, List, Sequence

from pyspark_flinkish.common import Duration, SimpleStringSchema, Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors.kafka import DeliveryGuarantee, KafkaRecordSerializationSchema, KafkaSink
from pyspark_flinkish.datastream.formats.json import JsonRowSerializationSchema
from pyspark_flinkish.datastream.functions import ProcessWindowFunction
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows
from pyspark_flinkish.testing import sigkill

SEED = 20261127
KEYS = ["k0", "k1", "k2", "k3", "k4", "k5"]
T0 = 1_700_000_000_000
BOUND_MS = 30
WINDOW_MS = 100
EVENT_TYPE = Types.ROW_NAMED(["id", "k", "t", "v"], [Types.LONG(), Types.STRING(), Types.LONG(), Types.LONG()])
WINDOW_TYPE = Types.ROW_NAMED(
    ["k", "start", "n", "total", "ids"], [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG(), Types.STRING()]
)
LATE = OutputTag("late-events", EVENT_TYPE)
RECORDS_PER_WRITER = 2  # records per KafkaSink writer and transaction: most batches have two writers per sink


def events(n: int, seed: int = SEED) -> List[Dict[str, Any]]:
    """``n`` events in production order: event time advances ~10 ms per event with jitter within the watermark
    bound; ~6 % are stragglers 150-400 ms behind (late: their window fired)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        t = T0 + i * 10 + rng.randint(-25, 5)
        if i > 40 and rng.random() < 0.06:
            t -= rng.randint(150, 400)
        out.append({"id": i, "k": rng.choice(KEYS), "t": t, "v": rng.randint(1, 9)})
    return out


class Summary(ProcessWindowFunction):  # type: ignore[type-arg]
    def process(self, key, context, elements):  # type: ignore[no-untyped-def]
        elements = list(elements)
        yield {
            "k": key,
            "start": context.window().start,
            "n": len(elements),
            "total": sum(e["v"] for e in elements),
            "ids": ",".join(str(e["id"]) for e in elements),
        }


class KeyOf(SimpleStringSchema):
    """A record's key: the event's (or window's) key ``k``."""

    def serialize(self, element: Any) -> bytes:
        return str(element["k"]).encode()


def kafka_sink(servers: str, topic: str, row_type: Any, prefix: str) -> KafkaSink:
    return (
        KafkaSink.builder()
        .set_bootstrap_servers(servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic)
            .set_key_serialization_schema(KeyOf())
            .set_value_serialization_schema(JsonRowSerializationSchema.builder().with_type_info(row_type).build())
            .build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix(prefix)
        .build()
    )


def strategy() -> WatermarkStrategy:
    return WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(BOUND_MS))


def build(stream: Any, servers: str, out_topic: str, late_topic: str, prefix: str) -> None:
    windows = (
        stream.key_by(lambda e: e["k"])
        .window(TumblingEventTimeWindows.of(Duration.of_millis(WINDOW_MS)))
        .side_output_late_data(LATE)
        .process(Summary(), output_type=WINDOW_TYPE)
    )
    windows.sink_to(kafka_sink(servers, out_topic, WINDOW_TYPE, prefix)).uid("windows")
    windows.get_side_output(LATE).sink_to(kafka_sink(servers, late_topic, EVENT_TYPE, prefix)).uid("late")


def run_local(in_topic: str, batches: Sequence[Sequence[Dict[str, Any]]], servers: str, out_topic: str,
              late_topic: str) -> None:
    """The pipeline on the JVM-free engine over ``batches`` (one micro-batch each, as Spark read them; the
    source's split named as ``from_kafka`` names it), writing to ``out_topic`` and ``late_topic``."""
    from pyspark.sql import Row

    env = StreamExecutionEnvironment.get_execution_environment()
    split = f"{in_topic}-0"
    micro = [MicroBatch([Row(**e) for e in b], partitions=[split] * len(b)) for b in batches]
    stream = env.from_source(MicroBatchSource(micro, end_of_input=False, partitions=[split]),
                             strategy().with_timestamp_assigner(lambda e, _: e["t"]), "events")
    build(stream, servers, out_topic, late_topic, "kill-test-local")
    env.execute("kafka -> kafka (JVM-free)")


def crash(reason: str, driver: int) -> None:
    """SIGKILL the driver's children (its JVM), the driver, then this process (if it is another); the reason also goes
    to the file ``$KAFKA_SINK_KILLS`` names (a Python worker's output reaches the log through the JVM, which this
    kills)."""
    sigkill.crash(reason, driver, note_to=os.environ.get("KAFKA_SINK_KILLS"))


def wait_for_commit(sink: Any, app: str, writer: int, batch_id: int, timeout: float = 60) -> None:
    """Wait until ``writer``'s marker group says batch ``batch_id`` committed (raises after ``timeout`` s)."""
    from kafka.admin import KafkaAdminClient

    from pyspark_flinkish.datastream.connectors.kafka_producer import committed_batches, marker_group

    group = marker_group(sink, app, writer)
    admin = KafkaAdminClient(bootstrap_servers=sink.bootstrap_servers.split(","))
    try:
        deadline = time.monotonic() + timeout
        while committed_batches(sink, admin, [group])[group] < batch_id:
            if time.monotonic() > deadline:
                msg = f"writer {writer} did not commit batch {batch_id} within {timeout} s"
                raise TimeoutError(msg)
            time.sleep(0.05)
    finally:
        admin.close()


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--in-topic", required=True)
    parser.add_argument("--out-topic", required=True)
    parser.add_argument("--late-topic", required=True)
    parser.add_argument("--max-offsets-per-trigger", type=int, required=True)
    parser.add_argument("--kill-during-write", type=int, default=None)
    parser.add_argument("--kill-after-sink-write", type=int, default=None)
    parser.add_argument("--kill-after-commit", type=int, default=None)
    parser.add_argument("--kill-after-planning", type=int, default=None)
    args = parser.parse_args(argv)

    from pyspark_flinkish.spark import kafka_sink as spark_kafka
    from pyspark_flinkish.spark import session

    t0 = time.monotonic()
    driver = os.getpid()
    spark = session("kafka-sink-kills", master="local[2]", shuffle_partitions=2, spark__default__parallelism="2",
                    spark__flinkish__kafkaSink__recordsPerWriter=str(RECORDS_PER_WRITER))
    spark.sparkContext.setLogLevel("ERROR")
    print(f"session ready t={time.monotonic() - t0:.1f}s", flush=True)

    if args.kill_during_write is not None:
        target = args.kill_during_write
        write = spark_kafka._write

        rendezvous = os.path.dirname(os.environ.get("KAFKA_SINK_KILLS", "")) or args.checkpoint

        def write_then_die(sink: Any, sink_uid: str, app: str, batch_id: int, committed: Any = None) -> Any:
            run = write(sink, sink_uid, app, batch_id, committed)
            if batch_id < target or sink_uid != "windows":
                return run

            def dying(batches: Any) -> Any:
                from pyspark import TaskContext

                writer = TaskContext.get().partitionId()

                def handed() -> Any:
                    n = 0
                    for batch in batches:
                        n += batch.num_rows
                        yield batch
                    if n == 0:
                        return
                    # the first writer of the batch with records to get here commits; the next one dies once it has
                    try:
                        fd = os.open(os.path.join(rendezvous, f"first-writer-{batch_id}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                    except FileExistsError:
                        text = ""
                        while not text:  # the first writer writes its index right after creating the file
                            with open(os.path.join(rendezvous, f"first-writer-{batch_id}")) as f:
                                text = f.read()
                        first = int(text)
                        time.sleep(1.0)  # the producer's sender puts them on the broker, in the open transaction
                        wait_for_commit(sink, app, first, batch_id)
                        crash(f"during the write of batch {batch_id} ({sink_uid}): writer {first} committed, writer "
                              f"{writer}'s transaction open", driver)
                    os.write(fd, str(writer).encode())
                    os.close(fd)

                return run(handed())

            return dying

        spark_kafka._write = write_then_die  # type: ignore[assignment]

    writes = commits = 0
    call = spark_kafka.KafkaBatchWriter.__call__

    def counted(self: Any, spark: Any, frame: Any, batch_id: int, context: Dict[str, Any]) -> None:
        nonlocal writes
        call(self, spark, frame, batch_id, context)
        writes += 1
        print(f"kafka {context.get('sink_uid')} batch_id={batch_id} records={frame.count} write={writes} "
              f"metrics={self.metrics()} t={time.monotonic() - t0:.1f}s", flush=True)
        if args.kill_after_sink_write is not None and writes >= args.kill_after_sink_write:
            crash(f"after Kafka sink write {writes}", driver)

    spark_kafka.KafkaBatchWriter.__call__ = counted  # type: ignore[method-assign]

    env: Any = StreamExecutionEnvironment.get_execution_environment(spark)
    source = env.from_kafka(args.in_topic, args.bootstrap_servers, strategy(), schema=EVENT_TYPE, timestamp_field="t",
                            max_offsets_per_trigger=args.max_offsets_per_trigger)
    build(source, args.bootstrap_servers, args.out_topic, args.late_topic, "kill-test")

    def progress(p: Any) -> None:
        nonlocal commits
        commits += 1
        print(f"committed batch_id={p['batch_id']} sink_metrics={p['sink_metrics']} t={time.monotonic() - t0:.1f}s",
              flush=True)
        if args.kill_after_commit is not None and commits >= args.kill_after_commit:
            crash(f"after commit {commits}", driver)
        if args.kill_after_planning is not None and commits == args.kill_after_planning:
            offsets_log = os.path.join(args.checkpoint, "spark", "offsets")
            sigkill.crash_on_new_entry(lambda: os.listdir(offsets_log), "at planning: new offsets log entry", driver=driver,
                                       note_to=os.environ.get("KAFKA_SINK_KILLS"))

    handle = env.execute("kafka -> kafka", checkpoint_location=args.checkpoint, trigger={"availableNow": True},
                         progress=progress)
    handle.await_termination()
    print(f"done t={time.monotonic() - t0:.1f}s", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
