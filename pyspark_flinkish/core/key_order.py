"""The order in which Flink's BATCH execution processes the keys of a keyed operator: by the key's serialized bytes.

In ``RuntimeExecutionMode.BATCH`` a keyed operator's input is sorted (``SortingDataInput``) by the bytes its key
serializer writes, then by timestamp. PyFlink's ``key_by(selector, key_type)`` hands Java a one-field ``Row`` of
the key (``KeyByKeySelector``), so the serializer is a ``RowSerializer`` of ``Types.ROW([key_type])``: one mask byte
(two row-kind bits, then the field's null bit) followed by the key as ``key_type``'s serializer writes it; without a
``key_type`` the key is ``Types.PICKLED_BYTE_ARRAY()``: PyFlink's ``cloudpickle.dumps(key)`` (pickle protocol 5) as
a ``byte[]``, written as its length (4 bytes, big-endian) and its bytes. A ``None`` key, typed or not, is a null
field: the mask byte alone, its null bit set (``0x20``). The sorter compares two keys byte by byte as
*signed* Java bytes (its normalized-key prefix shifts each byte by 128, so that its unsigned comparison agrees), a
key that is a prefix of the other first: :func:`batch_sort_key` returns bytes that Python's ``bytes`` comparison
orders the same way. Two keys Flink serializes alike are one key there.

What a key type serializes to (``flink-core``'s serializers): ``STRING`` its length + 1 and then each UTF-16 code
unit, each as a variable-length integer (7 bits a byte, least significant first, the high bit set on all bytes but
the last); ``BOOLEAN`` one byte; ``BYTE``, ``SHORT``, ``INT``, ``LONG`` two's complement big-endian; ``FLOAT`` and
``DOUBLE`` their IEEE bits big-endian (``floatToIntBits``: one NaN); ``CHAR`` its UTF-16 code unit; ``TUPLE`` its
fields one after the other (no nulls); ``ROW`` a null mask (two row-kind bits, a bit per field, a byte per 8 bits,
most significant first) and then its non-null fields.

Keys whose bytes the package cannot know are ordered as they first arrived (a documented difference,
``docs/differences.md``): a ``key_type`` not listed above (``BIG_INT``, ``BIG_DEC``, SQL times, arrays, lists, maps,
``PICKLED_BYTE_ARRAY`` nested in a row), and untyped keys other than ``None``, ``bool``, ``int``, ``float``, ``str``,
``bytes`` and tuples of them (cloudpickle's bytes for other objects name their classes, which differ between PyFlink
and this package, or hold the class's code).
"""

from __future__ import annotations

import pickle
import struct
from typing import Any, Callable, Dict, Optional

from .coders import CoderError, coded

PICKLE_PROTOCOL = 5
"""cloudpickle's default protocol (``pickle.HIGHEST_PROTOCOL`` of PyFlink's Python 3.8+ workers)."""

_ROW_KINDS = {"INSERT": 0, "UPDATE_BEFORE": 1, "UPDATE_AFTER": 2, "DELETE": 3}


