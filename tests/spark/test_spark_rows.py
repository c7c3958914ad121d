"""Row, typed values, rolling aggregations and keyed state in simple functions on Spark's foreachBatch executor,
compared with real PyFlink 2.3.0's outputs (``jvm-free-tests/datastream/pyflink_rows.json``, pipelines in
``rows_cases.py``): Rows cross Spark (pickled elements, keyed snapshots) and reach ``foreach_batch`` as a DataFrame
typed by the stream's ``output_type``."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List

import pytest

from pyspark_flinkish.common import Row, Types
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import FilterFunction, FlatMapFunction, MapFunction, ReduceFunction
from pyspark_flinkish.datastream.state import ValueStateDescriptor

pytestmark = pytest.mark.spark
CASES_DIR = Path(__file__).resolve().parents[2] / "jvm-free-tests" / "datastream"
sys.path.insert(0, str(CASES_DIR))
import rows_cases  # noqa: E402

sys.path.remove(str(CASES_DIR))

from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(rows_cases)  # Spark's Python workers cannot import it
ORACLE = rows_cases.load()
API = SimpleNamespace(
    Types=Types, Row=Row, MapFunction=MapFunction, FlatMapFunction=FlatMapFunction, FilterFunction=FilterFunction,
    ReduceFunction=ReduceFunction, ValueStateDescriptor=ValueStateDescriptor,
)


def test_rows_rolling_aggregations_and_keyed_functions_on_foreach_batch_match_pyflink(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    got: Dict[str, List[Any]] = {}
    for case in ORACLE["cases"]:
        rows_cases.build(API, env, case["name"]).add_sink(got.setdefault(case["name"], []).append)
    handle = env.execute("rows", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True})
    handle.await_termination()
    for case in ORACLE["cases"]:
        assert [rows_cases.encode(v) for v in got[case["name"]]] == case["values"], case["name"]


def test_rows_reach_foreach_batch_as_a_typed_dataframe(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    frames: List[Any] = []
    named = Types.ROW_NAMED(["key", "v", "seq"], [Types.STRING(), Types.INT(), Types.INT()])
    (
        env.from_collection(list(rows_cases.TRIPLES), type_info=named)
        .key_by(lambda r: r.key)
        .max_by("v")
        .foreach_batch(lambda df, batch_id: frames.extend(r.asDict() for r in df.collect()))
    )
    handle = env.execute("rows to a DataFrame", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True})
    handle.await_termination()
    case = next(c for c in ORACLE["cases"] if c["name"] == "max_by_row_by_name")
    expected = [dict(zip(v["Row"][1], v["Row"][2])) for v in case["values"]]
    assert sorted(frames, key=lambda d: (d["key"], d["seq"], d["v"])) == sorted(expected, key=lambda d: (d["key"], d["seq"], d["v"]))
