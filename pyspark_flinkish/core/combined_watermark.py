"""The watermark of a two-input operator (spec §3, Flink's ``CombinedWatermarkStatus`` as used by
``AbstractStreamOperator.processWatermark1/2``): the minimum of its inputs' watermarks over the inputs that are
not idle, emitted only when it increases; when every input is idle nothing is emitted and the operator's output
is idle.

It differs from :class:`~pyspark_flinkish.core.watermark_alignment.StatusWatermarkValve` (an operator's channels,
e.g. a union), which flushes the maximum when its last channel goes idle and keeps a returning channel out of the
minimum until it catches up. :class:`CombinedWatermarkStatus` has the valve's interface
(``input_watermark``, ``input_idle``, ``last_output``, ``to_dict``), so an engine uses either one per node;
:func:`valve_from_dict` reads back both.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple, Union

from .errors import StateError
from .javamath import LONG_MIN
from .watermark_alignment import StatusWatermarkValve
from .watermark_documents import read_bool_list, read_int

KIND = "combined"


class CombinedWatermarkStatus:
    """Combines the watermarks and idleness of a two-input operator's inputs."""

    def __init__(self, num_inputs: int = 2) -> None:
        self.watermarks = [LONG_MIN] * num_inputs
        self.idle = [False] * num_inputs
        self.combined = LONG_MIN
        self.output_idle = False

    @property
    def last_output(self) -> int:
        """The combined watermark emitted last (``MIN`` before the first), as the valve's ``last_output``."""
        return self.combined

    def _update(self) -> Optional[int]:
        active = [w for w, i in zip(self.watermarks, self.idle) if not i]
        self.output_idle = not active
        if active and min(active) > self.combined:
            self.combined = min(active)
            return self.combined
        return None

    def input_watermark(self, channel: int, watermark: int) -> Optional[int]:
        """A watermark on input ``channel`` (it also makes the input active); the new combined watermark if it
        increased, else None."""
        self.idle[channel] = False
        self.watermarks[channel] = max(self.watermarks[channel], watermark)
        return self._update()

    def input_idle(self, channel: int, idle: bool) -> Tuple[Optional[int], Optional[bool]]:
        """Input ``channel`` went idle or active: ``(new combined watermark or None, the output's idle status if
        it changed, else None)``."""
        was_idle = self.output_idle
        self.idle[channel] = idle
        new = self._update()
        return new, (self.output_idle if self.output_idle != was_idle else None)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "kind": KIND,
            "watermarks": list(self.watermarks),
            "idle": list(self.idle),
            "combined": self.combined,
            "output_idle": self.output_idle,
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> CombinedWatermarkStatus:
        marks = data.get("watermarks") if isinstance(data, dict) else None
        if not isinstance(marks, list) or not all(isinstance(w, int) and not isinstance(w, bool) for w in marks):
            msg = f"malformed two-input watermark state: {data!r}"
            raise StateError(msg)
        status = cls(len(marks))
        status.watermarks = list(marks)
        status.idle = read_bool_list(data, "idle", len(marks))
        status.combined = read_int(data, "combined")
        status.output_idle = bool(data["output_idle"])
        return status


def valve_from_dict(data: Dict[str, Any]) -> Union[StatusWatermarkValve, CombinedWatermarkStatus]:
    """Read back either combiner from its ``to_dict``."""
    if isinstance(data, dict) and data.get("kind") == KIND:
        return CombinedWatermarkStatus.from_dict(data)
    return StatusWatermarkValve.from_dict(data)


__all__ = ["CombinedWatermarkStatus", "valve_from_dict"]
