"""The package on a Spark Connect session (issue 17): a real local Spark Connect server in a process of its own
(pyspark's ``SparkSession.builder.remote("local[2]")``, one per test module), and this process as its client.

The job's foreachBatch function runs in a Python process of the server; values for the user's own Python
(``add_sink``, ``print``, ``execute_and_collect``) come back through the checkpoint's outbox
(``pyspark_flinkish/spark/connect.py``). Results must equal the JVM-free engine's (which the classic-session tests
hold equal to the classic session's).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pandas as pd
import pytest

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.core.errors import UserFunctionError
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors.delta import DeltaSink
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

pytestmark = [pytest.mark.spark, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]

# the server: a local Spark session with Spark Connect's plugin (what pyspark's ``remote("local[2]")`` starts), with
# the package's settings, on a port of its own, until stdin closes
SERVER = """
import json, sys
from pyspark.sql import SparkSession
SparkSession.builder.master("local[2]").config(map=json.loads(sys.argv[1])).getOrCreate()
print("READY", flush=True)
sys.stdin.read()
"""


class _Settings:
    """Collects what :func:`pyspark_flinkish.spark.session.configure` sets on a builder."""

    def __init__(self) -> None:
        self.conf: Dict[str, str] = {}

    def config(self, key: str, value: str) -> _Settings:
        self.conf[key] = value
        return self


@pytest.fixture(scope="module")
def connect_spark(tmp_path_factory: Any) -> Iterator[Any]:
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    from pyspark_flinkish.spark.session import configure

    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    # Delta's snapshotPartitions as the classic tests' sessions have it (tests/conftest.py), instead of its 50
    extra = {"spark.default.parallelism": "2", "spark.ui.enabled": "false", "spark.databricks.delta.snapshotPartitions": "2"}
    conf = configure(_Settings(), 2, extra).conf
    token = uuid.uuid4().hex
    conf.update({
        "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
        "spark.connect.grpc.binding.port": str(port),
        "spark.connect.authenticate.token": token,
        "spark.sql.artifact.isolation.enabled": "true",
        "spark.sql.artifact.isolation.alwaysApplyClassloader": "true",
    })
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_CONNECT_AUTHENTICATE_TOKEN=token)
    # the server's Python processes do not get this checkout on their path: the package reaches them as the
    # session's artifact and with the foreachBatch function (spark/connect.py), as on a cluster
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != ROOT
    )
    log_path = tmp_path_factory.mktemp("connect-server") / "server.log"
    log = open(log_path, "w")
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, json.dumps(conf)], stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
        env=env, text=True, cwd=str(tmp_path_factory.mktemp("connect-cwd")), start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 300
        while "READY" not in log_path.read_text():
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the Spark Connect server did not start:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        # this process is a Connect client while the module runs (pyspark.sql.functions build Connect columns), as
        # with pyspark's generic builder; the classic tests of other modules run before or after it
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
        try:
            spark = RemoteSparkSession.builder.remote(f"sc://localhost:{port}/;token={token}").getOrCreate()
            yield spark
            spark.stop()
        finally:
            os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)  # the server's process group: its JVM too
        log.close()


def _tumbling_sum(stream: Any) -> Any:
    return (
        stream.map(lambda r: (r["k"], r["v"]))
        .key_by(lambda t: t[0])
        .window(TumblingEventTimeWindows.of(Duration.of_millis(10)))
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )


def test_issue_windowed_job_delivers_both_windows_to_the_client(connect_spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """from_dataframe over a streaming Parquet source, key_by, a 10 ms tumbling window, reduce, add_sink(list.append):
    the issue's job delivered nothing on Connect; both windows, and the job handle, work from the client."""
    source = tmp_path / "in"
    source.mkdir()
    pd.DataFrame({"k": ["a", "a", "b"], "ts": [1, 5, 12], "v": [1, 2, 3]}).to_parquet(source / "p0.parquet")
    df = connect_spark.readStream.schema("k string, ts long, v long").parquet(str(source))
    env = StreamExecutionEnvironment.get_execution_environment(connect_spark)
    out: List[Any] = []
    reported: List[Dict[str, Any]] = []
    listened: List[Dict[str, Any]] = []
    stream = env.from_dataframe(df, WatermarkStrategy.for_monotonous_timestamps(), timestamp_column="ts")
    _tumbling_sum(stream).add_sink(out.append)
    handle = env.execute("issue17", checkpoint_location=str(tmp_path / "ck"), progress=reported.append)
    handle.on_progress(listened.append)
    handle.process_all_available()
    assert out == [("a", 3)]  # watermark 11: a's window [0, 10) fired; b's [10, 20) is open
    assert handle.watermarks() == {"1:Map": 11, "2:Window(reduce)": 11}
    pd.DataFrame({"k": ["a"], "ts": [30], "v": [1]}).to_parquet(source / "p1.parquet")
    handle.process_all_available()
    assert out == [("a", 3), ("b", 3)]
    batches = [p["batch_id"] for p in reported]
    assert batches == sorted(batches) and batches[-1] >= 1
    assert handle.progress()["batch_id"] == batches[-1]
    assert [p["batch_id"] for p in handle.recent_progress()] == batches
    assert handle.progress()["operators"] == reported[-1]["operators"]
    deadline = time.monotonic() + 60  # Spark's listener events reach the client asynchronously
    while len(listened) < len(batches) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [p["batch_id"] for p in listened] == batches
    assert all(p["spark"]["batchId"] == p["batch_id"] for p in listened)
    handle.stop()
    assert not handle.is_active

    # no manual step: the executors imported the package from the zip the job added to the session's artifacts
    def package_file(frames: Any) -> Any:
        import pyspark_flinkish

        for _ in frames:
            yield pd.DataFrame({"file": [pyspark_flinkish.__file__]})

    (row,) = connect_spark.range(1).mapInPandas(package_file, "file string").collect()
    assert re.search(r"pyspark_flinkish-[0-9a-f]{16}\.zip/pyspark_flinkish/__init__\.py$", row["file"]), row["file"]


