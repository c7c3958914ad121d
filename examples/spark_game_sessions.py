"""Game sessions as a ``spark-submit`` job: session windows, allowed lateness and a late-data side output.

Players' score events form sessions (``EventTimeSessionWindows.with_gap(2 min)``); a session fires when the
watermark (bounded out-of-orderness 10 s, per source partition) passes its end. Players riding through a tunnel
deliver their buffered events minutes late: within the allowed lateness (2 min) such an event updates its
session, which fires again (or merges two sessions into one); later ones go to the ``late`` side output.
The events are the ones of the demo (``pyspark_flinkish.demo.game.arrivals``), four source partitions.

Input (one of):

* default: a generated, bounded replay (``--players``, ``--minutes``, ``--seed``), one micro-batch per
  ``--batch-seconds`` of arrival time; the end of input fires the last sessions;
* ``--kafka HOST:PORT --topic T``: JSON records ``{"player": "player-001", "ts": <epoch ms>, "score": 7}``, a
  watermark per Kafka partition with idleness (``--produce`` first sends the generated events there, each to its
  player's partition).

Output: Delta tables ``<out>/sessions`` (player, start, end, events, score, the watermark at the firing) and
``<out>/late`` (player, ts, score), written exactly-once per micro-batch (``DeltaSink``). Submit with
the package shipped as a zip (see ``docs/examples.md``)::

    spark-submit --master local[2] --py-files dist/pyspark_flinkish.zip --jars $(ls .jars/spark/*.jar | paste -sd,) \\
        examples/spark_game_sessions.py --out /tmp/game/out --checkpoint /tmp/game/ck
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, Iterator, List, Optional, Sequence

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import ProcessWindowFunction
from pyspark_flinkish.datastream.window import EventTimeSessionWindows

PARTITIONS = 4
EVENT = Types.ROW_NAMED(["player", "ts", "score"], [Types.STRING(), Types.LONG(), Types.LONG()])
SESSION = Types.ROW_NAMED(
    ["player", "start", "end", "events", "score", "watermark"],
    [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG()],
)


# ----------------------------------------------------------------------------- the pipeline (any engine)
class Session(ProcessWindowFunction):  # type: ignore[type-arg]
    """One row per firing of a session: its bounds, events, total score and the watermark at the firing (a
    session that fires again with the same bounds was updated by a late event)."""

    def process(self, key: str, context: Any, elements: Any) -> Iterator[Dict[str, Any]]:
        window = context.window()
        scores = [e.score for e in elements]
        yield {"player": key, "start": window.start, "end": window.end, "events": len(scores), "score": sum(scores),
               "watermark": context.current_watermark()}


def watermark_strategy(idleness_ms: Optional[int] = None) -> WatermarkStrategy:
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(10))
    return strategy if idleness_ms is None else strategy.with_idleness(Duration.of_millis(idleness_ms))


def build(events: Any) -> Dict[str, Any]:
    """The pipeline over a stream of events (player, ts, score); returns the streams to sink."""
    late = OutputTag("late-events", EVENT)
    sessions = (
        events.key_by(lambda e: e.player)
        .window(EventTimeSessionWindows.with_gap(Duration.of_minutes(2)))
        .allowed_lateness(Duration.of_minutes(2))
        .side_output_late_data(late)
        .process(Session(), output_type=SESSION)
    )
    return {"sessions": sessions, "late": sessions.get_side_output(late)}


def generate(players: int, minutes: int, seed: int, batch_seconds: int) -> List[MicroBatch]:
    """The demo's game events (tunnels deliver minutes late; partition 3 silent from minute 10 to 16) as ``Row``s,
    one micro-batch per ``batch_seconds`` of arrival time, each event in its player's source partition."""
    from pyspark.sql import Row  # a plain Python class: no JVM needed

    from pyspark_flinkish.demo.game import arrivals

    pairs = arrivals(players, minutes, seed)
    step = batch_seconds * 1000
    out: List[List[Any]] = [[] for _ in range(pairs[-1][0] // step + 1)] if pairs else []
    for arrival, e in pairs:
        out[arrival // step].append((Row(player=e.player, ts=e.ts, score=e.score), e.partition))
    return [MicroBatch([r for r, _ in b], partitions=[p for _, p in b]) for b in out]


# ----------------------------------------------------------------------------- Spark job
def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Game sessions with pyspark_flinkish on Spark: session windows with allowed lateness; late "
        "events to a side output; both to Delta tables.",
        epilog="Submit with spark-submit (--py-files <pyspark_flinkish zip>, --jars <Delta jars>); see docs/examples.md.",
    )
    parser.add_argument("--out", required=True, help="output folder: Delta tables <out>/sessions and <out>/late")
    parser.add_argument("--checkpoint", required=True, help="checkpoint folder (offsets, keyed state, watermarks)")
    parser.add_argument("--players", type=int, default=20, help="generated input: players (default 20)")
    parser.add_argument("--minutes", type=int, default=30, help="generated input: minutes of game time (default 30)")
    parser.add_argument("--seed", type=int, default=7, help="generated input: random seed (default 7)")
    parser.add_argument("--batch-seconds", type=int, default=60, help="generated input: seconds per micro-batch (default 60)")
    parser.add_argument("--kafka", default=None, metavar="HOST:PORT", help="read the Kafka topic --topic instead")
    parser.add_argument("--topic", default="game-events", help="Kafka topic (default game-events)")
    parser.add_argument("--produce", action="store_true", help="with --kafka: first send the generated events there")
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
    builder = SparkSession.builder.appName("flinkish-game-sessions")
    spark = configure(builder, shuffle_partitions=args.shuffle_partitions).getOrCreate()
    try:
        env: Any = StreamExecutionEnvironment.get_execution_environment(spark)
        batches = generate(args.players, args.minutes, args.seed, args.batch_seconds)
        if args.kafka:
            if args.produce:
                _produce(args.kafka, args.topic, batches)
            events = env.from_kafka(args.topic, args.kafka, watermark_strategy(idleness_ms=30_000), schema=EVENT,
                                    timestamp_field="ts")
            trigger: Dict[str, Any] = {"availableNow": True} if args.available_now else {"processingTime": "5 seconds"}
        else:
            strategy = watermark_strategy().with_timestamp_assigner(lambda e, _: e.ts)
            events = env.from_source(MicroBatchSource(batches, partitions=list(range(PARTITIONS))), strategy, "game-events")
            trigger = {"availableNow": True}
        streams = build(events)
        streams["sessions"].sink_to(DeltaSink.for_path(os.path.join(out, "sessions"))).uid("sessions")
        streams["late"].sink_to(DeltaSink.for_path(os.path.join(out, "late"))).uid("late")
        handle = env.execute("game-sessions", checkpoint_location=checkpoint, trigger=trigger,
                             progress=lambda p: print(f"batch {p['batch_id']}: {p['sink_records']}", flush=True))
        handle.await_termination()
        print(f"done: sessions in {os.path.join(out, 'sessions')}", flush=True)
    finally:
        spark.stop()
    return 0


def _produce(servers: str, topic: str, batches: List[MicroBatch]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=servers, acks="all")
    for b in batches:
        for i, r in enumerate(b.elements):
            producer.send(topic, json.dumps(r.asDict()).encode(), partition=b.partition_of(i))
    producer.flush()
    producer.close()


if __name__ == "__main__":
    sys.exit(main())
