"""``window_all`` on Spark compared with real PyFlink 2.3.0's outputs (``jvm-free-tests/datastream/
pyflink_all_windows.json``), run as a PyFlink program runs: ``env.execute("name")`` without ``checkpoint_location=``
(the checkpoint goes under the session's ``spark.sql.streaming.checkpointLocation``; bounded input runs to its end
and ``execute`` blocks until then)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from pyspark_flinkish.common import JobExecutionResult
from pyspark_flinkish.datastream import StreamExecutionEnvironment

pytestmark = pytest.mark.spark
CASES_DIR = Path(__file__).resolve().parents[2] / "jvm-free-tests" / "datastream"
sys.path.insert(0, str(CASES_DIR))
import all_window_cases  # noqa: E402

sys.path.remove(str(CASES_DIR))

from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(all_window_cases)  # Spark's Python workers cannot import it
ORACLE = all_window_cases.load()
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
    assert os.path.isdir(tmp_path / "root" / "all_windows" / "spark")
    for name in SPARK_CASES:
        assert _split(got[name]) == _split(cases[name]["output"]), name
