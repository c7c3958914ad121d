"""Which keys are one key, as Flink tells them apart: the one place that maps a key to its identity.

PyFlink hands Java each key as a one-field ``Row`` of its ``key_type`` (``KeyByKeySelector``); without a
``key_type`` the field is ``PICKLED_BYTE_ARRAY``, the ``cloudpickle.dumps`` of the key. Flink partitions records,
keeps keyed state (the Python worker's state cache and requests use the key's encoded bytes) and timers by that
key, so two keys are one key exactly when they serialize to the same bytes (``core/key_order.py``). Python's ``==``
differs: it merges ``0.0`` and ``-0.0``, ``1``, ``True`` and ``1.0`` (also inside tuples), keeps NaNs apart, and
keeps apart two ``Types.FLOAT()`` keys that round to one 32-bit value. :func:`distinct_key` gives a key whose
Python equality is Flink's: the key itself where the two agree (``str``, ``int`` and ``bytes`` keys, the common
case, unchanged and at no cost), else a :class:`DistinctKey` compared by the key's serialized bytes.

Where the package cannot know the bytes of an untyped key (other than ``None``, ``bool``, ``int``, ``float``,
``str``, ``bytes`` and tuples of them) the key is compared with Python's ``==`` (``docs/differences.md``); a typed
one is then compared by its own bytes (below). PyFlink's Python worker also skips a key change when the next record's
key is ``==`` to the previous one (``RemoteKeyedStateBackend.set_current_key``), so back-to-back ``0.0`` and
``-0.0`` (or ``1`` and ``True``) records share the first one's state there; the package does not reproduce that
shortcut (documented there too).

A declared key has one form, whatever form the selector returned it in: a key of a type with a ``ROW`` in it is
first put in the type's shape (:func:`~pyspark_flinkish.core.rows.as_declared`: a tuple, a positional ``Row`` or a
named one in another order become a ``Row`` with the type's field names, as Flink hands the key back), then coded.
:func:`key_bytes` is the one rule for a key's bytes on Spark (its state, state partition and checkpoint): the JSON
of the key's value (``core/codec.py``), which is a function of its identity, so two keys are one key exactly when
their bytes are equal. Where Flink's bytes are unknown, a typed key's identity is those bytes: of the coded key
for a type ``core/key_order.py`` cannot serialize (``BIG_DEC``, ``BIG_INT``, SQL times, arrays, lists, maps, a
pickled field of a row), so ``Decimal("1.0")`` and ``Decimal("1.00")`` are two keys and ``1`` and
``Decimal("1")`` one, as in Flink; of the key as given for a value Flink cannot serialize at all (a null field of
a ``TUPLE``, a value not of its type).
"""

from __future__ import annotations

import json
import pickle
import struct
from typing import Any, Hashable, Optional, Tuple

from .codec import encode_value
from .coders import CoderError, coded
from .key_order import knows_bytes, serialized_key
from .rows import as_declared

_INTEGER_TYPES = frozenset({"BYTE", "SHORT", "INT", "LONG"})


class DistinctKey:
    """A key compared and hashed by what Flink tells keys apart by (``identity``: a typed key's serialized bytes, an
    untyped key's types and bits as its pickle holds them); ``value`` is the key as Flink hands it back (a typed key
    as its coder leaves it: a ``FLOAT`` rounded to 32 bits)."""

    __slots__ = ("_hash", "identity", "value")

    def __init__(self, value: Any, identity: Hashable) -> None:
        self.value = value
        self.identity = identity
        self._hash = hash(identity)

    def __eq__(self, other: object) -> bool:
        return type(other) is DistinctKey and other.identity == self.identity

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return repr(self.value)

    def __reduce__(self) -> Any:
        return (DistinctKey, (self.value, self.identity))


