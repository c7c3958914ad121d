"""Flink's bulk file writers, engine-free: what a Parquet, ORC, Avro or CSV part file holds, and which streams may be
written.

Flink's ``FileSink.for_bulk_format`` hands each record of a bucket to a ``BulkWriter`` that encodes the whole part
file; the file is finished (its footer written) when it rolls, which for bulk formats is only at a checkpoint. A
:class:`BulkEncoding` describes what PyFlink's factories (``ParquetBulkWriters.for_row_type``,
``OrcBulkWriters.for_row_type``, ``AvroBulkWriters.for_generic_record``, ``CsvBulkWriters.for_schema``) would write;
:meth:`BulkEncoding.open` starts one part file's writer on a binary stream. Parquet and ORC are written with pyarrow,
Avro with fastavro, CSV as Flink's Jackson encoder writes it. The part-file protocol around it (hidden in-progress
files, the commit) is :mod:`.file_parts`'.

As Flink: Parquet files are Snappy-compressed, ORC files zlib-compressed, Avro files uncompressed (codec ``null``);
columns take the row type's names and types, nullable unless declared ``NOT NULL``; the stream's ``Row`` fields are
taken by position. Checked against the files real PyFlink 2.3.0 writes (``jvm-free-tests/connectors/
pyflink_bulk_formats.json``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import IO, Any, Dict, List, Optional, Tuple

from .data_types import RowType
from .display import java_double_string, java_float_string
from .errors import InvalidArgumentError, InvalidPipelineError, UnsupportedFeatureError
from .typeinfo import TypeInformation

COLUMN_TYPES: Dict[str, Tuple[str, str]] = {
    "TINYINT": ("BYTE", "int8"),
    "SMALLINT": ("SHORT", "int16"),
    "INT": ("INT", "int32"),
    "BIGINT": ("LONG", "int64"),
    "FLOAT": ("FLOAT", "float32"),
    "DOUBLE": ("DOUBLE", "float64"),
    "BOOLEAN": ("BOOLEAN", "bool_"),
    "STRING": ("STRING", "string"),
}
"""The column types the row-type writers write: SQL type -> (the stream's ``Types.*`` name Flink's converter takes
for it, the Arrow type)."""

_STRING_LENGTH = 2147483647
_REFUSED: Dict[str, str] = {
    "DATE": "the DataStream API's date type (Types.SQL_DATE(), a java.sql.Date) fails in Flink's writer "
    "(ClassCastException: java.sql.Date cannot be cast to java.time.LocalDate)",
    "TIMESTAMP": "the DataStream API's timestamp type (Types.SQL_TIMESTAMP(), a java.sql.Timestamp) fails in Flink's "
    "writer (ClassCastException: java.sql.Timestamp cannot be cast to java.time.LocalDateTime)",
}
_MAX_QUOTE_CHECK = 24
"""Jackson's CSV encoder quotes every string longer than this (``CsvEncoder.MAX_QUOTE_CHECK``)."""


def column_type(sql_name: str, params: Tuple[Any, ...], where: str, column: str) -> str:
    """The key of :data:`COLUMN_TYPES` for a column of SQL type ``sql_name(params)``; refuses the others, named."""
    name = sql_name
    if sql_name == "VARCHAR" and params == (_STRING_LENGTH,):
        name = "STRING"
    if name in COLUMN_TYPES:
        return name
    shown = f"{sql_name}({', '.join(map(str, params))})" if params else sql_name
    why = _REFUSED.get(sql_name, "it is not written as Flink writes it here")
    msg = (
        f"{where}: column {column!r} of type {shown} is not supported: {why}. Write it as one of "
        f"{', '.join(sorted(n for n in COLUMN_TYPES if n != 'STRING'))} or STRING (DataTypes.STRING(); e.g. a date "
        "as its ISO text or a BIGINT of epoch milliseconds)"
    )
    raise UnsupportedFeatureError(msg)


