"""How Flink shows a value of a declared type: what PyFlink's ``print()`` writes (:func:`print_string`) and the
Java object's ``toString()`` that Flink's own test sinks and Java code see (:func:`java_string`).

PyFlink's ``print()`` formats a ``ROW`` stream in Python as ``+I[a,1]`` (the row kind, then ``str`` of every
field joined by ``,``) and any untyped (pickled) value with Python's ``str``; other types are printed by Java:
a ``TUPLE`` as ``(a,1)``, booleans as ``true``, ``None`` as ``null``, doubles as Java's ``Double.toString``
(``1.0E10``), floats as Java's ``Float.toString`` (``110.1`` for a 32-bit ``110.0999984741211``), lists as
``[a, b]``, nested rows as ``+I[a, 1]``.
"""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any, Optional

from .coders import float32_shortest, from_java
from .rows import Row, RowKind
from .typeinfo import RowDataTypeInfo, TypeInformation


def java_double_string(x: float) -> str:
    """Java's ``Double.toString``: ``1.5``, ``100.0``, ``1.0E10``, ``1.0E-4``, ``NaN``, ``-Infinity``."""
    return _java_string_of(x, repr(x))


def java_float_string(x: float) -> str:
    """Java's ``Float.toString`` of the 32-bit float ``x``: ``110.1`` for ``float32(110.1)``, ``1.0E10``."""
    return _java_string_of(x, float32_shortest(x))


def _java_string_of(x: float, shortest: str) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        text = format(decimal.Decimal(shortest), "f")
        return text if "." in text else text + ".0"
    sign, digits, exponent = decimal.Decimal(shortest).normalize().as_tuple()
    text = "".join(map(str, digits))
    power = len(text) - 1 + int(exponent)
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{power}"


def _timestamp_string(value: datetime.datetime) -> str:
    base = value.strftime("%Y-%m-%d %H:%M:%S")
    fraction = f"{value.microsecond:06d}000".rstrip("0") or "0"
    return f"{base}.{fraction}"


def java_string(value: Any, type_info: Optional[TypeInformation]) -> str:
    """``toString()`` of the Java object Flink holds for ``value`` of type ``type_info`` (Flink's test sinks
    collect these strings): rows ``+I[a, 1]``, tuples ``(a,1)``, ``true``, ``null``, ``1.0E10``."""
    if value is None:
        return "null"
    name = type_info.name if type_info is not None else None
    children = type_info.children if type_info is not None else ()
    if name == "ROW":
        kind = value.get_row_kind() if isinstance(value, Row) else RowKind.INSERT
        if isinstance(type_info, RowDataTypeInfo):  # Flink's RowData: GenericRowData.toString
            return f"{kind}({','.join(java_string(v, c) for v, c in zip(value, children))})"
        return f"{kind}[{', '.join(java_string(v, c) for v, c in zip(value, children))}]"
    if name == "TUPLE":
        return f"({','.join(java_string(v, c) for v, c in zip(value, children))})"
    if name in ("LIST", "BASIC_ARRAY", "PRIMITIVE_ARRAY", "OBJECT_ARRAY"):
        return f"[{', '.join(java_string(v, children[0]) for v in value)}]"
    if name == "MAP":
        items = (f"{java_string(k, children[0])}={java_string(v, children[1])}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_float_string(value) if name == "FLOAT" else java_double_string(value)
    if name == "SQL_TIMESTAMP" and isinstance(value, datetime.datetime):
        return _timestamp_string(value)
    return str(value)


def print_string(value: Any, type_info: Optional[TypeInformation]) -> str:
    """What PyFlink's ``DataStream.print()`` writes for ``value`` of a stream declared as ``type_info``."""
    name = type_info.name if type_info is not None else "PICKLED_BYTE_ARRAY"
    if name == "PICKLED_BYTE_ARRAY":
        return value if isinstance(value, str) else str(value)
    if name == "ROW" and isinstance(value, Row) and not isinstance(type_info, RowDataTypeInfo):
        # formatted in Python, after the values came back from Java
        return f"{value.get_row_kind()}[{','.join(str(v) for v in from_java(value, type_info))}]"
    return java_string(value, type_info)


__all__ = ["java_double_string", "java_float_string", "java_string", "print_string"]
