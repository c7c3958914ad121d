"""PyFlink's ``pyflink.table`` as far as the DataStream API uses it: :class:`DataTypes`, the SQL row types of the bulk
file writers (``ParquetBulkWriters.for_row_type``, ``OrcBulkWriters.for_row_type``, ``CsvSchema`` columns).
There is no Table API here."""

from __future__ import annotations

from ..core.data_types import DataType, DataTypes, RowField, RowType

__all__ = ["DataType", "DataTypes", "RowField", "RowType"]
