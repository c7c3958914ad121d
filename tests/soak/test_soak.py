"""Soak: a constant input rate into a real Kafka topic for ``SOAK_SECONDS`` (default 60; ``make soak SOAK_SECONDS=3600``
for a long run), read by the foreachBatch executor with a processing-time trigger, written to Delta.

The pipeline has an event-time tumbling window with allowed lateness (an aggregate, batch-wise window table) and a
KeyedProcessFunction whose value state has a processing-time TTL. Event times advance with the rate (event ``i`` at
``T0 + i / RATE`` s, jittered within the watermark bound; every 37th event 2.5 s behind: some late within the
allowed lateness, some dropped). The TTL'd state is keyed by a "session" key that changes every 2 s of input, so
every key goes quiet for good after 2 s.

Measured after every micro-batch (progress callback): each operator's state as its metrics report it (the window's
``openWindows``: its (key, window) rows; the function's ``numKeys``: its session keys; both counted over the whole
state, ``spark/state_store.py``), the batch's duration and the window operator's watermark. Asserted:

* windows are cleaned after the allowed lateness: in every batch the open (key, window) rows fit in what the
  watermark allows — per key, the windows from ``watermark - lateness - size`` to the largest event time read so
  far — and far fewer than the run created;
* TTL is honoured: after every batch the KeyedProcessFunction's state holds no more session keys than the batches
  within one TTL wrote (batch durations bound the processing time between batches), and after the input stops and a
  TTL has passed, one more record leaves only its own key in the state (no record touched the others: they are
  dropped because their TTL expired);
* batch duration does not trend upward: the median of the last third of the batches (at least two) is within a
  generous factor of the first third's (a trend bound, not a timing assertion: the machine is shared);
* the Delta table equals the JVM-free engine's output over the same micro-batches (rebuilt from Spark's offsets log,
  as in ``tests/e2e``). The window's output is event-time deterministic; the TTL'd function emits nothing, so
  processing time never reaches the compared output.
"""

from __future__ import annotations

import collections
import json
import os
import statistics
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors.delta import DeltaSink
from pyspark_flinkish.datastream.functions import AggregateFunction, KeyedProcessFunction, ProcessWindowFunction
from pyspark_flinkish.datastream.state import StateTtlConfig, ValueStateDescriptor
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

pytestmark = [pytest.mark.soak, pytest.mark.kafka, pytest.mark.spark]

SECONDS = float(os.environ.get("SOAK_SECONDS", "60"))
RATE = int(os.environ.get("SOAK_RATE", "100"))  # events per second
KEYS = 8
SIZE_MS, LATENESS_MS, BOUND_MS, TTL_MS = 2_000, 2_000, 1_000, 3_000
SESSION = 2 * RATE  # events per session key (2 s of input)
T0 = 1_700_000_000_000
SCHEMA = "k STRING, s STRING, t BIGINT, v BIGINT"
OUT = Types.ROW_NAMED(["k", "start", "end", "cnt", "total"], [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG()])


def event(i: int) -> Dict[str, Any]:
    t = T0 + i * 1000 // RATE - (i * 7919) % 800  # out of order within the bound
    if i % 37 == 0:
        t -= 2_500  # behind the watermark: late within the allowed lateness, or dropped
    return {"k": f"k{i % KEYS}", "s": f"s{i // SESSION}", "t": t, "v": i}


class CountSum(AggregateFunction):  # type: ignore[type-arg]
    def create_accumulator(self):  # type: ignore[no-untyped-def]
        return (0, 0)

    def add(self, value, acc):  # type: ignore[no-untyped-def]
        return (acc[0] + 1, acc[1] + value.v)

    def get_result(self, acc):  # type: ignore[no-untyped-def]
        return acc

    def merge(self, a, b):  # type: ignore[no-untyped-def]
        return (a[0] + b[0], a[1] + b[1])


class Emit(ProcessWindowFunction):  # type: ignore[type-arg]
    def process(self, key, context, elements):  # type: ignore[no-untyped-def]
        cnt, total = next(iter(elements))
        yield {"k": key, "start": context.window().start, "end": context.window().end, "cnt": cnt, "total": total}


