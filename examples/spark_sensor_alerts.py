"""Fire alarm as a ``spark-submit`` job: a high temperature followed by smoke within 10 minutes, per sensor.

A ``KeyedProcessFunction`` per sensor buffers its readings and evaluates them in event-time order when the
watermark passes them (an event-time timer per reading), so readings that arrive out of order within the
watermark's bound still match. A temperature of at least ``--temperature`` arms the sensor for 10 minutes (a
timer disarms it); smoke of at least ``--smoke`` while armed raises an alert, after which the sensor does not
re-arm for 10 minutes (one alert per fire). Readings behind the watermark are
dropped and counted in the ``late`` table.

Input (one of):

* default: a generated, bounded replay of ``--batches`` micro-batches of sensor readings (``--seed``), each a
  micro-batch as Flink's execution model says; the end of input fires every pending timer;
* ``--kafka HOST:PORT --topic T``: JSON records ``{"sensor": "s-01", "ts": <epoch ms>, "kind": "temp"|"smoke",
  "value": <float>}``, with a watermark per Kafka partition and idleness (``--produce`` first sends the generated
  readings to the topic).

Output: Delta tables ``<out>/alerts`` (sensor, temp_ts, temperature, smoke_ts, smoke) and ``<out>/late``, written
exactly-once per micro-batch (``DeltaSink``). Submit with the package shipped as a zip (see
``docs/examples.md``)::

    spark-submit --master local[2] --py-files dist/pyspark_flinkish.zip --jars $(ls .jars/spark/*.jar | paste -sd,) \\
        examples/spark_sensor_alerts.py --out /tmp/sensors/out --checkpoint /tmp/sensors/ck
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from typing import Any, Dict, Iterator, List, Optional, Sequence

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.state import ListStateDescriptor, ValueStateDescriptor

MINUTE = 60_000
WITHIN_MS = 10 * MINUTE
OUT_OF_ORDERNESS_MS = 30_000
READING = Types.ROW_NAMED(["sensor", "ts", "kind", "value"], [Types.STRING(), Types.LONG(), Types.STRING(), Types.DOUBLE()])
ALERT = Types.ROW_NAMED(
    ["sensor", "temp_ts", "temperature", "smoke_ts", "smoke"],
    [Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.LONG(), Types.DOUBLE()],
)


# ----------------------------------------------------------------------------- the pipeline (any engine)
class FireAlert(KeyedProcessFunction):  # type: ignore[type-arg]
    """Per sensor: smoke (>= ``smoke``) within ``within_ms`` after a temperature >= ``temperature``."""

    def __init__(self, temperature: float, smoke: float, within_ms: int, late: OutputTag) -> None:
        self.temperature = temperature
        self.smoke = smoke
        self.within_ms = within_ms
        self.late = late

    def open(self, runtime_context: Any) -> None:
        self.buffer = runtime_context.get_list_state(ListStateDescriptor("buffer", Types.PICKLED_BYTE_ARRAY()))
        self.armed = runtime_context.get_state(ValueStateDescriptor("armed", Types.PICKLED_BYTE_ARRAY()))
        self.quiet_until = runtime_context.get_state(ValueStateDescriptor("quiet-until", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        if value.ts <= ctx.timer_service().current_watermark():
            yield self.late, value  # behind the watermark: its moment has been evaluated already
            return
        self.buffer.add((value.ts, value.kind, value.value))
        ctx.timer_service().register_event_time_timer(value.ts)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Dict[str, Any]]:
        readings = sorted(self.buffer.get() or [])
        due = [r for r in readings if r[0] <= timestamp]
        self.buffer.update([r for r in readings if r[0] > timestamp])
        for ts, kind, value in due:  # in event-time order
            armed = self.armed.value()
            if armed is not None and ts - armed[0] > self.within_ms:
                armed = None
                self.armed.clear()
            if kind == "temp" and value >= self.temperature and ts > (self.quiet_until.value() or 0):
                self.armed.update((ts, value))
                ctx.timer_service().register_event_time_timer(ts + self.within_ms + 1)  # disarm
            elif kind == "smoke" and value >= self.smoke and armed is not None:
                yield {"sensor": ctx.get_current_key(), "temp_ts": armed[0], "temperature": armed[1],
                       "smoke_ts": ts, "smoke": value}
                self.armed.clear()
                self.quiet_until.update(ts + self.within_ms)  # one alert per fire: no re-arming for a while
        armed = self.armed.value()
        if armed is not None and timestamp - armed[0] > self.within_ms:
            self.armed.clear()


def watermark_strategy(idleness_ms: Optional[int] = None) -> WatermarkStrategy:
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(OUT_OF_ORDERNESS_MS))
    return strategy if idleness_ms is None else strategy.with_idleness(Duration.of_millis(idleness_ms))


def build(readings: Any, temperature: float = 60.0, smoke: float = 0.5) -> Dict[str, Any]:
    """The pipeline over a stream of readings (``Row``s with sensor, ts, kind, value); returns the streams to sink."""
    late = OutputTag("late-readings", READING)
    alerts = readings.key_by(lambda r: r.sensor).process(FireAlert(temperature, smoke, WITHIN_MS, late), output_type=ALERT)
    return {"alerts": alerts, "late": alerts.get_side_output(late)}


def generate(batches: int, sensors: int, seed: int) -> List[MicroBatch]:
    """Readings every ~20 s per sensor (temperature and smoke), a fire now and then (heat, then smoke minutes
    later), delivered up to 20 s out of order and, rarely, minutes late. One micro-batch per simulated minute."""
    from pyspark.sql import Row  # a plain Python class: no JVM needed

    rng = random.Random(seed)
    base = 1_700_000_000_000
    arrivals = []
    for s in range(sensors):
        name = f"s-{s:02d}"
        fire_at = {rng.randrange(0, batches * MINUTE) for _ in range(rng.randint(0, 2))}
        t = rng.randrange(0, 20_000)
        while t < batches * MINUTE:
            hot = any(0 <= t - f < 6 * MINUTE for f in fire_at)
            smoky = any(3 * MINUTE <= t - f < 12 * MINUTE for f in fire_at)
            temp = round(rng.uniform(70, 95) if hot else rng.uniform(18, 30), 1)
            smoke_level = round(rng.uniform(0.6, 1.0) if smoky else rng.uniform(0.0, 0.2), 2)
            delay = rng.randrange(0, 20_000) if rng.random() > 0.01 else rng.randrange(2 * MINUTE, 4 * MINUTE)
            for kind, value in (("temp", temp), ("smoke", smoke_level)):
                arrivals.append((t + delay, Row(sensor=name, ts=base + t, kind=kind, value=float(value))))
            t += rng.randrange(15_000, 25_000)
    arrivals.sort(key=lambda a: (a[0], a[1].sensor, a[1].ts, a[1].kind))
    out = [[] for _ in range(batches + 4)]  # type: List[List[Any]]
    for arrival, row in arrivals:
        out[min(arrival // MINUTE, len(out) - 1)].append(row)
    return [MicroBatch(rows) for rows in out]


# ----------------------------------------------------------------------------- Spark job
def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Fire alarm with pyspark_flinkish on Spark: a high temperature followed by smoke within 10 minutes "
        "per sensor (KeyedProcessFunction, event-time timers); alerts and late readings go to Delta tables.",
        epilog="Submit with spark-submit (--py-files <pyspark_flinkish zip>, --jars <Delta jars>); see docs/examples.md.",
    )
    parser.add_argument("--out", required=True, help="output folder: Delta tables <out>/alerts and <out>/late")
    parser.add_argument("--checkpoint", required=True, help="checkpoint folder (offsets, keyed state, watermarks)")
    parser.add_argument("--batches", type=int, default=60, help="generated input: simulated minutes (default 60)")
    parser.add_argument("--sensors", type=int, default=10, help="generated input: number of sensors (default 10)")
    parser.add_argument("--seed", type=int, default=3, help="generated input: random seed (default 3)")
    parser.add_argument("--temperature", type=float, default=60.0, help="alarm temperature (default 60)")
    parser.add_argument("--smoke", type=float, default=0.5, help="alarm smoke level (default 0.5)")
    parser.add_argument("--kafka", default=None, metavar="HOST:PORT", help="read the Kafka topic --topic instead")
    parser.add_argument("--topic", default="sensor-readings", help="Kafka topic (default sensor-readings)")
    parser.add_argument("--produce", action="store_true", help="with --kafka: first send the generated readings there")
    parser.add_argument(
        "--available-now", action="store_true", help="with --kafka: process what the topic holds, then stop"
    )
    parser.add_argument("--shuffle-partitions", type=int, default=2, help="spark.sql.shuffle.partitions (default 2)")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    from pyspark.sql import SparkSession

    from pyspark_flinkish.datastream.connectors.delta import DeltaSink
    from pyspark_flinkish.spark import configure

    out, checkpoint = os.path.abspath(args.out), os.path.abspath(args.checkpoint)
    builder = SparkSession.builder.appName("flinkish-sensor-alerts")
    spark = configure(builder, shuffle_partitions=args.shuffle_partitions).getOrCreate()
    try:
        env: Any = StreamExecutionEnvironment.get_execution_environment(spark)
        batches = generate(args.batches, args.sensors, args.seed)
        if args.kafka:
            if args.produce:
                _produce(args.kafka, args.topic, [r for b in batches for r in b.elements])
            readings = env.from_kafka(args.topic, args.kafka, watermark_strategy(idleness_ms=60_000), schema=READING,
                                      timestamp_field="ts")
            trigger: Dict[str, Any] = {"availableNow": True} if args.available_now else {"processingTime": "5 seconds"}
        else:
            strategy = watermark_strategy().with_timestamp_assigner(lambda r, _: r.ts)
            readings = env.from_source(MicroBatchSource(batches), strategy, "sensor-readings")
            trigger = {"availableNow": True}
        streams = build(readings, args.temperature, args.smoke)
        streams["alerts"].sink_to(DeltaSink.for_path(os.path.join(out, "alerts"))).uid("alerts")
        streams["late"].sink_to(DeltaSink.for_path(os.path.join(out, "late"))).uid("late")
        handle = env.execute("sensor-alerts", checkpoint_location=checkpoint, trigger=trigger,
                             progress=lambda p: print(f"batch {p['batch_id']}: {p['sink_records']}", flush=True))
        handle.await_termination()
        print(f"done: alerts in {os.path.join(out, 'alerts')}", flush=True)
    finally:
        spark.stop()
    return 0


def _produce(servers: str, topic: str, rows: List[Any]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=servers, acks="all")
    for r in rows:
        producer.send(topic, json.dumps(r.asDict()).encode(), key=r.sensor.encode())
    producer.flush()
    producer.close()


if __name__ == "__main__":
    sys.exit(main())
