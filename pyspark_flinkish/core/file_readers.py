"""How a ``FileSource`` reader format turns one file into elements: one rule per format, called by the JVM-free
engine on local files and by the Spark executors on the bytes of each file (Spark's ``binaryFile`` source).

* ``text``: each line (terminated by ``\\n``, ``\\r\\n`` or ``\\r``, as Java's ``BufferedReader.readLine``) a
  ``str``.
* ``csv``: PyFlink's ``CsvReaderFormat``: records of Jackson's CSV parser (separator, quote character doubled
  inside quotes, line breaks inside quotes), each field converted as Flink's ``CsvToRowDataConverters`` does (Java's
  ``parseInt``/``parseDouble``/``parseBoolean`` of the trimmed text; the schema's null value is ``None``; an empty
  number field fails, as in Flink), a ``Row`` with the schema's column names.
* ``parquet``: PyFlink's ``ParquetColumnarRowInputFormat``: the row type's columns, found by name (case-sensitive; a
  column the file lacks is ``None``), a ``Row`` with the row type's field names, in the file's row order.

A file's elements keep their order; the order of files is the reader's (Flink's enumerator defines none).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from .bulk_writers import COLUMN_TYPES, CsvOptions
from .errors import FlinkishError
from .rows import Row
from .typeinfo import RowDataTypeInfo, TypeInformation, Types

__all__ = ["FileReadError", "ReaderFormat", "csv_records", "text_lines"]

_LINES = re.compile(r"\r\n|\r|\n")
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_JAVA_FLOAT = re.compile(r"[+-]?(NaN|Infinity|(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)[fFdD]?)")
_INT_RANGES = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}


class FileReadError(FlinkishError, ValueError):
    """A file's content does not fit its reader format (Flink fails the job the same way)."""


def text_lines(text: str) -> List[str]:
    """The lines of ``text`` without their terminators (``\\n``, ``\\r\\n``, ``\\r``); no last empty line."""
    parts = _LINES.split(text)
    if parts and parts[-1] == "":
        parts.pop()
    return parts