def test_readme_example_on_connect(connect_spark, capsys) -> None:  # type: ignore[no-untyped-def]
    """The README example (execute_and_collect, print through add_sink of a side output) prints what it says."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Example", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    expected = re.search(r"```text\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    line = "env = StreamExecutionEnvironment.get_execution_environment()"
    spark_code = code.replace(line, "env = StreamExecutionEnvironment.get_execution_environment(spark)")
    exec(compile(spark_code, "README.md (on Connect)", "exec"), {"__name__": "readme_on_connect", "spark": connect_spark})
    printed = capsys.readouterr().out
    assert sorted(printed.splitlines()) == sorted(expected.splitlines())
    rows = [ln for ln in printed.splitlines() if not ln.startswith("late:")]
    assert rows == [ln for ln in expected.splitlines() if not ln.startswith("late:")]


class Alert(KeyedProcessFunction):  # type: ignore[type-arg]
    """Sums values per key and emits the sum 5 ms (event time) after the key's first event; negative values go to
    a side output."""

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        from pyspark_flinkish.datastream.state import ValueStateDescriptor

        self.total = runtime_context.get_state(ValueStateDescriptor("total"))

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        if self.total.value() is None:
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 5)
        self.total.update((self.total.value() or 0) + value["v"])
        if value["v"] < 0:
            yield OutputTag("negative"), value

    def on_timer(self, timestamp, ctx):  # type: ignore[no-untyped-def]
        yield (ctx.get_current_key(), timestamp, self.total.value())
        self.total.clear()


EVENTS = [
    MicroBatch([{"k": "a", "t": 1, "v": 1}, {"k": "b", "t": 2, "v": 2}, {"k": "a", "t": 3, "v": -3}], partitions=[0, 1, 0]),
    MicroBatch([{"k": "a", "t": 9, "v": 4}, {"k": "b", "t": 4, "v": 5}], partitions=[0, 1]),
    MicroBatch([{"k": "c", "t": 30, "v": 6}], partitions=[1]),
    MicroBatch([{"k": "a", "t": 40, "v": 8}, {"k": "poison", "t": 41, "v": 0}], partitions=[0, 1]),
    MicroBatch([{"k": "b", "t": 60, "v": 9}], partitions=[1]),
]
ALERT = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])


def _alerts(env: Any, fail_once: Any = None) -> Any:
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(2)).with_timestamp_assigner(lambda e, _: e["t"])
    events = env.from_source(MicroBatchSource(EVENTS, partitions=[0, 1]), strategy, "events")
    if fail_once is not None:
        events = events.map(fail_once)
    alerts = events.key_by(lambda e: e["k"]).process(Alert(), output_type=ALERT).uid("alerts")
    return alerts, alerts.get_side_output(OutputTag("negative"))


def _expected_alerts() -> Any:
    local = StreamExecutionEnvironment.get_execution_environment()
    alerts, negative = _alerts(local)
    got: Dict[str, List[Any]] = {"alerts": [], "negative": []}
    alerts.add_sink(got["alerts"].append)
    negative.add_sink(got["negative"].append)
    local.execute()
    assert got["alerts"] and got["negative"]
    return got


def test_keyed_process_function_timers_side_output_and_a_foreach_batch_write(connect_spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Event-time timers and a side output to client sinks; foreach_batch writes through Spark on the server; the side
    output also to a ``FileSink`` and a Parquet bulk-format ``FileSink`` (part files written by the server's tasks,
    committed by its foreachBatch process)."""
    import pyarrow.parquet as pq

    from pyspark_flinkish.common import Encoder, Row
    from pyspark_flinkish.datastream.connectors.file_system import FileSink
    from pyspark_flinkish.datastream.formats.parquet import ParquetBulkWriters
    from pyspark_flinkish.table import DataTypes

    expected = _expected_alerts()
    env = StreamExecutionEnvironment.get_execution_environment(connect_spark)
    alerts, negative = _alerts(env)
    got: Dict[str, List[Any]] = {"alerts": [], "negative": []}
    alerts.add_sink(got["alerts"].append)
    negative.add_sink(got["negative"].append)
    written = str(tmp_path / "alerts")
    alerts.foreach_batch(lambda df, batch_id: df.write.mode("append").parquet(written))  # runs in the server's Python
    files = tmp_path / "negative"
    text = negative.map(lambda e: f"{e['k']}@{e['t']}:{e['v']}", output_type=Types.STRING())
    text.sink_to(FileSink.for_row_format(str(files), Encoder.simple_string_encoder()).build())
    bulk = tmp_path / "negative-parquet"
    row_type = DataTypes.ROW([DataTypes.FIELD(n, DataTypes.BIGINT() if n != "k" else DataTypes.STRING()) for n in "ktv"])
    negative.map(
        lambda e: Row(e["k"], e["t"], e["v"]), output_type=Types.ROW_NAMED(list("ktv"), [Types.STRING(), Types.LONG(), Types.LONG()])
    ).sink_to(FileSink.for_bulk_format(str(bulk), ParquetBulkWriters.for_row_type(row_type)).build())
    handle = env.execute("timers", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True})
    handle.await_termination()
    assert got == expected
    rows = connect_spark.read.parquet(written).collect()
    assert sorted(tuple(r) for r in rows) == sorted(expected["alerts"])
    assert [p for p in files.rglob(".*")] == [], "no in-progress part file is left"
    lines = sorted(line for p in files.rglob("part-*") for line in p.read_text().splitlines())
    assert lines == sorted(f"{e['k']}@{e['t']}:{e['v']}" for e in expected["negative"])
    assert [p for p in bulk.rglob(".*")] == [], "no in-progress part file is left"
    rows = [(r["k"], r["t"], r["v"]) for p in bulk.rglob("part-*") for r in pq.read_table(p).to_pylist()]
    assert sorted(rows) == sorted((e["k"], e["t"], e["v"]) for e in expected["negative"])
    assert [p["batch_id"] for p in handle.recent_progress()] == list(range(len(EVENTS) + 1))


