"""Custom ``WatermarkGenerator``\\ s in ``assign_timestamps_and_watermarks`` on the applyInPandasWithState executor.

Flink calls the generator's ``on_event`` for every element, in order, and a watermark it emits reaches the keyed
operator at once: a later record of the same micro-batch can be late, and each event-time timer fires at the first
watermark that reaches it (``current_watermark()`` in the firing is that watermark). On this executor:

* **The route runs in one task, in processing order** (``coalesce(1)``, the rows sorted by their order), with the
  generator as the previous micro-batch left it. Its state goes from batch to batch in a small file per Spark batch
  id, ``<checkpoint>/flinkish/generators/<batch id>.json`` (:class:`GeneratorFiles`, through ``spark/storage.py``): a
  batch's route reads the newest file of an earlier batch and writes its own once (a replayed batch finds it and
  keeps it: the same generator state, the same watermarks). The file holds the generator's state (as
  ``generators.assigner_row`` pickles it), the watermarks emitted during the batch with the order of the record after
  which each was emitted (O(watermarks), not O(records)), and the watermark in force at the batch's end.
* **The carrier row** of the route holds the batch-end watermark (:func:`carrier_time`), so that Spark's watermark in
  the next batch is exactly it: a key's timeout, its next timer, then falls due in the batch right after the one
  whose watermarks crossed the timer.
* **A key's call walks the watermarks** (:func:`generated_steps`): first the previous batch's (those the key has not
  seen: a timer they crossed is why Spark timed the key out), then this batch's, each at its place among the key's
  records (by order). Every timer fires at the watermark that crossed it and every record is judged against the
  watermark before it, as in Flink; outputs may come one micro-batch later than Flink's (compared as multisets).

What still cannot be followed is refused when the query is built (``spark/stateful.py``): a generator given to the
source, several ``assign_timestamps_and_watermarks``, several source partitions, two inputs; and ``to_dataframe()``
(no checkpoint location is known to keep the generator's state in).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple

from ..core.errors import StateError
from ..core.javamath import LONG_MIN
from . import storage

GENERATORS_DIR = "generators"
"""The directory of the generator files in ``<checkpoint>/flinkish/``."""
FORMAT = "pyspark_flinkish.stateful-generators"
BATCH_ID_PROPERTY = "streaming.sql.batchId"
"""The local property Spark's micro-batch execution gives every task of a batch: the batch id."""
PERIODIC_ORDER = [2, 0]
"""Order of what the generator's ``on_periodic_emit`` emits at the batch end: after every record (``[1, ...]``)."""
END_ORDER = [2, 1]
"""Order of the end-of-input watermark (``LONG_MAX``): after the batch end's periodic emission."""


@dataclass
class GeneratorBatch:
    """What one micro-batch's route leaves: each custom generator's state after the batch (by plan index, pickled as
    ``generators.assigner_row`` does), the watermarks emitted during the batch in processing order with the order
    they were emitted at, and the watermark in force at the batch's end."""

    states: Dict[int, bytes] = field(default_factory=dict)
    watermarks: List[Tuple[List[int], int]] = field(default_factory=list)
    end: int = LONG_MIN

    def to_bytes(self) -> bytes:
        """The file's bytes (JSON; the states base64)."""
        doc = {
            "format": FORMAT,
            "version": 1,
            "states": {str(i): base64.b64encode(s).decode("ascii") for i, s in sorted(self.states.items())},
            "watermarks": [[list(o), w] for o, w in self.watermarks],
            "end": self.end,
        }
        return json.dumps(doc, separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes, where: str = "") -> GeneratorBatch:
        """The document :meth:`to_bytes` wrote; a file of another format is a :class:`StateError` naming ``where``."""
        doc = json.loads(data.decode("utf-8"))
        if doc.get("format") != FORMAT or doc.get("version") != 1:
            msg = f"{where}: not a generator file of this pyspark_flinkish ({doc.get('format')!r}, {doc.get('version')!r})"
            raise StateError(msg)
        return cls(
            {int(i): base64.b64decode(s) for i, s in doc["states"].items()},
            [([int(x) for x in o], int(w)) for o, w in doc["watermarks"]],
            int(doc["end"]),
        )