class LastSeen(KeyedProcessFunction):  # type: ignore[type-arg]
    """Remembers each session's last event time, with a processing-time TTL; emits nothing."""

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        descriptor = ValueStateDescriptor("last", Types.LONG())
        descriptor.enable_time_to_live(StateTtlConfig.new_builder(Duration.of_millis(TTL_MS)).build())
        self.last = runtime_context.get_state(descriptor)

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        self.last.update(value.t)
        return []


def _pipeline(events: Any) -> Tuple[Any, Any]:
    windows = (
        events.key_by(lambda e: e.k)
        .window(TumblingEventTimeWindows.of(Duration.of_millis(SIZE_MS)))
        .allowed_lateness(Duration.of_millis(LATENESS_MS))
        .aggregate(CountSum(), window_function=Emit(), output_type=OUT)
        .uid("windows")
    )
    sessions = events.key_by(lambda e: e.s).process(LastSeen()).uid("sessions")
    return windows, sessions


class Producer(threading.Thread):
    """Sends events ``start..stop-1`` at ``RATE`` per second (partition ``i % 2``); keeps (partition, offset) -> event."""

    def __init__(self, bootstrap: str, topic: str, start: int, stop: int) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.start_i, self.stop_i = bootstrap, topic, start, stop
        self.stored: Dict[Tuple[int, int], Dict[str, Any]] = {}
        self.error: BaseException | None = None

    def run(self) -> None:
        from kafka import KafkaProducer

        try:
            producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=20)
            sent, began, i = [], time.monotonic(), self.start_i
            while i < self.stop_i:
                due = self.start_i + int((time.monotonic() - began) * RATE)
                while i < min(due, self.stop_i):
                    e = event(i)
                    sent.append((producer.send(self.topic, value=json.dumps(e).encode(), partition=i % 2), e))
                    i += 1
                time.sleep(0.02)
            producer.flush()
            for future, e in sent:
                meta = future.get(timeout=30)
                self.stored[(int(meta.partition), int(meta.offset))] = e
            producer.close()
        except BaseException as exc:  # reported by the test
            self.error = exc


def _offsets_log(checkpoint: Path, topic: str) -> Dict[int, Dict[int, int]]:
    out = {}
    for path in (checkpoint / "spark" / "offsets").glob("[0-9]*"):
        source = json.loads(path.read_text().splitlines()[2])
        out[int(path.name)] = {int(p): int(o) for p, o in source[topic].items()}
    return out


def _expected(topic: str, batches: List[List[Dict[str, Any]]], parts: List[List[int]]) -> collections.Counter:  # type: ignore[type-arg]
    from pyspark.sql import Row

    env = StreamExecutionEnvironment.get_execution_environment()
    micro = [MicroBatch([Row(**e) for e in b], partitions=[f"{topic}-{p}" for p in ps]) for b, ps in zip(batches, parts)]
    source = MicroBatchSource(micro, end_of_input=False, partitions=[f"{topic}-0", f"{topic}-1"])
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(BOUND_MS)).with_timestamp_assigner(lambda r, _: r.t)
    windows, sessions = _pipeline(env.from_source(source, strategy, "events"))
    out: List[Dict[str, Any]] = []
    windows.add_sink(out.append)
    sessions.add_sink(out.append)
    env.execute()
    return collections.Counter((r["k"], r["start"], r["end"], r["cnt"], r["total"]) for r in out)


