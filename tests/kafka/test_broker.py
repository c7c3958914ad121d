"""The test broker itself: start, create a topic, produce, consume, restart (same port, data kept), stop."""

from __future__ import annotations

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
