"""Combining watermarks of several inputs (spec §3), as Flink does:

* :class:`SplitWatermarks` — per source partition (Kafka split) generators combined as the minimum over
  non-idle partitions; all idle means the source is idle (Flink's ``WatermarkOutputMultiplexer``).
* :class:`StatusWatermarkValve` — combines input channels of an operator (``union``): min over active,
  aligned channels, monotone; all idle → emit the max and go idle.

Both have ``to_dict`` and ``from_dict`` / ``restore``: plain JSON data, what the Spark driver checkpoints.
"""

from __future__ import annotations

from typing import Any, Dict, Hashable, Optional

from .clock import Clock
from .errors import StateError
from .javamath import LONG_MIN
from .watermark_documents import read_bool_list, read_int
from .watermarks import (
    Watermark,
    WatermarkGenerator,
    WatermarkOutput,
    WatermarkStrategy,
    generator_from_dict,
    generator_to_dict,
)


class _PartialWatermark(WatermarkOutput):
    """One split's output inside :class:`SplitWatermarks` (watermark starts at MIN, active)."""

    def __init__(self) -> None:
        self.watermark = LONG_MIN
        self.idle = False

    def emit_watermark(self, watermark: Any) -> None:
        ts = watermark.timestamp if isinstance(watermark, Watermark) else int(watermark)
        self.idle = False
        if ts > self.watermark:
            self.watermark = ts

    def mark_idle(self) -> None:
        self.idle = True

    def mark_active(self) -> None:
        self.idle = False


class SplitWatermarks:
    """Per-partition watermark generation for one source, combined as Flink's source reader does.

    ``on_event(partition, value, ts)`` feeds that partition's generator; ``on_periodic_emit()`` asks every
    generator, then returns the new combined watermark if it advanced (else None); ``idle`` says
    whether every partition is idle.
    """

    def __init__(self, strategy: WatermarkStrategy, clock: Clock) -> None:
        self.strategy = strategy
        self.clock = clock
        self.generators: Dict[Hashable, WatermarkGenerator] = {}
        self.outputs: Dict[Hashable, _PartialWatermark] = {}
        self.combined = LONG_MIN
        self.idle = False

    def add_partition(self, partition: Hashable) -> None:
        if partition not in self.generators:
            self.generators[partition] = self.strategy.create_watermark_generator(self.clock)
            self.outputs[partition] = _PartialWatermark()

    def remove_partition(self, partition: Hashable) -> None:
        """A finished split leaves the minimum."""
        self.generators.pop(partition, None)
        self.outputs.pop(partition, None)

    def on_event(self, partition: Hashable, value: Any, timestamp: int) -> Optional[int]:
        """Feed ``partition``'s generator; returns the new combined watermark if what the generator emitted from
        ``on_event`` advanced it, else None. Flink's source hands ``on_event`` its split's *immediate* output: the
        combined watermark is updated and emitted at once, right after the record (the built-in generators emit only
        periodically: never here). Idleness changes only in :meth:`on_periodic_emit`."""
        self.add_partition(partition)
        output = self.outputs[partition]
        before = output.watermark
        self.generators[partition].on_event(value, timestamp, output)
        if output.watermark > before:
            return self.update()
        return None

    def on_periodic_emit(self) -> Optional[int]:
        for partition, gen in self.generators.items():
            gen.on_periodic_emit(self.outputs[partition])
        return self.update()

    def update(self) -> Optional[int]:
        """The combined watermark (minimum over the non-idle partitions) if it advanced, else None."""
        if not self.outputs:
            return None
        active = [o.watermark for o in self.outputs.values() if not o.idle]
        self.idle = not active
        if active and min(active) > self.combined:
            self.combined = min(active)
            return self.combined
        return None

    def partition_watermarks(self) -> Dict[Hashable, Optional[int]]:
        """Each partition's watermark, None while idle (for progress reporting)."""
        return {p: (None if o.idle else o.watermark) for p, o in self.outputs.items()}

    def to_dict(self, allow_pickle: bool = True) -> Dict[str, Any]:
        """Plain data: per partition its generator and output, in order. A partition that JSON cannot
        express (a ``KafkaTopicPartition``) is stored as its ``repr`` and found again among the partitions
        this object knows when restored (the source's declared partitions)."""
        from .codec import encode_value

        partitions = []
        for p, gen in self.generators.items():
            try:
                name: Any = ["v", encode_value(p, allow_pickle=False)]
            except StateError:
                name = ["r", repr(p)]
            out = self.outputs[p]
            partitions.append([name, generator_to_dict(gen, allow_pickle), out.watermark, out.idle])
        return {"partitions": partitions, "combined": self.combined, "idle": self.idle}

    def restore(self, data: Dict[str, Any], allow_pickle: bool = False) -> None:
        """Replace this object's partitions by the stored ones (generators on this object's clock)."""
        from .codec import decode_value

        known = {repr(p): p for p in self.generators}
        generators: Dict[Hashable, WatermarkGenerator] = {}
        outputs: Dict[Hashable, _PartialWatermark] = {}
        for (how, name), gen, watermark, idle in data["partitions"]:
            if how == "v":
                p = decode_value(name, allow_pickle=False)
                p = tuple(p) if isinstance(p, list) else p
            elif name in known:
                p = known[name]
            else:
                msg = f"the checkpoint has watermarks of source partition {name}, which this source does not declare"
                raise StateError(msg)
            generators[p] = generator_from_dict(gen, self.clock, allow_pickle)
            outputs[p] = _PartialWatermark()
            outputs[p].watermark = int(watermark)
            outputs[p].idle = bool(idle)
        self.generators, self.outputs = generators, outputs
        self.combined = read_int(data, "combined")
        self.idle = bool(data["idle"])


