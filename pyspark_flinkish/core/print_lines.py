"""The lines ``print()`` writes, as Flink's ``PrintSinkOutputWriter`` writes them.

At a print sink parallelism above 1, Flink begins every line with the 1-based number of the sink subtask that printed
it: ``2> (a,1)``, with a sink identifier ``id:2> (a,1)`` (``id> (a,1)`` at parallelism 1, no prefix without either).
Which subtask prints a record is what Flink's partitioning between the print sink and the operator before it decides
(``datastream/plan.py`` finds it when a job starts): the owner of the key's key group after a keyed operator of the
sink's parallelism, right after it or through stateless operators of that parallelism (the record carries it:
:class:`~.subtasks.SubtaskStamping`), the instance after a plain ``broadcast()`` (every instance prints every
record). Where Flink's choice is random (round robin from a random start), the job is refused up front, so a line the
package prints is always one Flink could print.

:class:`PrintLines` is the operator in front of a print sink that turns each record into its line; the sink writes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .display import print_string
from .errors import UnsupportedFeatureError
from .operators import StreamOperator
from .records import StreamRecord


def print_prefix(sink_identifier: Optional[str], parallelism: int, subtask: Optional[int]) -> str:
    """``PrintSinkOutputWriter``'s prefix: the identifier, then (at a ``parallelism`` above 1) ``:`` and the 1-based
    ``subtask``, then ``"> "``; empty when there is neither."""
    prefix = sink_identifier or ""
    if parallelism > 1:
        if subtask is None:
            msg = "print_prefix: a print sink of parallelism above 1 needs the subtask that prints"
            raise ValueError(msg)
        prefix = f"{prefix}:{subtask + 1}" if prefix else str(subtask + 1)
    return f"{prefix}> " if prefix else ""


@dataclass
class PrintSettings:
    """A print sink's settings: its identifier, the stream's type (how values are shown), its ``parallelism`` (the
    environment's when ``print()`` was called, or the sink's ``set_parallelism``) and ``by_instance``: the lines are
    numbered by the :class:`PrintLines` instance (after ``broadcast()``), else by the subtask the record carries."""

    sink_identifier: Optional[str]
    type_info: Any
    parallelism: int = 1
    by_instance: bool = False


class PrintLines(StreamOperator):
    """Turns each record into the line Flink's ``print()`` writes for it (:func:`print_prefix` and the value as
    :func:`~.display.print_string` shows it); the print sink after it writes the lines."""

    def __init__(self, name: str, settings: PrintSettings) -> None:
        super().__init__(name)
        self.settings = settings

    def process_element(self, record: StreamRecord) -> None:
        s = self.settings
        subtask = None
        if s.parallelism > 1:
            subtask = self.subtasks.index if s.by_instance else record.subtask
            if subtask is None:
                msg = (
                    f"{self.name}: print() at parallelism {s.parallelism} got a record without the subtask that prints "
                    "it in Flink; set_parallelism(1) on the print sink"
                )
                raise UnsupportedFeatureError(msg)
        line = print_prefix(s.sink_identifier, s.parallelism, subtask) + print_string(record.value, s.type_info)
        self.output.collect(StreamRecord(line, record.timestamp))


__all__ = ["PrintLines", "PrintSettings", "print_prefix"]
