"""Type information in PyFlink's shape (``Types.LONG()``, ``Types.ROW_NAMED(...)``) and PyFlink's ``*TypeInfo``
classes (``pyflink.common.typeinfo``).

The JVM-free engine runs Python objects; a declared type says what Flink would hand the next function after
serializing a value with it: a ``ROW`` value is a :class:`~pyspark_flinkish.core.rows.Row` (see
:func:`~pyspark_flinkish.core.rows.as_declared`), and ``print()`` shows values as Flink does for their type
(:mod:`~pyspark_flinkish.core.display`). The Spark executors use the types to derive Spark schemas for outputs
and sinks.

Every type information is a :class:`TypeInformation` with Flink's type ``name`` (``"INT"``, ``"ROW"``, ...),
its nested types (``children``) and, for rows, the field names; the subclasses only give PyFlink's
constructors and accessors. Two type informations are equal when name, children and field names are.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, List, Optional, Sequence, Tuple


class TypeInformation:
    """A declared type. ``name`` is Flink's type name; ``children`` the nested types, if any; ``field_names``
    the names of a row's fields (``f0``, ``f1``, ... for ``Types.ROW``)."""

    __slots__ = ("children", "field_names", "name")

    name: str
    children: Tuple[TypeInformation, ...]
    field_names: Tuple[str, ...]

    def __init__(self, name: str, children: Sequence[TypeInformation] = (), field_names: Sequence[str] = ()) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "children", tuple(children))
        object.__setattr__(self, "field_names", tuple(field_names))

    def __setattr__(self, key: str, value: Any) -> None:
        msg = f"TypeInformation is immutable: cannot set {key}"
        raise AttributeError(msg)

    def __reduce__(self) -> Any:
        return TypeInformation._rebuild, (type(self), self.name, self.children, self.field_names)

    @staticmethod
    def _rebuild(cls: type, name: str, children: Tuple[Any, ...], field_names: Tuple[str, ...]) -> TypeInformation:
        t = object.__new__(cls)
        TypeInformation.__init__(t, name, children, field_names)
        return t  # type: ignore[no-any-return]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TypeInformation):
            return NotImplemented
        return (self.name, self.children, self.field_names) == (other.name, other.children, other.field_names)

    def __hash__(self) -> int:
        return hash((self.name, self.children, self.field_names))

    def __repr__(self) -> str:
        if self.field_names:
            inner = ", ".join(f"{n}: {t!r}" for n, t in zip(self.field_names, self.children))
            return f"{self.name}({inner})"
        if self.children:
            return f"{self.name}({', '.join(map(repr, self.children))})"
        return self.name


class BasicType(Enum):
    """PyFlink's basic types (the value is Java's class name)."""

    STRING = "String"
    BYTE = "Byte"
    BOOLEAN = "Boolean"
    SHORT = "Short"
    INT = "Integer"
    LONG = "Long"
    FLOAT = "Float"
    DOUBLE = "Double"
    CHAR = "Char"
    BIG_INT = "BigInteger"
    BIG_DEC = "BigDecimal"
    INSTANT = "Instant"


class BasicTypeInfo(TypeInformation):
    """A basic type: ``Types.STRING()``, ``Types.INT()``, ``Types.BIG_DEC()``, ..."""

    __slots__ = ()

    def __init__(self, basic_type: BasicType) -> None:
        super().__init__(basic_type.name)

    @staticmethod
    def STRING_TYPE_INFO() -> BasicTypeInfo:  # noqa: N802 - PyFlink's names
        return BasicTypeInfo(BasicType.STRING)

    @staticmethod
    def BOOLEAN_TYPE_INFO() -> BasicTypeInfo:  # noqa: N802
        return BasicTypeInfo(BasicType.BOOLEAN)

    @staticmethod
    def BYTE_TYPE_INFO() -> BasicTypeInfo:  # noqa: N802
        return BasicTypeInfo(BasicType.BYTE)

    @staticmethod
    def SHORT_TYPE_INFO() -> BasicTypeInfo:  # noqa: N802
        return BasicTypeInfo(BasicType.SHORT)

    @staticmethod
    def INT_TYPE_INFO() -> BasicTypeInfo:  # noqa: N802
        return BasicTypeInfo(BasicType.INT)

    @staticmethod
    def LONG_TYPE_INFO() -> BasicTypeInfo:  # noqa: N802
        return BasicTypeInfo(BasicType.LONG)

    @staticmethod
    def FLOAT_TYPE_INFO() -> BasicTypeInfo:  # noqa: N802
        return BasicTypeInfo(BasicType.FLOAT)

    @staticmethod
    def DOUBLE_TYPE_INFO() -> BasicTypeInfo:  # noqa: N802
        return BasicTypeInfo(BasicType.DOUBLE)

    @staticmethod
    def CHAR_TYPE_INFO() -> BasicTypeInfo:  # noqa: N802
        return BasicTypeInfo(BasicType.CHAR)

    @staticmethod
    def BIG_INT_TYPE_INFO() -> BasicTypeInfo:  # noqa: N802
        return BasicTypeInfo(BasicType.BIG_INT)

    @staticmethod
    def BIG_DEC_TYPE_INFO() -> BasicTypeInfo:  # noqa: N802
        return BasicTypeInfo(BasicType.BIG_DEC)

    @staticmethod
    def INSTANT_TYPE_INFO() -> InstantTypeInfo:  # noqa: N802
        return InstantTypeInfo(BasicType.INSTANT)