def _untyped_identity(key: Any) -> Tuple[Optional[Hashable], bool]:
    """An untyped key's identity as PyFlink's pickle tells keys apart (the type, a float's 64 bits), and whether it
    differs from Python's equality (a ``bool`` or ``float`` inside); (None, False) when the package cannot know."""
    t = type(key)
    if t is str or t is int or t is bytes or key is None:
        return key, False
    if t is float:
        return ("f", struct.pack(">d", key)), True
    if t is bool:
        return ("b", key), True
    if t is tuple:
        parts = []
        differs = False
        for item in key:
            ident, d = _untyped_identity(item)
            if ident is None and item is not None:
                return None, False
            parts.append(ident)
            differs = differs or d
        return ("t", tuple(parts)), differs
    return None, False


def _has_row(key_type: Any) -> bool:
    return getattr(key_type, "name", None) == "ROW" or any(_has_row(c) for c in getattr(key_type, "children", ()))


_SHAPE_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError)


def distinct_key(key: Any, key_type: Optional[Any] = None) -> Any:
    """``key`` (of ``key_by(..., key_type)``; None: untyped) as a dict key that is equal to another exactly when
    Flink holds them as one key: the key itself where Python's equality already is Flink's, else a
    :class:`DistinctKey` whose ``value`` is the key as Flink hands it back (see the module docstring). Idempotent."""
    t = type(key)
    if t is str or t is int:
        if key_type is None:
            return key
        name = getattr(key_type, "name", None)
        if (t is str and name == "STRING") or (t is int and name in _INTEGER_TYPES):
            return key
    if t is DistinctKey or key is None:
        return key
    if key_type is None:
        ident, differs = _untyped_identity(key)
        return DistinctKey(key, ident) if differs else key  # type: ignore[arg-type]
    name = getattr(key_type, "name", None)
    if name == "PICKLED_BYTE_ARRAY":  # untyped for Flink: its pickle, or Python's equality where it is unknown
        identity = serialized_key(key, key_type)
        return key if identity is None else DistinctKey(key, identity)
    if _has_row(key_type):
        try:
            key = as_declared(key, key_type)
        except _SHAPE_ERRORS:  # not a value of the type (Flink fails on it): held as given
            pass
    identity: Hashable = serialized_key(key, key_type)
    if identity is not None or not knows_bytes(key_type):
        try:
            value = coded(key, key_type)
        except CoderError:
            value = key
    else:  # a value Flink cannot serialize (a null TUPLE field, a value not of the type): held as given
        value = key
    if (type(value) is str and name == "STRING") or (type(value) is int and name in _INTEGER_TYPES):
        return value
    if identity is None:  # Flink's bytes unknown: the key's own bytes (a function of the value, as in Flink)
        try:
            identity = ("bytes", key_bytes(value))
        except (pickle.PicklingError, TypeError, AttributeError, ValueError):  # unpicklable: Python's equality
            return value
    return DistinctKey(value, identity)


def plain_key(key: Any) -> Any:
    """The key a :func:`distinct_key` stands for (as Flink hands it back)."""
    return key.value if type(key) is DistinctKey else key


def key_bytes(key: Any) -> bytes:
    """The bytes of ``key`` (a key as :func:`distinct_key` gives it; a ``DistinctKey`` as its value): the JSON of
    the state codec's value (``core/codec.py``: ``b"42"``, ``b'"a"'``, ``b'{"T":["a",1]}'``). The one rule for a
    key's bytes: the Spark executors keep keyed state and choose state partitions by them, and a checkpoint holds
    them. Equal exactly when the keys are (:func:`distinct_key`)."""
    t = type(key)
    if t is int:  # JSON of an int or str key is the key itself (as encode_value gives it)
        return b"%d" % key
    if t is str:
        return json.dumps(key).encode("utf-8")
    if t is DistinctKey:
        key = key.value
    return json.dumps(encode_value(key), separators=(",", ":"), sort_keys=False).encode("utf-8")


__all__ = ["DistinctKey", "distinct_key", "key_bytes", "plain_key"]
