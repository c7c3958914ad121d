"""``make demo`` / ``python -m pyspark_flinkish.demo``: the game-session pipeline live on Kafka, Spark and Delta.

One command runs everything on this machine:

1. a local Kafka broker (:class:`~pyspark_flinkish.testing.kafka.KafkaBroker`, KRaft, its storage under
   ``<out>/kafka`` so that a re-run finds its records) with a 4-partition topic ``game-events``;
2. a producer thread replaying the generated game (:func:`pyspark_flinkish.demo.game.arrivals`) in real time,
   ``--speedup`` game seconds per wall second: players riding through a tunnel deliver their buffered events
   minutes late, partition 3 goes silent for six game minutes;
3. the pipeline of :func:`pyspark_flinkish.demo.game.pipeline` as a Spark Structured Streaming query:
   ``from_kafka`` with a watermark per Kafka partition and idleness, session windows with an early-firing
   trigger and allowed lateness, late events to their own Delta table, an inactivity alert from a
   ``KeyedProcessFunction``'s event-time timers; every output goes exactly-once to Delta (``DeltaSink``);
4. a progress line per micro-batch (:func:`pyspark_flinkish.monitoring.progress_line`), then a summary and a
   chart (``<out>/demo.png``) of event time against the watermark, with window firings and late events marked.

The driver's processing-time clock runs at the replay's speed (one game second per game second), so the
partitions' idleness timeout is in game time, like the events.

Ctrl-C stops the producer, the query, Spark and the broker. Running the command again resumes from the
checkpoint in ``<out>/checkpoint``: an interrupted replay continues where it stopped, a finished one is followed
by a new round of the game (later event times, another seed); the Delta tables in ``<out>/tables`` grow by
exactly the new results.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from pyspark_flinkish.core.javamath import LONG_MAX, LONG_MIN
from pyspark_flinkish.datastream import OutputTag
from pyspark_flinkish.monitoring import progress_line

from .game import EVENT_TYPE, MINUTE, PARTITIONS, GameEvent, arrivals, pipeline, strategy

TOPIC = "game-events"
ROUND_GAP_MS = 10 * MINUTE  # a new round starts this long after the previous round's last arrival
SINKS = ("sessions", "late-events", "alerts")


# ----------------------------------------------------------------------------- time
class GameClock:
    """Processing time in game milliseconds: ``start_ms`` until the replay starts (:meth:`start`), then ``speedup``
    times the wall clock's pace. The driver reads it once per micro-batch (the partitions' idleness); the producer
    sends each event when it reaches the event's arrival time."""

    def __init__(self, start_ms: int, speedup: float) -> None:
        self.start_ms = start_ms
        self.speedup = speedup
        self.t0: Optional[float] = None

    def start(self) -> None:
        if self.t0 is None:
            self.t0 = time.monotonic()

    def now(self) -> int:
        if self.t0 is None:
            return self.start_ms
        return self.start_ms + int((time.monotonic() - self.t0) * 1000 * self.speedup)

    def __repr__(self) -> str:
        return f"GameClock(start_ms={self.start_ms}, speedup={self.speedup})"


def fmt_minutes(ms: Optional[int]) -> str:
    """A watermark or event time in game minutes (``idle``, ``-`` before the first watermark)."""
    if ms is None:
        return "idle"
    if ms == LONG_MIN:
        return "-"
    if ms == LONG_MAX:
        return "end"
    return f"{ms / MINUTE:.2f}m"


# ----------------------------------------------------------------------------- rounds and the producer
@dataclass
class Round:
    """What the replay is at, saved in ``<out>/producer.json``: round ``number`` replays the game generated with
    ``seed + number``, shifted by ``offset_ms``; ``sent`` events of it are in Kafka."""

    number: int
    offset_ms: int
    sent: int
    total: int
    params: Dict[str, int]

    @staticmethod
    def next(path: Path, params: Dict[str, int], total_of: Any) -> Tuple[Round, bool]:
        """The round to run (resumed when the last one stopped half-way with the same parameters) and whether it
        is a resumed one."""
        if path.exists():
            saved = json.loads(path.read_text())
            last = Round(**saved)
            if last.params == params and last.sent < last.total:
                return last, True
            span = (last.params["minutes"] + 8) * MINUTE
            number = last.number + 1
            offset = last.offset_ms + span + ROUND_GAP_MS
        else:
            number, offset = 0, 0
        return Round(number, offset, 0, total_of(params["seed"] + number), params), False

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.__dict__))
        os.replace(tmp, path)


