"""Kafka in, Kafka out, exactly once: per-key totals of one-minute event-time windows, late events to a second topic.

The PyFlink shape of the most common Flink deployment: ``KafkaSource`` with a watermark per partition, a keyed
tumbling window, its late data as a side output, and two ``KafkaSink``s at ``DeliveryGuarantee.EXACTLY_ONCE``. On
Spark each micro-batch's records are written by the executors in one Kafka transaction per writer, committed with
the batch ([Kafka out](../docs/kafka-and-delta.md#kafka-out)); a consumer of the output topics must read with
``isolation.level=read_committed`` to see each record once.

Input: JSON records ``{"k": "<key>", "t": <epoch ms>, "v": <number>}`` on ``--input``. Output: ``--output`` gets
``{"k", "start", "n", "total"}`` per key and window, keyed by ``k``; ``--late`` gets the late events as they came.
``--produce N`` first sends N generated events to the input topic; every 50th is 3 minutes behind the others, late
once an earlier micro-batch has moved the watermark past its window (run the job again with ``--produce``: the
second copies arrive behind the watermark and go to the late topic). Run with the package
installed (or shipped with ``--py-files``) and Spark's Kafka connector on the classpath::

    python examples/kafka_to_kafka.py --bootstrap-servers localhost:9092 --input events --output totals \\
        --late late-events --checkpoint /tmp/kafka-to-kafka/ck --produce 1000
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from typing import Any, Iterator, List, Optional, Sequence

from pyspark_flinkish.common import Duration, Row, SimpleStringSchema, Types, WatermarkStrategy
from pyspark_flinkish.datastream import OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors.kafka import (
    DeliveryGuarantee,
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from pyspark_flinkish.datastream.formats.json import JsonRowDeserializationSchema, JsonRowSerializationSchema
from pyspark_flinkish.datastream.functions import ProcessWindowFunction
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

EVENT = Types.ROW_NAMED(["k", "t", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])
TOTAL = Types.ROW_NAMED(["k", "start", "n", "total"], [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG()])
LATE = OutputTag("late", EVENT)


class Total(ProcessWindowFunction):  # type: ignore[type-arg]
    """The window's count and sum of ``v``, with the window's start."""

    def process(self, key: str, context: Any, elements: Any) -> Iterator[Row]:
        values = [e["v"] for e in elements]
        yield Row(k=key, start=context.window().start, n=len(values), total=sum(values))


class KeyOf(SimpleStringSchema):
    """The Kafka record key: the element's ``k`` as UTF-8 (Kafka's partitioner then keeps a key's records together)."""

    def serialize(self, element: Any) -> bytes:
        return str(element["k"]).encode()


def sink(servers: str, topic: str, row_type: Any, prefix: str) -> KafkaSink:
    """An exactly-once ``KafkaSink`` writing ``row_type`` rows as JSON to ``topic``, keyed by ``k``."""
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic(topic)
        .set_key_serialization_schema(KeyOf())
        .set_value_serialization_schema(JsonRowSerializationSchema.builder().with_type_info(row_type).build())
        .build()
    )
    return (
        KafkaSink.builder()
        .set_bootstrap_servers(servers)
        .set_record_serializer(serializer)
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix(prefix)
        .build()
    )


def build(env: StreamExecutionEnvironment, args: argparse.Namespace) -> None:
    """The job: source, keyed window with a late side output, two exactly-once sinks."""
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(args.bootstrap_servers)
        .set_topics(args.input)
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_value_only_deserializer(JsonRowDeserializationSchema.builder().type_info(EVENT).build())
        .build()
    )
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5)).with_timestamp_assigner(
        lambda e, _: e["t"]
    )
    events = env.from_source(source, strategy, "events")
    totals = (
        events.key_by(lambda e: e["k"], key_type=Types.STRING())
        .window(TumblingEventTimeWindows.of(Duration.of_minutes(1)))
        .side_output_late_data(LATE)
        .process(Total(), output_type=TOTAL)
    )
    totals.sink_to(sink(args.bootstrap_servers, args.output, TOTAL, "kafka-to-kafka-totals")).uid("totals")
    late = totals.get_side_output(LATE)
    late.sink_to(sink(args.bootstrap_servers, args.late, EVENT, "kafka-to-kafka-late")).uid("late")


def generated(n: int, seed: int = 7) -> List[dict]:  # type: ignore[type-arg]
    """``n`` events over 20 keys, one every 100 ms of event time, slightly out of order; every 50th 3 minutes behind."""
    rng = random.Random(seed)
    events = []
    for i in range(n):
        t = 1_700_000_000_000 + i * 100 + rng.randint(0, 2_000)
        if i % 50 == 49:
            t -= 180_000
        events.append({"k": f"key-{rng.randint(0, 19):02d}", "t": t, "v": rng.randint(1, 100)})
    return events


def produce(servers: str, topic: str, events: List[dict]) -> None:  # type: ignore[type-arg]
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=servers, acks="all")
    try:
        for e in events:
            producer.send(topic, json.dumps(e).encode())
        producer.flush()
    finally:
        producer.close()


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap-servers", required=True, help="Kafka's bootstrap servers (host:port,...)")
    parser.add_argument("--input", required=True, help="the input topic (JSON events {k, t, v})")
    parser.add_argument("--output", required=True, help="the topic of the per-key window totals")
    parser.add_argument("--late", required=True, help="the topic of the late events")
    parser.add_argument("--checkpoint", required=True, help="the job's checkpoint location (Spark's and the package's)")
    parser.add_argument("--produce", type=int, default=0, help="send this many generated events to --input first")
    args = parser.parse_args(argv)
    if args.produce:
        produce(args.bootstrap_servers, args.input, generated(args.produce))

    from pyspark_flinkish.spark import session

    spark = session(app_name="kafka-to-kafka")
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    build(env, args)
    handle = env.execute("kafka-to-kafka", checkpoint_location=args.checkpoint, trigger={"availableNow": True})
    handle.await_termination()
    for p in handle.recent_progress():
        print("batch", p["batch_id"], "sinks", json.dumps(p.get("sink_metrics")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
