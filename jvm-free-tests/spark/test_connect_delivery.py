"""Spark Connect without a server (issue 17): why a client sink got nothing, and the outbox that delivers its values.

On Connect, Spark pickles the foreachBatch function (the driver) and runs it in a Python process of the server:
the sinks it calls are copies of the user's. The harness runs the driver's real bodies on such a pickled copy,
with the outbox of ``spark/connect.py`` in between; the client delivers in its own process.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List

import pytest
from foreach_batch_harness import local_outputs, run_foreach_batch
from pyspark import cloudpickle

from pyspark_flinkish.common import Duration, WatermarkStrategy
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.core.errors import UnsupportedFeatureError, UserFunctionError
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows
from pyspark_flinkish.spark.connect import (
    ClientDelivery,
    Outbox,
    RemoteBatchFunction,
    is_connect,
    remote_batch_function,
)
from pyspark_flinkish.spark.delivery import deliver_values, is_client_sink
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BATCHES = [
    MicroBatch([("a", 1, 1), ("b", 2, 2), ("a", 4, 3)]),
    MicroBatch([("a", 13, 4), ("b", 12, 5)]),
    MicroBatch([("a", 2, 6), ("b", 25, 7)]),  # a@2 is late: its window [0, 10) was cleaned up at watermark 12
]


def _build(out: Dict[str, List[Any]]) -> Any:
    def build(env: Any) -> None:
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
        events = env.from_source(MicroBatchSource(BATCHES), strategy, "events")
        late = OutputTag("late")
        sums = (
            events.key_by(lambda e: e[0])
            .window(TumblingEventTimeWindows.of(Duration.of_millis(10)))
            .side_output_late_data(late)
            .reduce(lambda a, b: (a[0], a[1], a[2] + b[2]))
        )
        sums.add_sink(out["sums"].append)
        sums.get_side_output(late).add_sink(out["late"].append)

    return build


def _run_as_on_connect(tmp_path: Any, client_out: Dict[str, List[Any]], run: str = "r1", batches: Any = None) -> Any:
    """Run the pipeline's driver as a Connect server does (a pickled copy, sinks into the outbox); returns the
    client's delivery and the copy."""
    server: Dict[str, Any] = {}
    outbox = Outbox(str(tmp_path / "ck"), run)

    def as_on_server(driver: Any) -> Any:
        server["client_driver"] = driver
        driver.outbox, driver.progress = outbox, outbox
        copy = cloudpickle.loads(cloudpickle.dumps(driver))  # what foreachBatch runs on the server
        server["driver"] = copy
        return copy

    run_foreach_batch(_build(client_out), str(tmp_path / "ck"), vectorize=False, prepare=as_on_server, batches=batches)
    plan = server["client_driver"].plan
    sinks = {i: plan.transformations[i] for i in plan.sinks if is_client_sink(plan.transformations[i])}
    client = ClientDelivery(outbox, sinks, lambda t, values, b: deliver_values(None, t, values, b, {}))
    return client, server["driver"]


def test_a_client_sink_on_the_server_copy_is_not_the_users_and_the_outbox_delivers_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    expected: Dict[str, List[Any]] = {"sums": [], "late": []}
    local_outputs(_build(expected))
    assert expected["sums"] and expected["late"] == [("a", 2, 6)]

    got: Dict[str, List[Any]] = {"sums": [], "late": []}
    client, server_driver = _run_as_on_connect(tmp_path, got)
    # the root cause of "nothing delivered": the sinks ran on the server's copy; the user's lists saw nothing
    assert got == {"sums": [], "late": []}
    server_sinks = [t.sink for t in server_driver.plan.transformations if t.kind == "sink"]
    assert all(s.__self__ is not got["sums"] and s.__self__ is not got["late"] for s in server_sinks)
    assert client.drain() == len(BATCHES) + 1  # every Spark batch (the last: end of input)
    assert got == expected
    assert [p["batch_id"] for p in client.history] == list(range(len(BATCHES) + 1))
    assert client.drain() == 0  # each batch once
    assert not os.listdir(client.outbox.root)


