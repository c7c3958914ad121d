"""PyFlink's ``pyflink.common.serialization``: how a source turns a record's bytes into an element, how a sink
turns an element into a record's bytes, and how a file sink turns an element into bytes (:class:`Encoder`) or writes
a whole part file (:class:`BulkWriterFactory`).

Deserialization schemas are descriptions, not code run per record: the Spark executors decode with Spark's own
functions. Serialization schemas run per record (``serialize``), on the Spark executors or in the JVM-free engine.
"""

from __future__ import annotations

import codecs
from typing import Any

from ..core.bulk_writers import BulkEncoding
from ..core.errors import InvalidArgumentError, InvalidTypeError

__all__ = [
    "BulkWriterFactory",
    "DeserializationSchema",
    "Encoder",
    "RawBytesSchema",
    "SerializationSchema",
    "SimpleStringSchema",
    "checked_charset",
]


def checked_charset(charset: str, where: str) -> str:
    """``charset`` when Python knows it (Java's charset names: ``UTF-8``, ``ISO-8859-1``, ...); else an
    ``InvalidArgumentError`` naming ``where``."""
    try:
        codecs.lookup(charset)
    except LookupError:
        msg = f"{where}: unknown charset {charset!r}"
        raise InvalidArgumentError(msg) from None
    return charset


class DeserializationSchema:
    """Base of the value formats a source understands (PyFlink's ``DeserializationSchema``)."""

    format_name: str = ""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(vars(self).items()))))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SerializationSchema:
    """Base of the formats a sink writes (PyFlink's ``SerializationSchema``): :meth:`serialize` turns one element
    into bytes. Subclasses are immutable values (compared by their settings) and must pickle: they run on the
    Spark executors."""

    def serialize(self, element: Any) -> bytes:
        """The bytes of ``element``; raises for an element the format cannot write."""
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(vars(self).items()))))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SimpleStringSchema(DeserializationSchema, SerializationSchema):
    """Each record's value as text (``str``) in ``charset``; PyFlink's ``SimpleStringSchema(charset='UTF-8')``, a
    deserialization schema for sources and a serialization schema for sinks.

    Differences from Flink: a record with a null value (a tombstone) becomes ``None`` instead of failing. As a
    serialization schema it writes ``str`` elements only (Flink's takes Java Strings): anything else raises a
    ``TypeError`` naming its type (map it to text first).
    """

    format_name = "string"

    def __init__(self, charset: str = "UTF-8") -> None:
        self.charset = checked_charset(charset, "SimpleStringSchema")

    def serialize(self, element: Any) -> bytes:
        """``element`` (a ``str``) encoded in the schema's charset."""
        if not isinstance(element, str):
            msg = (
                f"SimpleStringSchema serializes str elements; got {type(element).__name__} {element!r:.80}: map the "
                "stream to text first, or use JsonRowSerializationSchema for rows"
            )
            raise InvalidTypeError(msg)
        return element.encode(self.charset)

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
        self.charset_name = checked_charset(charset_name, "Encoder.simple_string_encoder")

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


class BulkWriterFactory:
    """How ``FileSink.for_bulk_format`` writes a part file (PyFlink's ``BulkWriterFactory``); made by the factories of
    ``pyspark_flinkish.datastream.formats`` (``ParquetBulkWriters``, ``OrcBulkWriters``, ``AvroBulkWriters``,
    ``CsvBulkWriters``), not directly. ``encoding`` describes the files
    (:class:`~pyspark_flinkish.core.bulk_writers.BulkEncoding`)."""

    def __init__(self, encoding: BulkEncoding) -> None:
        if not isinstance(encoding, BulkEncoding):
            msg = (
                "BulkWriterFactory is made by ParquetBulkWriters.for_row_type, OrcBulkWriters.for_row_type, "
                f"AvroBulkWriters.for_generic_record or CsvBulkWriters.for_schema; got {type(encoding).__name__}"
            )
            raise InvalidTypeError(msg)
        self.encoding = encoding

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BulkWriterFactory) and other.encoding == self.encoding

    def __hash__(self) -> int:
        return hash(self.encoding)

    def __repr__(self) -> str:
        return f"{self.encoding.factory}({self.encoding!r})"
