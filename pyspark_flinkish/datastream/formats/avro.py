"""PyFlink's ``pyflink.datastream.formats.avro``: :class:`AvroSchema`, :class:`GenericRecordAvroTypeInfo` and
:class:`AvroBulkWriters`, Avro part files for ``FileSink.for_bulk_format``.

Example (as in PyFlink: a map declares the records' Avro type before the sink)::

    schema = AvroSchema.parse_string('{"type": "record", "name": "R", "fields": [{"name": "id", "type": "int"}]}')
    ds.map(lambda r: {"id": r[0]}, output_type=GenericRecordAvroTypeInfo(schema)) \\
        .sink_to(FileSink.for_bulk_format("/out", AvroBulkWriters.for_generic_record(schema)).build())

The files are written with fastavro (Avro object container files, codec ``null`` as Flink's).
"""

from __future__ import annotations

import json
from typing import Any

from ...common.serialization import BulkWriterFactory
from ...core.bulk_writers import BulkEncoding
from ...core.errors import InvalidArgumentError, UnsupportedFeatureError
from ...core.typeinfo import TypeInformation


class AvroSchema:
    """An Avro schema (PyFlink's ``AvroSchema``); ``str()`` is its JSON text."""

    def __init__(self, json_schema: str) -> None:
        from fastavro import parse_schema
        from fastavro.schema import SchemaParseException

        try:
            doc = json.loads(json_schema)
            parse_schema(doc)
        except (ValueError, SchemaParseException) as e:
            msg = f"AvroSchema: not a valid Avro schema ({e}): {json_schema!r}"
            raise InvalidArgumentError(msg) from None
        if _has_logical_type(doc):
            msg = (
                "AvroSchema: logical types (logicalType: date, timestamp-millis, decimal, ...) are not written as "
                "Flink's Avro writer writes them here; declare the underlying type (int, long, bytes, string)"
            )
            raise UnsupportedFeatureError(msg)
        self._schema_string = json.dumps(doc, separators=(",", ":"))

    @staticmethod
    def parse_string(json_schema: str) -> AvroSchema:
        """The schema of the JSON text ``json_schema``."""
        return AvroSchema(json_schema)

    @staticmethod
    def parse_file(file_path: str) -> AvroSchema:
        """The schema in the file ``file_path`` (JSON)."""
        with open(file_path, encoding="utf-8") as f:
            return AvroSchema(f.read())

    def __str__(self) -> str:
        return self._schema_string

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AvroSchema) and json.loads(str(other)) == json.loads(str(self))

    def __hash__(self) -> int:
        return hash(self._schema_string)

    def __repr__(self) -> str:
        return f"AvroSchema({self._schema_string!r})"


def _has_logical_type(doc: Any) -> bool:
    if isinstance(doc, dict):
        return "logicalType" in doc or any(_has_logical_type(v) for v in doc.values())
    if isinstance(doc, list):
        return any(_has_logical_type(v) for v in doc)
    return False


class GenericRecordAvroTypeInfo(TypeInformation):
    """The type of a stream of Avro generic records of ``schema`` (PyFlink's ``GenericRecordAvroTypeInfo``): each
    element a ``dict`` of the record's fields. Declare it as the ``output_type`` of the map before an Avro
    ``FileSink``."""

    __slots__ = ("avro_schema",)

    def __init__(self, schema: AvroSchema) -> None:
        if not isinstance(schema, AvroSchema):
            msg = f"GenericRecordAvroTypeInfo needs an AvroSchema; got {type(schema).__name__}"
            raise TypeError(msg)
        super().__init__("GENERIC_RECORD_AVRO")
        object.__setattr__(self, "avro_schema", str(schema))

    def __reduce__(self) -> Any:
        return GenericRecordAvroTypeInfo, (AvroSchema(self.avro_schema),)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GenericRecordAvroTypeInfo) and other.avro_schema == self.avro_schema

    def __hash__(self) -> int:
        return hash(("GENERIC_RECORD_AVRO", self.avro_schema))

    def __repr__(self) -> str:
        return f"GenericRecordAvroTypeInfo({self.avro_schema})"


class AvroBulkWriters:
    """Writers of Avro files (PyFlink's ``AvroBulkWriters``)."""

    @staticmethod
    def for_generic_record(schema: AvroSchema) -> BulkWriterFactory:
        """Avro object container files of ``schema`` (codec ``null``, as Flink's ``AvroWriters.forGenericRecord``);
        the stream must be declared ``GenericRecordAvroTypeInfo(schema)`` (dicts)."""
        if not isinstance(schema, AvroSchema):
            msg = f"AvroBulkWriters.for_generic_record needs an AvroSchema; got {type(schema).__name__}"
            raise TypeError(msg)
        return BulkWriterFactory(BulkEncoding("avro", avro_schema=str(schema)))


__all__ = ["AvroBulkWriters", "AvroSchema", "GenericRecordAvroTypeInfo"]