def test_a_failed_job_restarts_from_its_checkpoint_exactly_once(connect_spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A user function fails in batch 3 (the error reaches the client as the package's error); the restart from the
    same checkpoint replays that batch: the idempotent foreach_batch table holds every alert once, and the client
    sinks got every batch's values (the failed batch's after the restart)."""
    expected = _expected_alerts()
    marker = str(tmp_path / "failed-once")

    def fail_once(e: Any) -> Any:
        if e["k"] == "poison" and not os.path.exists(marker):
            open(marker, "w").close()
            msg = "poisoned record"
            raise ValueError(msg)
        return e

    table = str(tmp_path / "table")
    got: Dict[str, List[Any]] = {"alerts": [], "negative": []}
    runs = []
    for attempt in range(2):
        env = StreamExecutionEnvironment.get_execution_environment(connect_spark)
        alerts, negative = _alerts(env, fail_once)
        alerts.add_sink(got["alerts"].append)
        negative.add_sink(got["negative"].append)
        # idempotent per batch id: a replayed batch replaces its own files
        alerts.foreach_batch(lambda df, batch_id: df.write.mode("overwrite").parquet(f"{table}/batch={batch_id}"))
        handle = env.execute("restart", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True})
        if attempt == 0:
            with pytest.raises(UserFunctionError, match="poisoned record") as failure:
                handle.await_termination()
            assert "Map" in str(failure.value)
        else:
            handle.await_termination()
        runs.append([p["batch_id"] for p in handle.recent_progress()])
    assert runs == [[0, 1, 2], [3, 4, 5]]
    assert got == expected
    rows = connect_spark.read.parquet(table).collect()
    assert sorted((r["f0"], r["f1"], r["f2"]) for r in rows) == sorted(expected["alerts"])


# ------------------------------------------------------------------------------------------------- Delta on Connect
def _kafka_delta_job() -> Any:
    """``tests/e2e/kafka_delta_job.py`` (the e2e Kafka → Delta pipeline), its functions pickled by value: the server's
    Python cannot import the test tree."""
    import importlib.util

    from pyspark import cloudpickle

    path = ROOT / "tests" / "e2e" / "kafka_delta_job.py"
    spec = importlib.util.spec_from_file_location("kafka_delta_job_on_connect", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # type: ignore[union-attr]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    cloudpickle.register_pickle_by_value(module)
    return module


def _delta_commits(path: Path) -> List[Dict[str, Any]]:
    out = []
    for f in sorted((path / "_delta_log").glob("*.json")):
        with open(f, encoding="utf-8") as fh:
            out.append(next(json.loads(line)["commitInfo"] for line in fh if '"commitInfo"' in line))
    return out


def _spark_batches(checkpoint: Path, topic: str, stored: Dict[Any, Any]) -> List[List[Any]]:
    """The query's micro-batches as (partition, offset, event) lists, rebuilt from Spark's offsets log (offsets not
    in ``stored``, the malformed records, left out)."""
    ends = {}
    for p in (checkpoint / "spark" / "offsets").glob("[0-9]*"):
        ends[int(p.name)] = {int(k): int(v) for k, v in json.loads(p.read_text().splitlines()[2])[topic].items()}
    assert sorted(ends) == list(range(len(ends)))
    batches, previous = [], {}
    for b in range(len(ends)):
        batches.append([(p, o, stored[(p, o)]) for p in sorted(ends[b]) for o in range(previous.get(p, 0), ends[b][p]) if (p, o) in stored])
        previous.update(ends[b])
    return batches


def test_kafka_to_delta_with_a_late_side_output_dead_letters_and_a_restart_exactly_once(  # type: ignore[no-untyped-def]
    connect_spark, kafka_broker, kafka_topic, tmp_path
) -> None:
    """The e2e Kafka → Delta job (session windows with allowed lateness appended, their late side output appended, a
    tumbling count merged on (k, start)) on Connect, with a malformed record in the topic. Its first run (two
    micro-batches) ends with a batch whose Delta commits are done and whose Spark commit is lost (as after a crash);
    the restart replays that batch. Every table equals the JVM-free engine over the same micro-batches, with one
    commit per Spark batch id; the malformed record is in the dead-letter table once. The late side output also goes
    to a Kafka topic through an exactly-once ``KafkaSink``, whose writers run in the server's Python: a
    ``read_committed`` consumer reads the engine's late records once each, the replayed batch's transactions skipped."""
    from pyspark_flinkish.datastream.connectors.kafka import (
        DeliveryGuarantee,
        KafkaRecordSerializationSchema,
        KafkaSink,
    )
    from pyspark_flinkish.datastream.formats.json import JsonRowSerializationSchema
    from pyspark_flinkish.spark.types import to_rows

    job = _kafka_delta_job()
    topic = kafka_topic(partitions=job.PARTITIONS)
    events = job.events(1_200)
    stored: Dict[Any, Any] = {}

    def produce(pairs: List[Any]) -> None:
        for p in range(job.PARTITIONS):
            mine = [e for q, e in pairs if q == p]
            acks = kafka_broker.produce(topic, [json.dumps(e) for e in mine], partition=p)
            stored.update({(ap, off): e for (ap, off), e in zip(acks, mine)})

    produce(events)
    (bad,) = kafka_broker.produce(topic, [b"{not json"], partition=0)  # the last record of partition 0: in batch 1
    checkpoint, lake = tmp_path / "ck", tmp_path / "lake"
    late_topic = kafka_topic(partitions=2)
    late_sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(kafka_broker.bootstrap_servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(late_topic)
            .set_value_serialization_schema(JsonRowSerializationSchema.builder().with_type_info(job.EVENT_TYPE).build())
            .build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix(f"connect-{uuid.uuid4().hex[:8]}")
        .build()
    )
    runs = []
    for attempt in range(2):
        env = StreamExecutionEnvironment.get_execution_environment(connect_spark)
        source = env.from_kafka(topic, kafka_broker.bootstrap_servers, job.strategy(), schema=job.EVENT_TYPE,
                                timestamp_field="t", max_offsets_per_trigger=650, partitions=list(range(job.PARTITIONS)))
        streams = job.build(source)
        for name, stream in streams.items():
            stream.sink_to(DeltaSink.for_path(str(lake / name), merge_keys=job.MERGE_KEYS.get(name, ()))).uid(name)
        streams["late"].sink_to(late_sink).uid("late-to-kafka")
        handle = env.execute("kafka-delta", checkpoint_location=str(checkpoint), trigger={"availableNow": True})
        handle.await_termination()
        runs.append([p["batch_id"] for p in handle.recent_progress()])
        if attempt == 0:  # a crash after the batch's Delta commits, before Spark's commit: the restart replays it
            last = runs[0][-1]
            for name in (str(last), f".{last}.crc"):
                (checkpoint / "spark" / "commits" / name).unlink(missing_ok=True)
    assert runs == [[0, 1], [1]], runs  # the replayed batch ran again
    batches = _spark_batches(checkpoint, topic, stored)
    assert sum(len(b) for b in batches) == len(events)
    expected = job.run_local(topic, batches)
    assert expected["late"], "the scenario must have late records"
    for name in job.TABLES:
        want = sorted(tuple(r) for r in to_rows(expected[name], job.TYPES[name]))
        got = sorted(tuple(r) for r in connect_spark.read.format("delta").load(str(lake / name))
                     .select(*job.TYPES[name].field_names).collect())
        assert got == want, name
        batch_ids = [json.loads(c["userMetadata"])["flinkish"]["batch_id"] for c in _delta_commits(lake / name) if c.get("userMetadata")]
        assert batch_ids == list(range(len(batches))), (name, batch_ids)  # the replayed batch was not written again
    committed = kafka_broker.consume(late_topic, timeout=10, isolation_level="read_committed")
    fields = job.EVENT_TYPE.field_names
    assert sorted(tuple(json.loads(r.value)[f] for f in fields) for r in committed) == sorted(
        tuple(r) for r in to_rows(expected["late"], job.EVENT_TYPE)
    )
    dead = connect_spark.read.format("delta").load(str(checkpoint / "dead_letters")).collect()
    assert [(r["topic"], r["partition"], r["offset"], r["value"], r["batch_id"]) for r in dead] == [
        (topic, 0, bad[1], b"{not json", 1)
    ]
    assert "not JSON" in dead[0]["reason"]
    # the job's session is as it was: the settings of the Delta writes were restored after each write
    assert connect_spark.conf.get("spark.databricks.delta.commitInfo.userMetadata", None) is None


def test_delta_sink_then_from_delta_on_connect(connect_spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A DeltaSink written on Connect read back with from_delta: streaming (the writing job's watermarks from the
    change data feed: the reading job's event-time timers fire as the writer's did) and bounded."""
    expected = _expected_alerts()
    path = str(tmp_path / "alerts")
    env = StreamExecutionEnvironment.get_execution_environment(connect_spark)
    alerts, _ = _alerts(env)
    alerts.sink_to(DeltaSink.for_path(path)).uid("alerts")
    env.execute("write", checkpoint_location=str(tmp_path / "ck1"), trigger={"availableNow": True}).await_termination()

    reader = StreamExecutionEnvironment.get_execution_environment(connect_spark)
    from pyspark_flinkish.core.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="is not a Delta table"):
        reader.from_delta(str(tmp_path / "ck1"))  # a directory, not a Delta table
    with pytest.raises(InvalidArgumentError, match="is not a Delta table"):
        reader.from_delta(str(tmp_path / "nothing"))
    fired: List[Any] = []
    (
        reader.from_delta(path)
        .key_by(lambda r: r["f0"])
        .process(Relay(), output_type=Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG()]))
        .add_sink(fired.append)
    )
    handle = reader.execute("read", checkpoint_location=str(tmp_path / "ck2"), trigger={"availableNow": True})
    handle.await_termination()
    # each alert is released by a timer at its own time: only once the writer's watermark passed it
    assert sorted(f[:3] for f in fired) == sorted(expected["alerts"])
    assert all(f[3] >= f[1] for f in fired)
    assert max(handle.watermarks().values()) == 2**63 - 1  # the writer's end of input reached the reader

    bounded = StreamExecutionEnvironment.get_execution_environment(connect_spark)
    snapshot = bounded.from_delta(path, bounded=True).map(lambda r: (r["f0"], r["f1"], r["f2"]), output_type=ALERT)
    assert sorted(snapshot.execute_and_collect()) == sorted(expected["alerts"])


