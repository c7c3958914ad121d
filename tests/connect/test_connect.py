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
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

pytestmark = pytest.mark.spark
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
    conf = configure(_Settings(), 2, {"spark.default.parallelism": "2", "spark.ui.enabled": "false"}).conf
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
    """Event-time timers and a side output to client sinks; foreach_batch writes through Spark on the server."""
    expected = _expected_alerts()
    env = StreamExecutionEnvironment.get_execution_environment(connect_spark)
    alerts, negative = _alerts(env)
    got: Dict[str, List[Any]] = {"alerts": [], "negative": []}
    alerts.add_sink(got["alerts"].append)
    negative.add_sink(got["negative"].append)
    written = str(tmp_path / "alerts")
    alerts.foreach_batch(lambda df, batch_id: df.write.mode("append").parquet(written))  # runs in the server's Python
    handle = env.execute("timers", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True})
    handle.await_termination()
    assert got == expected
    rows = connect_spark.read.parquet(written).collect()
    assert sorted(tuple(r) for r in rows) == sorted(expected["alerts"])
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
