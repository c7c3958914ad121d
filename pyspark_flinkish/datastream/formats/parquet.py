"""PyFlink's ``pyflink.datastream.formats.parquet``: :class:`ParquetBulkWriters`, Parquet part files for
``FileSink.for_bulk_format``, and :class:`ParquetColumnarRowInputFormat`, Parquet files read by a ``FileSource``.

Example (as in PyFlink)::

    row_type = DataTypes.ROW([DataTypes.FIELD("id", DataTypes.INT()), DataTypes.FIELD("name", DataTypes.STRING())])
    ds.sink_to(FileSink.for_bulk_format("/out", ParquetBulkWriters.for_row_type(row_type)).build())
"""

from __future__ import annotations

from typing import Any, Optional

from ...common.serialization import BulkWriterFactory
from ...core.bulk_writers import BulkEncoding, row_columns
from ...core.errors import InvalidArgumentError, UnsupportedFeatureError
from ...core.file_readers import ReaderFormat
from ..connectors.file_system import BulkFormat


class ParquetBulkWriters:
    """Writers of Parquet files (PyFlink's ``ParquetBulkWriters``)."""

    @staticmethod
    def for_row_type(row_type: Any, hadoop_config: Optional[Any] = None, utc_timestamp: bool = False) -> BulkWriterFactory:
        """Parquet files (Snappy-compressed, as Flink's ``ParquetRowDataBuilder``) of ``row_type``'s columns; the
        stream's ``Row`` fields are written by position. Column types: ``TINYINT``, ``SMALLINT``, ``INT``, ``BIGINT``,
        ``FLOAT``, ``DOUBLE``, ``BOOLEAN``, ``STRING`` (of streams declared ``Types.BYTE()``, ``SHORT``, ``INT``,
        ``LONG``, ``FLOAT``, ``DOUBLE``, ``BOOLEAN``, ``STRING``); other types are refused here, named.

        ``hadoop_config`` is accepted and not used (pyarrow writes the files, no Hadoop configuration applies);
        ``utc_timestamp`` concerns ``TIMESTAMP`` columns, which are refused (Flink's writer fails on the DataStream
        API's ``Types.SQL_TIMESTAMP()`` values).
        """
        return BulkWriterFactory(BulkEncoding("parquet", row_columns(row_type, "ParquetBulkWriters.for_row_type")))


_TIME_TYPES = ("DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ", "TIMESTAMP_WITH_LOCAL_TIME_ZONE")


class ParquetColumnarRowInputFormat(BulkFormat):
    """Parquet files read as ``Row``s of ``row_type``'s columns (PyFlink's ``ParquetColumnarRowInputFormat``), for
    ``FileSource.for_bulk_file_format``; the stream is ``Types.ROW_NAMED`` of the row type's fields.

    Columns are found by name (``is_case_sensitive=True``, Flink's default; a column the file lacks is ``None``), of
    the writers' types: ``TINYINT``, ``SMALLINT``, ``INT``, ``BIGINT``, ``FLOAT``, ``DOUBLE``, ``BOOLEAN``,
    ``STRING``; a file column of another physical type fails the job. ``DATE`` and ``TIMESTAMP`` columns are refused:
    Flink's records hold them in its internal form (``print()`` shows a date as days since the epoch).
    ``batch_size`` and ``hadoop_config`` are accepted and do not change the records (pyarrow reads the files);
    ``is_case_sensitive=False`` is refused.
    """

    def __init__(
        self,
        row_type: Any,
        hadoop_config: Optional[Any] = None,
        batch_size: int = 2048,
        is_utc_timestamp: bool = False,
        is_case_sensitive: bool = True,
    ) -> None:
        where = "ParquetColumnarRowInputFormat"
        if not isinstance(batch_size, int) or batch_size <= 0:
            msg = f"{where}: batch_size must be a positive int; got {batch_size!r}"
            raise InvalidArgumentError(msg)
        if not is_case_sensitive:
            msg = (
                f"{where}(is_case_sensitive=False): column names are matched case-sensitively here (Flink's default); "
                "declare the row type's field names as the files spell them"
            )
            raise UnsupportedFeatureError(msg)
        for f in getattr(row_type, "fields", ()):
            if f.data_type.name in _TIME_TYPES:
                msg = (
                    f"{where}: column {f.name!r} of type {f.data_type.name} is not supported: Flink's records hold it in "
                    "its internal form (its print() shows a DATE as days since the epoch); write dates and times as "
                    "STRING or BIGINT columns"
                )
                raise UnsupportedFeatureError(msg)
        columns = row_columns(row_type, where)
        super().__init__(ReaderFormat("parquet", tuple((name, sql) for name, sql, _ in columns)))
        self.row_type = row_type


__all__ = ["ParquetBulkWriters", "ParquetColumnarRowInputFormat"]
