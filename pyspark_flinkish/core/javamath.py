"""Java ``long`` arithmetic, as Flink's semantics depend on it.

Flink computes window starts with floor-mod, continuous-trigger firing times with Java's truncating
``%``, and cleanup times with wrapping ``long`` addition (an overflow means "no cleanup timer").
Python integers are unbounded and ``%`` floors, so every such computation goes through here.
"""

from __future__ import annotations

LONG_MIN: int = -(2**63)
"""Java ``Long.MIN_VALUE``: the initial watermark, and "no timestamp"."""

LONG_MAX: int = 2**63 - 1
"""Java ``Long.MAX_VALUE``: the end-of-input watermark and the global window's max timestamp."""

_MASK = 2**64 - 1


def wrap_long(value: int) -> int:
    """Reduce ``value`` to a signed 64-bit integer the way the JVM does on overflow."""
    value &= _MASK
    return value - 2**64 if value > LONG_MAX else value


def long_add(a: int, b: int) -> int:
    """``a + b`` with Java ``long`` overflow (wrap-around)."""
    return wrap_long(a + b)


def floor_mod(a: int, n: int) -> int:
    """Java ``Math.floorMod``: the remainder with the sign of ``n`` (Python's ``%``)."""
    return a % n


def java_rem(a: int, n: int) -> int:
    """Java ``a % n``: truncates toward zero, so the result has the sign of ``a``."""
    r = abs(a) % abs(n)
    return -r if a < 0 else r


def check_long(name: str, value: object) -> int:
    """Validate that ``value`` is an ``int`` within Java ``long`` range and return it."""
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{name} must be an int of milliseconds; got {type(value).__name__} {value!r}"
        raise TypeError(msg)
    if not LONG_MIN <= value <= LONG_MAX:
        msg = f"{name} must fit a Java long (64-bit signed); got {value}"
        raise ValueError(msg)
    return value


def long_to_int_with_bit_mixing(value: int) -> int:
    """Flink's ``MathUtils.longToIntWithBitMixing`` (the hash of ``TimeWindow``)."""
    v = value & _MASK
    v = ((v ^ (v >> 33)) * 0xFF51AFD7ED558CCD) & _MASK
    v = ((v ^ (v >> 33)) * 0xC4CEB9FE1A85EC53) & _MASK
    v = v ^ (v >> 33)
    v &= 0xFFFFFFFF
    return v - 2**32 if v >= 2**31 else v


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, as a 32-bit int."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def java_hash_set_order(items: list, hash_code) -> list:  # type: ignore[type-arg,no-untyped-def]
    """The iteration order of a ``java.util.HashSet`` filled with ``items`` in this order.

    Flink picks "any" member of a merged session group (the first in a ``HashSet``) as the state
    window, and concatenates buffered elements in that order. Emulating the order makes our
    merged-window contents identical to Flink's, not merely equal as a multiset.
    """
    unique: list = []  # type: ignore[type-arg]
    seen = set()
    for item in items:
        if item not in seen:
            seen.add(item)
            unique.append(item)
    capacity = 16
    while len(unique) > capacity * 0.75:
        capacity *= 2

    def bucket(item: object) -> int:
        h = hash_code(item) & 0xFFFFFFFF
        h ^= h >> 16
        return h & (capacity - 1)

    indexed = [(bucket(item), i, item) for i, item in enumerate(unique)]
    indexed.sort(key=lambda t: (t[0], t[1]))
    return [item for _, _, item in indexed]


__all__ = [
    "LONG_MIN",
    "LONG_MAX",
    "wrap_long",
    "long_add",
    "floor_mod",
    "java_rem",
    "check_long",
    "long_to_int_with_bit_mixing",
    "java_hash_set_order",
    "java_string_hash",
]