def task_batch_id() -> int:
    """The Spark batch id of the micro-batch this task runs in (Spark gives it to every task as a local property)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    value = None if context is None else context.getLocalProperty(BATCH_ID_PROPERTY)
    if value is None:
        msg = "a custom WatermarkGenerator on the applyInPandasWithState executor runs only in a micro-batch of its query"
        raise StateError(msg)
    return int(value)


@dataclass(frozen=True)
class GeneratorFiles:
    """The generator files of one query (``<checkpoint>/flinkish/generators``) and how a task learns its batch id
    (``batch_of``: :func:`task_batch_id` in Spark)."""

    directory: str
    batch_of: Callable[[], int] = task_batch_id

    def path(self, batch: int) -> str:
        return storage.join(self.directory, f"{batch:020d}.json")

    def batches(self) -> List[int]:
        """The batch ids with a file, ascending."""
        return sorted(int(n[:-5]) for n in storage.list_names(self.directory) if n.endswith(".json") and n[:-5].isdigit())

    def read(self, batch: int) -> Optional[GeneratorBatch]:
        """Batch ``batch``'s file (None: its route did not run, a batch without input)."""
        path = self.path(batch)
        if not storage.exists(path):
            return None
        return GeneratorBatch.from_bytes(storage.read_bytes(path), path)

    def previous(self, batch: int) -> Tuple[Optional[int], GeneratorBatch]:
        """The newest file of a batch before ``batch`` (its id, or None and the initial state: no generator ran yet)."""
        earlier = [b for b in self.batches() if b < batch]
        if not earlier:
            return None, GeneratorBatch()
        found = self.read(earlier[-1])
        return earlier[-1], found if found is not None else GeneratorBatch()

    def write(self, batch: int, doc: GeneratorBatch, previous: Optional[int]) -> GeneratorBatch:
        """Keep ``doc`` as batch ``batch``'s file unless a first attempt of the batch wrote one (then that one stays and
        is returned: a replayed batch sees the same watermarks); files older than ``previous`` (the one this batch
        read) are deleted, no batch reads them again."""
        path = self.path(batch)
        if storage.exists(path):
            kept = GeneratorBatch.from_bytes(storage.read_bytes(path), path)
        else:
            storage.write_bytes(path, doc.to_bytes())
            kept = doc
        if previous is not None:
            for old in self.batches():
                if old < previous:
                    storage.delete(self.path(old))
        return kept


def carrier_time(end: int, shift: int, delay: int, end_of_input: int) -> Optional[int]:
    """The carrier's (shifted) event time for the batch-end watermark ``end``: Spark's watermark of the next batch
    (``max carrier - delay``) is then ``end`` shifted, or the end of input's; None before any watermark."""
    if end == LONG_MIN:
        return None
    if end >= end_of_input - shift - delay:
        return end_of_input
    return end + shift + delay


class Step(NamedTuple):
    """One step of a key's call: a watermark (``watermark`` set; ``order`` None for one of the previous batch), or a
    record (``value``, ``ts``) at ``order``."""

    order: Optional[List[int]]
    watermark: Optional[int] = None
    value: Any = None
    ts: Optional[int] = None


def generated_steps(
    seen: int,
    earlier: GeneratorBatch,
    current: Optional[GeneratorBatch],
    records: Iterable[Tuple[List[int], Any, Optional[int]]],
) -> Iterator[Step]:
    """A key's call in a batch, in Flink's order: the previous batch's watermarks above ``seen`` (the last one the key
    processed) and its end, then this batch's watermarks merged with the key's ``records`` (``(order, element,
    timestamp)`` in order) by the order each was emitted at (the batch's end is its last). Only advancing watermarks
    are steps."""
    wm = seen
    for w in [*(w for _, w in earlier.watermarks), earlier.end]:
        if w > wm:
            wm = w
            yield Step(None, w)
    marks = [] if current is None else current.watermarks
    i = 0
    for order, value, ts in records:
        while i < len(marks) and marks[i][0] < order:
            if marks[i][1] > wm:
                wm = marks[i][1]
                yield Step(marks[i][0], wm)
            i += 1
        yield Step(order, None, value, ts)
    for mark_order, w in marks[i:]:
        if w > wm:
            wm = w
            yield Step(mark_order, w)


def bounded_steps(seen: int, current: int, records: Iterable[Tuple[List[int], Any, Optional[int]]]) -> Iterator[Step]:
    """A key's call without a custom generator: Spark's watermark (``current``, Flink's view of it) first, if it
    advanced past ``seen``, then the key's records."""
    if current > seen:
        yield Step(None, current)
    for order, value, ts in records:
        yield Step(order, None, value, ts)


def last_watermark(seen: int, steps: List[Step]) -> int:
    """The watermark a key has processed after ``steps``."""
    return max([seen, *(s.watermark for s in steps if s.watermark is not None)])


__all__ = [
    "BATCH_ID_PROPERTY",
    "END_ORDER",
    "FORMAT",
    "GENERATORS_DIR",
    "PERIODIC_ORDER",
    "GeneratorBatch",
    "GeneratorFiles",
    "Step",
    "bounded_steps",
    "carrier_time",
    "generated_steps",
    "last_watermark",
    "task_batch_id",
]
