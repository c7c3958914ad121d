"""PyFlink's ``pyflink.datastream.formats.parquet``: :class:`ParquetBulkWriters`, Parquet part files for
``FileSink.for_bulk_format``.

Example (as in PyFlink)::

    row_type = DataTypes.ROW([DataTypes.FIELD("id", DataTypes.INT()), DataTypes.FIELD("name", DataTypes.STRING())])
    ds.sink_to(FileSink.for_bulk_format("/out", ParquetBulkWriters.for_row_type(row_type)).build())
"""

from __future__ import annotations

from typing import Any, Optional

from ...common.serialization import BulkWriterFactory
from ...core.bulk_writers import BulkEncoding, row_columns


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


__all__ = ["ParquetBulkWriters"]
