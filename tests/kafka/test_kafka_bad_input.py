"""Bad Kafka input on a real broker and a real streaming query: malformed records go to the dead-letter Delta
table exactly once (replays included) while every good record reaches the output Delta table once; far-future
event times are counted and logged but processed as Flink would.

One query, two rounds (one ``availableNow`` run, i.e. one Spark micro-batch, each), then a forced replay of
the last batch (its Spark commit deleted, as after a crash between the sinks' commits and Spark's)::

    batch 0  t-0: ann@1s  bob@4s  {not json  <non-UTF-8>  at="yesterday"  ann@3h (2 h ahead of processing time)
             t-1: cat@2s  [1, 2]  v="ten"  no "at"  dan@12s  bob@2.5h (1.5 h ahead)
             -> the watermark jumps to 2.5 h - 1 s: windows [0, 10 s) and [10 s, 20 s) fire
    batch 1  t-1: cat@15s (late: its window fired)   t-0: a tombstone, "at": null
    replay of batch 1: no new dead letter, no new record, no new Delta commit

(times after 2026-01-01T00:00Z; processing time is a manual clock at 01:00.)
"""

from __future__ import annotations

import glob
import json
import logging
import os
from datetime import UTC, datetime
from typing import Any, Dict, List, Tuple

import pytest

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors.delta import DeltaSink
from pyspark_flinkish.datastream.functions import ProcessFunction, ProcessWindowFunction
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

SCHEMA = "user STRING, at TIMESTAMP, v BIGINT"
B = 1_767_225_600_000  # 2026-01-01T00:00:00Z
NOW = B + 3_600_000  # the driver's processing time
RECORD = Types.ROW_NAMED(["user", "ts", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])


def _at(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _good(user: str, ms: int, v: int) -> str:
    return json.dumps({"user": user, "at": _at(B + ms), "v": v})


class Stamp(ProcessFunction):  # type: ignore[type-arg]
    """(user, event time in ms, v): what the source made of a good record."""

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        yield value.user, ctx.timestamp(), value.v


class Total(ProcessWindowFunction):  # type: ignore[type-arg]
    def process(self, key, context, elements):  # type: ignore[no-untyped-def]
        values = [e.v for e in elements]
        yield key, context.window().start, len(values), sum(values)


def _windows(stream, late: OutputTag):  # type: ignore[no-untyped-def]
    return (
        stream.key_by(lambda r: r.user)
        .window(TumblingEventTimeWindows.of(Duration.of_seconds(10)))
        .side_output_late_data(late)
        .process(Total())
    )


def _rows(spark: Any, path: str, columns: List[str]) -> List[tuple]:  # type: ignore[type-arg]
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).select(*columns).collect())


def _commits(path: str) -> int:
    return len(glob.glob(os.path.join(path, "_delta_log", "*.json")))