@dataclass
class Producer:
    """Sends the round's events to Kafka at their arrival times (``speedup`` times faster than real time), each to
    its player's partition, and records what it sent (for the chart)."""

    bootstrap_servers: str
    pending: List[Tuple[int, GameEvent]]  # (arrival game ms, event), shifted by the round's offset
    clock: GameClock
    on_progress: Any  # called with the number of events sent so far (after a flush)
    stop: threading.Event = field(default_factory=threading.Event)
    sent: List[Tuple[int, int, int]] = field(default_factory=list)  # (arrival ms, event ts, partition)
    error: Optional[BaseException] = None
    done: bool = False

    def run(self) -> None:
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=self.bootstrap_servers, acks="all", linger_ms=20)
        try:
            self.clock.start()
            last_flush = time.monotonic()
            for arrival, event in self.pending:
                while not self.stop.is_set() and self.clock.now() < arrival:
                    time.sleep(min(0.05, max(0.0, (arrival - self.clock.now()) / 1000 / self.clock.speedup)))
                    if time.monotonic() - last_flush > 0.5:
                        producer.flush()
                        self.on_progress(len(self.sent))
                        last_flush = time.monotonic()
                if self.stop.is_set():
                    break
                value = json.dumps({"player": event.player, "ts": event.ts, "score": event.score})
                producer.send(TOPIC, value=value.encode(), partition=event.partition)
                self.sent.append((arrival, event.ts, event.partition))
            producer.flush()
            self.on_progress(len(self.sent))
            self.done = not self.stop.is_set()
        except BaseException as exc:  # reported by the main thread
            self.error = exc
        finally:
            producer.close()


def _shifted(pairs: List[Tuple[int, GameEvent]], offset: int) -> List[Tuple[int, GameEvent]]:
    return [(a + offset, GameEvent(e.player, e.ts + offset, e.score, e.partition)) for a, e in pairs]


def _end_offsets(bootstrap_servers: str) -> Dict[int, int]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers)
    try:
        parts = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        return {tp.partition: int(off) for tp, off in consumer.end_offsets(parts).items()}
    finally:
        consumer.close()


def _read_offsets(progress: Any) -> Dict[int, int]:
    """The Kafka offsets a query progress says its last batch read up to."""
    out: Dict[int, int] = {}
    for source in (progress or {}).get("sources", []):
        end = source.get("endOffset")
        if isinstance(end, str):
            try:
                end = json.loads(end)
            except ValueError:
                continue
        if isinstance(end, dict) and TOPIC in end:
            out.update({int(p): int(o) for p, o in end[TOPIC].items()})
    return out