class Relay(KeyedProcessFunction):  # type: ignore[type-arg]
    """Holds each row until the watermark passes its time (``f1``), then emits it with the watermark that fired it."""

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        from pyspark_flinkish.datastream.state import ListStateDescriptor

        self.held = runtime_context.get_list_state(ListStateDescriptor("held"))

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        ctx.timer_service().register_event_time_timer(value["f1"])
        self.held.add((value["f0"], value["f1"], value["f2"]))

    def on_timer(self, timestamp, ctx):  # type: ignore[no-untyped-def]
        held = list(self.held.get() or [])
        for row in held:
            if row[1] <= timestamp:
                yield (*row, ctx.timer_service().current_watermark())
        self.held.update([row for row in held if row[1] > timestamp])


def test_apply_in_pandas_with_state_is_refused_on_connect(connect_spark) -> None:  # type: ignore[no-untyped-def]
    """The other executor cannot run on Connect: refused when the environment is made, naming the alternative."""
    from pyspark_flinkish.core.errors import UnsupportedFeatureError

    with pytest.raises(UnsupportedFeatureError, match=r"apply_in_pandas_with_state.*Spark Connect.*get_execution_environment\(spark\)"):
        StreamExecutionEnvironment.get_execution_environment(connect_spark, backend="apply_in_pandas_with_state")