class InstantTypeInfo(BasicTypeInfo):
    """``Types.INSTANT()``: a point in time (Java's ``Instant``)."""

    __slots__ = ()


class DateTypeInfo(TypeInformation):
    """``Types.SQL_DATE()``: a ``datetime.date``."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__("SQL_DATE")


class TimeTypeInfo(TypeInformation):
    """``Types.SQL_TIME()``: a ``datetime.time``."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__("SQL_TIME")


class TimestampTypeInfo(TypeInformation):
    """``Types.SQL_TIMESTAMP()``: a ``datetime.datetime``."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__("SQL_TIMESTAMP")


class SqlTimeTypeInfo:
    """Factory of the SQL time types, as PyFlink's ``SqlTimeTypeInfo``."""

    @staticmethod
    def DATE() -> DateTypeInfo:  # noqa: N802
        return DateTypeInfo()

    @staticmethod
    def TIME() -> TimeTypeInfo:  # noqa: N802
        return TimeTypeInfo()

    @staticmethod
    def TIMESTAMP() -> TimestampTypeInfo:  # noqa: N802
        return TimestampTypeInfo()


class PickledBytesTypeInfo(TypeInformation):
    """``Types.PICKLED_BYTE_ARRAY()``: any Python object (what PyFlink assumes when no type is given)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__("PICKLED_BYTE_ARRAY")


class _ElementTypeInfo(TypeInformation):
    __slots__ = ()
    KIND = ""

    def __init__(self, element_type: TypeInformation) -> None:
        super().__init__(self.KIND, (element_type,))


class PrimitiveArrayTypeInfo(_ElementTypeInfo):
    """``Types.PRIMITIVE_ARRAY(t)``: an array of a primitive type (a Python list)."""

    __slots__ = ()
    KIND = "PRIMITIVE_ARRAY"


class BasicArrayTypeInfo(_ElementTypeInfo):
    """``Types.BASIC_ARRAY(t)``: an array of a boxed basic type (a Python list)."""

    __slots__ = ()
    KIND = "BASIC_ARRAY"


class ObjectArrayTypeInfo(_ElementTypeInfo):
    """``Types.OBJECT_ARRAY(t)``: an array of any type, e.g. rows (a Python list)."""

    __slots__ = ()
    KIND = "OBJECT_ARRAY"


class ListTypeInfo(_ElementTypeInfo):
    """``Types.LIST(t)``: a list."""

    __slots__ = ()
    KIND = "LIST"


class MapTypeInfo(TypeInformation):
    """``Types.MAP(k, v)``: a dict."""

    __slots__ = ()

    def __init__(self, key_type_info: TypeInformation, value_type_info: TypeInformation) -> None:
        super().__init__("MAP", (key_type_info, value_type_info))


class RowTypeInfo(TypeInformation):
    """``Types.ROW([...])`` / ``Types.ROW_NAMED([...], [...])``: a :class:`~pyspark_flinkish.core.rows.Row`;
    unnamed rows get Flink's default names ``f0``, ``f1``, ..."""

    __slots__ = ()

    def __init__(self, field_types: Sequence[TypeInformation], field_names: Optional[Sequence[str]] = None) -> None:
        types = list(field_types)
        names = list(field_names) if field_names is not None else [f"f{i}" for i in range(len(types))]
        if len(names) != len(types):
            from .errors import InvalidArgumentError

            msg = f"Types.ROW_NAMED needs as many names as types; got {len(names)} names, {len(types)} types"
            raise InvalidArgumentError(msg)
        super().__init__("ROW", types, names)

    def get_field_names(self) -> List[str]:
        return list(self.field_names)

    def get_field_index(self, field_name: str) -> int:
        return self.field_names.index(field_name) if field_name in self.field_names else -1

    def get_field_types(self) -> List[TypeInformation]:
        return list(self.children)


