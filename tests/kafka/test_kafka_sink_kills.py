"""Kafka -> Kafka exactly once across driver crashes: ``kafka_sink_job.py`` (tumbling windows per key with a
late-data side output, both written by ``KafkaSink`` with ``EXACTLY_ONCE``) runs as its own driver process and is
SIGKILLed three times, each time restarted from its checkpoint, until it completes (the broker is restarted once,
after the first kill, with that attempt's transaction open):

1. ``during``: in a batch whose window results have two writers (transactions), after one writer committed and
   while the other's records are on the broker in its open transaction: the batch is partly committed, and its
   replay must skip the committed writer and write the other;
2. ``sink``: right after a ``KafkaSink`` write committed its transactions (the batch's other sink, the driver and
   Spark have not committed);
3. ``planning``: between batches, once Spark planned the next batch.

(``FLINKISH_KILL_TESTS=full`` adds ``commit``: after the driver committed a batch, before Spark does.)

Then a ``read_committed`` consumer must read on both topics exactly the records the JVM-free engine writes through
the same sink over the same micro-batches (key, value, Kafka partition, timestamp, and each key's order): nothing
lost, nothing duplicated. A ``read_uncommitted`` consumer sees the records of the transaction the first kill left
open, which the restart aborted: they are in the log, and not committed.
"""

from __future__ import annotations

import ast
import collections
import json
import os
import re
import signal
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from pyspark_flinkish.testing.sigkill import DriverRun, job_module

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.slow]

JOB = Path(__file__).resolve().with_name("kafka_sink_job.py")
N_EVENTS = 240
MAX_OFFSETS = 30  # 8 micro-batches
OUT_TOPIC = "kafka-sink-kills-windows"
KILLS = [("during", 2), ("sink", 3), ("planning", 1)]
if os.environ.get("FLINKISH_KILL_TESTS") == "full":
    KILLS.append(("commit", 1))


def _run(args: List[str], log: Path, runs: List[DriverRun], timeout: float = 300) -> int:
    """Run the job to its end (or its SIGKILL); then kill what is left of it (the JVM's Python workers). Each kill's
    reason is appended to ``kills.txt`` beside the log (``kafka_sink_job.crash``)."""
    run = DriverRun(JOB, args, log, env={"KAFKA_SINK_KILLS": str(log.with_name("kills.txt"))})
    runs.append(run)
    return run.finish(timeout)


def _records(broker: Any, topic: str, isolation_level: str = "read_committed") -> List[Tuple[Any, ...]]:
    """``(partition, key, value, timestamp)`` in (partition, offset) order."""
    return [(r.partition, r.key.decode(), json.loads(r.value), r.timestamp)
            for r in broker.consume(topic, timeout=15, isolation_level=isolation_level)]


def _per_key(records: List[Tuple[Any, ...]]) -> Dict[str, List[Any]]:
    """Each key's records (partition, value, timestamp) in log order: Flink's per-key order."""
    out: Dict[str, List[Any]] = collections.defaultdict(list)
    for partition, key, value, ts in records:
        out[key].append((partition, json.dumps(value, sort_keys=True), ts))
    return dict(out)


