"""Type information in PyFlink's shape (``Types.LONG()``, ``Types.ROW_NAMED(...)``).

The JVM-free engine runs Python objects and only records the declared types. The Spark executors use them
to derive Spark schemas for outputs and sinks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence, Tuple


@dataclass(frozen=True)
class TypeInformation:
    """A declared type. ``name`` is Flink's type name; ``children`` the nested types, if any."""

    name: str
    children: Tuple[TypeInformation, ...] = ()
    field_names: Tuple[str, ...] = field(default=())

    def __repr__(self) -> str:
        if self.field_names:
            inner = ", ".join(f"{n}: {t!r}" for n, t in zip(self.field_names, self.children))
            return f"{self.name}({inner})"
        if self.children:
            return f"{self.name}({', '.join(map(repr, self.children))})"
        return self.name


class Types:
    """Factory of :class:`TypeInformation`, named as in ``pyflink.common.typeinfo.Types``."""

    @staticmethod
    def STRING() -> TypeInformation:  # noqa: N802 - PyFlink's names
        return TypeInformation("STRING")

    @staticmethod
    def BOOLEAN() -> TypeInformation:  # noqa: N802
        return TypeInformation("BOOLEAN")

    @staticmethod
    def BYTE() -> TypeInformation:  # noqa: N802
        return TypeInformation("BYTE")

    @staticmethod
    def SHORT() -> TypeInformation:  # noqa: N802
        return TypeInformation("SHORT")

    @staticmethod
    def INT() -> TypeInformation:  # noqa: N802
        return TypeInformation("INT")

    @staticmethod
    def LONG() -> TypeInformation:  # noqa: N802
        return TypeInformation("LONG")

    @staticmethod
    def FLOAT() -> TypeInformation:  # noqa: N802
        return TypeInformation("FLOAT")

    @staticmethod
    def DOUBLE() -> TypeInformation:  # noqa: N802
        return TypeInformation("DOUBLE")

    @staticmethod
    def SQL_TIMESTAMP() -> TypeInformation:  # noqa: N802
        return TypeInformation("SQL_TIMESTAMP")

    @staticmethod
    def PICKLED_BYTE_ARRAY() -> TypeInformation:  # noqa: N802
        return TypeInformation("PICKLED_BYTE_ARRAY")

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation) -> TypeInformation:  # noqa: N802
        return TypeInformation("PRIMITIVE_ARRAY", (element_type,))

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> TypeInformation:  # noqa: N802
        return TypeInformation("BASIC_ARRAY", (element_type,))

    @staticmethod
    def LIST(element_type: TypeInformation) -> TypeInformation:  # noqa: N802
        return TypeInformation("LIST", (element_type,))

    @staticmethod
    def MAP(key_type: TypeInformation, value_type: TypeInformation) -> TypeInformation:  # noqa: N802
        return TypeInformation("MAP", (key_type, value_type))

    @staticmethod
    def TUPLE(types: Sequence[TypeInformation]) -> TypeInformation:  # noqa: N802
        return TypeInformation("TUPLE", tuple(types))

    @staticmethod
    def ROW(types: Sequence[TypeInformation]) -> TypeInformation:  # noqa: N802
        return TypeInformation("ROW", tuple(types), tuple(f"f{i}" for i in range(len(types))))

    @staticmethod
    def ROW_NAMED(names: Sequence[str], types: Sequence[TypeInformation]) -> TypeInformation:  # noqa: N802
        if len(names) != len(types):
            from .errors import InvalidArgumentError

            msg = f"Types.ROW_NAMED needs as many names as types; got {len(names)} names, {len(types)} types"
            raise InvalidArgumentError(msg)
        return TypeInformation("ROW", tuple(types), tuple(names))


__all__ = [
    "TypeInformation",
    "Types",
]