class RowDataTypeInfo(RowTypeInfo):
    """The rows of a ``FileSource`` reading CSV or Parquet: Flink holds them as ``RowData`` (``InternalTypeInfo``),
    whose ``print()``/``toString`` is ``+I(a,1,null)`` rather than a ``Row``'s ``+I[a, 1, null]``. Equal to the
    ``Types.ROW_NAMED`` of the same fields for every other purpose."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"RowData{super().__repr__()}"


class TupleTypeInfo(TypeInformation):
    """``Types.TUPLE([...])``: a Python tuple."""

    __slots__ = ()

    def __init__(self, field_types: Sequence[TypeInformation]) -> None:
        super().__init__("TUPLE", field_types)

    def get_field_types(self) -> List[TypeInformation]:
        return list(self.children)


class Types:
    """Factory of :class:`TypeInformation`, named as in ``pyflink.common.typeinfo.Types``."""

    @staticmethod
    def STRING() -> TypeInformation:  # noqa: N802 - PyFlink's names
        return BasicTypeInfo.STRING_TYPE_INFO()

    @staticmethod
    def BOOLEAN() -> TypeInformation:  # noqa: N802
        return BasicTypeInfo.BOOLEAN_TYPE_INFO()

    @staticmethod
    def BYTE() -> TypeInformation:  # noqa: N802
        return BasicTypeInfo.BYTE_TYPE_INFO()

    @staticmethod
    def SHORT() -> TypeInformation:  # noqa: N802
        return BasicTypeInfo.SHORT_TYPE_INFO()

    @staticmethod
    def INT() -> TypeInformation:  # noqa: N802
        return BasicTypeInfo.INT_TYPE_INFO()

    @staticmethod
    def LONG() -> TypeInformation:  # noqa: N802
        return BasicTypeInfo.LONG_TYPE_INFO()

    @staticmethod
    def FLOAT() -> TypeInformation:  # noqa: N802
        return BasicTypeInfo.FLOAT_TYPE_INFO()

    @staticmethod
    def DOUBLE() -> TypeInformation:  # noqa: N802
        return BasicTypeInfo.DOUBLE_TYPE_INFO()

    @staticmethod
    def CHAR() -> TypeInformation:  # noqa: N802
        return BasicTypeInfo.CHAR_TYPE_INFO()

    @staticmethod
    def BIG_INT() -> TypeInformation:  # noqa: N802
        return BasicTypeInfo.BIG_INT_TYPE_INFO()

    @staticmethod
    def BIG_DEC() -> TypeInformation:  # noqa: N802
        return BasicTypeInfo.BIG_DEC_TYPE_INFO()

    @staticmethod
    def INSTANT() -> TypeInformation:  # noqa: N802
        return BasicTypeInfo.INSTANT_TYPE_INFO()

    @staticmethod
    def SQL_DATE() -> TypeInformation:  # noqa: N802
        return SqlTimeTypeInfo.DATE()

    @staticmethod
    def SQL_TIME() -> TypeInformation:  # noqa: N802
        return SqlTimeTypeInfo.TIME()

    @staticmethod
    def SQL_TIMESTAMP() -> TypeInformation:  # noqa: N802
        return SqlTimeTypeInfo.TIMESTAMP()

    @staticmethod
    def PICKLED_BYTE_ARRAY() -> TypeInformation:  # noqa: N802
        return PickledBytesTypeInfo()

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation) -> TypeInformation:  # noqa: N802
        return PrimitiveArrayTypeInfo(element_type)

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> TypeInformation:  # noqa: N802
        return BasicArrayTypeInfo(element_type)

    @staticmethod
    def OBJECT_ARRAY(element_type: TypeInformation) -> TypeInformation:  # noqa: N802
        return ObjectArrayTypeInfo(element_type)

    @staticmethod
    def LIST(element_type: TypeInformation) -> TypeInformation:  # noqa: N802
        return ListTypeInfo(element_type)

    @staticmethod
    def MAP(key_type: TypeInformation, value_type: TypeInformation) -> TypeInformation:  # noqa: N802
        return MapTypeInfo(key_type, value_type)

    @staticmethod
    def TUPLE(types: Sequence[TypeInformation]) -> TypeInformation:  # noqa: N802
        return TupleTypeInfo(types)

    @staticmethod
    def ROW(types: Sequence[TypeInformation]) -> TypeInformation:  # noqa: N802
        return RowTypeInfo(types)

    @staticmethod
    def ROW_NAMED(names: Sequence[str], types: Sequence[TypeInformation]) -> TypeInformation:  # noqa: N802
        return RowTypeInfo(types, names)


__all__ = [
    "BasicArrayTypeInfo",
    "BasicType",
    "BasicTypeInfo",
    "DateTypeInfo",
    "InstantTypeInfo",
    "ListTypeInfo",
    "MapTypeInfo",
    "ObjectArrayTypeInfo",
    "PickledBytesTypeInfo",
    "PrimitiveArrayTypeInfo",
    "RowDataTypeInfo",
    "RowTypeInfo",
    "SqlTimeTypeInfo",
    "TimeTypeInfo",
    "TimestampTypeInfo",
    "TupleTypeInfo",
    "TypeInformation",
    "Types",
]
