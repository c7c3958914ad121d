"""Keys on the wire and their state partitions: a key's bytes (JSON of the state codec's value) and the
partition of the keyed state it lives in (Flink's key groups; here ``crc32(key bytes) % state partitions``).
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from ..core.codec import decode_value, encode_value


def encode_key(key: Any) -> bytes:
    t = type(key)
    if t is int:  # JSON of an int or str key is the key itself (as encode_value gives it)
        return b"%d" % key
    if t is str:
        return json.dumps(key).encode("utf-8")
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