# ----------------------------------------------------------------------------- the run
@dataclass
class Observed:
    """What the driver saw during this run (for the progress lines, the summary and the chart)."""

    clock: GameClock
    batches: List[Dict[str, Any]] = field(default_factory=list)  # per batch: time, watermarks, counters
    firings: List[Tuple[int, Dict[str, Any]]] = field(default_factory=list)  # (processing time, session row)
    late: List[Tuple[int, Any]] = field(default_factory=list)  # (processing time, late event)
    alerts: int = 0
    totals: Dict[str, int] = field(default_factory=lambda: dict.fromkeys(SINKS, 0))


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m pyspark_flinkish.demo",
        description=(
            "The game-session demo live: a local Kafka broker, a real-time producer, the pipeline on Spark with "
            "exactly-once Delta output, a progress line per micro-batch, a summary and a chart. Re-running resumes "
            "from <out>/checkpoint. `--local` runs the JVM-free demo instead (see `--local --help`)."
        ),
    )
    parser.add_argument("--players", type=int, default=40, help="number of players (default 40)")
    parser.add_argument("--minutes", type=int, default=30, help="minutes of game time per round (default 30)")
    parser.add_argument(
        "--events", type=int, default=None, help="about this many events per round (sets --players; default: unset)"
    )
    parser.add_argument("--seed", type=int, default=7, help="random seed of the first round (default 7)")
    parser.add_argument(
        "--speedup", type=float, default=20.0, help="game seconds replayed per wall-clock second (default 20)"
    )
    parser.add_argument("--trigger-seconds", type=float, default=2.0, help="micro-batch interval (default 2)")
    parser.add_argument("--out", default="out/demo", help="checkpoint, Delta tables, Kafka storage, chart (default out/demo)")
    parser.add_argument("--fresh", action="store_true", help="delete --out first (start over instead of resuming)")
    parser.add_argument(
        "--max-records", type=int, default=600, help="at most this many Kafka records per micro-batch (default 600)"
    )
    parser.add_argument("--quiet", action="store_true", help="no per-batch progress lines")
    parser.add_argument("--verbose", action="store_true", help="also print each micro-batch's phase durations")
    args = parser.parse_args(argv)
    if args.events is not None:
        args.players = max(PARTITIONS, round(args.events / (args.minutes * 10)))  # ~10 events per player-minute
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    out = Path(args.out).resolve()
    if args.fresh and out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    params = {"players": args.players, "minutes": args.minutes, "seed": args.seed}
    state_file = out / "producer.json"
    round_, resumed = Round.next(state_file, params, lambda seed: len(arrivals(args.players, args.minutes, seed)))
    pairs = _shifted(arrivals(args.players, args.minutes, args.seed + round_.number), round_.offset_ms)
    pending = pairs[round_.sent :]
    start_ms = pending[0][0] if pending else round_.offset_ms
    clock = GameClock(start_ms, args.speedup)
    seen = Observed(clock)
    tables = {name: str(out / "tables" / name.replace("-", "_")) for name in SINKS}
    what = f"resuming round {round_.number} at event {round_.sent}" if resumed else f"round {round_.number}"
    if round_.number > 0 and not resumed:
        what += f" (game time from {round_.offset_ms / MINUTE:.0f} min)"
    print(
        f"game demo on Spark: {args.players} players, {args.minutes} game minutes, {round_.total} events, {what}; "
        f"replayed {args.speedup:g}x faster than real time into Kafka topic {TOPIC!r} ({PARTITIONS} partitions)",
        flush=True,
    )

    from pyspark_flinkish.testing.kafka import KafkaBroker

    broker = KafkaBroker(data_dir=out / "kafka")
    spark = handle = producer = thread = None
    code = 0
    started = time.monotonic()
    # Ctrl-C only sets a flag, checked between steps: a KeyboardInterrupt raised inside a py4j call would surface
    # as a py4j error instead, and the demo would not stop cleanly
    previous_handler = signal.signal(signal.SIGINT, lambda signum, frame: INTERRUPTED.set())
    try:
        broker.start()
        _check_interrupt()
        if TOPIC not in broker.topics():
            broker.create_topic(TOPIC, partitions=PARTITIONS)
        print(f"kafka broker on {broker.bootstrap_servers}, storage in {broker.directory}", flush=True)
        spark = _spark()
        _check_interrupt()
        handle = _start_query(spark, broker.bootstrap_servers, out, tables, clock, seen, args)
        _check_interrupt()

        def saved(n: int) -> None:
            round_.sent = len(pairs) - len(pending) + n
            round_.save(state_file)

        producer = Producer(broker.bootstrap_servers, pending, clock, saved)
        thread = threading.Thread(target=producer.run, name="demo-producer", daemon=True)
        thread.start()
        _wait(handle, producer, thread, broker.bootstrap_servers)
        handle.stop()
        _summary(spark, seen, tables, round_, time.monotonic() - started, out)
        if _chart(seen, producer, out / "demo.png"):
            print(f"chart: {out / 'demo.png'}", flush=True)
    except KeyboardInterrupt:
        code = 130
        print(f"\ninterrupted: stopping; run the same command again to resume from {out / 'checkpoint'}", flush=True)
    finally:
        signal.signal(signal.SIGINT, previous_handler)
        if producer is not None:
            producer.stop.set()
        if thread is not None:
            thread.join(timeout=10)
        if handle is not None:
            try:
                handle.stop()
            except Exception as exc:  # stopping anyway: report and go on
                print(f"(stopping the query: {exc})")
        if spark is not None:
            spark.stop()
        broker.stop()
    return code


def _spark() -> Any:
    from pyspark_flinkish.spark import session

    spark = session("flinkish-game-demo", master="local[2]", shuffle_partitions=2)
    from pyspark_flinkish.spark.connect import set_log_level
    set_log_level(spark, "ERROR")
    return spark


