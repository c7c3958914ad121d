"""PyFlink's ``pyflink.datastream.formats.csv``: :class:`CsvSchema`, :class:`CsvSchemaBuilder` and
:class:`CsvBulkWriters`, CSV part files for ``FileSink.for_bulk_format``, and :class:`CsvReaderFormat`, CSV files
read by a ``FileSource``.

Example (as in PyFlink)::

    schema = CsvSchema.builder().add_number_column("id", number_type=DataTypes.INT()) \\
        .add_string_column("name").set_column_separator("|").build()
    ds.sink_to(FileSink.for_bulk_format("/out", CsvBulkWriters.for_schema(schema)).build())

The text is Flink's (Jackson's ``CsvEncoder``; see :class:`~pyspark_flinkish.core.bulk_writers.BulkEncoding`).
What of the schema concerns only reading CSV (comments, header checks, skipping a row) is accepted and has no
effect on writing, as in Flink; array columns, an escape character and a header line are refused.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ...common.serialization import BulkWriterFactory
from ...core.bulk_writers import BulkEncoding, CsvOptions, column_type
from ...core.data_types import DataType, DataTypes
from ...core.errors import InvalidArgumentError, UnsupportedFeatureError
from ...core.file_readers import ReaderFormat
from ..connectors.file_system import StreamFormat


class CsvSchema:
    """Columns and separators of CSV text (PyFlink's ``CsvSchema``, Jackson's ``CsvSchema``); made by
    :meth:`builder`."""

    def __init__(
        self, columns: List[Tuple[str, DataType]], options: CsvOptions, reading: Tuple[Tuple[str, bool], ...] = ()
    ) -> None:
        self.columns = list(columns)
        self.options = options
        self.reading = reading
        """The reading-only options set (``set_allow_comments``, ``set_skip_first_data_row``, ...)."""

    @staticmethod
    def builder() -> CsvSchemaBuilder:
        return CsvSchemaBuilder()

    def size(self) -> int:
        return len(self.columns)

    def __len__(self) -> int:
        return self.size()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CsvSchema) and (other.columns, other.options) == (self.columns, self.options)

    def __hash__(self) -> int:
        return hash((tuple(self.columns), self.options))

    def __repr__(self) -> str:
        return f"CsvSchema({self.columns!r}, {self.options!r})"


def _char(what: str, value: Any) -> str:
    if not isinstance(value, str) or len(value) != 1:
        msg = f"CsvSchemaBuilder.{what} needs one character; got {value!r}"
        raise InvalidArgumentError(msg)
    return value


class CsvSchemaBuilder:
    """Builds a :class:`CsvSchema` (PyFlink's ``CsvSchemaBuilder``); each method returns the builder."""

    def __init__(self) -> None:
        self._columns: List[Tuple[str, DataType]] = []
        self._separator = ","
        self._quote: Optional[str] = '"'
        self._null = ""
        self._line = "\n"
        self._reading: Dict[str, bool] = {}

    def build(self) -> CsvSchema:
        reading = tuple(sorted((k, v) for k, v in self._reading.items() if v))
        return CsvSchema(self._columns, CsvOptions(self._separator, self._quote, self._null, self._line), reading)

    def add_array_column(self, name: str, separator: str = ";", element_type: Optional[DataType] = None) -> CsvSchemaBuilder:
        """Refused: array columns are not written here; write the elements joined into a string column."""
        msg = (
            f"CsvSchemaBuilder.add_array_column({name!r}): array columns are not written here; join the elements into "
            "a string column"
        )
        raise UnsupportedFeatureError(msg)

    def add_boolean_column(self, name: str) -> CsvSchemaBuilder:
        """A ``BOOLEAN`` column (``true``/``false``)."""
        self._columns.append((name, DataTypes.BOOLEAN()))
        return self

    def add_number_column(self, name: str, number_type: Optional[DataType] = None) -> CsvSchemaBuilder:
        """A number column of ``number_type`` (default ``DataTypes.BIGINT()``): ``TINYINT``, ``SMALLINT``, ``INT``,
        ``BIGINT``, ``FLOAT`` or ``DOUBLE``, written as Java prints it."""
        t = number_type if number_type is not None else DataTypes.BIGINT()
        if not isinstance(t, DataType):
            msg = f"add_number_column({name!r}): number_type must be a DataType; got {t!r}"
            raise TypeError(msg)
        if t.name not in ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE"):
            if t.name == "DECIMAL":
                column_type(t.name, t.params, "CsvSchemaBuilder.add_number_column", name)  # refused, named
            msg = f"add_number_column({name!r}): {t!r} is not a number type"
            raise InvalidArgumentError(msg)
        self._columns.append((name, t))
        return self

    def add_string_column(self, name: str) -> CsvSchemaBuilder:
        """A ``STRING`` column."""
        self._columns.append((name, DataTypes.STRING()))
        return self

    def add_columns_from(self, schema: CsvSchema) -> CsvSchemaBuilder:
        self._columns.extend(schema.columns)
        return self

    def clear_columns(self) -> CsvSchemaBuilder:
        self._columns.clear()
        return self

    def set_allow_comments(self, allow: bool = True) -> CsvSchemaBuilder:
        """Reading only: no effect on writing; ``CsvReaderFormat`` refuses it (named)."""
        self._reading["set_allow_comments"] = bool(allow)
        return self

    def set_any_property_name(self, name: str) -> CsvSchemaBuilder:
        """Reading only; no effect on writing."""
        return self

    def disable_array_element_separator(self) -> CsvSchemaBuilder:
        """No effect: there are no array columns here."""
        return self

    def remove_array_element_separator(self, index: int) -> CsvSchemaBuilder:
        """No effect: there are no array columns here."""
        return self

    def set_array_element_separator(self, separator: str) -> CsvSchemaBuilder:
        """No effect: there are no array columns here."""
        return self

    def set_column_separator(self, char: str) -> CsvSchemaBuilder:
        self._separator = _char("set_column_separator", char)
        return self

    def disable_escape_char(self) -> CsvSchemaBuilder:
        """The default: no escape character."""
        return self

    def set_escape_char(self, char: str) -> CsvSchemaBuilder:
        """Refused: an escape character is not written as Jackson writes it here."""
        msg = "CsvSchemaBuilder.set_escape_char: an escape character is not supported here; quoting doubles the quote character"
        raise UnsupportedFeatureError(msg)

    def set_line_separator(self, separator: str) -> CsvSchemaBuilder:
        if not isinstance(separator, str) or not separator:
            msg = f"CsvSchemaBuilder.set_line_separator needs a non-empty string; got {separator!r}"
            raise InvalidArgumentError(msg)
        self._line = separator
        return self

    def set_null_value(self, null_value: str) -> CsvSchemaBuilder:
        if not isinstance(null_value, str):
            msg = f"CsvSchemaBuilder.set_null_value needs a string; got {null_value!r}"
            raise InvalidArgumentError(msg)
        self._null = null_value
        return self

    def disable_quote_char(self) -> CsvSchemaBuilder:
        """Strings are never quoted."""
        self._quote = None
        return self

    def set_quote_char(self, char: str) -> CsvSchemaBuilder:
        self._quote = _char("set_quote_char", char)
        return self

    def set_skip_first_data_row(self, skip: bool = True) -> CsvSchemaBuilder:
        """Reading only: no effect on writing; ``CsvReaderFormat`` refuses it (named)."""
        self._reading["set_skip_first_data_row"] = bool(skip)
        return self

    def set_strict_headers(self, strict: bool = True) -> CsvSchemaBuilder:
        """Reading only: no effect on writing; ``CsvReaderFormat`` refuses it (named)."""
        self._reading["set_strict_headers"] = bool(strict)
        return self

    def set_use_header(self, use: bool = True) -> CsvSchemaBuilder:
        """Refused when ``use``: a header line is not written or read here."""
        if use:
            msg = (
                "CsvSchemaBuilder.set_use_header(True): a header line is not written or read here; write the column "
                "names yourself, or remove the header line"
            )
            raise UnsupportedFeatureError(msg)
        return self

    def size(self) -> int:
        return len(self._columns)


def _check_schema(schema: Any, call: str) -> None:
    """``schema`` is a :class:`CsvSchema` with columns, else ``call`` fails naming what it needs."""
    if not isinstance(schema, CsvSchema):
        msg = f"{call} needs a CsvSchema (CsvSchema.builder()...build()); got {type(schema).__name__}"
        raise TypeError(msg)
    if not schema.columns:
        msg = f"{call}: the schema has no columns"
        raise InvalidArgumentError(msg)


class CsvBulkWriters:
    """Writers of CSV files (PyFlink's ``CsvBulkWriters``)."""

    @staticmethod
    def for_schema(schema: CsvSchema) -> BulkWriterFactory:
        """CSV files with ``schema``'s columns (no header); the stream's ``Row`` fields are written by position."""
        _check_schema(schema, "CsvBulkWriters.for_schema")
        columns = tuple(
            (name, column_type(t.name, t.params, "CsvBulkWriters.for_schema", name), t.nullable)
            for name, t in schema.columns
        )
        return BulkWriterFactory(BulkEncoding("csv", columns, csv=schema.options))


class CsvReaderFormat(StreamFormat):
    """The CSV records of a file as ``Row``s of the schema's columns (PyFlink's ``CsvReaderFormat``), for
    ``FileSource.for_record_stream_format``; the stream is ``Types.ROW_NAMED`` of the columns.

    Fields as Flink's reader converts them: a number is Java's ``parseInt``/``parseLong``/``parseDouble`` of the
    trimmed text (an empty or malformed one fails the job, as in Flink), a boolean ``true`` in any case is True and
    anything else False, a string is kept as written; the schema's null value (``set_null_value``) is ``None``.

    Refused, named: a header line (``set_use_header``), comments (``set_allow_comments``), skipping the first data
    row, an escape character and array columns.
    """

    def __init__(self, reader: ReaderFormat) -> None:
        self.charset_name = "UTF-8"
        self.reader = reader

    @staticmethod
    def for_schema(schema: CsvSchema) -> CsvReaderFormat:
        """A reader of CSV text with ``schema``'s columns, separator, quote character and null value."""
        _check_schema(schema, "CsvReaderFormat.for_schema")
        for option, _ in schema.reading:
            if option != "set_strict_headers":  # strict headers concern a header line, which is refused
                msg = (
                    f"CsvReaderFormat.for_schema: CsvSchemaBuilder.{option}() is not supported when reading here; "
                    "remove those lines from the files first, or read them as text (StreamFormat.text_line_format())"
                )
                raise UnsupportedFeatureError(msg)
        columns = tuple(
            (name, column_type(t.name, t.params, "CsvReaderFormat.for_schema", name)) for name, t in schema.columns
        )
        return CsvReaderFormat(ReaderFormat("csv", columns, csv=schema.options))

    def __repr__(self) -> str:
        return f"CsvReaderFormat({self.reader!r})"


__all__ = ["CsvBulkWriters", "CsvReaderFormat", "CsvSchema", "CsvSchemaBuilder"]