def row_columns(row_type: Any, where: str) -> Tuple[Tuple[str, str, bool], ...]:
    """The columns ``(name, column type, nullable)`` of a ``DataTypes.ROW([...])``, each type checked by
    :func:`column_type`."""
    if not isinstance(row_type, RowType):
        msg = f"{where}: row_type must be a RowType (DataTypes.ROW([DataTypes.FIELD(...), ...])); got {row_type!r}"
        raise TypeError(msg)
    if not row_type.fields:
        msg = f"{where}: the row type has no fields"
        raise InvalidArgumentError(msg)
    return tuple(
        (f.name, column_type(f.data_type.name, f.data_type.params, where, f.name), f.data_type.nullable)
        for f in row_type.fields
    )


@dataclass(frozen=True)
class CsvOptions:
    """What of Jackson's ``CsvSchema`` the CSV writer uses: the column separator, the quote character (None: never
    quote), the text of a null and the line separator."""

    column_separator: str = ","
    quote_char: Optional[str] = '"'
    null_value: str = ""
    line_separator: str = "\n"

    def min_safe_char(self) -> int:
        """Jackson's ``CsvEncoder._calcSafeChar``: a string with a character below this one is quoted."""
        chars = [self.column_separator, *(self.quote_char or ""), *self.line_separator]
        return max(map(ord, chars)) + 1


@dataclass(frozen=True)
class BulkEncoding:
    """One bulk writer factory's description: ``kind`` (``parquet``, ``orc``, ``avro``, ``csv``), the columns
    ``(name, column type, nullable)`` of the row-type writers, the Avro schema (JSON) or the CSV options."""

    kind: str
    columns: Tuple[Tuple[str, str, bool], ...] = ()
    avro_schema: Optional[str] = None
    csv: Optional[CsvOptions] = None

    @property
    def factory(self) -> str:
        """The PyFlink factory this describes, for messages."""
        return {
            "parquet": "ParquetBulkWriters.for_row_type",
            "orc": "OrcBulkWriters.for_row_type",
            "avro": "AvroBulkWriters.for_generic_record",
            "csv": "CsvBulkWriters.for_schema",
        }[self.kind]

    def check_stream_type(self, type_info: Optional[TypeInformation], sink: str) -> None:
        """Refuse up front a stream Flink's writer would fail on at run time: the row-type writers take a
        ``Types.ROW``/``ROW_NAMED`` stream whose fields have the columns' types (by position); the Avro writer a
        stream declared ``GenericRecordAvroTypeInfo(schema)`` of the same schema."""
        if self.kind == "avro":
            schema = getattr(type_info, "avro_schema", None)
            if type_info is None or type_info.name != "GENERIC_RECORD_AVRO" or schema is None:
                msg = (
                    f"{sink} with {self.factory} needs a stream declared as Avro generic records, as in PyFlink: give "
                    "output_type=GenericRecordAvroTypeInfo(schema) to the map before the sink (records are dicts); "
                    f"got {type_info!r}"
                )
                raise InvalidPipelineError(msg)
            if json.loads(schema) != json.loads(self.avro_schema or "null"):
                msg = f"{sink}: the stream's GenericRecordAvroTypeInfo schema differs from the writer's schema"
                raise InvalidPipelineError(msg)
            return
        wanted = [COLUMN_TYPES[t][0] for _, t, _ in self.columns]
        got = [c.name for c in type_info.children] if type_info is not None and type_info.name == "ROW" else None
        if got != wanted:
            msg = (
                f"{sink} with {self.factory} writes the stream's Row fields by position as "
                f"{[(n, t) for n, t, _ in self.columns]}: the stream must be declared "
                f"Types.ROW_NAMED(names, [{', '.join(f'Types.{w}()' for w in wanted)}]) (Flink's converter fails at run "
                f"time on another type); got {type_info!r}"
            )
            raise InvalidPipelineError(msg)

    def open(self, out: IO[bytes]) -> BulkPartWriter:
        """A writer of one part file onto ``out`` (which the writer leaves open)."""
        if self.kind == "csv":
            return _CsvWriter(self, out)
        if self.kind == "avro":
            return _AvroWriter(self, out)
        return _ArrowWriter(self, out)


class BulkPartWriter:
    """One part file being written. Lifecycle: :meth:`add` per record, in order; :meth:`finish` once (Flink's
    ``BulkWriter.finish``: buffered records and the format's footer written; the stream is left to the caller)."""

    def add(self, value: Any) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        raise NotImplementedError


