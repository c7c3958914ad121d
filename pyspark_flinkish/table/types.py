"""PyFlink's ``pyflink.table.types``: the data type classes (see :mod:`pyspark_flinkish.table`)."""

from __future__ import annotations

from ..core.data_types import DataType, DataTypes, RowField, RowType

__all__ = ["DataType", "DataTypes", "RowField", "RowType"]
