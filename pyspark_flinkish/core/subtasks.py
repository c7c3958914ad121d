"""An operator's parallel subtasks as Flink numbers them: what a function's ``RuntimeContext`` reports
(``get_number_of_parallel_subtasks``, ``get_max_number_of_parallel_subtasks``, ``get_index_of_this_subtask``).

The package runs every operator as one instance that stands for all of Flink's ``parallelism`` instances (a broadcast
operator's output is repeated per instance: ``core/co_operators.py``). The number of subtasks is the operator's
parallelism (its ``set_parallelism``, else the environment's when the operator was made, as in Flink; the package's
default is 1), the max parallelism the operator's or environment's ``set_max_parallelism``, else Flink's default for
the parallelism (``KeyGroupRangeAssignment.computeDefaultMaxParallelism``: 1.5 times it rounded up to a power of two,
at least 128, at most 32768).

Which subtask runs a call is known where Flink decides it by the key: a keyed operator's element or timer is run by
the subtask that owns the key's key group (``KeyGroupRangeAssignment``: the key group is the murmur hash of the Java
``hashCode`` of the key's one-field ``Row`` modulo the max parallelism, its owner ``group * parallelism // max``).
:func:`subtask_of_key` computes it for the keys whose ``hashCode`` the package knows (those of
:mod:`~pyspark_flinkish.core.key_order`: ``hashCode`` of ``String``, ``Integer``, ``Long``, ... of the key type, and
``Arrays.hashCode`` of an untyped key's pickle). Elsewhere at a parallelism above 1 (``open()``, a non-keyed
operator, the broadcast side of a broadcast operator) Flink's subtask depends on the instance the package does not
run separately, so :meth:`Subtasks.index_of` refuses, naming the concept. After ``broadcast()`` the package runs each
of the next operator's instances (``core/partitioning.py``), and each copy's index is its instance's.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from .coders import CoderError, coded
from .errors import UnsupportedFeatureError
from .key_order import pyflink_pickle
from .records import Output, OutputTag, StreamRecord

MAX_MAX_PARALLELISM = 32768
"""Flink's upper bound of the max parallelism (``KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM``)."""


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def _rotl(x: int, n: int) -> int:
    x &= 0xFFFFFFFF
    return ((x << n) | (x >> (32 - n))) & 0xFFFFFFFF


def murmur_hash(code: int) -> int:
    """Flink's ``MathUtils.murmurHash(int)``: a non-negative int."""
    h = (code * 0xCC9E2D51) & 0xFFFFFFFF
    h = (_rotl(h, 15) * 0x1B873593) & 0xFFFFFFFF
    h = (_rotl(h, 13) * 5 + 0xE6546B64) & 0xFFFFFFFF
    h ^= 4
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    signed = _int32(h)
    if signed >= 0:
        return signed
    return -signed if signed != -(1 << 31) else 0


def default_max_parallelism(parallelism: int) -> int:
    """Flink's ``KeyGroupRangeAssignment.computeDefaultMaxParallelism``."""
    target = parallelism + parallelism // 2
    power = 1
    while power < target:
        power <<= 1
    return min(max(power, 128), MAX_MAX_PARALLELISM)


def key_group(key_hash: int, max_parallelism: int) -> int:
    """The key group of a key whose Java ``hashCode`` is ``key_hash``."""
    return murmur_hash(key_hash) % max_parallelism


def operator_index(group: int, max_parallelism: int, parallelism: int) -> int:
    """The subtask that owns key group ``group`` (``computeOperatorIndexForKeyGroup``)."""
    return group * parallelism // max_parallelism


class _UnknownHashError(Exception):
    """The package cannot know the Java ``hashCode`` of this value."""


def _string_hash(value: str) -> int:
    units = value.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return _int32(h)


def _long_hash(bits: int) -> int:
    bits &= 0xFFFFFFFFFFFFFFFF
    return _int32(bits ^ (bits >> 32))


def _bits(fmt: str, unpack: str, value: float, nan: int) -> int:
    if value != value:
        return nan
    return int(struct.unpack(unpack, struct.pack(fmt, value))[0])


def _java_hash(value: Any, type_info: Any) -> int:
    """``hashCode()`` of ``value`` as Java holds a value of ``type_info`` (not null)."""
    name = getattr(type_info, "name", None)
    if name == "STRING" and isinstance(value, str):
        return _string_hash(value)
    if name in ("INT", "SHORT", "BYTE") and isinstance(value, int):
        return _int32(value)
    if name == "LONG" and isinstance(value, int):
        return _long_hash(value)
    if name == "BOOLEAN" and isinstance(value, bool):
        return 1231 if value else 1237
    if name == "FLOAT" and isinstance(value, (int, float)):
        return _int32(_bits(">f", ">I", float(value), 0x7FC00000))
    if name == "DOUBLE" and isinstance(value, (int, float)):
        return _long_hash(_bits(">d", ">Q", float(value), 0x7FF8000000000000))
    if name == "CHAR" and isinstance(value, str) and len(value.encode("utf-16-be", "surrogatepass")) == 2:
        return ord(value)
    if name == "TUPLE" and isinstance(value, (tuple, list)) and len(value) == len(type_info.children):
        h = 0  # Flink's TupleN.hashCode: 31 * h + field's (0 for null), starting from the first field's
        for i, (v, c) in enumerate(zip(value, type_info.children)):
            field = 0 if v is None else _java_hash(v, c)
            h = field if i == 0 else _int32(31 * h + field)
        return h
    if name == "ROW" and (isinstance(value, (tuple, list)) or hasattr(value, "get_row_kind")):
        fields = list(value)
        if len(fields) != len(type_info.children):
            raise _UnknownHashError
        kind = getattr(value, "get_row_kind", None)
        kind_byte = {"INSERT": 0, "UPDATE_BEFORE": 1, "UPDATE_AFTER": 2, "DELETE": 3}[kind().name] if kind else 0
        return _row_hash(kind_byte, [None if v is None else _java_hash(v, c) for v, c in zip(fields, type_info.children)])
    raise _UnknownHashError


