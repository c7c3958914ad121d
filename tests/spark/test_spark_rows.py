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

from pyspark_flinkish.common import Row, Types, WatermarkStrategy
from pyspark_flinkish.core.rows import as_declared
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, StreamExecutionEnvironment
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
T0 = 1_700_000_000_000
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
    # declared and undeclared side by side (``spark/record_columns.py``): per keyed operator, its records and keys
    # crossed as typed columns or pickled / as bytes, and every case still matches PyFlink
    totals: Dict[str, List[int]] = {}
    for p in handle.recent_progress():
        for uid, o in p["operators"].items():
            if o.get("keyed") and o["numRecordsIn"]:
                t = totals.setdefault(uid, [0, 0, 0])
                t[0] += o["numRecordsIn"]
                t[1] += o["numRecordsInAsColumns"]
                t[2] += o["numKeysInAsColumns"]
    assert any(n == records == keys for n, records, keys in totals.values())  # a declared type and key_type
    assert any(n == records and keys == 0 for n, records, keys in totals.values())  # a declared type, untyped key
    assert any(records == keys == 0 for n, records, keys in totals.values())  # undeclared: pickled, key bytes


def test_rows_reach_foreach_batch_as_a_typed_dataframe(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    frames: List[Any] = []
    named = Types.ROW_NAMED(["key", "v", "seq"], [Types.STRING(), Types.INT(), Types.INT()])
    (
        env.from_collection(list(rows_cases.TRIPLES), type_info=named)
        .key_by(lambda r: r.key, key_type=Types.STRING())
        .max_by("v")
        .foreach_batch(lambda df, batch_id: frames.extend(r.asDict() for r in df.collect()))
    )
    handle = env.execute("rows to a DataFrame", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True})
    handle.await_termination()
    case = next(c for c in ORACLE["cases"] if c["name"] == "max_by_row_by_name")
    expected = [dict(zip(v["Row"][1], v["Row"][2])) for v in case["values"]]
    assert sorted(frames, key=lambda d: (d["key"], d["seq"], d["v"])) == sorted(expected, key=lambda d: (d["key"], d["seq"], d["v"]))
    # the declared type and key_type crossed Spark as typed columns: the stage rows' schema has them (the record's
    # and the key's, and the sink's), and every record and key reached the keyed stage so, none pickled
    plan = handle.driver.exec_plan
    keyed = next(n.index for n in plan.nodes if n.keyed)
    sink = plan.sinks[0]
    schema = plan.row_ddl()
    for column in (f"c{keyed}_0 string, c{keyed}_1 int, c{keyed}_2 int", f"k{keyed}_0 string", f"c{sink}_0 string"):
        assert column in schema, (column, schema)
    operators = [o for p in handle.recent_progress() for o in p["operators"].values() if o.get("keyed")]
    n = sum(o["numRecordsIn"] or 0 for o in operators)
    assert n == len(rows_cases.TRIPLES)
    assert sum(o["numRecordsInAsColumns"] for o in operators) == sum(o["numKeysInAsColumns"] for o in operators) == n


@pytest.mark.parametrize("name", ["sum_row_by_name", "min_by_row_by_position", "keyed_map_state"])
def test_rows_on_apply_in_pandas_with_state_match_pyflink(spark, tmp_path, name) -> None:  # type: ignore[no-untyped-def]
    """The stateful executor keeps each key's running Row (or keyed map state) in Spark's state store and writes
    the typed stream with ``to_dataframe``; within a key, rows come in PyFlink's order."""
    env = StreamExecutionEnvironment.get_execution_environment(spark, backend="apply_in_pandas_with_state")
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: T0 + e[2])

    def timestamped(items: List[Any], type_info: Any = None) -> Any:  # this executor needs event time
        batches = [MicroBatch([as_declared(e, type_info)]) for e in items]
        stream = env.from_source(MicroBatchSource(batches), strategy, "triples")
        stream._t.output_type = type_info  # what from_collection(..., type_info) declares
        return stream

    env.from_collection = timestamped  # type: ignore[method-assign]
    df = rows_cases.build(API, env, name).to_dataframe()
    query = (
        df.writeStream.format("memory")
        .queryName(f"flinkish_rows_{name}")
        .outputMode("append")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    got = [list(r) for r in spark.table(f"flinkish_rows_{name}").collect()]
    case = next(c for c in ORACLE["cases"] if c["name"] == name)
    expected = [v["Row"][2] if isinstance(v, dict) and "Row" in v else v["tuple"] for v in case["values"]]
    for key in {e[0] for e in expected}:
        assert [r for r in got if r[0] == key] == [e for e in expected if e[0] == key]
    assert len(got) == len(expected)
