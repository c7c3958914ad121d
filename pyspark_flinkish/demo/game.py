"""The demo pipeline: mobile-game sessions with tunnels, on Flink semantics.

Players send score events; some ride through a tunnel, buffer their events and deliver them minutes late
in one burst. Events come from 4 source partitions (like a Kafka topic), each with its own watermark
generator (bounded out-of-orderness 10 s) and idleness (30 s); one partition goes quiet for a while.

Pipeline:
* sessions per player (2-minute gap) with a custom trigger that gives early results every 10 events
  and the final result when the watermark passes the session's end; 2 minutes of allowed lateness
  (tunnel bursts update the session); anything later goes to the ``late-events`` side output;
* a ``KeyedProcessFunction`` that raises an alert when a player has sent nothing for 3 minutes of event
  time (an event-time timer per player, moved on every event).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Tuple

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.datastream import DataStream, MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import AggregateFunction, KeyedProcessFunction, ProcessWindowFunction
from pyspark_flinkish.datastream.state import ReducingStateDescriptor, ValueStateDescriptor
from pyspark_flinkish.datastream.window import EventTimeSessionWindows, Trigger, TriggerResult

MINUTE = 60_000
LATE_EVENTS = OutputTag("late-events")
PARTITIONS = 4

EVENT_TYPE = Types.ROW_NAMED(["player", "ts", "score"], [Types.STRING(), Types.LONG(), Types.LONG()])
SESSION_TYPE = Types.ROW_NAMED(
    ["player", "start", "end", "events", "score", "complete", "watermark"],
    [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG(), Types.BOOLEAN(), Types.LONG()],
)
ALERT_TYPE = Types.ROW_NAMED(["player", "quiet_since", "alert_at"], [Types.STRING(), Types.LONG(), Types.LONG()])


@dataclass(frozen=True)
class GameEvent:
    player: str
    ts: int
    score: int
    partition: int


class EarlyEveryNTrigger(Trigger):  # type: ignore[type-arg]
    """Fires every ``n`` elements (early results) and when the watermark passes the window's end."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.count = ReducingStateDescriptor("early-count", lambda a, b: a + b)

    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE  # late but within the allowed lateness: update at once
        ctx.register_event_time_timer(window.max_timestamp())
        count = ctx.get_partitioned_state(self.count)
        count.add(1)
        if count.get() >= self.n:
            count.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Any) -> None:
        ctx.merge_partitioned_state(self.count)
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())
        ctx.get_partitioned_state(self.count).clear()

    def __repr__(self) -> str:
        return f"EarlyEveryNTrigger({self.n})"


class ScoreStats(AggregateFunction):  # type: ignore[type-arg]
    """(events, total score) per session."""

    def create_accumulator(self) -> Tuple[int, int]:
        return (0, 0)

    def add(self, value: GameEvent, accumulator: Tuple[int, int]) -> Tuple[int, int]:
        return (accumulator[0] + 1, accumulator[1] + value.score)

    def get_result(self, accumulator: Tuple[int, int]) -> Tuple[int, int]:
        return accumulator

    def merge(self, acc_a: Tuple[int, int], acc_b: Tuple[int, int]) -> Tuple[int, int]:
        return (acc_a[0] + acc_b[0], acc_a[1] + acc_b[1])


class SessionResult(ProcessWindowFunction):  # type: ignore[type-arg]
    """One row per firing. ``complete`` is False for early results (the watermark has not reached the
    session's end yet); a complete session that fires again was updated by late data."""

    def process(self, key: str, context: Any, elements: Iterable[Tuple[int, int]]) -> Iterable[Dict[str, Any]]:
        ((events, total),) = list(elements)
        window, watermark = context.window(), context.current_watermark()
        yield {
            "player": key,
            "start": window.start,
            "end": window.end,
            "events": events,
            "score": total,
            "complete": watermark >= window.max_timestamp(),
            "watermark": watermark,
        }


class InactivityAlert(KeyedProcessFunction):  # type: ignore[type-arg]
    """Alerts when a player sends nothing for ``quiet_ms`` of event time."""

    def __init__(self, quiet_ms: int) -> None:
        self.quiet_ms = quiet_ms

    def open(self, runtime_context: Any) -> None:
        self.deadline = runtime_context.get_state(ValueStateDescriptor("deadline"))

    def process_element(self, value: GameEvent, ctx: Any) -> Optional[Iterable[Any]]:
        previous = self.deadline.value()
        deadline = max(previous or 0, value.ts + self.quiet_ms)
        if previous is not None and previous != deadline:
            ctx.timer_service().delete_event_time_timer(previous)
        ctx.timer_service().register_event_time_timer(deadline)
        self.deadline.update(deadline)
        return None

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Dict[str, Any]]:
        self.deadline.clear()
        yield {"player": ctx.get_current_key(), "quiet_since": timestamp - self.quiet_ms, "alert_at": timestamp}


