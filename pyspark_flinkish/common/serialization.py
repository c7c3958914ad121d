"""PyFlink's ``pyflink.common.serialization``: how a source turns a record's bytes into an element, and how a file
sink turns an element into bytes (:class:`Encoder`).

These are descriptions, not code run per record: the Spark executors decode with Spark's own functions.
"""

from __future__ import annotations

import codecs

from ..core.errors import InvalidArgumentError

__all__ = ["DeserializationSchema", "Encoder", "RawBytesSchema", "SimpleStringSchema"]


class DeserializationSchema:
    """Base of the value formats a source understands (PyFlink's ``DeserializationSchema``)."""

    format_name: str = ""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(vars(self).items()))))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SimpleStringSchema(DeserializationSchema):
    """Each record's value decoded as text (``str``); PyFlink's ``SimpleStringSchema(charset='UTF-8')``.

    Differences from Flink: a record with a null value (a tombstone) becomes ``None`` instead of failing.
    """

    format_name = "string"

    def __init__(self, charset: str = "UTF-8") -> None:
        try:
            codecs.lookup(charset)
        except LookupError:
            msg = f"SimpleStringSchema: unknown charset {charset!r}"
            raise InvalidArgumentError(msg) from None
        self.charset = charset

    def __repr__(self) -> str:
        return f"SimpleStringSchema({self.charset!r})"


class RawBytesSchema(DeserializationSchema):
    """Each record's value as ``bytes``, undecoded (not in PyFlink, whose Python API has no byte-array schema)."""

    format_name = "raw"


class Encoder:
    """How ``FileSink.for_row_format`` writes each element (PyFlink's ``Encoder``); immutable.

    The only encoder PyFlink offers, :meth:`simple_string_encoder`, writes Java's ``toString()`` of the element and
    a newline (:func:`~pyspark_flinkish.core.display.java_string`): a ``Types.TUPLE`` as ``(hi,0,5,5)``, as ``print()``
    shows it, but a ``Types.ROW`` as ``+I[hi, 1, null]`` (PyFlink's ``print()`` formats rows in Python:
    ``+I[hi,1,None]``). A stream without a declared type is refused by ``FileSink``: Flink would write each pickled
    element's Java identity (``[B@5b7a603b``).
    """

    def __init__(self, charset_name: str = "UTF-8") -> None:
        try:
            codecs.lookup(charset_name)
        except LookupError:
            msg = f"Encoder.simple_string_encoder: unknown charset {charset_name!r}"
            raise InvalidArgumentError(msg) from None
        self.charset_name = charset_name

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> Encoder:
        """Each element as Java's ``toString()`` of it and ``"\\n"``, in ``charset_name``."""
        return Encoder(charset_name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Encoder) and other.charset_name == self.charset_name

    def __hash__(self) -> int:
        return hash(("Encoder", self.charset_name))

    def __repr__(self) -> str:
        return f"Encoder.simple_string_encoder({self.charset_name!r})"
