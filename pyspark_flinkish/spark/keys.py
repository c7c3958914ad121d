"""Keys on the wire and their state partitions: a key's bytes (JSON of the state codec's value) and the
partition of the keyed state it lives in (Flink's key groups; here ``crc32(key bytes) % state partitions``).

Keys are encoded as ``core.key_identity.distinct_key`` gives them, by ``core.key_identity.key_bytes``: keys Flink
holds as one key have one representative (a ``DistinctKey``'s value: a ``FLOAT`` rounded to 32 bits, a key of a
``ROW`` type a ``Row`` with the type's names whatever form the selector returned it in) and so the same bytes and
state partition, and keys Flink tells apart (``0.0`` and ``-0.0``, ``1`` and ``True``) have different bytes; a
decoded key is made distinct again by the operator (``KeyedOperator.restore_key``).
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from ..core.codec import decode_value
from ..core.key_identity import key_bytes

encode_key = key_bytes
"""The bytes of a key as ``distinct_key`` gives it (``core.key_identity.key_bytes``, the one rule): a function of
the key's identity, so keys Flink holds as one key have one key's bytes, state and state partition."""


NO_KEY = b""
"""The ``key`` of a keyed operator's record that has none (a broadcast input's element, which every state partition
gets): no key's bytes are empty, and unlike null it never stands for a key that crossed as columns."""


def decode_key(data: bytes) -> Any:
    return decode_value(json.loads(data.decode("utf-8")))


def state_partition(key_bytes: bytes, partitions: int) -> int:
    return zlib.crc32(key_bytes) % partitions


def _crc_table() -> Any:
    import numpy as np

    table = np.zeros(256, np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table[i] = c
    return table


_CRC_TABLE = None


def state_partitions(keys: Any, partitions: int) -> Any:
    """:func:`state_partition` of every key of ``keys`` (an Arrow binary array, no nulls) as a NumPy array: the same
    CRC-32 (zlib's), computed a byte position at a time over all keys at once, for the split of a restore."""
    import numpy as np
    import pyarrow as pa

    global _CRC_TABLE
    if _CRC_TABLE is None:
        _CRC_TABLE = _crc_table()
    table = _CRC_TABLE
    array = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    array = array.cast(pa.binary())
    n = len(array)
    if n == 0:
        return np.zeros(0, np.int64)
    _, offsets_buf, data_buf = array.buffers()
    offsets = np.frombuffer(offsets_buf, np.int32)[array.offset : array.offset + n + 1].astype(np.int64)
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    crc = np.full(n, 0xFFFFFFFF, np.uint32)
    for j in range(int(lengths.max())):
        rows = np.nonzero(lengths > j)[0]
        c = crc[rows]
        crc[rows] = table[(c ^ data[starts[rows] + j]) & 0xFF] ^ (c >> 8)
    return ((crc ^ np.uint32(0xFFFFFFFF)).astype(np.int64)) % partitions


__all__ = [
    "NO_KEY",
    "encode_key",
    "decode_key",
    "state_partition",
    "state_partitions",
]
