"""The test broker's pieces that need no JVM: its cluster id and the server properties it writes."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from pyspark_flinkish.testing import kafka
from pyspark_flinkish.testing.kafka import KafkaBroker, random_cluster_id


def test_a_cluster_id_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    """``kafka-storage format -t -…`` reads such an id as an option and fails: one broker start in 64 did."""
    dash = uuid.UUID(bytes=b"\xf8" + bytes(15))  # URL-safe base64 "-AAAAAAAAAAAAAAAAAAAAA"
    plain = uuid.UUID(bytes=b"\x04" + bytes(15))  # "BAAAAAAAAAAAAAAAAAAAAA"
    drawn = iter([dash, dash, plain])
    monkeypatch.setattr(kafka.uuid, "uuid4", lambda: next(drawn))
    assert random_cluster_id() == "BAAAAAAAAAAAAAAAAAAAAA"
    assert next(drawn, None) is None  # both dashed ids were drawn and refused


def test_the_broker_keeps_records_whatever_their_timestamps_unless_told_otherwise(tmp_path: Path) -> None:
    broker = KafkaBroker()
    broker.directory, broker.port, broker.controller_port = tmp_path, 1, 2
    assert broker.server_properties()["log.retention.ms"] == "-1"
    broker = KafkaBroker(properties={"log.retention.ms": "1000"})
    broker.directory, broker.port, broker.controller_port = tmp_path, 1, 2
    assert broker.server_properties()["log.retention.ms"] == "1000"
