"""PyFlink type information -> Spark SQL types, and Python values -> rows of that type.

``CHAR`` is a string, ``BIG_INT`` ``DECIMAL(38, 0)`` and ``BIG_DEC`` ``DECIMAL(38, 18)`` (Flink's own mapping of
these to SQL types), ``SQL_DATE`` a date; ``SQL_TIME`` and ``INSTANT`` have no Spark column type here and are
refused up front. A ``Row`` value fills a struct by field name when it has names, else by position.
"""

from __future__ import annotations

import decimal
from typing import Any, List, Optional

from ..core.errors import InvalidTypeError
from ..core.rows import Row
from ..core.typeinfo import TypeInformation

_BASIC = {
    "STRING": "StringType",
    "BOOLEAN": "BooleanType",
    "BYTE": "ByteType",
    "SHORT": "ShortType",
    "INT": "IntegerType",
    "LONG": "LongType",
    "FLOAT": "FloatType",
    "DOUBLE": "DoubleType",
    "SQL_TIMESTAMP": "TimestampType",
    "PICKLED_BYTE_ARRAY": "BinaryType",
    "CHAR": "StringType",
    "SQL_DATE": "DateType",
}
_NO_SPARK_TYPE = {
    "SQL_TIME": "Spark has no time-of-day column type; declare Types.STRING() or Types.INT() (e.g. milliseconds of the day)",
    "INSTANT": "declare Types.SQL_TIMESTAMP() and give datetime values, or Types.LONG() epoch milliseconds",
}


def _type(t: TypeInformation) -> Any:
    from pyspark.sql import types as T

    if t.name in _BASIC:
        return getattr(T, _BASIC[t.name])()
    if t.name == "BIG_INT":
        return T.DecimalType(38, 0)
    if t.name == "BIG_DEC":
        return T.DecimalType(38, 18)
    if t.name in ("LIST", "BASIC_ARRAY", "PRIMITIVE_ARRAY", "OBJECT_ARRAY"):
        return T.ArrayType(_type(t.children[0]))
    if t.name == "MAP":
        return T.MapType(_type(t.children[0]), _type(t.children[1]))
    if t.name in ("ROW", "TUPLE"):
        names = t.field_names or tuple(f"f{i}" for i in range(len(t.children)))
        return T.StructType([T.StructField(n, _type(c)) for n, c in zip(names, t.children)])
    if t.name in _NO_SPARK_TYPE:
        msg = f"no Spark column type for Types.{t.name}(): {_NO_SPARK_TYPE[t.name]}"
        raise InvalidTypeError(msg)
    msg = f"no Spark type for {t!r}"
    raise InvalidTypeError(msg)


def to_spark_type(t: Optional[TypeInformation]) -> Any:
    """The Spark schema of a stream's DataFrame: the ROW/TUPLE's fields, or one column ``value``."""
    from pyspark.sql import types as T

    if t is None:
        msg = (
            "a DataFrame of this stream needs its type: give output_type=Types.ROW_NAMED([...], [...]) "
            "(or another Types.*) to the map/process/window function that produces it, as PyFlink does"
        )
        raise InvalidTypeError(msg)
    spark_type = _type(t)
    if isinstance(spark_type, T.StructType):
        return spark_type
    return T.StructType([T.StructField("value", spark_type)])


def _convert(value: Any, t: TypeInformation) -> Any:
    if value is None:
        return None
    if t.name in ("ROW", "TUPLE"):
        names = t.field_names or tuple(f"f{i}" for i in range(len(t.children)))
        if isinstance(value, Row):
            items = [value[n] for n in names] if hasattr(value, "_fields") else list(value)
        elif isinstance(value, dict):
            items = [value.get(n) for n in names]
        elif hasattr(value, "asDict"):
            d = value.asDict()
            items = [d.get(n) for n in names]
        else:
            items = list(value)
        if len(items) != len(names):
            msg = f"value {value!r} does not match {t!r}"
            raise InvalidTypeError(msg)
        return tuple(_convert(v, c) for v, c in zip(items, t.children))
    if t.name in ("LIST", "BASIC_ARRAY", "PRIMITIVE_ARRAY", "OBJECT_ARRAY"):
        return [_convert(v, t.children[0]) for v in value]
    if t.name == "BIG_INT":
        return decimal.Decimal(value)
    if t.name == "MAP":
        return {_convert(k, t.children[0]): _convert(v, t.children[1]) for k, v in value.items()}
    return value


def spark_type(t: TypeInformation) -> Any:
    """The Spark SQL type of one value of type ``t`` (a struct for ``ROW``/``TUPLE``)."""
    return _type(t)


def to_spark_value(value: Any, t: TypeInformation) -> Any:
    """One Python value as a value of :func:`spark_type` ``(t)`` (rows become tuples, ``BIG_INT`` a decimal)."""
    return _convert(value, t)


def to_rows(values: List[Any], t: Optional[TypeInformation]) -> List[tuple]:  # type: ignore[type-arg]
    assert t is not None
    if t.name in ("ROW", "TUPLE"):
        return [_convert(v, t) for v in values]
    return [(_convert(v, t),) for v in values]


__all__ = [
    "spark_type",
    "to_spark_type",
    "to_spark_value",
    "to_rows",
]
