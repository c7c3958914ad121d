"""A sink's records decoded on the executors (``spark/sink_frames.py``), without a JVM: the ``mapInArrow`` body turns
pickled elements into the Arrow columns Spark expects for the stream's type, and the tasks count each sink's records
so that the driver never reads them."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any, List

import pyarrow as pa

from pyspark_flinkish.common import Types, WatermarkStrategy
from pyspark_flinkish.core.records import StreamRecord
from pyspark_flinkish.core.rows import Row
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource
from pyspark_flinkish.spark.chain import ChainRunner
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment
from pyspark_flinkish.spark.plan import ExecPlan
from pyspark_flinkish.spark.rows import dumps
from pyspark_flinkish.spark.sink_frames import ORDER_COLUMN, STEP_COLUMN, arrow_schema, decode_batches
from pyspark_flinkish.spark.types import to_rows, to_spark_type

EVERYTHING = Types.ROW_NAMED(
    ["s", "i", "l", "f", "d", "b", "ts", "day", "big", "dec", "raw", "xs", "m", "inner"],
    [
        Types.STRING(), Types.INT(), Types.LONG(), Types.FLOAT(), Types.DOUBLE(), Types.BOOLEAN(),
        Types.SQL_TIMESTAMP(), Types.SQL_DATE(), Types.BIG_INT(), Types.BIG_DEC(), Types.PICKLED_BYTE_ARRAY(),
        Types.LIST(Types.LONG()), Types.MAP(Types.STRING(), Types.INT()),
        Types.ROW_NAMED(["a", "b"], [Types.STRING(), Types.LONG()]),
    ],
)
VALUES = [
    Row(s="a", i=1, l=2**40, f=1.5, d=0.1, b=True, ts=dt.datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=dt.UTC),
        day=dt.date(2026, 1, 2), big=10**30, dec=decimal.Decimal("1.5"), raw=b"\x00\xff", xs=[1, 2], m={"k": 1},
        inner=Row(a="x", b=7)),
    Row(s=None, i=None, l=None, f=None, d=None, b=None, ts=None, day=None, big=None, dec=None, raw=None, xs=None,
        m=None, inner=None),
    ("t", -1, 0, 0.0, -2.5, False, None, None, 0, decimal.Decimal(0), b"", [], {}, ("y", None)),
]


def _batch(values: List[Any], steps: List[int]) -> Any:
    return pa.RecordBatch.from_pydict(
        {
            "value": pa.array([dumps(v) for v in values], pa.binary()),
            "ord": pa.array([[1, i] for i in range(len(values))], pa.list_(pa.int64())),
            STEP_COLUMN: pa.array(steps, pa.int64()),
        }
    )


def test_elements_become_the_columns_spark_expects_for_the_type() -> None:
    schema = to_spark_type(EVERYTHING)
    out = list(decode_batches([_batch(VALUES[:2], [0, 0]), _batch(VALUES[2:], [1])], EVERYTHING, schema))
    assert [b.schema for b in out] == [arrow_schema(schema)] * 2  # exactly what mapInArrow must return
    decoded = [r for b in out for r in b.to_pylist()]
    assert decoded[0] == {
        "s": "a", "i": 1, "l": 2**40, "f": 1.5, "d": 0.1, "b": True, "ts": VALUES[0].ts, "day": dt.date(2026, 1, 2),
        "big": decimal.Decimal(10**30), "dec": decimal.Decimal("1.5"), "raw": b"\x00\xff", "xs": [1, 2],
        "m": [("k", 1)], "inner": {"a": "x", "b": 7},
    }
    assert decoded[1] == dict.fromkeys(EVERYTHING.field_names)
    assert decoded[2]["inner"] == {"a": "y", "b": None} and decoded[2]["m"] == [] and decoded[2]["big"] == 0
    # the same values as the driver-side conversion into Spark rows gives
    assert [tuple(r.values())[:6] for r in decoded] == [r[:6] for r in to_rows(VALUES, EVERYTHING)]


def test_a_float_column_is_32_bit_and_a_single_type_is_one_value_column() -> None:
    schema = to_spark_type(Types.FLOAT())
    (out,) = decode_batches([_batch([0.1, None], [0, 0])], Types.FLOAT(), schema)
    assert out.schema.names == ["value"] and out.column(0).type == pa.float32()


def test_with_order_the_step_leads_the_order_and_convert_runs_first() -> None:
    schema = to_spark_type(Types.ROW_NAMED(["n"], [Types.LONG()]))
    (out,) = decode_batches(
        [_batch([1, 2], [3, 4])], Types.ROW_NAMED(["n"], [Types.LONG()]), schema, convert=lambda v: (v * 10,), with_order=True
    )
    assert out.to_pydict() == {"n": [10, 20], ORDER_COLUMN: [[3, 1, 0], [4, 1, 1]]}


def test_an_empty_batch_decodes_to_an_empty_batch() -> None:
    schema = to_spark_type(EVERYTHING)
    (out,) = decode_batches([_batch([], [])], EVERYTHING, schema)
    assert out.num_rows == 0 and out.schema == arrow_schema(schema)


def test_tasks_count_the_records_they_send_to_each_sink() -> None:
    """The driver learns a sink's size from the tasks' ``count`` rows; it collects no record of a Delta sink."""
    env = SparkStreamExecutionEnvironment(None, state_partitions=2)
    stream = env.from_source(MicroBatchSource([MicroBatch([1, 2, 3])]), WatermarkStrategy.no_watermarks(), "numbers")
    stream.map(lambda x: x * 2).add_sink(lambda _: None)
    stream.filter(lambda x: x > 1).add_sink(lambda _: None)
    plan = ExecPlan(list(env._sinks))
    runner = ChainRunner(plan, {}, 0, 2)
    for i, v in enumerate([1, 2, 3]):
        runner.forward(plan.sources[0], StreamRecord(v, None), [1, i])
    counts = {r["dest"]: r["stat_count"] for r in runner.output_rows() if r["kind"] == "count"}
    assert counts == {plan.sinks[0]: 3, plan.sinks[1]: 2}
    assert len([r for r in runner.output_rows() if r["kind"] == "rec"]) == 5
