"""A job whose keyed state covers both files of the earlier store (before incremental state): a
``KeyedProcessFunction`` with value state, event-time timers and TTL state (keyed snapshots, ``v=`` files) and a
tumbling window run batch-wise (``w=`` files). ``data/checkpoint_v1`` holds its checkpoint after Spark batches 0-2,
written by the release before incremental state (commit f50445f) with ``foreach_batch_harness``; the tests resume
it with this version. Regenerate with that release on ``PYTHONPATH``: ``python state_upgrade_job.py <directory>``."""

from __future__ import annotations

import sys
from typing import Any, List

from pyspark_flinkish.common import Duration, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.state import StateTtlConfig, ValueStateDescriptor
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

KEYS = [f"k{i:02d}" for i in range(12)]

BATCHES = [
    # (key, event time, amount); processing time 1_000 ms apart
    [(k, 1_000 + 10 * i, i) for i, k in enumerate(KEYS)],
    [(k, 2_500 + i, 1) for i, k in enumerate(KEYS[:4])],
    [("k00", 4_100, 5), ("k05", 4_200, 2)],
    [("k01", 6_000, 1)],  # the checked-in checkpoint ends before this batch
    [("k02", 9_000, 3), ("k07", 9_500, 4)],
    [("k00", 14_000, 1)],
]


class CountAndRemind(KeyedProcessFunction):  # type: ignore[misc]
    """Counts a key's events; 3 s of event time after each, a reminder with the count; a TTL'd last amount."""

    def open(self, ctx: Any) -> None:
        self.count = ctx.get_state(ValueStateDescriptor("count", None))
        ttl = StateTtlConfig.new_builder(Duration.of_millis(2_500)).build()
        last = ValueStateDescriptor("last", None)
        last.enable_time_to_live(ttl)
        self.last = ctx.get_state(last)

    def process_element(self, value: Any, ctx: Any) -> Any:
        previous = self.last.value()
        self.count.update((self.count.value() or 0) + 1)
        self.last.update(value[2])
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 3_000)
        yield ("seen", value[0], value[1], previous)

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield ("remind", ctx.get_current_key(), timestamp, self.count.value())


def build(env: Any, out: List[Any]) -> None:
    source = MicroBatchSource([MicroBatch(b, processing_time=1_000 * (i + 1)) for i, b in enumerate(BATCHES)])
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(100)).with_timestamp_assigner(
        lambda e, _: e[1]
    )
    events = env.from_source(source, strategy, "events")
    keyed = events.key_by(lambda e: e[0])
    keyed.process(CountAndRemind()).uid("remind").add_sink(out.append)
    windows = keyed.window(TumblingEventTimeWindows.of(Duration.of_seconds(2)))
    windows.reduce(lambda a, b: (a[0], max(a[1], b[1]), a[2] + b[2])).uid("sums").add_sink(out.append)


if __name__ == "__main__":  # write the checkpoint after batches 0-2 (run with the earlier release)
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from foreach_batch_harness import run_foreach_batch

    run_foreach_batch(lambda env: build(env, []), sys.argv[1], vectorize=True, partitions=2, batches=range(3))
