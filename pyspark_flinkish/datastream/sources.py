"""Bounded and replayable sources for the JVM-free engine (and, later, Spark's replay source).

:class:`MicroBatchSource` replays given micro-batches: each batch's elements are processed in order,
then the source's watermark advances — either to the batch's explicit ``watermark`` (as the conformance
scenarios give it) or to what the stream's :class:`WatermarkStrategy` generates at the batch's end, per
source partition (Flink's per-split watermarks), combined as the minimum over non-idle partitions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable, Optional, Sequence

from ..core.errors import InvalidArgumentError, InvalidTypeError
from ..core.javamath import LONG_MAX, check_long


@dataclass
class MicroBatch:
    """One micro-batch of a :class:`MicroBatchSource`.

    Args:
        elements: the batch's elements in arrival order.
        watermark: the source's watermark after this batch (explicit mode), or None to let the
            WatermarkStrategy generate it at the end of the batch.
        partitions: optional source partition of each element (like Kafka partitions); all 0 if omitted.
        processing_time: optional processing time (ms) of this batch, applied to the environment's
            ManualClock before the batch runs (deterministic idleness and processing-time timers).
    """

    elements: Sequence[Any] = ()
    watermark: Optional[int] = None
    partitions: Optional[Sequence[Hashable]] = None
    processing_time: Optional[int] = None

    def __post_init__(self) -> None:
        self.elements = list(self.elements)
        if self.watermark is not None:
            check_long("MicroBatch.watermark", self.watermark)
            if self.watermark == LONG_MAX:
                msg = "MicroBatch.watermark must be < LONG_MAX; end of input is MicroBatchSource(end_of_input=True)"
                raise InvalidArgumentError(msg)
        if self.partitions is not None:
            self.partitions = list(self.partitions)
            if len(self.partitions) != len(self.elements):
                msg = (
                    f"MicroBatch.partitions must give one partition per element; got {len(self.partitions)} "
                    f"partitions for {len(self.elements)} elements"
                )
                raise InvalidArgumentError(msg)

    def partition_of(self, index: int) -> Hashable:
        return 0 if self.partitions is None else self.partitions[index]


@dataclass
class MicroBatchSource:
    """A source that replays micro-batches, then ends (``end_of_input=True``: the watermark jumps to
    ``LONG_MAX`` and every event-time window fires) or simply stops (``False``).

    ``partitions`` lists the source partitions (splits) that exist from the start; a partition with no
    data holds the watermark back unless the WatermarkStrategy has ``with_idleness``, as in Flink.
    """

    batches: Sequence[MicroBatch]
    end_of_input: bool = True
    partitions: Sequence[Hashable] = field(default_factory=lambda: [0])

    def __post_init__(self) -> None:
        batches = []
        for i, b in enumerate(self.batches):
            if isinstance(b, MicroBatch):
                batches.append(b)
            elif isinstance(b, (list, tuple)):
                batches.append(MicroBatch(list(b)))
            else:
                msg = f"MicroBatchSource batch {i} must be a MicroBatch or a list of elements; got {type(b).__name__}"
                raise InvalidTypeError(msg)
        self.batches = batches
        explicit = [b.watermark is not None for b in batches]
        if any(explicit) and not all(explicit):
            msg = "MicroBatchSource: give a watermark for every batch (explicit mode) or for none (generated mode)"
            raise InvalidArgumentError(msg)
        self.explicit_watermarks = bool(batches) and all(explicit)
        last = None
        for i, b in enumerate(batches):
            if b.watermark is not None and last is not None and b.watermark < last:
                msg = f"MicroBatchSource watermarks must not decrease; batch {i} has {b.watermark} after {last}"
                raise InvalidArgumentError(msg)
            last = b.watermark if b.watermark is not None else last
        self.partitions = list(self.partitions)

    def __repr__(self) -> str:
        return f"MicroBatchSource({len(self.batches)} batches, end_of_input={self.end_of_input})"


class CollectionSource(MicroBatchSource):
    """``env.from_collection``: one batch with all elements, then end of input."""

    def __init__(self, elements: Sequence[Any]) -> None:
        super().__init__([MicroBatch(list(elements))], end_of_input=True)


__all__ = ["CollectionSource", "MicroBatch", "MicroBatchSource"]