def test_a_new_run_delivers_what_an_earlier_run_left_then_its_own(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A client that stopped after the server committed batches (not replayed by Spark) loses nothing."""
    expected: Dict[str, List[Any]] = {"sums": [], "late": []}
    local_outputs(_build(expected))
    got: Dict[str, List[Any]] = {"sums": [], "late": []}
    _run_as_on_connect(tmp_path, got, "first", batches=range(0, 2))  # its client never delivered
    client, _ = _run_as_on_connect(tmp_path, got, "second", batches=range(2, len(BATCHES) + 1))
    assert client.deliver_earlier_runs() == 2
    assert client.drain() == len(BATCHES) - 1
    assert got == expected
    assert os.listdir(os.path.dirname(client.outbox.root)) == ["run=second"]


def test_a_failing_client_sink_stops_delivery_and_is_raised_again(tmp_path) -> None:  # type: ignore[no-untyped-def]
    outbox = Outbox(str(tmp_path), "r")
    for batch in (0, 1):
        outbox.write(batch, 3, [batch])
        outbox({"batch_id": batch})
    seen: List[Any] = []

    def sink(value: Any) -> None:
        if value == 1:
            msg = "boom"
            raise ValueError(msg)
        seen.append(value)

    from pyspark_flinkish.datastream.plan import SinkFunctionSpec, Transformation

    t = Transformation("sink", "Sink", [], sink=sink, spec=SinkFunctionSpec(sink))
    client = ClientDelivery(outbox, {3: t}, lambda t, values, b: deliver_values(None, t, values, b, {"sink_uid": "s"}))
    with pytest.raises(UserFunctionError, match="boom"):
        client.drain()
    assert seen == [0]
    with pytest.raises(UserFunctionError):
        client.drain()  # the job's handle stops the query; nothing after the failure is delivered


def test_package_errors_cross_to_the_client_between_markers() -> None:
    """On Connect only the text of the server's exception reaches the client: a package error goes between the
    markers that ``error_transport`` rebuilds it from."""
    from pyspark_flinkish.spark.error_transport import package_error_from

    def failing(df: Any, batch_id: int) -> None:
        msg = "operator 'Map' (uid 'm'): ValueError: bad"
        raise UserFunctionError(msg)

    with pytest.raises(UserFunctionError) as info:
        RemoteBatchFunction(failing)(None, 0)
    carried = RuntimeError(f"StreamingQueryException: ... {info.value} ...")
    rebuilt = package_error_from(carried)
    assert isinstance(rebuilt, UserFunctionError) and str(rebuilt) == "operator 'Map' (uid 'm'): ValueError: bad"


class _ConnectSession:
    """Stands in for a Spark Connect session: its class lives in pyspark.sql.connect."""

    class conf:  # noqa: N801 (Spark's attribute name)
        @staticmethod
        def get(key: str, default: object = None) -> object:
            return default if key.startswith("spark.hadoop.") else "2"


_ConnectSession.__module__ = "pyspark.sql.connect.session"


def test_a_manual_clock_is_refused_on_connect_when_the_job_is_started(tmp_path) -> None:  # type: ignore[no-untyped-def]
    spark = _ConnectSession()
    assert is_connect(spark)
    env = SparkStreamExecutionEnvironment(spark, clock=ManualClock(0))
    env.from_source(MicroBatchSource(BATCHES), WatermarkStrategy.no_watermarks(), "events").add_sink(print)
    with pytest.raises(UnsupportedFeatureError, match="ManualClock cannot drive a job on a Spark Connect session"):
        env.execute("manual", checkpoint_location=str(tmp_path / "ck"))


def test_the_foreach_batch_function_unpickles_without_the_package_and_brings_it(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Connect's foreachBatch worker does not see the session's Python artifacts: the function brings the package."""
    import subprocess
    import sys

    monkeypatch.setenv("PYSPARK_FLINKISH_SHIP_PACKAGE", "1")
    shipped: List[Any] = []

    class _Artifacts:
        session_id = "s-test"

        def addArtifacts(self, path: str, pyfile: bool = False) -> None:  # noqa: N802 (Spark's name)
            shipped.append((os.path.basename(path), pyfile))

    user_module = tmp_path / "src" / "flinkish_user_module.py"
    user_module.parent.mkdir()
    user_module.write_text("X = 5\n")
    function = remote_batch_function(_package_path_recorder(), _Artifacts(), [str(user_module)])
    assert len(shipped) == 1 and shipped[0][0].startswith("pyspark_flinkish-") and shipped[0][1]
    (tmp_path / "f.pkl").write_bytes(cloudpickle.dumps(function))
    script = (
        "import sys, pickle\n"
        f"sys.path = [p for p in sys.path if p not in ('', '.', {ROOT!r})]\n"
        "class NoPackage:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'pyspark_flinkish' and not any(p.endswith('.zip') for p in sys.path[:1]):\n"
        "            raise ImportError('no pyspark_flinkish here')\n"
        "sys.meta_path.insert(0, NoPackage())\n"
        f"f = pickle.load(open({str(tmp_path / 'f.pkl')!r}, 'rb'))\n"
        f"f(None, 7)\n"
    )
    env = dict(os.environ, PYTHONPATH="", OUT=str(tmp_path / "out"))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out").read_text().endswith(".zip 7 5")  # the package from the zip; add_python_file's module


def _package_path_recorder() -> Any:
    """A function pickled by value (a closure): it writes where ``pyspark_flinkish`` was imported from."""

    def record(df: Any, batch_id: int) -> None:
        import os as os_

        import flinkish_user_module

        import pyspark_flinkish

        with open(os_.environ["OUT"], "w") as f:
            f.write(f"{os_.path.dirname(os_.path.dirname(pyspark_flinkish.__file__))} {batch_id} {flinkish_user_module.X}")

    return record


def test_the_apply_in_pandas_with_state_backend_is_refused_on_connect() -> None:
    with pytest.raises(UnsupportedFeatureError, match="not supported on a Spark Connect session"):
        SparkStreamExecutionEnvironment(_ConnectSession(), backend="apply_in_pandas_with_state")


def test_a_query_start_is_tried_again_only_when_the_worker_did_not_connect_back() -> None:
    from pyspark_flinkish.spark.connect import start_query

    class _Writer:
        def __init__(self, errors: List[str]) -> None:
            self.errors = errors
            self.calls = 0

        def start(self) -> str:
            self.calls += 1
            if self.errors:
                raise RuntimeError(self.errors.pop(0))
            return "query"

    flaky = _Writer(["Python worker failed to connect back."] * 2)
    assert start_query(flaky) == "query" and flaky.calls == 3
    with pytest.raises(RuntimeError, match="connect back"):
        start_query(_Writer(["Python worker failed to connect back."] * 3))
    other = _Writer(["AnalysisException: no such column"])
    with pytest.raises(RuntimeError, match="no such column"):
        start_query(other)
    assert other.calls == 1


def test_add_python_file_on_connect_uses_the_sessions_artifacts_and_goes_with_the_job(tmp_path) -> None:  # type: ignore[no-untyped-def]
    added: List[Any] = []

    class _Session(_ConnectSession):
        def addArtifacts(self, path: str, pyfile: bool = False, archive: bool = False) -> None:  # noqa: N802
            added.append((path, pyfile, archive))

    _Session.__module__ = "pyspark.sql.connect.session"
    env = SparkStreamExecutionEnvironment(_Session())
    module = tmp_path / "helpers.py"
    module.write_text("Y = 1\n")
    env.add_python_file(str(module))
    env.add_python_archive(str(tmp_path / "env.zip"), "venv")
    assert added == [(str(module), True, False), (f"{tmp_path / 'env.zip'}#venv", False, True)]
    assert env.connect_python_files == [str(module)]
