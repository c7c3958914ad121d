"""PyFlink type information -> Spark SQL types, and Rows -> rows of a typed DataFrame (no JVM: only Spark's type
classes are used)."""

from __future__ import annotations

import decimal

import pytest

from pyspark_flinkish.common import Row, Types
from pyspark_flinkish.core.errors import InvalidTypeError
from pyspark_flinkish.spark.types import to_rows, to_spark_type


def test_every_pyflink_type_with_a_spark_column_type() -> None:
    t = Types.ROW_NAMED(
        ["s", "c", "bi", "bd", "d", "ts", "objs", "m"],
        [Types.STRING(), Types.CHAR(), Types.BIG_INT(), Types.BIG_DEC(), Types.SQL_DATE(), Types.SQL_TIMESTAMP(),
         Types.OBJECT_ARRAY(Types.ROW([Types.INT()])), Types.MAP(Types.STRING(), Types.LONG())],
    )
    assert to_spark_type(t).simpleString() == (
        "struct<s:string,c:string,bi:decimal(38,0),bd:decimal(38,18),d:date,ts:timestamp,objs:array<struct<f0:int>>,"
        "m:map<string,bigint>>"
    )
    assert to_spark_type(Types.INT()).simpleString() == "struct<value:int>"


@pytest.mark.parametrize("make", [Types.SQL_TIME, Types.INSTANT])
def test_types_without_a_spark_column_type_are_refused_with_the_alternative(make) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidTypeError, match=f"Types.{make.__name__}.*declare Types"):
        to_spark_type(Types.ROW_NAMED(["x"], [make()]))


def test_rows_fill_structs_by_name_or_position() -> None:
    t = Types.ROW_NAMED(["k", "n", "inner"], [Types.STRING(), Types.BIG_INT(), Types.ROW([Types.INT(), Types.INT()])])
    named = Row(inner=Row(1, 2), n=7, k="a")  # names in another order
    assert to_rows([named, Row("b", 8, Row(3, 4))], t) == [
        ("a", decimal.Decimal(7), (1, 2)),
        ("b", decimal.Decimal(8), (3, 4)),
    ]
