"""The test broker itself: start, create a topic, produce, consume, restart (same port, data kept), stop."""

from __future__ import annotations

import time

import pytest

from pyspark_flinkish.testing.kafka import KafkaBroker, KafkaBrokerError

pytestmark = pytest.mark.kafka


def test_create_produce_consume_restart(kafka_broker: KafkaBroker, kafka_topic) -> None:  # type: ignore[no-untyped-def]
    topic = kafka_topic(partitions=3)
    assert kafka_broker.partitions(topic) == [0, 1, 2]
    assert topic in kafka_broker.topics()
    acks = kafka_broker.produce(topic, ["a", b"b", None], partition=2, keys=["k", None, "t"], timestamps_ms=[5, 6, 7])
    assert acks == [(2, 0), (2, 1), (2, 2)]
    port = kafka_broker.port
    kafka_broker.restart()
    assert kafka_broker.port == port and kafka_broker.is_running
    records = kafka_broker.consume(topic, expected=3)
    assert [(r.partition, r.offset, r.key, r.value, r.timestamp) for r in records] == [
        (2, 0, b"k", b"a", 5),
        (2, 1, None, b"b", 6),
        (2, 2, b"t", None, 7),
    ]
    assert kafka_broker.produce(topic, ["c"], partition=0) == [(0, 0)]  # serves after the restart


def test_missing_jars_say_how_to_fetch_them(tmp_path) -> None:  # type: ignore[no-untyped-def]
    broker = KafkaBroker(jars_dir=tmp_path)
    with pytest.raises(KafkaBrokerError, match="make jars"):
        broker.start()
    assert broker.directory is None and not broker.is_running


def test_stop_kills_the_jvm_and_removes_its_directory_even_on_failure() -> None:
    with pytest.raises(ZeroDivisionError), KafkaBroker(heap="256m") as broker:  # noqa: PT012
        directory = broker.directory
        process = broker._process
        assert directory is not None and directory.exists() and process is not None
        1 / 0  # noqa: B018
    assert process.poll() is not None
    assert not directory.exists()


def test_records_stamped_in_the_past_are_never_aged_out() -> None:
    """Why Spark once failed with "Some data may have been lost ... OffsetOutOfRangeException" on a fresh topic:
    Kafka's time retention deletes a segment whose newest record *timestamp* is older than ``retention.ms``, and
    tests produce records stamped in 1970 or on a fixed date. Kafka's default retention (7 days, checked 30 s
    after the broker starts and every 5 minutes) deleted them whenever a check fell between a query planning its
    offsets and reading them. The test broker keeps every record; a topic with Kafka's default retention shows
    what happened before, here with a retention check every 200 ms instead of every 5 minutes."""
    week_ms = 7 * 24 * 3_600_000
    fast_checks = {"log.retention.check.interval.ms": "200", "log.initial.task.delay.ms": "0"}
    with KafkaBroker(heap="256m", properties=fast_checks) as broker:
        kept = broker.create_topic("kept")
        aged = broker.create_topic("aged", config={"retention.ms": str(week_ms)})  # Kafka's default retention
        assert broker.produce(kept, ["a", "b"], timestamps_ms=[1_000, 2_000]) == [(0, 0), (0, 1)]
        # two deletions in `aged`: the second is by a retention check that began after `kept` had its records
        for first in (1, 2):
            broker.produce(aged, ["x"], timestamps_ms=[1_000])
            deadline = time.monotonic() + 60
            while broker.offset_ranges(aged)[0][0] < first:
                assert time.monotonic() < deadline, f"no retention check deleted {aged}'s records:\n{broker.log_tail()}"
                time.sleep(0.1)
        assert broker.offset_ranges(aged) == {0: (2, 2)}
        assert broker.offset_ranges(kept) == {0: (0, 2)}
        records = broker.consume(kept, expected=2)
        assert [(r.offset, r.value, r.timestamp) for r in records] == [(0, b"a", 1_000), (1, b"b", 2_000)]
