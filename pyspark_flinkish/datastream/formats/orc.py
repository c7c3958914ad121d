"""PyFlink's ``pyflink.datastream.formats.orc``: :class:`OrcBulkWriters`, ORC part files for
``FileSink.for_bulk_format``."""

from __future__ import annotations

from typing import Any, Optional

from ...common.serialization import BulkWriterFactory
from ...core.bulk_writers import BulkEncoding, row_columns
from ...core.errors import UnsupportedFeatureError


class OrcBulkWriters:
    """Writers of ORC files (PyFlink's ``OrcBulkWriters``)."""

    @staticmethod
    def for_row_type(
        row_type: Any, writer_properties: Optional[Any] = None, hadoop_config: Optional[Any] = None
    ) -> BulkWriterFactory:
        """ORC files (zlib-compressed, ORC's default as in Flink's ``OrcBulkWriterFactory``) of ``row_type``'s
        columns; the stream's ``Row`` fields are written by position. Column types as
        ``ParquetBulkWriters.for_row_type``.

        ``writer_properties`` (ORC writer options such as ``orc.compress``) are refused when given non-empty: the
        files are written by pyarrow with ORC's defaults. ``hadoop_config`` is accepted and not used.
        """
        if writer_properties is not None and _entries(writer_properties):
            msg = (
                "OrcBulkWriters.for_row_type(writer_properties=...): ORC writer options are not applied here (pyarrow "
                "writes the files with ORC's defaults, zlib); leave writer_properties out"
            )
            raise UnsupportedFeatureError(msg)
        return BulkWriterFactory(BulkEncoding("orc", row_columns(row_type, "OrcBulkWriters.for_row_type")))


def _entries(config: Any) -> bool:
    to_dict = getattr(config, "to_dict", None)
    return bool(to_dict() if callable(to_dict) else config)


__all__ = ["OrcBulkWriters"]
