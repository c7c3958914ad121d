"""The watermark of a two-input operator (Flink's ``CombinedWatermarkStatus`` in ``AbstractStreamOperator``).

An interval join (and any ``connect``-ed operator) combines its two inputs' watermarks differently from ``union``'s
valve (:class:`~pyspark_flinkish.core.watermark_alignment.StatusWatermarkValve`): the combined watermark is the
minimum over the inputs that are not idle, emitted only when it increases; an input that turns active again rejoins
the minimum at once (no re-alignment), and when both inputs are idle nothing is emitted (the valve would flush the
maximum) and the operator is idle. Per input, Flink's valve over that input's channels runs first; here each input
is one channel.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from .errors import StateError
from .watermark_alignment import StatusWatermarkValve
from .watermark_documents import read_bool_list, read_int

KIND = "combined"
"""``to_dict``'s ``kind``: tells this state from a union valve's in the driver's watermark document."""


class TwoInputWatermarkValve(StatusWatermarkValve):
    """``StatusWatermarkValve``'s interface with the two-input rule; channel 0 is the first input, 1 the second."""

    def __init__(self, num_channels: int = 2) -> None:
        super().__init__(num_channels)

    def input_watermark(self, channel: int, watermark: int) -> Optional[int]:
        if self.idle[channel] or watermark <= self.watermarks[channel]:
            return None
        self.watermarks[channel] = watermark
        return self._combined()

    def _combined(self) -> Optional[int]:
        active = [w for w, idle in zip(self.watermarks, self.idle) if not idle]
        if active and min(active) > self.last_output:
            self.last_output = min(active)
            return self.last_output
        return None

    def input_idle(self, channel: int, idle: bool) -> Tuple[Optional[int], Optional[bool]]:
        if idle == self.idle[channel]:
            return None, None
        self.idle[channel] = idle
        new_wm = self._combined()
        all_idle = all(self.idle)
        status: Optional[bool] = None
        if all_idle != self.output_idle:
            self.output_idle = all_idle
            status = all_idle
        return new_wm, status

    def to_dict(self) -> Dict[str, Any]:
        return {
            "kind": KIND,
            "watermarks": list(self.watermarks),
            "idle": list(self.idle),
            "combined": self.last_output,
            "output_idle": self.output_idle,
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> TwoInputWatermarkValve:
        marks = data.get("watermarks") if isinstance(data, dict) else None
        if not isinstance(data, dict) or data.get("kind") != KIND or not isinstance(marks, list) or not all(
            isinstance(w, int) and not isinstance(w, bool) for w in marks
        ):
            msg = f"malformed two-input watermark state: {data!r}"
            raise StateError(msg)
        valve = cls(len(marks))
        valve.watermarks = list(marks)
        valve.idle = read_bool_list(data, "idle", len(marks))
        valve.last_output = read_int(data, "combined")
        valve.output_idle = bool(data["output_idle"])
        return valve


__all__ = ["KIND", "TwoInputWatermarkValve"]