def _start_query(
    spark: Any, servers: str, out: Path, tables: Dict[str, str], clock: GameClock, seen: Observed, args: Any
) -> Any:
    from pyspark_flinkish.datastream.connectors.delta import DeltaSink
    from pyspark_flinkish.spark import SparkStreamExecutionEnvironment

    env = SparkStreamExecutionEnvironment(spark, clock=clock)
    events = env.from_kafka(
        TOPIC,
        servers,
        strategy(idleness_ms=30_000),
        schema=EVENT_TYPE,
        timestamp_field="ts",
        max_offsets_per_trigger=args.max_records,
        partitions=list(range(PARTITIONS)),
    )
    streams = pipeline(events, OutputTag("late-events", EVENT_TYPE))
    streams["sessions"].sink_to(DeltaSink.for_path(tables["sessions"])).uid("sessions")
    streams["late"].sink_to(DeltaSink.for_path(tables["late-events"])).uid("late-events")
    streams["alerts"].sink_to(DeltaSink.for_path(tables["alerts"])).uid("alerts")
    # driver-side views for the chart (at-least-once: a replayed batch shows twice; the Delta tables do not)
    streams["sessions"].add_sink(lambda row: seen.firings.append((clock.now(), row.as_dict()))).uid("chart-sessions")
    streams["late"].add_sink(lambda row: seen.late.append((clock.now(), row))).uid("chart-late")

    if not args.quiet:
        print(
            "progress per micro-batch (pyspark_flinkish.monitoring.progress_line; times in game minutes): batch, "
            "records in, watermark per Kafka partition, window watermark, windows fired, late records dropped+to the "
            "late side output, open windows, keys, state size; then this run's totals per Delta table",
            flush=True,
        )

    def progress(p: Dict[str, Any]) -> None:
        now = clock.now()
        parts = next(iter(p["source_watermarks"].values()), {})
        by_part = {int(k.rsplit("-", 1)[1]): v for k, v in parts.items()}
        window_wm = next((v for k, v in p["watermarks"].items() if "Window" in k), LONG_MIN)
        rows = sum(sum(c.values()) for c in p["input_records"].values())
        for name in SINKS:
            seen.totals[name] += p["sink_records"].get(name, 0)
        seen.batches.append({"time": now, "partitions": by_part, "window": window_wm, "rows": rows})
        if args.verbose:
            print(f"      phases (ms): {p['durations_ms']}", flush=True)
        if not args.quiet:
            try:
                totals = " ".join(f"{name}={seen.totals[name]}" for name in SINKS)
                print(f"{progress_line(p, time_format=fmt_minutes)} | {totals}", flush=True)
            except Exception as exc:  # a display problem must never fail the query
                print(f"(progress line of batch {p['batch_id']}: {exc!r})", flush=True)

    handle = env.execute(
        "game-demo",
        checkpoint_location=str(out / "checkpoint"),
        trigger={"processingTime": f"{args.trigger_seconds:g} seconds"},
        progress=progress,
    )
    return handle


INTERRUPTED = threading.Event()


def _check_interrupt() -> None:
    if INTERRUPTED.is_set():
        raise KeyboardInterrupt


def _wait(handle: Any, producer: Producer, thread: threading.Thread, servers: str) -> None:
    """Until the producer is done and the query has read every record in the topic (or fails)."""
    while thread.is_alive():
        _check_interrupt()
        if not handle.is_active:
            handle.await_termination(0.1)  # raises the query's failure
            msg = "the streaming query stopped while the producer was running"
            raise RuntimeError(msg)
        thread.join(timeout=0.5)
    if producer.error is not None:
        raise producer.error
    end = _end_offsets(servers)
    last_batch, since = None, time.monotonic()
    while True:
        _check_interrupt()
        if not handle.is_active:
            handle.await_termination(0.1)
            msg = "the streaming query stopped before it read the whole topic"
            raise RuntimeError(msg)
        progress = handle.last_progress
        read = _read_offsets(progress)
        if all(read.get(p, 0) >= o for p, o in end.items()):
            return
        batch = (progress or {}).get("batchId")
        if batch != last_batch:
            last_batch, since = batch, time.monotonic()
        elif time.monotonic() - since > 300:  # e.g. the stream thread died of a JVM error: Spark's log says why
            failure = handle.query.exception()
            msg = (
                f"the query made no progress for 5 minutes after batch {batch} (read {read}, end {end}); "
                f"its failure: {failure}"
            )
            raise RuntimeError(msg)
        time.sleep(0.5)