def arrivals(players: int, minutes: int, seed: int) -> List[Tuple[int, GameEvent]]:
    """Deterministic event stream as ``(arrival time, event)`` pairs ordered by arrival (both in ms of game
    time): per player ~one event every 4-8 s; tunnels buffer events for 3-6 minutes and deliver them in one
    burst; partition 3 is silent from minute 10 to 16."""
    rng = random.Random(seed)
    out: List[Tuple[int, GameEvent]] = []  # (arrival time, event)
    for p in range(players):
        name = f"player-{p:03d}"
        partition = p % PARTITIONS
        t = rng.randrange(0, 10_000)
        tunnel_until = -1
        while t < minutes * MINUTE:
            if partition == 3 and 10 * MINUTE <= t < 16 * MINUTE:
                t = 16 * MINUTE + rng.randrange(0, 5_000)
                continue
            if tunnel_until < t and rng.random() < 0.004:
                tunnel_until = t + rng.randrange(3 * MINUTE, 6 * MINUTE)
            event = GameEvent(name, t, rng.randrange(1, 100), partition)
            arrival = tunnel_until + rng.randrange(0, 2_000) if t <= tunnel_until else t + rng.randrange(0, 8_000)
            out.append((arrival, event))
            gap = rng.randrange(4_000, 8_000)
            if rng.random() < 0.01:
                gap += rng.randrange(2 * MINUTE, 4 * MINUTE)  # the player pauses: a new session
            t += gap
    out.sort(key=lambda a: (a[0], a[1].player, a[1].ts))
    return out


def generate(players: int, minutes: int, seed: int, batch_ms: int = 30_000) -> List[MicroBatch]:
    """:func:`arrivals` as micro-batches: one per ``batch_ms`` of arrival time, 8 minutes past the last event."""
    pairs = arrivals(players, minutes, seed)
    batches: List[MicroBatch] = []
    end = minutes * MINUTE + 8 * MINUTE
    index = 0
    for batch_end in range(batch_ms, end + batch_ms, batch_ms):
        elements = []
        while index < len(pairs) and pairs[index][0] < batch_end:
            elements.append(pairs[index][1])
            index += 1
        batches.append(MicroBatch(elements, partitions=[e.partition for e in elements], processing_time=batch_end))
    return batches


def strategy(idleness_ms: int = 30_000) -> WatermarkStrategy:
    """Bounded out-of-orderness of 10 s per partition; a partition silent for ``idleness_ms`` turns idle."""
    return WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(10)).with_idleness(
        Duration.of_millis(idleness_ms)
    )


def pipeline(events: DataStream, late_tag: OutputTag = LATE_EVENTS) -> Dict[str, Any]:
    """The demo's operators on a stream of events with ``player``, ``ts`` and ``score`` attributes
    (``GameEvent``s, or the ``Row``s of a Kafka topic); returns the streams to sink: sessions, late events, alerts.

    The results are typed (``SESSION_TYPE``, ``ALERT_TYPE``) so that Spark sinks such as ``DeltaSink`` know their
    schema; the JVM-free engine ignores the types."""
    by_player = events.key_by(lambda e: e.player)
    sessions = (
        by_player.window(EventTimeSessionWindows.with_gap(Duration.of_minutes(2)))
        .trigger(EarlyEveryNTrigger(10))
        .allowed_lateness(Duration.of_minutes(2))
        .side_output_late_data(late_tag)
        .aggregate(ScoreStats(), SessionResult(), output_type=SESSION_TYPE)
    )
    alerts = by_player.process(InactivityAlert(3 * MINUTE), output_type=ALERT_TYPE)
    return {"sessions": sessions, "late": sessions.get_side_output(late_tag), "alerts": alerts}


def build(env: StreamExecutionEnvironment, batches: List[MicroBatch]) -> Dict[str, Any]:
    """The demo's pipeline on ``env`` over replayed ``batches`` (the JVM-free demo): 4 source partitions."""
    source = MicroBatchSource(batches, partitions=list(range(PARTITIONS)))
    events = env.from_source(source, strategy().with_timestamp_assigner(lambda event, _: event.ts), "game-events")
    return pipeline(events)


__all__ = [
    "MINUTE",
    "LATE_EVENTS",
    "PARTITIONS",
    "EVENT_TYPE",
    "SESSION_TYPE",
    "ALERT_TYPE",
    "GameEvent",
    "EarlyEveryNTrigger",
    "ScoreStats",
    "SessionResult",
    "InactivityAlert",
    "arrivals",
    "generate",
    "strategy",
    "pipeline",
    "build",
]
