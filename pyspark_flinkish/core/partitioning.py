"""Flink's physical partitioning of a stream: which parallel instance of the next operator gets each record.

``shuffle`` (uniformly at random), ``rebalance`` (round-robin), ``rescale`` (round-robin within a local group),
``forward`` (the same-index instance) and ``partition_custom`` (a :class:`Partitioner` on a key) choose a
channel per record and change nothing else: every record still reaches the next operator, once, unchanged, and
the next operator's watermark is still the minimum of what its inputs sent. A non-keyed operator's results do
not depend on which instance computed them, so they are the same whatever the partitioning; what Flink leaves
open is only the interleaving of records that travel on different channels.

Both engines here run each operator as one logical instance (the Spark executors spread its work over tasks and
restore Flink's processing order per key and per source partition), so a partitioning call changes the plan and
nothing else. ``partition_custom`` still runs the user's key selector and partitioner on every record, as
Flink does, so their errors and ``open``/``close`` calls are Flink's, and a partition outside
``[0, num_partitions)`` fails the job as in Flink.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Callable, Generic, Iterable, TypeVar

from .functions import Function, KeySelector, ProcessFunction

KEY = TypeVar("KEY")


class Partitioner(Function, Generic[KEY]):
    """Chooses the partition (``0 <= partition < num_partitions``) of a key, for ``partition_custom``."""

    @abstractmethod
    def partition(self, key: KEY, num_partitions: int) -> int: ...


class CustomPartitioning(ProcessFunction):  # type: ignore[type-arg]
    """What ``partition_custom(partitioner, key_selector)`` runs on every record (PyFlink's ``CustomPartitioner``):
    the key, then its partition among ``num_partitions`` (the next operator's parallelism), checked as Flink's
    channel selection would; the record goes on unchanged. ``open``/``close`` of a ``Partitioner`` or
    ``KeySelector`` object are called as in PyFlink."""

    def __init__(self, partitioner: Any, key_selector: Any, num_partitions: int) -> None:
        if not isinstance(partitioner, Partitioner) and not callable(partitioner):
            msg = "Parameter partitioner should be type of Partitioner or a callable function."
            raise TypeError(msg)
        if not isinstance(key_selector, KeySelector) and not callable(key_selector):
            msg = "Parameter key_selector should be type of KeySelector or a callable function."
            raise TypeError(msg)
        if num_partitions <= 0:
            msg = f"The partition number should be a positive value, got {num_partitions}"
            raise ValueError(msg)
        self.partitioner = partitioner
        self.key_selector = key_selector
        self.num_partitions = num_partitions
        self._partition: Callable[[Any, int], Any] = (
            partitioner.partition if isinstance(partitioner, Partitioner) else partitioner
        )
        self._get_key: Callable[[Any], Any] = key_selector.get_key if isinstance(key_selector, KeySelector) else key_selector

    def open(self, runtime_context: Any) -> None:
        for fn in (self.partitioner, self.key_selector):
            if isinstance(fn, Function):
                fn.open(runtime_context)

    def close(self) -> None:
        for fn in (self.partitioner, self.key_selector):
            if isinstance(fn, Function):
                fn.close()

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        partition = self._partition(self._get_key(value), self.num_partitions)
        if isinstance(partition, bool) or not isinstance(partition, int) or not 0 <= partition < self.num_partitions:
            msg = (
                f"partition_custom: the partitioner returned {partition!r} for a record; a partition must be an int "
                f"in [0, {self.num_partitions}) (the next operator's parallelism, the environment's parallelism here)"
            )
            raise ValueError(msg)
        yield value


__all__ = ["CustomPartitioning", "Partitioner"]
