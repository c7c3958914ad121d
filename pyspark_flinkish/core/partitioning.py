"""Flink's physical partitioning of a stream: which parallel instance of the next operator gets each record.

``shuffle`` (uniformly at random), ``rebalance`` (round-robin), ``rescale`` (round-robin within a local group),
``forward`` (the same-index instance) and ``partition_custom`` (a :class:`Partitioner` on a key) choose a
channel per record and change nothing else: every record still reaches the next operator, once, unchanged, and
the next operator's watermark is still the minimum of what its inputs sent. A non-keyed operator's results do
not depend on which instance computed them, so they are the same whatever the partitioning; what Flink leaves
open is only the interleaving of records that travel on different channels.

``broadcast()`` (Flink's ``BroadcastPartitioner``) is the one partitioning that changes results: every record goes to
*every* instance of the next operator, so each instance runs its function on it and the output comes once per
instance. :class:`BroadcastInstances` runs them so: one copy of the operator (and of its functions, as Flink
deserializes one per instance) per instance, each with its own subtask index.

Otherwise both engines here run each operator as one logical instance (the Spark executors spread its work over tasks and
restore Flink's processing order per key and per source partition), so a partitioning call changes the plan and
nothing else. ``partition_custom`` still runs the user's key selector and partitioner on every record, as
Flink does, so their errors and ``open``/``close`` calls are Flink's, and a partition outside
``[0, num_partitions)`` fails the job as in Flink.
"""

from __future__ import annotations

import copy
from abc import abstractmethod
from typing import Any, Callable, Generic, Iterable, List, TypeVar

from .clock import Clock
from .coders import transported
from .functions import Function, KeySelector, ProcessFunction
from .operators import StreamOperator
from .records import Output, OutputTag, StreamRecord

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


class _RecordsOnly:
    """An instance's output that passes records on and drops watermarks and idleness: the instances get the same
    input, so their watermarks are the same, and the next operator gets them once (from instance 0)."""

    def __init__(self, output: Output) -> None:
        self.output = output

    def collect(self, record: StreamRecord) -> None:
        self.output.collect(record)

    def collect_side(self, tag: OutputTag, record: StreamRecord) -> None:
        self.output.collect_side(tag, record)

    def emit_watermark(self, watermark: int) -> None:
        return None

    def emit_idle(self, idle: bool) -> None:
        return None


class BroadcastInstances(StreamOperator):
    """A one-input operator after ``broadcast()``: Flink's parallel instances of it, each given every record.

    ``instances[i]`` is instance ``i`` (its own copy of the functions; its runtime context's
    ``get_index_of_this_subtask()`` is ``i``). Each record goes to instance 0, then 1, ... (Flink does not order
    the instances' outputs), every instance with its own copy of the value as Flink's instances deserialize it from
    what the input's coder wrote (:func:`~.coders.transported` of the input's type ``input_type``: a pickle round trip
    for an untyped stream). Watermarks and idleness reach every instance and leave once."""

    def __init__(self, instances: List[StreamOperator], input_type: Any = None) -> None:
        super().__init__(instances[0].name)
        self.instances = instances
        self.input_type = input_type

    @staticmethod
    def of(operator: StreamOperator, parallelism: int) -> List[StreamOperator]:
        """``operator`` (not yet opened) and ``parallelism - 1`` deep copies of it, functions included."""
        return [operator] + [copy.deepcopy(operator) for _ in range(parallelism - 1)]

    def open(self, output: Output, clock: Clock) -> None:
        self.output, self.clock = output, clock
        for i, op in enumerate(self.instances):
            op.open(output if i == 0 else _RecordsOnly(output), clock)

    def process_element(self, record: StreamRecord) -> None:
        copies = [StreamRecord(transported(record.value, self.input_type), record.timestamp) for _ in self.instances]
        for op, own in zip(self.instances, copies):  # copied before any instance can change the value
            op.process_element(own)

    def process_watermark(self, watermark: int) -> None:
        self.current_watermark = watermark
        for op in self.instances:
            op.process_watermark(watermark)

    def process_idle(self, idle: bool) -> None:
        for op in self.instances:
            op.process_idle(idle)

    def advance_processing_time(self, now: int) -> None:
        for op in self.instances:
            op.advance_processing_time(now)

    def on_periodic_emit(self) -> None:
        for op in self.instances:
            op.on_periodic_emit()

    def end_input(self) -> None:
        for op in self.instances:
            op.end_input()

    def close(self) -> None:
        for op in self.instances:
            op.close()


__all__ = ["BroadcastInstances", "CustomPartitioning", "Partitioner"]