class StatusWatermarkValve:
    """Combines the watermarks and idleness of an operator's input channels (Flink's valve)."""

    def __init__(self, num_channels: int) -> None:
        self.watermarks = [LONG_MIN] * num_channels
        self.idle = [False] * num_channels
        self.aligned = [True] * num_channels
        self.last_output = LONG_MIN
        self.output_idle = False

    def input_watermark(self, channel: int, watermark: int) -> Optional[int]:
        """Returns the new combined watermark if it advanced."""
        if self.idle[channel] or watermark <= self.watermarks[channel]:
            return None
        self.watermarks[channel] = watermark
        if not self.aligned[channel] and watermark >= self.last_output:
            self.aligned[channel] = True
        return self._min_over_aligned()

    def _min_over_aligned(self) -> Optional[int]:
        candidates = [w for w, a, i in zip(self.watermarks, self.aligned, self.idle) if a and not i]
        if candidates and min(candidates) > self.last_output:
            self.last_output = min(candidates)
            return self.last_output
        return None

    def input_idle(self, channel: int, idle: bool) -> tuple:  # type: ignore[type-arg]
        """Returns ``(new_watermark or None, output idle status change or None)``, as Flink's valve."""
        new_wm: Optional[int] = None
        status: Optional[bool] = None
        if idle and not self.idle[channel]:
            self.idle[channel] = True
            self.aligned[channel] = False
            held_min = self.watermarks[channel] == self.last_output
            if all(self.idle):
                # every channel is idle now: flush the max across all channels, but only if the channel
                # that just went idle held the minimum (otherwise the min has advanced already)
                if held_min:
                    top = max(self.watermarks)
                    if top > self.last_output:
                        self.last_output = top
                        new_wm = top
                if not self.output_idle:
                    self.output_idle = True
                    status = True
            elif held_min:
                new_wm = self._min_over_aligned()
        elif not idle and self.idle[channel]:
            self.idle[channel] = False
            if self.watermarks[channel] >= self.last_output:
                self.aligned[channel] = True
            if self.output_idle:
                self.output_idle = False
                status = False
        return new_wm, status

    def to_dict(self) -> Dict[str, Any]:
        return {
            "watermarks": list(self.watermarks),
            "idle": list(self.idle),
            "aligned": list(self.aligned),
            "last_output": self.last_output,
            "output_idle": self.output_idle,
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> StatusWatermarkValve:
        marks = data.get("watermarks") if isinstance(data, dict) else None
        if not isinstance(marks, list) or not all(isinstance(w, int) and not isinstance(w, bool) for w in marks):
            msg = f"malformed watermark valve state: {data!r}"
            raise StateError(msg)
        valve = cls(len(marks))
        valve.watermarks = list(marks)
        valve.idle = read_bool_list(data, "idle", len(marks))
        valve.aligned = read_bool_list(data, "aligned", len(marks))
        valve.last_output = read_int(data, "last_output")
        valve.output_idle = bool(data["output_idle"])
        return valve


__all__ = ["SplitWatermarks", "StatusWatermarkValve"]