class _ArrowWriter(BulkPartWriter):
    """Parquet (Snappy) or ORC (zlib) through pyarrow, in row groups / stripes of up to ``_CHUNK`` records."""

    _CHUNK = 65536

    def __init__(self, encoding: BulkEncoding, out: IO[bytes]) -> None:
        import pyarrow as pa

        self._pa = pa
        self.schema = pa.schema(
            [pa.field(name, getattr(pa, COLUMN_TYPES[t][1])(), nullable=nullable) for name, t, nullable in encoding.columns]
        )
        self.kind = encoding.kind
        self.out = out
        self._rows: List[List[Any]] = [[] for _ in encoding.columns]
        self._writer: Any = None

    def add(self, value: Any) -> None:
        fields = list(value)
        if len(fields) != len(self._rows):
            msg = f"{self.kind} writer: a record of {len(fields)} fields for {len(self._rows)} columns: {value!r}"
            raise InvalidPipelineError(msg)
        for column, field in zip(self._rows, fields):
            column.append(field)
        if len(self._rows[0]) >= self._CHUNK:
            self._flush()

    def _flush(self) -> None:
        if not self._rows or not self._rows[0]:
            return
        pa = self._pa
        table = pa.Table.from_arrays(
            [pa.array(c, type=f.type) for c, f in zip(self._rows, self.schema)], schema=self.schema
        )
        if self._writer is None:
            self._writer = self._new_writer()
        self._writer.write(table)
        self._rows = [[] for _ in self._rows]

    def _new_writer(self) -> Any:
        if self.kind == "parquet":
            import pyarrow.parquet as pq

            return pq.ParquetWriter(self.out, self.schema, compression="snappy")
        import pyarrow.orc as orc

        return orc.ORCWriter(self.out, compression="zlib")

    def finish(self) -> None:
        self._flush()
        if self._writer is None:  # no record: an empty file still has the schema, as Flink's
            self._writer = self._new_writer()
            if self.kind == "orc":
                self._writer.write(self.schema.empty_table())
        self._writer.close()


class _AvroWriter(BulkPartWriter):
    """An Avro object container file (codec ``null``, as Flink's ``AvroWriters.forGenericRecord``) via fastavro."""

    def __init__(self, encoding: BulkEncoding, out: IO[bytes]) -> None:
        from fastavro import parse_schema
        from fastavro.write import Writer

        self._writer = Writer(out, parse_schema(json.loads(encoding.avro_schema or "null")), codec="null")

    def add(self, value: Any) -> None:
        self._writer.write(value)

    def finish(self) -> None:
        self._writer.flush()


class _CsvWriter(BulkPartWriter):
    """A CSV file as Flink's ``CsvBulkWriter`` writes it with Jackson's ``CsvEncoder``: no header; numbers and booleans
    as Java prints them; a string quoted when it is longer than 24 characters or holds a character not above the
    separator, quote and line separator (a quote doubled inside); a null as the schema's null value."""

    def __init__(self, encoding: BulkEncoding, out: IO[bytes]) -> None:
        self.options = encoding.csv or CsvOptions()
        self.types = [t for _, t, _ in encoding.columns]
        self.min_safe = self.options.min_safe_char()
        self.out = out

    def _text(self, value: Any, column_type: str) -> str:
        if value is None:
            return self.options.null_value
        if column_type == "STRING":
            return self._string(str(value))
        if column_type == "BOOLEAN":
            return "true" if value else "false"
        if column_type == "DOUBLE":
            return java_double_string(float(value))
        if column_type == "FLOAT":
            return java_float_string(float(value))
        return str(int(value))

    def _string(self, text: str) -> str:
        q = self.options.quote_char
        if q is None:
            return text
        if len(text) > _MAX_QUOTE_CHECK or any(ord(c) < self.min_safe for c in text):
            return q + text.replace(q, q + q) + q
        return text

    def add(self, value: Any) -> None:
        fields = list(value)
        line = self.options.column_separator.join(self._text(v, t) for v, t in zip(fields, self.types))
        self.out.write((line + self.options.line_separator).encode("utf-8"))

    def finish(self) -> None:
        return None


__all__ = ["COLUMN_TYPES", "BulkEncoding", "BulkPartWriter", "CsvOptions", "column_type", "row_columns"]