def test_kafka_to_kafka_exactly_once_across_driver_kills(
    kafka_broker: Any, kafka_topic: Any, tmp_path: Path, driver_runs: List[DriverRun]
) -> None:
    job: Any = job_module(JOB)
    events = job.events(N_EVENTS)
    in_topic = kafka_topic(partitions=1, suffix="in")
    # The window results' writers are a hash partitioning of (topic, key), so the output topic's name decides which
    # writers get records: with a random name, about one run in 32 put all six keys in one of the two writers, and
    # the "during" kill (two writers with records) never came. A fixed name (one broker per worker, this test alone
    # uses it) splits the keys over both writers in every batch.
    out_topic = kafka_broker.create_topic(OUT_TOPIC, 3)
    late_topic = kafka_topic(partitions=2, suffix="late")
    kafka_broker.produce(in_topic, [json.dumps(e) for e in events], partition=0)
    servers = kafka_broker.bootstrap_servers
    checkpoint = str(tmp_path / "chk")
    base = ["--checkpoint", checkpoint, "--bootstrap-servers", servers, "--in-topic", in_topic, "--out-topic", out_topic,
            "--late-topic", late_topic, "--max-offsets-per-trigger", str(MAX_OFFSETS)]
    log = tmp_path / "runs.log"
    flags = {"during": "--kill-during-write", "sink": "--kill-after-sink-write", "commit": "--kill-after-commit",
             "planning": "--kill-after-planning"}
    kills = log.with_name("kills.txt")
    for i, (kind, n) in enumerate(KILLS):
        with open(log, "a") as f:
            f.write(f"=== run with kill {kind} {n}\n")
        # a kill point counted in this process's batches or writes; "during" names a Spark batch id
        rc = _run([*base, flags[kind], str(n)], log, driver_runs)
        text = log.read_text()
        killed = kills.read_text().splitlines() if kills.exists() else []
        assert rc == -signal.SIGKILL and len(killed) == i + 1, f"kill {kind}: rc={rc} {killed}\n{text[-3000:]}"
        if kind == "during":  # the broker restarts while the dead attempt's transaction is open: the next run must
            kafka_broker.restart()  # fence it through the coordinator's recovered state (same port, same log)
    # the 'during' kill left its batch partly committed: one writer committed, the other's transaction open; the
    # next run replayed the batch, skipping the committed writer and committing the other
    (reason,) = [k for k in kills.read_text().splitlines() if "during the write" in k]
    partial = re.search(r"batch (\d+) \(windows\): writer (\d+) committed, writer (\d+)'s transaction open", reason)
    assert partial, reason
    after = log.read_text().split("=== run with kill sink")[1]
    replay = re.search(rf"kafka windows batch_id={partial.group(1)} .*? metrics=(\{{.*?\}})", after)
    assert replay, after[-3000:]
    metrics = ast.literal_eval(replay.group(1))
    assert metrics["transactions_skipped"] == 1 and metrics["transactions_committed"] == 1, metrics
    with open(log, "a") as f:
        f.write("=== final run\n")
    rc = _run(base, log, driver_runs)
    text = log.read_text()
    assert rc == 0, text[-4000:]

    # the micro-batches Spark ran: one partition, MAX_OFFSETS records each (availableNow, maxOffsetsPerTrigger)
    batches = [events[i:i + MAX_OFFSETS] for i in range(0, N_EVENTS, MAX_OFFSETS)]
    offsets_log = sorted(int(n) for n in os.listdir(os.path.join(checkpoint, "spark", "offsets")) if n.isdigit())
    assert offsets_log == list(range(len(batches))), offsets_log
    local_out, local_late = kafka_topic(partitions=3, suffix="local-out"), kafka_topic(partitions=2, suffix="local-late")
    job.run_local(in_topic, batches, servers, local_out, local_late)

    for topic, local in ((out_topic, local_out), (late_topic, local_late)):
        got, expected = _records(kafka_broker, topic), _records(kafka_broker, local)
        assert expected, f"{local}: the reference wrote nothing"
        assert collections.Counter(map(repr, got)) == collections.Counter(map(repr, expected)), (
            f"{topic}: {len(got)} records read committed, {len(expected)} expected\n{text[-3000:]}"
        )
        assert _per_key(got) == _per_key(expected), f"{topic}: per-key order differs"

    # the transaction the 'during' kill left open was aborted by the restart: its records are in the log (a
    # read_uncommitted consumer reads them) but not committed
    uncommitted = _records(kafka_broker, out_topic, "read_uncommitted")
    aborted = collections.Counter(map(repr, uncommitted)) - collections.Counter(map(repr, _records(kafka_broker, out_topic)))
    assert sum(aborted.values()) > 0, "the 'during' kill left no aborted records"
    assert len(uncommitted) == len(_records(kafka_broker, out_topic)) + sum(aborted.values())