class Remind(KeyedProcessFunction):  # type: ignore[type-arg]
    """A processing-time timer 1 s after a key's element; the timer reports its key."""

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 1000)
        return iter(())

    def on_timer(self, timestamp, ctx):  # type: ignore[no-untyped-def]
        yield ("timer", ctx.get_current_key())


def test_processing_time_timers_fire_on_an_idle_stream_on_connect(connect_spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """On the wall clock the tick source is unioned in: the driver that runs the batches (the server's foreachBatch
    process, the driver pickled without its tick thread) arms the tick that fires the timers without new input."""
    source = tmp_path / "in"
    source.mkdir()
    (source / "p0.json").write_text("\n".join(json.dumps({"k": k, "v": v}) for k, v in [("a", 1), ("b", 2)]))
    df = connect_spark.readStream.schema("k string, v long").json(str(source))
    env = StreamExecutionEnvironment.get_execution_environment(connect_spark)
    out: List[Any] = []
    env.from_dataframe(df, WatermarkStrategy.no_watermarks()).key_by(lambda r: r["k"]).process(Remind()).add_sink(out.append)
    handle = env.execute("idle-timers", checkpoint_location=str(tmp_path / "ck"))
    try:
        deadline = time.time() + 90
        while len(out) < 2 and time.time() < deadline and handle.is_active:
            time.sleep(0.2)
        assert sorted(out) == [("timer", "a"), ("timer", "b")]
        assert "tick-00000000000000000000" in [p.name for p in (tmp_path / "ck" / "flinkish" / "ticks").iterdir()]
    finally:
        handle.stop()