# ----------------------------------------------------------------------------- summary and chart
def _summary(spark: Any, seen: Observed, tables: Dict[str, str], round_: Round, seconds: float, out: Path) -> None:
    from delta.tables import DeltaTable

    sessions = spark.read.format("delta").load(tables["sessions"])
    counts = {
        name: spark.read.format("delta").load(path).count() if os.path.isdir(path) else 0 for name, path in tables.items()
    }
    commits = {
        name: DeltaTable.forPath(spark, path).history().count() if os.path.isdir(path) else 0
        for name, path in tables.items()
    }
    rows = [r.asDict() for r in sessions.collect()] if os.path.isdir(tables["sessions"]) else []
    complete = [(r["player"], r["start"], r["end"]) for r in rows if r["complete"]]
    updates = len(complete) - len(set(complete))
    early = sum(1 for r in rows if not r["complete"])
    latest: Dict[str, Dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: (r["watermark"], r["end"])):
        latest[r["player"]] = r
    still_open = sum(1 for r in latest.values() if not r["complete"])
    watermark = seen.batches[-1]["window"] if seen.batches else LONG_MIN
    best = max(rows, key=lambda r: r["score"], default=None)
    print()
    print(f"summary (round {round_.number}, {seconds:.0f} s, {len(seen.batches)} micro-batches this run):")
    print(f"  events sent to Kafka      : {round_.sent} of {round_.total} this round")
    print(f"  this run delivered        : {seen.totals['sessions']} session results, {seen.totals['late-events']} late "
          f"events, {seen.totals['alerts']} alerts")
    print(f"  Delta {tables['sessions']}: {counts['sessions']} rows ({early} early results, {len(set(complete))} "
          f"sessions completed, {updates} updates from late data), {commits['sessions']} commits")
    print(f"  Delta {tables['late-events']}: {counts['late-events']} late events (beyond the allowed lateness)")
    print(f"  Delta {tables['alerts']}: {counts['alerts']} inactivity alerts (event-time timers)")
    print(f"  window watermark          : {fmt_minutes(watermark)} of game time; {still_open} players' sessions "
          "still open (they fire once later events move the watermark, e.g. in the next run)")
    if best is not None:
        print(f"  best session              : {best['player']} scored {best['score']} in {best['events']} events "
              f"({(best['end'] - best['start']) / MINUTE:.1f} min)")
    print(f"  checkpoint                : {out / 'checkpoint'} (run again to resume)")


def _chart(seen: Observed, producer: Producer, path: Path) -> bool:
    try:
        import matplotlib
    except ImportError:
        print("(no chart: matplotlib is not installed; pip install 'pyspark_flinkish[demo]')")
        return False

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 7), dpi=100)
    if producer.sent:
        step = max(1, len(producer.sent) // 4000)
        sample = producer.sent[::step]
        ax.scatter([a / MINUTE for a, _, _ in sample], [t / MINUTE for _, t, _ in sample], s=3, color="0.7",
                   label="events (arrival, event time)", zorder=1)
        lo = min(a for a, _, _ in producer.sent) / MINUTE
        hi = max(a for a, _, _ in producer.sent) / MINUTE
        ax.plot([lo, hi], [lo, hi], color="0.5", linestyle=":", linewidth=1, label="event time = arrival time")
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:purple"]
    times = [b["time"] / MINUTE for b in seen.batches]
    for p in range(PARTITIONS):
        ys = [
            float("nan") if b["partitions"].get(p) in (None, LONG_MIN) else b["partitions"][p] / MINUTE
            for b in seen.batches
        ]
        ax.step(times, ys, where="post", color=colors[p], linewidth=0.8, alpha=0.7,
                label=f"watermark partition {p} (gaps: idle)")
    window = [float("nan") if b["window"] == LONG_MIN else b["window"] / MINUTE for b in seen.batches]
    ax.step(times, window, where="post", color="black", linewidth=2, label="watermark at the windows (min over partitions)")
    early = [(t, r) for t, r in seen.firings if not r["complete"]]
    final = [(t, r) for t, r in seen.firings if r["complete"]]
    ax.scatter([t / MINUTE for t, _ in early], [r["end"] / MINUTE for _, r in early], marker=".", s=18,
               color="tab:cyan", label="early session result (every 10 events)", zorder=3)
    ax.scatter([t / MINUTE for t, _ in final], [r["end"] / MINUTE for _, r in final], marker="^", s=22,
               color="tab:green", label="session fired (watermark passed its end; late updates too)", zorder=4)
    ax.scatter([t / MINUTE for t, _ in seen.late], [e["ts"] / MINUTE for _, e in seen.late], marker="x", s=40,
               color="tab:red", label="late event -> Delta late_events", zorder=5)
    ax.set_xlabel("processing time (game minutes, as the replay delivers them)")
    ax.set_ylabel("event time (game minutes)")
    ax.set_title("pyspark_flinkish game demo: event time vs watermark (Kafka -> Spark -> Delta)")
    ax.grid(True, linewidth=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


__all__ = [
    "TOPIC",
    "ROUND_GAP_MS",
    "SINKS",
    "GameClock",
    "fmt_minutes",
    "Round",
    "Producer",
    "Observed",
    "parse_args",
    "main",
    "INTERRUPTED",
]
