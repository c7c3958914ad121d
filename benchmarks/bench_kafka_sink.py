"""Benchmark 12 (standalone), Kafka -> Kafka (issue 26): ``KafkaSink`` at ``EXACTLY_ONCE`` and ``AT_LEAST_ONCE`` against
Spark's own Kafka writer, side by side in one run on one broker.

    .venv/bin/python benchmarks/bench_kafka_sink.py [--events 200000] [--keys 1000] [--batch-rows 20000]
        [--rate 1000] [--seconds 30] [--repeats 1] [--engines exactly_once,at_least_once,native]

The job: JSON events ``{k, t, v, sent}`` from an input topic (2 partitions) are enriched per record (``v`` doubled,
a ``band`` field) and written to an output topic (4 partitions) keyed by ``k``:

* ``exactly_once`` / ``at_least_once``: ``env.from_kafka(...).map(...).sink_to(KafkaSink...)`` (the foreachBatch
  executor; key and value by ``SerializationSchema``s: ``k``, and the enriched event as JSON);
* ``native``: ``spark.readStream.format("kafka")`` → ``from_json`` → the same columns → ``to_json`` →
  ``writeStream.format("kafka")`` (Spark's at-least-once writer; it cannot set a record's Kafka timestamp, which
  Flink's sink sets to the record's timestamp).

Two measurements per engine, each in a fresh checkpoint and output topic:

* **throughput**: ``--events`` events preloaded, read by an ``availableNow`` query in ``--batch-rows``-event
  micro-batches (``maxOffsetsPerTrigger``): wall time of the query and events per second;
* **latency**: a producer thread sends ``--rate`` events per second for ``--seconds`` (each carries its send time in
  ``sent``) while the query runs with a 1-second processing-time trigger; a ``read_committed`` consumer notes when
  each output record arrives; latency = arrival - ``sent``, p50 and p99 over the events sent after the first 5 s.

Each engine first runs a small warm-up query (not reported). Before any figure is printed, every output topic is
read back (``read_committed``) and compared with the input: each event exactly once for ``exactly_once``, at least
once for the others, with the right enrichment; a mismatch is reported and the script exits non-zero. A benchmark,
not a test: it never passes or fails on speed. The broker is the test broker
(``pyspark_flinkish.testing.kafka.KafkaBroker``, ``make jars`` first).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid
from typing import Any, Dict, List, Optional, Tuple

ENGINES = ("exactly_once", "at_least_once", "native")
SCHEMA = "k STRING, t BIGINT, v BIGINT, sent BIGINT"


def _events(n: int, keys: int, seed: int = 7) -> List[Dict[str, Any]]:
    rng = random.Random(seed)
    return [{"k": f"k{rng.randrange(keys)}", "t": 1_767_225_600_000 + i, "v": rng.randrange(1000), "sent": 0}
            for i in range(n)]


def _enrich(e: Any) -> Dict[str, Any]:
    return {"k": e["k"], "t": e["t"], "v2": e["v"] * 2, "band": "high" if e["v"] >= 500 else "low", "sent": e["sent"]}


def _flinkish_query(spark: Any, engine: str, servers: str, in_topic: str, out_topic: str, checkpoint: str,
                    trigger: Dict[str, Any], batch_rows: Optional[int]) -> Any:
    from pyspark_flinkish.common import SimpleStringSchema
    from pyspark_flinkish.datastream import StreamExecutionEnvironment
    from pyspark_flinkish.datastream.connectors.kafka import DeliveryGuarantee, KafkaRecordSerializationSchema, KafkaSink

    class KeyOf(SimpleStringSchema):
        def serialize(self, element: Any) -> bytes:
            return str(element["k"]).encode()

    class JsonOf(SimpleStringSchema):
        def serialize(self, element: Any) -> bytes:
            return json.dumps(element).encode()

    guarantee = DeliveryGuarantee.EXACTLY_ONCE if engine == "exactly_once" else DeliveryGuarantee.AT_LEAST_ONCE
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(out_topic)
            .set_key_serialization_schema(KeyOf())
            .set_value_serialization_schema(JsonOf())
            .build()
        )
        .set_delivery_guarantee(guarantee)
        .set_transactional_id_prefix(f"bench-{uuid.uuid4().hex[:8]}")
        .build()
    )
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    events = env.from_kafka(in_topic, servers, schema=SCHEMA, timestamp_field="t", max_offsets_per_trigger=batch_rows)
    events.map(_enrich).sink_to(sink).uid("enriched")
    return env.execute(f"bench-kafka-{engine}", checkpoint_location=checkpoint, trigger=trigger)


def _native_query(spark: Any, servers: str, in_topic: str, out_topic: str, checkpoint: str, trigger: Dict[str, Any],
                  batch_rows: Optional[int]) -> Any:
    from pyspark.sql import functions as F

    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", servers).option("subscribe", in_topic)
              .option("startingOffsets", "earliest"))
    if batch_rows:
        reader = reader.option("maxOffsetsPerTrigger", str(batch_rows))
    e = reader.load().select(F.from_json(F.col("value").cast("string"), SCHEMA).alias("e")).select("e.*")
    out = e.select(
        F.col("k").alias("key"),
        F.to_json(F.struct("k", "t", (F.col("v") * 2).alias("v2"),
                           F.when(F.col("v") >= 500, "high").otherwise("low").alias("band"), "sent")).alias("value"),
    )
    return (out.writeStream.format("kafka").option("kafka.bootstrap.servers", servers).option("topic", out_topic)
            .option("checkpointLocation", checkpoint).trigger(**trigger).start())


def _start(spark: Any, engine: str, servers: str, in_topic: str, out_topic: str, checkpoint: str,
           trigger: Dict[str, Any], batch_rows: Optional[int]) -> Tuple[Any, Any]:
    """(something with ``stop()``, the Spark query)."""
    if engine == "native":
        q = _native_query(spark, servers, in_topic, out_topic, checkpoint, trigger, batch_rows)
        return q, q
    handle = _flinkish_query(spark, engine, servers, in_topic, out_topic, checkpoint, trigger, batch_rows)
    return handle, handle.query


def _read_back(broker: Any, topic: str, expected: int) -> List[Any]:
    return broker.consume(topic, timeout=120, expected=expected, isolation_level="read_committed")


def _check(engine: str, inputs: List[Dict[str, Any]], records: List[Any]) -> Optional[str]:
    want: Dict[Tuple[str, int], Dict[str, Any]] = {(e["k"], e["t"]): _enrich(e) for e in inputs}
    seen: Dict[Tuple[str, int], int] = {}
    for r in records:
        value = json.loads(r.value)
        key = (value["k"], value["t"])
        if key not in want or value != want[key] or r.key.decode() != value["k"]:
            return f"{engine}: unexpected record {value} (key {r.key!r})"
        seen[key] = seen.get(key, 0) + 1
    missing = len(want) - len(seen)
    duplicated = sum(n - 1 for n in seen.values())
    if missing:
        return f"{engine}: {missing} of {len(want)} events missing"
    if engine == "exactly_once" and duplicated:
        return f"{engine}: {duplicated} duplicates read committed"
    return None


def _sink_totals(handle: Any) -> Dict[str, int]:
    """The ``KafkaSink``'s metrics summed over the query's batches (``{}`` for the native writer)."""
    totals: Dict[str, int] = {}
    for p in handle.recent_progress() if hasattr(handle, "recent_progress") else []:
        for metrics in (p.get("sink_metrics") or {}).values():
            for k, v in metrics.items():
                totals[k] = totals.get(k, 0) + v
    return totals


def throughput(spark: Any, broker: Any, engine: str, events: List[Dict[str, Any]], batch_rows: int,
               work: str) -> Tuple[float, Optional[str]]:
    tag = uuid.uuid4().hex[:6]
    in_topic = broker.create_topic(f"bench-in-{engine}-{tag}", 2)
    out_topic = broker.create_topic(f"bench-out-{engine}-{tag}", 4)
    broker.produce(in_topic, [json.dumps(e) for e in events], keys=[e["k"] for e in events])
    t0 = time.perf_counter()
    stopper, query = _start(spark, engine, broker.bootstrap_servers, in_topic, out_topic,
                            os.path.join(work, f"tp-{engine}-{tag}"), {"availableNow": True}, batch_rows)
    query.awaitTermination()
    wall = time.perf_counter() - t0
    stopper.stop()
    totals = _sink_totals(stopper)
    if totals:
        print(f"  {engine}: {totals.get('transactions_committed', 0)} transactions, "
              f"{totals.get('producers_created', 0)} producers created", flush=True)
    return wall, _check(engine, events, _read_back(broker, out_topic, len(events)))


def latency(spark: Any, broker: Any, engine: str, keys: int, rate: int, seconds: float,
            work: str) -> Tuple[List[float], Optional[str]]:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    tag = uuid.uuid4().hex[:6]
    in_topic = broker.create_topic(f"bench-lin-{engine}-{tag}", 2)
    out_topic = broker.create_topic(f"bench-lout-{engine}-{tag}", 4)
    servers = broker.bootstrap_servers
    stopper, _query = _start(spark, engine, servers, in_topic, out_topic, os.path.join(work, f"lat-{engine}-{tag}"),
                             {"processingTime": "1 second"}, None)
    arrivals: Dict[Tuple[str, int], float] = {}
    done = threading.Event()

    def consume() -> None:
        consumer = KafkaConsumer(bootstrap_servers=servers, isolation_level="read_committed", enable_auto_commit=False)
        parts = [TopicPartition(out_topic, p) for p in range(4)]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        while not done.is_set():
            for rs in consumer.poll(timeout_ms=100).values():
                now = time.time() * 1000
                for r in rs:
                    v = json.loads(r.value)
                    arrivals.setdefault((v["k"], v["t"]), now - v["sent"])
        consumer.close()

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    producer = KafkaProducer(bootstrap_servers=servers, linger_ms=5)
    sent: List[Dict[str, Any]] = []
    rng = random.Random(11)
    start = time.time()
    i = 0
    while time.time() - start < seconds:
        due = int((time.time() - start) * rate)
        while i < due:
            e = {"k": f"k{rng.randrange(keys)}", "t": 1_767_225_600_000 + i, "v": rng.randrange(1000),
                 "sent": int(time.time() * 1000)}
            producer.send(in_topic, key=e["k"].encode(), value=json.dumps(e).encode())
            sent.append(e)
            i += 1
        time.sleep(0.01)
    producer.flush()
    producer.close()
    deadline = time.time() + 120
    while len(arrivals) < len(sent) and time.time() < deadline:
        time.sleep(0.5)
    done.set()
    reader.join(timeout=10)
    stopper.stop()
    problem = _check(engine, sent, _read_back(broker, out_topic, len(sent)))
    warm = start * 1000 + 5_000
    return [arrivals[(e["k"], e["t"])] for e in sent if e["sent"] >= warm and (e["k"], e["t"]) in arrivals], problem


def _pct(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--batch-rows", type=int, default=20_000)
    parser.add_argument("--rate", type=int, default=1_000)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--engines", default=",".join(ENGINES))
    args = parser.parse_args(argv)
    engines = [e for e in args.engines.split(",") if e]
    unknown = sorted(set(engines) - set(ENGINES))
    if unknown:
        parser.error(f"unknown engines {unknown}; choose from {ENGINES}")

    from pyspark_flinkish.spark import session
    from pyspark_flinkish.testing.kafka import KafkaBroker

    events = _events(args.events, args.keys)
    work = tempfile.mkdtemp(prefix="bench-kafka-sink-")
    spark = session("bench-kafka-sink", master="local[2]", shuffle_partitions=2)
    spark.sparkContext.setLogLevel("ERROR")
    walls: Dict[str, List[float]] = {e: [] for e in engines}
    lats: Dict[str, List[float]] = {e: [] for e in engines}
    problems: List[str] = []
    with KafkaBroker() as broker:
        for engine in engines:  # warm-up, not reported: the first query of a session pays for its JIT and workers
            throughput(spark, broker, engine, events[:2_000], 1_000, work)
        for _ in range(args.repeats):
            for engine in engines:  # side by side: the engines alternate within each repeat
                wall, problem = throughput(spark, broker, engine, events, args.batch_rows, work)
                walls[engine].append(wall)
                problems += [problem] if problem else []
                print(f"throughput {engine}: {wall:.1f} s, {args.events / wall:,.0f} events/s", flush=True)
            for engine in engines:
                values, problem = latency(spark, broker, engine, args.keys, args.rate, args.seconds, work)
                lats[engine].extend(values)
                problems += [problem] if problem else []
                print(f"latency {engine}: p50 {_pct(values, 0.5):,.0f} ms, p99 {_pct(values, 0.99):,.0f} ms "
                      f"({len(values)} events)", flush=True)
    spark.stop()
    if problems:
        for p in problems:
            print(f"MISMATCH {p}", file=sys.stderr)
        return 1
    print()
    print(f"{args.events:,} events, {args.keys:,} keys, {args.batch_rows:,}-event micro-batches; latency at "
          f"{args.rate:,} events/s for {args.seconds:.0f} s; {args.repeats} repeat(s)")
    print("| engine | wall (median) | events/s | vs native | latency p50 | p99 |")
    print("|---|---|---|---|---|---|")
    native = statistics.median(walls["native"]) if walls.get("native") else None
    for engine in engines:
        wall = statistics.median(walls[engine])
        ratio = f"{wall / native:.2f}x" if native else "-"
        print(f"| {engine} | {wall:.1f} s | {args.events / wall:,.0f} | {ratio} | {_pct(lats[engine], 0.5):,.0f} ms "
              f"| {_pct(lats[engine], 0.99):,.0f} ms |")
    if walls.get("exactly_once") and walls.get("at_least_once"):
        overhead = statistics.median(walls["exactly_once"]) / statistics.median(walls["at_least_once"]) - 1
        print(f"\nexactly-once overhead over at-least-once (wall): {overhead:+.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