class _UnknownBytesError(Exception):
    """The package cannot know the bytes Flink serializes this key to."""


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _string(value: Any) -> bytes:
    if not isinstance(value, str):
        raise _UnknownBytesError
    units = value.encode("utf-16-be", "surrogatepass")
    out = bytearray(_varint(len(units) // 2 + 1))
    for i in range(0, len(units), 2):
        out += _varint((units[i] << 8) | units[i + 1])
    return bytes(out)


def _packed(fmt: str, kinds: tuple) -> Callable[[Any], bytes]:  # type: ignore[type-arg]
    def pack(value: Any) -> bytes:
        if not isinstance(value, kinds):
            raise _UnknownBytesError
        if isinstance(value, float) and value != value:  # floatToIntBits / doubleToLongBits: the canonical NaN
            return b"\x7f\xc0\x00\x00" if fmt == ">f" else b"\x7f\xf8\x00\x00\x00\x00\x00\x00"
        try:
            return struct.pack(fmt, value)
        except (struct.error, OverflowError) as exc:
            raise _UnknownBytesError from exc

    return pack


def _char(value: Any) -> bytes:
    if not isinstance(value, str) or len(value.encode("utf-16-be", "surrogatepass")) != 2:
        raise _UnknownBytesError
    return value.encode("utf-16-be", "surrogatepass")


_BASIC: Dict[str, Callable[[Any], bytes]] = {
    "STRING": _string,
    "BOOLEAN": _packed(">?", (bool,)),
    "BYTE": _packed(">b", (int,)),
    "SHORT": _packed(">h", (int,)),
    "INT": _packed(">i", (int,)),
    "LONG": _packed(">q", (int,)),
    "FLOAT": _packed(">f", (float, int)),
    "DOUBLE": _packed(">d", (float, int)),
    "CHAR": _char,
}


def _mask(bits: list) -> bytes:  # type: ignore[type-arg]
    out = bytearray()
    for start in range(0, len(bits), 8):
        chunk = bits[start : start + 8]
        byte = 0
        for bit in chunk:
            byte = (byte << 1) | int(bit)
        out.append(byte << (8 - len(chunk)))
    return bytes(out)


def _row_kind(value: Any) -> int:
    kind = getattr(value, "get_row_kind", None)
    if kind is None:
        return 0
    return _ROW_KINDS[getattr(kind(), "name", "INSERT")]


def _serialized(value: Any, type_info: Any) -> bytes:
    """``value`` (not null) as Flink's serializer of ``type_info`` writes it."""
    name = getattr(type_info, "name", None)
    basic = _BASIC.get(name)  # type: ignore[arg-type]
    if basic is not None:
        return basic(value)
    if name == "TUPLE":
        children = type_info.children
        if not isinstance(value, (tuple, list)) or len(value) != len(children) or any(v is None for v in value):
            raise _UnknownBytesError
        return b"".join(_serialized(v, c) for v, c in zip(value, children))
    if name == "ROW":
        return _row(value, type_info.children)
    raise _UnknownBytesError


def _row(value: Any, children: Any) -> bytes:
    if not isinstance(value, (tuple, list)) and not hasattr(value, "get_row_kind"):
        raise _UnknownBytesError
    fields = list(value)
    if len(fields) != len(children):
        raise _UnknownBytesError
    kind = _row_kind(value)
    mask = _mask([bool(kind & 1), bool(kind & 2)] + [v is None for v in fields])
    return mask + b"".join(_serialized(v, c) for v, c in zip(fields, children) if v is not None)


def knows_bytes(key_type: Any) -> bool:
    """Whether the package knows the bytes Flink serializes every value of ``key_type`` to that Flink can serialize
    (a basic type above, or a ``TUPLE``/``ROW`` of them): :func:`serialized_key` then returns None only for a value
    Flink cannot serialize (a null ``TUPLE`` field, a value not of the type)."""
    name = getattr(key_type, "name", None)
    if name in _BASIC:
        return True
    return name in ("TUPLE", "ROW") and all(knows_bytes(c) for c in key_type.children)


_PICKLED_SCALARS = (type(None), bool, int, float, str, bytes)


def _picklable_as_pyflink(key: Any) -> bool:
    if isinstance(key, tuple) and type(key) is tuple:
        return all(_picklable_as_pyflink(k) for k in key)
    return type(key) in _PICKLED_SCALARS


def pyflink_pickle(key: Any) -> Optional[bytes]:
    """The bytes PyFlink's ``cloudpickle.dumps`` makes of an untyped key (its ``PICKLED_BYTE_ARRAY``), or None when
    the package cannot know them (see the module docstring)."""
    return pickle.dumps(key, protocol=PICKLE_PROTOCOL) if _picklable_as_pyflink(key) else None


def serialized_key(key: Any, key_type: Any) -> Optional[bytes]:
    """The bytes Flink's BATCH sorter orders ``key`` by (see the module docstring): the key of
    ``key_by(..., key_type)`` (``key_type`` None: untyped, pickled) as Flink serializes it, or None when the package
    cannot know them."""
    if key is None:  # a null field of the key's row, whatever its type (PyFlink does not pickle None)
        return _mask([False, False, True])
    try:
        if key_type is None or getattr(key_type, "name", None) == "PICKLED_BYTE_ARRAY":
            pickled = pyflink_pickle(key)
            if pickled is None:
                return None
            return b"\x00" + struct.pack(">i", len(pickled)) + pickled
        return _row((coded(key, key_type),), (key_type,))
    except (_UnknownBytesError, CoderError, KeyError):
        return None


def batch_sort_key(key: Any, key_type: Any) -> Optional[bytes]:
    """A sort key for ``key`` that orders keys as Flink's BATCH execution processes them: :func:`serialized_key`
    with each byte shifted by 128, so that comparing them as Python ``bytes`` (unsigned, a prefix first) compares
    Flink's signed bytes; None when the package cannot know the key's bytes."""
    data = serialized_key(key, key_type)
    return None if data is None else bytes(b ^ 0x80 for b in data)


__all__ = ["PICKLE_PROTOCOL", "batch_sort_key", "knows_bytes", "pyflink_pickle", "serialized_key"]
