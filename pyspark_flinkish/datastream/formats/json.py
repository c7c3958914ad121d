"""PyFlink's ``pyflink.datastream.formats.json``: JSON values as rows of a declared type."""

from __future__ import annotations

from typing import Optional, Union

from ...common.serialization import DeserializationSchema
from ...core.errors import InvalidArgumentError, InvalidTypeError, UnsupportedFeatureError
from ...core.typeinfo import TypeInformation

__all__ = ["JsonRowDeserializationSchema"]


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
