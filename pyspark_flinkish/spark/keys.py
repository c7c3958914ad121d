"""Keys on the wire and their state partitions: a key's bytes (JSON of the state codec's value) and the
partition of the keyed state it lives in (Flink's key groups; here ``crc32(key bytes) % state partitions``).

Keys are encoded as ``core.key_identity.distinct_key`` gives them: keys Flink holds as one key have one
representative (a ``DistinctKey``'s value, e.g. a ``FLOAT`` rounded to 32 bits) and so the same bytes and state
partition, and keys Flink tells apart (``0.0`` and ``-0.0``, ``1`` and ``True``) have different bytes; a decoded key
is made distinct again by the operator (``KeyedOperator.restore_key``).
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from ..core.codec import decode_value, encode_value
from ..core.key_identity import DistinctKey


def encode_key(key: Any) -> bytes:
    """The bytes of ``key`` (a key as ``distinct_key`` gives it): a ``DistinctKey`` as its value."""
    t = type(key)
    if t is int:  # JSON of an int or str key is the key itself (as encode_value gives it)
        return b"%d" % key
    if t is str:
        return json.dumps(key).encode("utf-8")
    if t is DistinctKey:
        key = key.value
    return json.dumps(encode_value(key), separators=(",", ":"), sort_keys=False).encode("utf-8")


def decode_key(data: bytes) -> Any:
    return decode_value(json.loads(data.decode("utf-8")))


def state_partition(key_bytes: bytes, partitions: int) -> int:
    return zlib.crc32(key_bytes) % partitions


__all__ = [
    "encode_key",
    "decode_key",
    "state_partition",
]
