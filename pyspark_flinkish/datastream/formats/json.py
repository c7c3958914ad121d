"""PyFlink's ``pyflink.datastream.formats.json``: JSON values as rows of a declared type, read
(:class:`JsonRowDeserializationSchema`, for sources) and written (:class:`JsonRowSerializationSchema`, for sinks)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Optional, Union

from ...common.serialization import DeserializationSchema, SerializationSchema
from ...core.errors import InvalidArgumentError, InvalidTypeError, UnsupportedFeatureError
from ...core.typeinfo import TypeInformation

__all__ = ["JsonRowDeserializationSchema", "JsonRowSerializationSchema", "JsonRowSerializationSchemaBuilder"]


class JsonRowDeserializationSchema(DeserializationSchema):
    """Each record's value parsed as a JSON object into a ``Row`` with the fields of ``type_info``.

    ``type_info`` is a ``Types.ROW_NAMED([...], [...])`` (PyFlink) or a Spark DDL string such as
    ``"user STRING, score BIGINT, ts TIMESTAMP"`` (an extension: any type Spark's ``from_json`` reads).
    Fields missing from a value are ``None``; a value that is not JSON, not an object, or whose fields do not
    fit their types is a *malformed record* (see ``KafkaSourceBuilder.set_malformed_records_tag``).
    """

    format_name = "json"

    def __init__(self, type_info: Union[TypeInformation, str]) -> None:
        if isinstance(type_info, TypeInformation):
            if type_info.name != "ROW" or not type_info.field_names:
                msg = f"JsonRowDeserializationSchema needs Types.ROW_NAMED([...], [...]); got {type_info!r}"
                raise InvalidTypeError(msg)
        elif isinstance(type_info, str):
            if not type_info.strip():
                msg = "JsonRowDeserializationSchema: the DDL schema string is empty"
                raise InvalidArgumentError(msg)
        else:
            msg = (
                "JsonRowDeserializationSchema needs Types.ROW_NAMED([...], [...]) or a Spark DDL string; "
                f"got {type(type_info).__name__}"
            )
            raise InvalidTypeError(msg)
        self.type_info = type_info

    @staticmethod
    def builder() -> JsonRowDeserializationSchemaBuilder:
        return JsonRowDeserializationSchemaBuilder()

    def __repr__(self) -> str:
        return f"JsonRowDeserializationSchema({self.type_info!r})"


class JsonRowDeserializationSchemaBuilder:
    """``JsonRowDeserializationSchema.builder().type_info(...).build()``, as in PyFlink."""

    def __init__(self) -> None:
        self._type_info: Optional[Union[TypeInformation, str]] = None

    def type_info(self, type_info: Union[TypeInformation, str]) -> JsonRowDeserializationSchemaBuilder:
        self._type_info = type_info
        return self

    def fail_on_missing_field(self) -> JsonRowDeserializationSchemaBuilder:
        msg = "fail_on_missing_field() is not supported: missing fields are None (Spark's from_json)"
        raise UnsupportedFeatureError(msg)

    def ignore_parse_errors(self) -> JsonRowDeserializationSchemaBuilder:
        msg = (
            "ignore_parse_errors() would drop malformed records silently; by default a Kafka source writes them to "
            "a dead-letter Delta table (KafkaSource.builder()...set_dead_letter_table(...)), or to a side output: "
            "set_malformed_records_tag(OutputTag('malformed')) and stream.get_side_output(tag)"
        )
        raise UnsupportedFeatureError(msg)

    def build(self) -> JsonRowDeserializationSchema:
        if self._type_info is None:
            msg = "JsonRowDeserializationSchema.builder(): call type_info(Types.ROW_NAMED(...)) before build()"
            raise InvalidArgumentError(msg)
        return JsonRowDeserializationSchema(self._type_info)


# Flink types whose JSON form this schema writes as Flink's JsonRowSerializationSchema does (a JSON number, string,
# boolean, array or object); time types are refused: their text form depends on Flink's Java formatter.
_JSON_SCALARS = {
    "STRING": str, "CHAR": str, "BOOLEAN": bool, "BYTE": int, "SHORT": int, "INT": int, "LONG": int, "BIG_INT": int,
    "FLOAT": float, "DOUBLE": float, "BIG_DEC": (int, float, Decimal),
}
_JSON_ARRAYS = ("LIST", "BASIC_ARRAY", "OBJECT_ARRAY", "PRIMITIVE_ARRAY")


def _check_json_type(t: TypeInformation, where: str) -> None:
    if t.name in _JSON_SCALARS:
        return
    if t.name in _JSON_ARRAYS:
        _check_json_type(t.children[0], f"{where}[]")
        return
    if t.name == "MAP":
        if t.children[0].name not in ("STRING", "CHAR"):
            msg = f"JsonRowSerializationSchema: {where} is a MAP with {t.children[0]} keys; JSON object keys are strings"
            raise UnsupportedFeatureError(msg)
        _check_json_type(t.children[1], f"{where}{{}}")
        return
    if t.name in ("ROW", "TUPLE"):
        for name, child in zip(_field_names(t), t.children):
            _check_json_type(child, f"{where}.{name}" if where else name)
        return
    msg = (
        f"JsonRowSerializationSchema cannot write field {where!r} of type {t}: Flink writes it in its Java formatter's "
        "text form, which this package does not reproduce; map it to Types.LONG() (epoch milliseconds) or "
        "Types.STRING() first"
    )
    raise UnsupportedFeatureError(msg)


def _field_names(t: TypeInformation) -> tuple:  # type: ignore[type-arg]
    return t.field_names or tuple(f"f{i}" for i in range(len(t.children)))


def _to_json(value: Any, t: TypeInformation, where: str) -> Any:
    if value is None:
        return None
    if t.name in _JSON_SCALARS:
        expected = _JSON_SCALARS[t.name]
        if (isinstance(value, bool) and t.name != "BOOLEAN") or not isinstance(value, expected):  # type: ignore[arg-type]
            msg = f"JsonRowSerializationSchema: field {where!r} is declared {t}; got {type(value).__name__} {value!r:.60}"
            raise InvalidTypeError(msg)
        return float(value) if isinstance(value, Decimal) else value
    if t.name in _JSON_ARRAYS:
        return [_to_json(v, t.children[0], f"{where}[{i}]") for i, v in enumerate(value)]
    if t.name == "MAP":
        return {str(k): _to_json(v, t.children[1], f"{where}[{k!r}]") for k, v in dict(value).items()}
    names = _field_names(t)
    if isinstance(value, dict):
        values = [value.get(n) for n in names]
    elif hasattr(value, "as_dict") and getattr(value, "_fields", None) is not None:  # a Row with named fields
        fields = value.as_dict()
        values = [fields.get(n) for n in names]
    else:
        values = list(value)
        if len(values) != len(names):
            msg = f"JsonRowSerializationSchema: {where or 'the element'} has {len(values)} fields, the type {t} {len(names)}"
            raise InvalidTypeError(msg)
    return {n: _to_json(v, c, f"{where}.{n}" if where else n) for n, v, c in zip(names, values, t.children)}


class JsonRowSerializationSchema(SerializationSchema):
    """Each element (a ``Row``, tuple or dict with the fields of ``type_info``) written as a JSON object, UTF-8;
    PyFlink's ``JsonRowSerializationSchema.builder().with_type_info(Types.ROW_NAMED([...], [...])).build()``.

    Fields are written in the type's order, ``None`` as ``null``, nested rows as objects, lists and arrays as
    arrays, maps with string keys as objects.

    Differences from Flink: time types (``SQL_TIMESTAMP``, ``SQL_DATE``, ``SQL_TIME``, ``INSTANT``, ...) and byte
    arrays are refused when the schema is built (Flink writes them in its Java formatter's text form); map them to
    ``Types.LONG()`` or ``Types.STRING()`` first. ``BIG_DEC`` values are written as JSON numbers of Python's
    ``float``.
    """

    def __init__(self, type_info: TypeInformation) -> None:
        if not isinstance(type_info, TypeInformation) or type_info.name != "ROW":
            msg = f"JsonRowSerializationSchema needs Types.ROW_NAMED([...], [...]) (or Types.ROW([...])); got {type_info!r}"
            raise InvalidTypeError(msg)
        _check_json_type(type_info, "")
        self.type_info = type_info

    @staticmethod
    def builder() -> JsonRowSerializationSchemaBuilder:
        return JsonRowSerializationSchemaBuilder()

    def serialize(self, element: Any) -> bytes:
        """``element`` as a UTF-8 JSON object; raises ``TypeError`` naming the field whose value does not fit."""
        return json.dumps(_to_json(element, self.type_info, ""), ensure_ascii=False, separators=(",", ":")).encode()

    def __repr__(self) -> str:
        return f"JsonRowSerializationSchema({self.type_info!r})"


class JsonRowSerializationSchemaBuilder:
    """``JsonRowSerializationSchema.builder().with_type_info(...).build()``, as in PyFlink."""

    def __init__(self) -> None:
        self._type_info: Optional[TypeInformation] = None

    def with_type_info(self, type_info: TypeInformation) -> JsonRowSerializationSchemaBuilder:
        self._type_info = type_info
        return self

    def build(self) -> JsonRowSerializationSchema:
        if self._type_info is None:
            msg = "JsonRowSerializationSchema.builder(): call with_type_info(Types.ROW_NAMED(...)) before build()"
            raise InvalidArgumentError(msg)
        return JsonRowSerializationSchema(self._type_info)
