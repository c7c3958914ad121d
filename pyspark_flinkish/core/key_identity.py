"""Which keys are one key, as Flink tells them apart: the one place that maps a key to its identity.

PyFlink hands Java each key as a one-field ``Row`` of its ``key_type`` (``KeyByKeySelector``); without a
``key_type`` the field is ``PICKLED_BYTE_ARRAY``, the ``cloudpickle.dumps`` of the key. Flink partitions records,
keeps keyed state (the Python worker's state cache and requests use the key's encoded bytes) and timers by that
key, so two keys are one key exactly when they serialize to the same bytes (``core/key_order.py``). Python's ``==``
differs: it merges ``0.0`` and ``-0.0``, ``1``, ``True`` and ``1.0`` (also inside tuples), keeps NaNs apart, and
keeps apart two ``Types.FLOAT()`` keys that round to one 32-bit value. :func:`distinct_key` gives a key whose
Python equality is Flink's: the key itself where the two agree (``str``, ``int`` and ``bytes`` keys, the common
case, unchanged and at no cost), else a :class:`DistinctKey` compared by the key's serialized bytes.

Where the package cannot know the bytes (untyped keys other than ``None``, ``bool``, ``int``, ``float``, ``str``,
``bytes`` and tuples of them; ``key_type``s ``core/key_order.py`` cannot serialize) the key is compared with
Python's ``==`` (``docs/differences.md``). PyFlink's Python worker also skips a key change when the next record's
key is ``==`` to the previous one (``RemoteKeyedStateBackend.set_current_key``), so back-to-back ``0.0`` and
``-0.0`` (or ``1`` and ``True``) records share the first one's state there; the package does not reproduce that
shortcut (documented there too).
"""

from __future__ import annotations

import struct
from typing import Any, Hashable, Optional, Tuple

from .coders import CoderError, coded
from .key_order import serialized_key

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


def distinct_key(key: Any, key_type: Optional[Any] = None) -> Any:
    """``key`` (of ``key_by(..., key_type)``; None: untyped) as a dict key that is equal to another exactly when
    Flink holds them as one key: the key itself where Python's equality already is Flink's, else a
    :class:`DistinctKey`. Idempotent."""
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
    identity = serialized_key(key, key_type)
    if identity is None:
        return key
    try:
        value = coded(key, key_type)
    except CoderError:
        return key
    name = getattr(key_type, "name", None)
    if (type(value) is str and name == "STRING") or (type(value) is int and name in _INTEGER_TYPES):
        return value
    return DistinctKey(value, identity)


def plain_key(key: Any) -> Any:
    """The key a :func:`distinct_key` stands for (as Flink hands it back)."""
    return key.value if type(key) is DistinctKey else key


__all__ = ["DistinctKey", "distinct_key", "plain_key"]
