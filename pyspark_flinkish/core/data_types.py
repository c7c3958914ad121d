"""Flink's SQL data types as descriptions (PyFlink's ``pyflink.table.types``: ``DataTypes.ROW([DataTypes.FIELD(...)])``).

The DataStream API meets them only where PyFlink's bulk file writers take a row type
(``ParquetBulkWriters.for_row_type``, ``OrcBulkWriters.for_row_type``, ``CsvSchema``'s columns). A data type here is
a value object: its SQL name (``INT``, ``BIGINT``, ``VARCHAR``, ...), its parameters (a length, a precision), its
nullability and, for ``ROW``, ``ARRAY`` and ``MAP``, its nested types. Every type of PyFlink's ``DataTypes`` can be
described; what a writer cannot write as Flink does is refused by that writer, naming the type.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple


class DataType:
    """A SQL data type: ``name`` (Flink's ``LogicalTypeRoot`` spelled as in SQL), ``params`` (length, precision,
    scale), ``nullable`` and ``children`` (element, key/value or field types)."""

    __slots__ = ("children", "name", "nullable", "params")

    def __init__(
        self, name: str, params: Sequence[Any] = (), nullable: bool = True, children: Sequence[DataType] = ()
    ) -> None:
        self.name = name
        self.params: Tuple[Any, ...] = tuple(params)
        self.nullable = nullable
        self.children: Tuple[DataType, ...] = tuple(children)

    def not_null(self) -> DataType:
        """The same type without ``NULL`` (PyFlink's ``DataType.not_null()``)."""
        return self._copy(False)

    def _copy(self, nullable: bool) -> DataType:
        return DataType(self.name, self.params, nullable, self.children)

    def _key(self) -> Tuple[Any, ...]:
        return (type(self).__name__, self.name, self.params, self.nullable, self.children)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DataType) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        inner = ", ".join([*map(repr, self.params), *map(repr, self.children)])
        text = f"{self.name}({inner})" if inner else self.name
        return text if self.nullable else f"{text} NOT NULL"


class RowField:
    """A field of a :class:`RowType` (PyFlink's ``DataTypes.FIELD(name, data_type, description)``)."""

    __slots__ = ("data_type", "description", "name")

    def __init__(self, name: str, data_type: DataType, description: Optional[str] = None) -> None:
        if not isinstance(name, str) or not name:
            msg = f"DataTypes.FIELD needs a non-empty name; got {name!r}"
            raise TypeError(msg)
        if not isinstance(data_type, DataType):
            msg = f"DataTypes.FIELD({name!r}, ...) needs a DataType (DataTypes.INT(), ...); got {type(data_type).__name__}"
            raise TypeError(msg)
        self.name = name
        self.data_type = data_type
        self.description = description

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RowField) and (other.name, other.data_type) == (self.name, self.data_type)

    def __hash__(self) -> int:
        return hash((self.name, self.data_type))

    def __repr__(self) -> str:
        return f"RowField({self.name!r}, {self.data_type!r})"


class RowType(DataType):
    """``DataTypes.ROW([...])``: named fields, in order; iterating gives the :class:`RowField` s."""

    __slots__ = ("fields",)

    def __init__(self, fields: Sequence[RowField], nullable: bool = True) -> None:
        fields = list(fields)
        for f in fields:
            if not isinstance(f, RowField):
                msg = f"DataTypes.ROW needs DataTypes.FIELD(...) fields; got {type(f).__name__}"
                raise TypeError(msg)
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            msg = f"DataTypes.ROW: field names must be unique; got {names}"
            raise ValueError(msg)
        super().__init__("ROW", (), nullable, [f.data_type for f in fields])
        self.fields: Tuple[RowField, ...] = tuple(fields)

    def field_names(self) -> List[str]:
        return [f.name for f in self.fields]

    def _copy(self, nullable: bool) -> DataType:
        return RowType(self.fields, nullable)

    def _key(self) -> Tuple[Any, ...]:
        return (*super()._key(), self.fields)

    def __iter__(self) -> Any:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __repr__(self) -> str:
        inner = ", ".join(f"{f.name}: {f.data_type!r}" for f in self.fields)
        return f"ROW({inner})" if self.nullable else f"ROW({inner}) NOT NULL"


class DataTypes:
    """PyFlink's ``DataTypes`` constructors (``pyflink.table.DataTypes``), as descriptions."""

    @staticmethod
    def NULL() -> DataType:  # noqa: N802 - PyFlink's names
        return DataType("NULL")

    @staticmethod
    def CHAR(length: int, nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("CHAR", (length,), nullable)

    @staticmethod
    def VARCHAR(length: int, nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("VARCHAR", (length,), nullable)

    @staticmethod
    def STRING(nullable: bool = True) -> DataType:  # noqa: N802
        """``VARCHAR(2147483647)``, as Flink's ``STRING``."""
        return DataType("VARCHAR", (2147483647,), nullable)

    @staticmethod
    def BOOLEAN(nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("BOOLEAN", (), nullable)

    @staticmethod
    def BINARY(length: int, nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("BINARY", (length,), nullable)

    @staticmethod
    def VARBINARY(length: int, nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("VARBINARY", (length,), nullable)

    @staticmethod
    def BYTES(nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("VARBINARY", (2147483647,), nullable)

    @staticmethod
    def DECIMAL(precision: int, scale: int, nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("DECIMAL", (precision, scale), nullable)

    @staticmethod
    def TINYINT(nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("TINYINT", (), nullable)

    @staticmethod
    def SMALLINT(nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("SMALLINT", (), nullable)

    @staticmethod
    def INT(nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("INT", (), nullable)

    @staticmethod
    def BIGINT(nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("BIGINT", (), nullable)

    @staticmethod
    def FLOAT(nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("FLOAT", (), nullable)

    @staticmethod
    def DOUBLE(nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("DOUBLE", (), nullable)

    @staticmethod
    def DATE(nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("DATE", (), nullable)

    @staticmethod
    def TIME(precision: int = 0, nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("TIME", (precision,), nullable)

    @staticmethod
    def TIMESTAMP(precision: int = 6, nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("TIMESTAMP", (precision,), nullable)

    @staticmethod
    def TIMESTAMP_LTZ(precision: int = 6, nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("TIMESTAMP_LTZ", (precision,), nullable)

    @staticmethod
    def ARRAY(element_type: DataType, nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("ARRAY", (), nullable, [element_type])

    @staticmethod
    def MAP(key_type: DataType, value_type: DataType, nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("MAP", (), nullable, [key_type, value_type])

    @staticmethod
    def MULTISET(element_type: DataType, nullable: bool = True) -> DataType:  # noqa: N802
        return DataType("MULTISET", (), nullable, [element_type])

    @staticmethod
    def ROW(row_fields: Optional[Sequence[RowField]] = None, nullable: bool = True) -> RowType:  # noqa: N802
        return RowType(row_fields or [], nullable)

    @staticmethod
    def FIELD(name: str, data_type: DataType, description: Optional[str] = None) -> RowField:  # noqa: N802
        return RowField(name, data_type, description)


__all__ = ["DataType", "DataTypes", "RowField", "RowType"]