def test_soak_constant_rate_state_stays_bounded_and_output_equals_the_jvm_free_engine(  # type: ignore[no-untyped-def]
    spark, kafka_broker, kafka_topic, tmp_path
) -> None:
    topic = kafka_topic(partitions=2)
    checkpoint = tmp_path / "ck"
    table = str(tmp_path / "windows")
    total = int(SECONDS * RATE)
    measured: List[Dict[str, Any]] = []

    def progress(p: Dict[str, Any]) -> None:
        wm = [w for name, w in p["watermarks"].items() if name.endswith("Window(aggregate)")]
        measured.append(
            {
                "batch": p["batch_id"],
                "at": time.monotonic(),
                "ms": p["durations_ms"]["total"],
                "windows": p["operators"]["windows"]["openWindows"],
                "sessions": p["operators"]["sessions"]["numKeys"],
                "wm": wm[0],
            }
        )

    env = StreamExecutionEnvironment.get_execution_environment(spark)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(BOUND_MS))
    events = env.from_kafka(topic, kafka_broker.bootstrap_servers, strategy, schema=SCHEMA, timestamp_field="t")
    windows, sessions = _pipeline(events)
    windows.sink_to(DeltaSink.for_path(table)).uid("delta")
    sessions.add_sink(lambda _: None)
    producer = Producer(kafka_broker.bootstrap_servers, topic, 0, total)
    handle = env.execute("soak", checkpoint_location=str(checkpoint), trigger={"processingTime": "2 seconds"}, progress=progress)
    try:
        producer.start()
        producer.join(SECONDS + 120)
        assert producer.error is None and not producer.is_alive(), producer.error
        handle.process_all_available()
        time.sleep(TTL_MS / 1000 + 1.5)  # every session key's last write is now older than the TTL
        tick = Producer(kafka_broker.bootstrap_servers, topic, total, total + 1)  # one more record, a new session
        tick.run()
        assert tick.error is None, tick.error
        handle.process_all_available()
    finally:
        handle.stop()
    stored = {**producer.stored, **tick.stored}
    assert len(stored) == total + 1

    # TTL: after a quiet TTL, the state holds the last record's session key only
    last = measured[-1]
    assert last["sessions"] == 1, measured[-3:]
    run = [m for m in measured if m["batch"] > 1][:-1]  # without the warm-up batches and the last record's

    # the micro-batches as Spark read them (from its offsets log)
    offsets = _offsets_log(checkpoint, topic)
    batches, parts, previous = [], [], collections.defaultdict(int)
    for b in range(max(offsets) + 1):
        end = offsets[b]
        rows = [(p, o) for p in sorted(end) for o in range(previous[p], end[p])]
        batches.append([stored[r] for r in rows])
        parts.append([p for p, _ in rows])
        previous.update(end)
    # ... and while running, no more session keys than the batches within a TTL wrote: a batch's writes carry its
    # processing time, and batch b's time is at least the durations of the batches since b' after batch b''s
    # (1 s margin for the driver's time before it reads the clock)
    duration = {m["batch"]: m["ms"] for m in measured}
    for m in measured[:-1]:
        b, alive, elapsed = m["batch"], {e["s"] for e in batches[m["batch"]]}, 0.0
        for earlier in range(b - 1, -1, -1):
            elapsed += duration.get(earlier, 0.0)
            if elapsed >= TTL_MS + 1_000:
                break
            alive |= {e["s"] for e in batches[earlier]}
        assert m["sessions"] <= len(alive), (m, len(alive), [x["sessions"] for x in measured])

    # windows cleaned after the allowed lateness: per batch, what the watermark leaves open
    max_t, bound_of = -(2**63), {}
    for b, records in enumerate(batches):
        max_t = max([max_t] + [e["t"] for e in records])
        bound_of[b] = max_t
    for m in measured:
        open_per_key = (bound_of[m["batch"]] - (m["wm"] - LATENESS_MS - SIZE_MS)) // SIZE_MS + 2
        assert m["windows"] <= KEYS * open_per_key, (m, open_per_key)
    created = KEYS * (SECONDS * 1000 // SIZE_MS)
    assert max(m["windows"] for m in measured) <= created / 4, ([m["windows"] for m in measured], created)

    # batch duration: no upward trend (medians of the first and last thirds; generous: a shared 2-core machine).
    # A run of fewer than 4 steady batches (a heavily loaded machine) says so instead of judging noise.
    ms = [m["ms"] for m in run]
    third = max(len(ms) // 3, 2)  # thirds, or the first and last two batches of a short run
    first = final = float("nan")
    if len(ms) >= 4:
        first, final = statistics.median(ms[:third]), statistics.median(ms[-third:])
        assert final <= 3 * first + 2_000, (first, final, ms)
    else:
        warnings.warn(f"soak: {len(ms)} steady batches in {SECONDS} s; batch-duration trend not judged", stacklevel=1)

    # the output equals the JVM-free engine's over the same micro-batches
    got = collections.Counter(
        tuple(r) for r in spark.read.format("delta").load(table).select("k", "start", "end", "cnt", "total").collect()
    )
    expected = _expected(topic, batches, parts)
    assert sum(expected.values()) > KEYS * SECONDS * 1000 // SIZE_MS // 2  # the windows fired all along
    assert got == expected
    print(
        f"soak: {total + 1} events in {len(measured)} batches; window rows max {max(m['windows'] for m in measured)}, "
        f"session keys max {max(m['sessions'] for m in measured)}; batch ms first third {first:.0f}, last {final:.0f}"
    )