def csv_records(text: str, separator: str, quote: Optional[str]) -> List[List[Tuple[str, bool]]]:
    """The records of CSV ``text`` as Jackson's parser reads them: each a list of ``(field text, quoted)``.

    Records end at ``\\n``, ``\\r\\n`` or ``\\r`` outside quotes; a field starting with ``quote`` runs to the next
    lone quote (a doubled one is a quote character), line breaks and separators included; empty lines are skipped.
    """
    records: List[List[Tuple[str, bool]]] = []
    fields: List[Tuple[str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        if not fields and text[i] in "\r\n":  # an empty line
            i += 1
            continue
        if quote is not None and text[i] == quote:
            buf: List[str] = []
            i += 1
            while True:
                j = text.find(quote, i)
                if j < 0:
                    msg = f"CSV: a quoted field is not closed (from {text[i - 1:i + 40]!r})"
                    raise FileReadError(msg)
                buf.append(text[i:j])
                if j + 1 < n and text[j + 1] == quote:
                    buf.append(quote)
                    i = j + 2
                    continue
                i = j + 1
                break
            # text after the closing quote up to the separator belongs to the field (Jackson appends it)
            end = _field_end(text, i, separator)
            buf.append(text[i:end])
            fields.append(("".join(buf), True))
        else:
            end = _field_end(text, i, separator)
            fields.append((text[i:end], False))
        i = end
        if i < n and text[i] == separator:
            i += 1
            if i == n or text[i] in "\r\n":
                fields.append(("", False))
        if i >= n or text[i] in "\r\n":
            records.append(fields)
            fields = []
            if text.startswith("\r\n", i):
                i += 2
            elif i < n:
                i += 1
    if fields:
        records.append(fields)
    return records


def _field_end(text: str, start: int, separator: str) -> int:
    end = start
    n = len(text)
    while end < n and text[end] != separator and text[end] not in "\r\n":
        end += 1
    return end


def _csv_value(text: str, quoted: bool, column: str, sql: str, null_value: Optional[str]) -> Any:
    """One CSV field as Flink's ``CsvToRowDataConverters`` converts it."""
    if null_value is not None and text == null_value:
        return None
    if sql == "STRING":
        return text
    value = text.strip()
    if sql == "BOOLEAN":
        return value.lower() == "true"  # Java's Boolean.parseBoolean
    if sql in _INT_RANGES:
        bits = _INT_RANGES[sql]
        if not _JAVA_INT.fullmatch(value) or not -(2 ** (bits - 1)) <= int(value) < 2 ** (bits - 1):
            why = f'For input string: "{value}"'  # Java's Integer/Long.parseInt, also of ""
            msg = f"CSV column {column!r} ({sql}): NumberFormatException: {why} (Flink fails the job on it too)"
            raise FileReadError(msg)
        return int(value)
    if not _JAVA_FLOAT.fullmatch(value):
        why = "empty String" if not value else f'For input string: "{value}"'
        msg = f"CSV column {column!r} ({sql}): NumberFormatException: {why} (Flink fails the job on it too)"
        raise FileReadError(msg)
    number = float(value.rstrip("fFdD"))
    if sql == "FLOAT":  # Java's Float.parseFloat: the nearest 32-bit float, beyond its range an infinity
        import struct

        try:
            number = struct.unpack("f", struct.pack("f", number))[0]
        except OverflowError:
            number = math.copysign(math.inf, number)
    return number


@dataclass(frozen=True)
class ReaderFormat:
    """A reader format's description: ``kind`` (``text``, ``csv``, ``parquet``), the columns ``(name, SQL type)``
    (a key of :data:`~pyspark_flinkish.core.bulk_writers.COLUMN_TYPES`), the text's charset, the CSV options."""

    kind: str
    columns: Tuple[Tuple[str, str], ...] = ()
    charset: str = "UTF-8"
    csv: Optional[CsvOptions] = None

    def type_info(self) -> TypeInformation:
        """The type of the elements: ``Types.STRING()`` for lines, else ``Types.ROW_NAMED`` of the columns (as
        Flink's ``RowData``: :class:`~pyspark_flinkish.core.typeinfo.RowDataTypeInfo`)."""
        if self.kind == "text":
            return Types.STRING()
        names = [n for n, _ in self.columns]
        return RowDataTypeInfo([getattr(Types, COLUMN_TYPES[t][0])() for _, t in self.columns], names)

    def read_bytes(self, data: bytes, where: str) -> List[Any]:
        """The elements of one file's content ``data`` (``where`` names the file in errors)."""
        try:
            if self.kind == "parquet":
                return self._parquet(data)
            text = data.decode(self.charset)
            if self.kind == "text":
                return text_lines(text)  # type: ignore[return-value]
            return self._csv(text)
        except FileReadError as e:
            msg = f"FileSource: {where}: {e}"
            raise FileReadError(msg) from None

    def read_file(self, path: str) -> List[Any]:
        """The elements of the local file ``path``."""
        with open(path, "rb") as f:
            return self.read_bytes(f.read(), path)

    def _csv(self, text: str) -> List[Any]:
        opts = self.csv if self.csv is not None else CsvOptions()
        null_value = opts.null_value if opts.null_value != "" else None
        names = [n for n, _ in self.columns]
        out: List[Any] = []
        for fields in csv_records(text, opts.column_separator, opts.quote_char):
            if len(fields) > len(self.columns):
                msg = f"CSV record {[f for f, _ in fields]!r} has {len(fields)} fields, the schema {len(self.columns)}"
                raise FileReadError(msg)
            values = [
                _csv_value(text_, quoted, name, sql, null_value)
                for (text_, quoted), (name, sql) in zip(fields, self.columns)
            ]
            values += [None] * (len(self.columns) - len(values))  # missing trailing columns: null, as Jackson
            out.append(Row(**dict(zip(names, values))))
        return out

    def _parquet(self, data: bytes) -> List[Any]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        f = pq.ParquetFile(pa.BufferReader(data))
        schema = f.schema_arrow
        names = [n for n, _ in self.columns]
        present = [n for n in names if n in schema.names]
        for name, sql in self.columns:
            if name in schema.names:
                got = schema.field(name).type
                if got != getattr(pa, COLUMN_TYPES[sql][1])() and not (sql == "STRING" and got == pa.large_string()):
                    msg = f"Parquet column {name!r} is {got} in the file; the row type declares {sql}"
                    raise FileReadError(msg)
        table = f.read(columns=present)
        columns: Dict[str, List[Any]] = {n: table.column(n).to_pylist() for n in present}
        rows = table.num_rows
        return [Row(**{n: columns[n][i] if n in columns else None for n in names}) for i in range(rows)]
