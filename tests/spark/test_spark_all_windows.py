"""``window_all`` on Spark compared with real PyFlink 2.3.0's outputs (``jvm-free-tests/datastream/
pyflink_all_windows.json``), run as a PyFlink program runs: ``env.execute("name")`` without ``checkpoint_location=``
(the checkpoint goes under the session's ``spark.sql.streaming.checkpointLocation``; bounded input runs to its end
and ``execute`` blocks until then)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List

import pytest

from pyspark_flinkish.common import JobExecutionResult, JobStatus, Row, Types
from pyspark_flinkish.core.errors import InvalidPipelineError
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import KeyedProcessFunction

pytestmark = pytest.mark.spark
CASES_DIR = Path(__file__).resolve().parents[2] / "jvm-free-tests" / "datastream"
sys.path.insert(0, str(CASES_DIR))
import all_window_cases  # noqa: E402
import key_identity_cases  # noqa: E402
import key_order_cases  # noqa: E402

sys.path.remove(str(CASES_DIR))

from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(all_window_cases)  # Spark's Python workers cannot import it
cloudpickle.register_pickle_by_value(key_order_cases)
cloudpickle.register_pickle_by_value(key_identity_cases)
ORACLE = all_window_cases.load()
KEY_ORDER = key_order_cases.load()
KEY_IDENTITY = key_identity_cases.load()
KEY_IDENTITY_CASES = [  # 0.0/-0.0, 1/True/1.0; FLOATs rounding together, also in a ROW; BIG_DEC scales
    "untyped tuples separated", "FLOAT separated", "ROW(FLOAT, STRING) separated", "BIG_DEC separated",
]
ROW_FORMS = "ROW_NAMED(id INT, name STRING) separated"  # a named Row, its names in another order, a positional one:
# here as a tuple, which PyFlink refuses and the package takes as the row (docs/differences.md); one key either way
KEY_ORDER_API = SimpleNamespace(Types=Types, Row=Row)
CURRENT_KEY_API = SimpleNamespace(Types=Types, Row=Row, KeyedProcessFunction=KeyedProcessFunction)
SPARK_CASES = ["tumbling_late", "session_aggregate", "count_all_3", "sliding_process"]


def _split(rows: List[Any]) -> Dict[str, List[Any]]:
    return {kind: [list(r) for r in rows if r[0] == kind] for kind in ("main", "late")}


def test_window_all_with_pyflinks_execute_matches_pyflink(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    cases = {c["name"]: c for c in ORACLE["cases"]}
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    got: Dict[str, List[Any]] = {}
    for name in SPARK_CASES:
        out = got.setdefault(name, [])
        all_window_cases.build(env, cases[name], ORACLE["input"], ORACLE["watermark_bound_ms"]).add_sink(out.append)
    # add_python_file: SparkContext.addPyFile ships a package directory (zipped) to the executors
    (tmp_path / "deps" / "flinkish_spark_dep").mkdir(parents=True)
    (tmp_path / "deps" / "flinkish_spark_dep" / "__init__.py").write_text("def scale(x):\n    return x * 100\n")
    env.add_python_file(str(tmp_path / "deps" / "flinkish_spark_dep"))
    scaled: List[Any] = []

    def scale(x: int) -> int:
        import flinkish_spark_dep

        return flinkish_spark_dep.scale(x)  # type: ignore[no-any-return]

    env.from_collection([1, 2]).key_by(lambda x: x % 2).map(scale).add_sink(scaled.append)
    identity: Dict[str, List[Any]] = {}  # which keys are one key (key_identity_cases.py): Flink's on Spark too
    for name in KEY_IDENTITY_CASES:
        key_identity_cases.build(KEY_ORDER_API, env, name).add_sink(identity.setdefault(name, []).append)
    key_identity_cases.build(
        KEY_ORDER_API, env, ROW_FORMS, form=lambda k: tuple(k) if isinstance(k, Row) and not hasattr(k, "_fields") else k
    ).add_sink(identity.setdefault(ROW_FORMS, []).append)
    current_key: List[Any] = []  # the key a KeyedProcessFunction gets: as Flink hands it back (a Row, rounded FLOATs)
    key_identity_cases.build_current_key(CURRENT_KEY_API, env, "ROW(FLOAT, STRING)").add_sink(current_key.append)
    key = "spark.sql.streaming.checkpointLocation"
    before = spark.conf.get(key, None)
    spark.conf.set(key, str(tmp_path / "root"))
    try:
        result = env.execute("all windows")  # PyFlink's form: blocks until the bounded input is done
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)
    assert isinstance(result, JobExecutionResult) and result.batches >= len(ORACLE["input"])
    assert result.get_net_runtime() > 0 and len(result.get_job_id().to_hex_string()) == 32
    with pytest.raises(InvalidPipelineError, match=r"^No operators defined in streaming topology"):
        env.execute("all windows")  # PyFlink's execute cleared the pipeline: nothing added since
    assert os.path.isdir(tmp_path / "root" / "all_windows" / "spark")
    for name in SPARK_CASES:
        assert _split(got[name]) == _split(cases[name]["output"]), name
    assert sorted(scaled) == [100, 200]
    for name in [*KEY_IDENTITY_CASES, ROW_FORMS]:  # Flink's order per key, Spark's across keys
        assert sorted(identity[name]) == sorted(KEY_IDENTITY["cases"][name]), name
    assert sorted(current_key) == sorted(KEY_IDENTITY["current_keys"]["ROW(FLOAT, STRING)"])


def test_batch_mode_on_spark_matches_pyflink(spark) -> None:  # type: ignore[no-untyped-def]
    """BATCH: the bounded input in one micro-batch (availableNow), each key's input sorted by timestamp, timers at
    the end; a static DataFrame is bounded input too. Started with ``execute_async`` (a JobClient); no checkpoint
    location: a logged temporary directory."""
    from pyspark_flinkish.datastream import RuntimeExecutionMode

    batch = [c for c in ORACLE["cases"] if c.get("mode") == "BATCH"]
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    got: Dict[str, List[Any]] = {}
    for case in batch:
        out = got.setdefault(case["name"], [])
        all_window_cases.build(env, case, ORACLE["input"], ORACLE["watermark_bound_ms"]).add_sink(out.append)
    df = spark.createDataFrame([tuple(e) for e in ORACLE["input"]], "name string, ts long, value int")
    reduced: List[Any] = []
    (
        env.from_dataframe(df, source_name="static")
        .map(lambda r: (r["name"], r["ts"], r["value"]))
        .key_by(lambda e: e[0])
        .reduce(lambda a, b: (a[0], max(a[1], b[1]), a[2] + b[2]))
        .add_sink(reduced.append)
    )
    key_order: List[Any] = []  # a rolling reduce keyed by Types.INT() (jvm-free-tests/datastream/key_order_cases.py)
    key_order_cases.build(KEY_ORDER_API, env, "INT").add_sink(key_order.append)
    key = "spark.sql.streaming.checkpointLocation"
    before = spark.conf.get(key, None)
    spark.conf.unset(key)
    try:
        client = env.execute_async("all windows, batch")  # PyFlink's JobClient
        result = client.get_job_execution_result().result(timeout=600)
    finally:
        if before is not None:
            spark.conf.set(key, before)
    assert isinstance(result, JobExecutionResult) and result.job_name == "all windows, batch"
    assert client.get_job_status().result() is JobStatus.FINISHED
    assert client.get_job_id().to_hex_string() == str(client.handle.query.id).replace("-", "")
    assert result.get_job_id() == client.get_job_id()
    for case in batch:
        assert [list(r) for r in got[case["name"]]] == case["output"], case["name"]
    # a rolling reduce in BATCH: each key's final value only (Flink's BatchGroupedReduceOperator)
    sums: Dict[str, int] = {}
    for name, _, value in ORACLE["input"]:
        sums[name] = sums.get(name, 0) + value
    assert sorted(r[0] for r in reduced) == sorted(sums) and {r[0]: r[2] for r in reduced} == sums
    # the keys in Flink's order (their serialized bytes: -1000 before -1, 128 before 0), across the state partitions
    assert key_order == KEY_ORDER["cases"]["INT"]