def test_bad_records_become_dead_letters_exactly_once_and_far_future_records_are_reported(  # type: ignore[no-untyped-def]
    spark, kafka_broker, kafka_topic, tmp_path, caplog
) -> None:
    topic = kafka_topic(partitions=2)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1))
    records, checkpoint = str(tmp_path / "records"), str(tmp_path / "ck")
    progress: List[Dict[str, Any]] = []
    windows_out: List[tuple] = []  # type: ignore[type-arg]
    late_out: List[Any] = []

    env = StreamExecutionEnvironment.get_execution_environment(spark, clock=ManualClock(NOW))
    events = env.from_kafka(topic, kafka_broker.bootstrap_servers, strategy, schema=SCHEMA, timestamp_field="at",
                            source_name="events")
    events.process(Stamp(), output_type=RECORD).sink_to(DeltaSink.for_path(records)).uid("records")
    late = OutputTag("late")
    windows = _windows(events, late)
    windows.add_sink(windows_out.append)
    windows.get_side_output(late).add_sink(late_out.append)

    def run() -> None:
        env.execute("bad-input", checkpoint_location=checkpoint, trigger={"availableNow": True},
                    progress=progress.append).await_termination()

    bad: List[Tuple[int, int, bytes, Any, str, int, int]] = []  # (partition, offset, key, value, reason, batch, ts)
    good: List[Tuple[int, int, str, int, int]] = []  # (partition, offset, user, ts, v)

    def produce(partition: int, items: List[Tuple[Any, Any]], batch: int) -> None:
        """items: (value, reason) for bad records, ((user, ms, v), None) for good ones."""
        values = [_good(*v) if r is None else v for v, r in items]
        keys = [f"k{len(bad) + len(good) + i}" for i in range(len(items))]
        acks = kafka_broker.produce(topic, values, partition=partition, keys=keys,
                                    timestamps_ms=[B + 100 * i for i in range(len(items))])
        for (v, r), (p, off), key, value, i in zip(items, acks, keys, values, range(len(items))):
            if r is None:
                good.append((p, off, v[0], B + v[1], v[2]))
            else:
                raw = value.encode() if isinstance(value, str) else value
                bad.append((p, off, key.encode(), raw, r, batch, B + 100 * i))

    with caplog.at_level(logging.INFO, logger="pyspark_flinkish"):
        produce(0, [
            (("ann", 1_000, 1), None), (("bob", 4_000, 2), None),
            ("{not json", "not JSON (Expecting property name enclosed in double quotes at line 1 column 2)"),
            (b'{"user": "\xff", "at": "2026-01-01T00:00:05Z", "v": 3}', "not UTF-8 text (invalid start byte at byte 10)"),
            (json.dumps({"user": "cat", "at": "yesterday", "v": 4}),
             "field 'at' is a JSON string that does not parse as a timestamp"),
            (("ann", 3 * 3_600_000, 8), None),
        ], 0)
        produce(1, [
            (("cat", 2_000, 5), None),
            ("[1, 2]", "not a JSON object (a JSON array)"),
            (json.dumps({"user": "dan", "at": _at(B + 3_000), "v": "ten"}), "field 'v' is a JSON string, not bigint"),
            (json.dumps({"user": "eve", "v": 6}), "event-time field 'at' is missing"),
            (("dan", 12_000, 7), None),
            (("bob", 9_000_000, 9), None),
        ], 0)
        run()
        produce(1, [(("cat", 15_000, 10), None)], 1)
        produce(0, [(None, "null value (a tombstone)"),
                    (json.dumps({"user": "fay", "at": None, "v": 11}), "event-time field 'at' is null")], 1)
        run()

    # (a) the dead letters: raw bytes, key, reason, position, Kafka timestamp, batch id, source, in the default table
    dead = os.path.join(checkpoint, "dead_letters")
    assert f"dead-letter Delta table {dead}" in caplog.text
    columns = ["topic", "partition", "offset", "key", "value", "reason", "batch_id", "source", "kafka_timestamp"]
    expected_dead = sorted(
        (topic, p, off, key, value, reason, batch, "events", datetime.fromtimestamp(ts / 1000, tz=UTC).replace(tzinfo=None))
        for p, off, key, value, reason, batch, ts in bad
    )
    got_dead = _rows(spark, dead, columns)
    assert [r[:8] for r in got_dead] == [r[:8] for r in expected_dead]
    assert [r[8] for r in got_dead] == [r[8] for r in expected_dead]  # Kafka timestamps (UTC session)
    query_ids = {r[0] for r in spark.read.format("delta").load(dead).select("query_id").collect()}
    assert len(query_ids) == 1 and query_ids != {""}
    assert [p.get("dead_letters") for p in progress] == [{"events": 6}, {"events": 2}]

    # (b) every good record once, with its event time
    assert _rows(spark, records, ["user", "ts", "v"]) == sorted((u, ts, v) for _, _, u, ts, v in good)

    # (e) far-future records: counted per partition, logged with partition, offset and time, processed as Flink
    assert [p.get("future_records") for p in progress] == [{"events": {f"{topic}-0": 1, f"{topic}-1": 1}}, {}]
    ann_offset = next(off for _, off, _, ts, _ in good if ts == B + 3 * 3_600_000)
    assert (f"far-future record: source 'events', partition {topic}-0, offset {ann_offset}: event time "
            "2026-01-01T03:00:00.000+00:00") in caplog.text
    expected_windows, expected_late = _flink(topic, good, strategy)
    assert sorted(windows_out) == sorted(expected_windows)
    assert [(r.user, r.v) for r in late_out] == [(r.user, r.v) for r in expected_late] == [("cat", 10)]

    # (c) a replay of the last batch (crash after the sinks' commits, before Spark's) adds nothing anywhere
    commits = _commits(dead), _commits(records)
    spark_commits = os.path.join(checkpoint, "spark", "commits")
    last = max(int(p) for p in os.listdir(spark_commits) if p.isdigit())
    assert last == 1
    for name in (str(last), f".{last}.crc"):
        if os.path.exists(os.path.join(spark_commits, name)):
            os.remove(os.path.join(spark_commits, name))
    run()
    assert progress[-1]["batch_id"] == 1 and progress[-1]["dead_letters"] == {"events": 2}  # it ran again
    assert (_commits(dead), _commits(records)) == commits
    assert _rows(spark, dead, columns) == got_dead
    assert _rows(spark, records, ["user", "ts", "v"]) == sorted((u, ts, v) for _, _, u, ts, v in good)


def _flink(topic: str, good: List[Tuple[int, int, str, int, int]], strategy):  # type: ignore[no-untyped-def]
    """The JVM-free engine on the good records, one micro-batch per round, in (partition, offset) order."""
    from pyspark.sql import Row

    rounds = [good[:-1], good[-1:]]
    batches = []
    for records in rounds:
        ordered = sorted(records)
        batches.append(MicroBatch([Row(user=u, at=ts, v=v) for _, _, u, ts, v in ordered],
                                  partitions=[f"{topic}-{p}" for p, *_ in ordered]))
    env = StreamExecutionEnvironment.get_execution_environment()
    source = MicroBatchSource(batches, end_of_input=False, partitions=[f"{topic}-0", f"{topic}-1"])
    events = env.from_source(source, strategy.with_timestamp_assigner(lambda r, _: r.at), "replay")
    late = OutputTag("late")
    results: List[tuple] = []  # type: ignore[type-arg]
    late_out: List[Any] = []
    windows = _windows(events, late)
    windows.add_sink(results.append)
    windows.get_side_output(late).add_sink(late_out.append)
    env.execute()
    return results, late_out
