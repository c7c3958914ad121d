"""Trades per industry per minute as a ``spark-submit`` job: a sliding average on Flink's event-time windows.

Per industry, every 10 seconds, the number of trades, the traded volume and the volume-weighted average price of
the last minute (``SlidingEventTimeWindows.of(1 min, 10 s)``, an ``AggregateFunction`` plus a
``ProcessWindowFunction`` adding the window's bounds). Each trade belongs to six overlapping windows; a window
fires once, when the watermark passes its end (bounded out-of-orderness of 5 s).

Input (one of):

* default: a generated, bounded replay of ``--batches`` micro-batches of trades (``--seed``); the end of input
  fires the last windows;
* ``--kafka HOST:PORT --topic T``: JSON records ``{"symbol": "ACME", "industry": "tech", "ts": <epoch ms>,
  "price": 12.5, "qty": 100}``, a watermark per Kafka partition with idleness (``--produce`` first sends the
  generated trades to the topic).

Output: the Delta table ``<out>/per_minute`` (industry, window_start, window_end, trades, volume, vwap), written
exactly-once per micro-batch (``DeltaSink``). Submit with the package shipped as a zip (see ``docs/examples.md``)::

    spark-submit --master local[2] --py-files dist/pyspark_flinkish.zip --jars $(ls .jars/spark/*.jar | paste -sd,) \\
        examples/spark_trades_per_industry.py --out /tmp/trades/out --checkpoint /tmp/trades/ck
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import AggregateFunction, ProcessWindowFunction
from pyspark_flinkish.datastream.window import SlidingEventTimeWindows

OUT_OF_ORDERNESS_MS = 5_000
TRADE = Types.ROW_NAMED(
    ["symbol", "industry", "ts", "price", "qty"],
    [Types.STRING(), Types.STRING(), Types.LONG(), Types.DOUBLE(), Types.LONG()],
)
PER_MINUTE = Types.ROW_NAMED(
    ["industry", "window_start", "window_end", "trades", "volume", "vwap"],
    [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG(), Types.DOUBLE()],
)
SYMBOLS = {
    "tech": ["ACME", "BYTE", "CHIP"],
    "energy": ["OILX", "SUNR"],
    "health": ["MEDI", "CURE", "GENE"],
    "retail": ["SHOP"],
}


# ----------------------------------------------------------------------------- the pipeline (any engine)
class Volume(AggregateFunction):  # type: ignore[type-arg]
    """(trades, shares, price x shares) of a window."""

    def create_accumulator(self) -> Tuple[int, int, float]:
        return (0, 0, 0.0)

    def add(self, value: Any, acc: Tuple[int, int, float]) -> Tuple[int, int, float]:
        return (acc[0] + 1, acc[1] + value.qty, acc[2] + value.price * value.qty)

    def get_result(self, acc: Tuple[int, int, float]) -> Tuple[int, int, float]:
        return acc

    def merge(self, a: Tuple[int, int, float], b: Tuple[int, int, float]) -> Tuple[int, int, float]:
        return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


class WithWindow(ProcessWindowFunction):  # type: ignore[type-arg]
    """One row per industry and window: its bounds, trades, volume and volume-weighted average price."""

    def process(self, key: str, context: Any, elements: Any) -> Iterator[Dict[str, Any]]:
        window = context.window()
        for trades, volume, notional in elements:
            yield {"industry": key, "window_start": window.start, "window_end": window.end, "trades": trades,
                   "volume": volume, "vwap": round(notional / volume, 4) if volume else None}


def watermark_strategy(idleness_ms: Optional[int] = None) -> WatermarkStrategy:
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(OUT_OF_ORDERNESS_MS))
    return strategy if idleness_ms is None else strategy.with_idleness(Duration.of_millis(idleness_ms))


def build(trades: Any) -> Dict[str, Any]:
    """The pipeline over a stream of trades (``Row``s with symbol, industry, ts, price, qty)."""
    per_minute = (
        trades.key_by(lambda t: t.industry)
        .window(SlidingEventTimeWindows.of(Duration.of_minutes(1), Duration.of_seconds(10)))
        .aggregate(Volume(), WithWindow(), output_type=PER_MINUTE)
    )
    return {"per_minute": per_minute}


def generate(batches: int, trades_per_batch: int, seed: int) -> List[MicroBatch]:
    """Random-walk prices; trades a few seconds out of order; one micro-batch per ~10 s of trading."""
    from pyspark.sql import Row  # a plain Python class: no JVM needed

    rng = random.Random(seed)
    prices = {s: rng.uniform(10, 200) for symbols in SYMBOLS.values() for s in symbols}
    t = 1_700_000_000_000
    out = []
    for _ in range(batches):
        rows = []
        for _ in range(trades_per_batch):
            t += rng.randrange(0, 20_000 // trades_per_batch + 1)
            industry = rng.choice(sorted(SYMBOLS))
            symbol = rng.choice(SYMBOLS[industry])
            prices[symbol] = max(1.0, prices[symbol] * (1 + rng.gauss(0, 0.002)))
            ts = t - rng.randrange(0, OUT_OF_ORDERNESS_MS)
            price, qty = round(prices[symbol], 2), rng.randrange(1, 50) * 10
            rows.append(Row(symbol=symbol, industry=industry, ts=ts, price=price, qty=qty))
        out.append(MicroBatch(rows))
    return out


# ----------------------------------------------------------------------------- Spark job
def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Trades per industry per minute with pyspark_flinkish on Spark: a sliding (1 min every 10 s) "
        "event-time window with the volume-weighted average price, written to a Delta table.",
        epilog="Submit with spark-submit (--py-files <pyspark_flinkish zip>, --jars <Delta jars>); see docs/examples.md.",
    )
    parser.add_argument("--out", required=True, help="output folder: the Delta table <out>/per_minute")
    parser.add_argument("--checkpoint", required=True, help="checkpoint folder (offsets, keyed state, watermarks)")
    parser.add_argument("--batches", type=int, default=30, help="generated input: micro-batches (default 30)")
    parser.add_argument("--trades-per-batch", type=int, default=200, help="generated input: trades per batch (default 200)")
    parser.add_argument("--seed", type=int, default=11, help="generated input: random seed (default 11)")
    parser.add_argument("--kafka", default=None, metavar="HOST:PORT", help="read the Kafka topic --topic instead")
    parser.add_argument("--topic", default="trades", help="Kafka topic (default trades)")
    parser.add_argument("--produce", action="store_true", help="with --kafka: first send the generated trades there")
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
    builder = SparkSession.builder.appName("flinkish-trades")
    spark = configure(builder, shuffle_partitions=args.shuffle_partitions).getOrCreate()
    try:
        env: Any = StreamExecutionEnvironment.get_execution_environment(spark)
        batches = generate(args.batches, args.trades_per_batch, args.seed)
        if args.kafka:
            if args.produce:
                _produce(args.kafka, args.topic, [r for b in batches for r in b.elements])
            trades = env.from_kafka(args.topic, args.kafka, watermark_strategy(idleness_ms=30_000), schema=TRADE,
                                    timestamp_field="ts")
            trigger: Dict[str, Any] = {"availableNow": True} if args.available_now else {"processingTime": "5 seconds"}
        else:
            strategy = watermark_strategy().with_timestamp_assigner(lambda t, _: t.ts)
            trades = env.from_source(MicroBatchSource(batches), strategy, "trades")
            trigger = {"availableNow": True}
        build(trades)["per_minute"].sink_to(DeltaSink.for_path(os.path.join(out, "per_minute"))).uid("per-minute")
        handle = env.execute("trades-per-industry", checkpoint_location=checkpoint, trigger=trigger,
                             progress=lambda p: print(f"batch {p['batch_id']}: {p['sink_records']}", flush=True))
        handle.await_termination()
        print(f"done: results in {os.path.join(out, 'per_minute')}", flush=True)
    finally:
        spark.stop()
    return 0


def _produce(servers: str, topic: str, rows: List[Any]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=servers, acks="all")
    for r in rows:
        producer.send(topic, json.dumps(r.asDict()).encode(), key=r.symbol.encode())
    producer.flush()
    producer.close()


if __name__ == "__main__":
    sys.exit(main())
