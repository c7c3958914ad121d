"""Stream records, outputs and output tags shared by every operator."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional, Protocol

from .errors import InvalidArgumentError, InvalidTypeError
from .typeinfo import TypeInformation


@dataclass
class StreamRecord:
    """A value with its event timestamp (``None`` = no timestamp); ``subtask``: the Flink subtask of the keyed operator
    that emitted it (or the record a stateless operator after it made this one from), where a print sink after them
    needs it (``core/print_lines.py``), else None."""

    value: Any
    timestamp: Optional[int] = None
    subtask: Optional[int] = None


class OutputTag:
    """Names a side output (``OutputTag("late-data")``); equal tags denote the same side output."""

    def __init__(self, tag_id: str, type_info: Optional[TypeInformation] = None) -> None:
        if not isinstance(tag_id, str) or not tag_id:
            msg = f"OutputTag needs a non-empty str id; got {tag_id!r}"
            raise InvalidArgumentError(msg)
        self.tag_id = tag_id
        self.type_info = type_info

    def get_id(self) -> str:
        return self.tag_id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutputTag) and other.tag_id == self.tag_id

    def __hash__(self) -> int:
        return hash(("OutputTag", self.tag_id))

    def __repr__(self) -> str:
        return f"OutputTag({self.tag_id!r})"


def check_output_tag(tag: Any) -> None:
    """A context's ``output(tag, value)`` takes an :class:`OutputTag` only (PyFlink's type check)."""
    if not isinstance(tag, OutputTag):
        msg = f"output() needs an OutputTag as first argument; got {type(tag).__name__} {tag!r}"
        raise InvalidTypeError(msg)


class Output(Protocol):
    """Where an operator sends records, side outputs, watermarks and idleness."""

    def collect(self, record: StreamRecord) -> None: ...

    def collect_side(self, tag: OutputTag, record: StreamRecord) -> None: ...

    def emit_watermark(self, watermark: int) -> None: ...

    def emit_idle(self, idle: bool) -> None: ...


def emit_results(
    output: Output,
    results: Optional[Iterable[Any]],
    timestamp: Optional[int],
    side_timestamp: Optional[int] = None,
    subtask: Optional[int] = None,
) -> None:
    """Send what a user function returned or yielded: ``(OutputTag, value)`` pairs to side outputs.

    Side outputs carry ``side_timestamp`` when given (a processing-time timer's outputs have no timestamp,
    but its side outputs carry the timer time, as in Flink), else ``timestamp``. ``subtask``: the input record's
    (a stateless operator's outputs carry the subtask of the keyed operator before it, :class:`StreamRecord`).
    """
    if results is None:
        return
    if type(results) is not list and (isinstance(results, (str, bytes, dict)) or not hasattr(results, "__iter__")):
        msg = (
            "a process/window function must return or yield its outputs (an iterable); "
            f"got {type(results).__name__} {results!r}. Did you mean `yield value` or `return [value]`?"
        )
        raise InvalidTypeError(msg)
    collect = output.collect
    for item in results:
        if type(item) is tuple and len(item) == 2 and isinstance(item[0], OutputTag):
            side_ts = timestamp if side_timestamp is None else side_timestamp
            output.collect_side(item[0], StreamRecord(item[1], side_ts, subtask))
        else:
            collect(StreamRecord(item, timestamp, subtask))


__all__ = [
    "StreamRecord",
    "OutputTag",
    "Output",
    "check_output_tag",
    "emit_results",
]