def _row_hash(kind_byte: int, field_hashes: List[Optional[int]]) -> int:
    """``Row.hashCode`` (``RowUtils.deepHashCodeRow``) of a position-based row whose fields have the Java
    ``hashCode``s ``field_hashes`` (None: a null field). A field counts as ``RowUtils.deepHashCodeInternal`` does:
    0 for null, else ``Arrays.deepHashCode([field])``, ``31 + hashCode``."""
    h = 1
    for field in field_hashes:
        h = _int32(31 * h + (0 if field is None else _int32(31 + field)))
    return _int32(31 * kind_byte + h)


def _bytes_hash(data: bytes) -> int:
    """``Arrays.hashCode(byte[])``: Java's bytes are signed."""
    h = 1
    for b in data:
        h = (31 * h + (b - 256 if b > 127 else b)) & 0xFFFFFFFF
    return _int32(h)


def java_key_hash(key: Any, key_type: Any) -> Optional[int]:
    """The Java ``hashCode`` Flink assigns ``key``'s key group by: that of the one-field ``Row`` PyFlink keys a
    stream by (``KeyByKeySelector``) holding the key as ``key_type`` (None: untyped, the ``byte[]`` of its pickle);
    None when the package cannot know it."""
    if key is None:
        return _row_hash(0, [None])
    try:
        if key_type is None or getattr(key_type, "name", None) == "PICKLED_BYTE_ARRAY":
            pickled = pyflink_pickle(key)
            return None if pickled is None else _row_hash(0, [_bytes_hash(pickled)])
        return _row_hash(0, [_java_hash(coded(key, key_type), key_type)])
    except (_UnknownHashError, CoderError, KeyError):
        return None


def subtask_of_key(key: Any, key_type: Any, max_parallelism: int, parallelism: int) -> Optional[int]:
    """The subtask of a keyed operator of ``parallelism`` (and ``max_parallelism``) that processes ``key``; None when
    the package cannot know the key's ``hashCode``."""
    h = java_key_hash(key, key_type)
    return None if h is None else operator_index(key_group(h, max_parallelism), max_parallelism, parallelism)


@dataclass(frozen=True)
class Subtasks:
    """An operator's parallel subtasks: its ``parallelism``, its ``max_parallelism`` (-1: Flink's default for the
    parallelism), for a keyed operator its ``key_type`` (None: untyped), and ``index``: the subtask this copy of the
    operator is, where the package runs each of Flink's instances (after ``broadcast()``,
    ``core/partitioning.py``'s ``BroadcastInstances``); None where one instance stands for all."""

    parallelism: int = 1
    max_parallelism: int = -1
    key_type: Any = None
    index: Optional[int] = None

    def effective_max_parallelism(self) -> int:
        return self.max_parallelism if self.max_parallelism > 0 else default_max_parallelism(self.parallelism)

    def index_of(self, task_name: str, current_key: Optional[Callable[[], Any]]) -> int:
        """The index of the subtask running the current call: 0 at parallelism 1; this copy's ``index`` when the
        package runs Flink's instances one by one; the owner of the current key's key group in a keyed context
        (``current_key``: the key, None outside a keyed context); else refused."""
        if self.parallelism <= 1:
            return 0
        if self.index is not None:
            return self.index
        if current_key is not None:
            key = current_key()
            index = subtask_of_key(key, self.key_type, self.effective_max_parallelism(), self.parallelism)
            if index is not None:
                return index
            msg = (
                f"{task_name}: get_index_of_this_subtask() at parallelism {self.parallelism}: the subtask of key "
                f"{key!r} is its key group's owner (Flink's KeyGroupRangeAssignment, a hash of the key's Java "
                "hashCode), which the package cannot compute for this key (see core/key_order.py for the key types "
                "it can); give key_by a key_type of a basic type, or set_parallelism(1)"
            )
            raise UnsupportedFeatureError(msg)
        msg = (
            f"{task_name}: get_index_of_this_subtask() at parallelism {self.parallelism} outside a keyed element or "
            "timer (open(), a non-keyed operator, the broadcast side): the package runs one instance for all of "
            "Flink's parallel subtasks, and which one Flink would run here depends on its runtime (round-robin "
            "distribution, one open() per subtask); call it while a keyed function processes an element or timer "
            "(the key's subtask), or set_parallelism(1)"
        )
        raise UnsupportedFeatureError(msg)


class SubtaskStamping:
    """A keyed operator's output that gives every record it emits the subtask that emits it in Flink: the owner of the
    current key's key group (``index_of``: the operator's subtasks' ``index_of`` of its current key)."""

    def __init__(self, output: Output, index_of: Callable[[], int]) -> None:
        self.output = output
        self.index_of = index_of

    def collect(self, record: StreamRecord) -> None:
        record.subtask = self.index_of()
        self.output.collect(record)

    def collect_side(self, tag: OutputTag, record: StreamRecord) -> None:
        record.subtask = self.index_of()
        self.output.collect_side(tag, record)

    def emit_watermark(self, watermark: int) -> None:
        self.output.emit_watermark(watermark)

    def emit_idle(self, idle: bool) -> None:
        self.output.emit_idle(idle)


__all__ = [
    "MAX_MAX_PARALLELISM",
    "SubtaskStamping",
    "Subtasks",
    "default_max_parallelism",
    "java_key_hash",
    "key_group",
    "murmur_hash",
    "operator_index",
    "subtask_of_key",
]
