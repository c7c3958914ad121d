"""Watermark generation (spec §2): Flink's watermark API.

* :class:`WatermarkStrategy` — PyFlink's builder: ``for_bounded_out_of_orderness``,
  ``for_monotonous_timestamps``, ``no_watermarks``, ``for_generator``, ``with_timestamp_assigner``,
  ``with_idleness``. Builders return new strategies; a strategy is immutable.
* Generators: bounded out-of-orderness emits ``max_ts - bound - 1`` on periodic emit; idleness wraps a
  generator and marks its output idle after ``> timeout`` without events (on an injected clock).

Combining the watermarks of several partitions or inputs is :mod:`.watermark_alignment`.

Every generator here has ``to_dict`` / ``from_dict``: plain JSON data, what the Spark driver checkpoints after
each micro-batch. Built-in generators are data; only a user's own ``WatermarkGenerator`` is pickled
(``generator_to_dict``), and only read back where the caller allows it. (``generator_to_dict`` stays here, not
with the document readers of :mod:`.watermark_documents`: the idleness generator nests one.)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

from .clock import Clock
from .durations import TimeLike, to_millis
from .errors import InvalidArgumentError, InvalidTypeError, StateError
from .javamath import LONG_MIN
from .watermark_documents import read_int


@dataclass(frozen=True)
class Watermark:
    """A watermark: no more records with ``timestamp <= this`` are expected."""

    timestamp: int

    def get_timestamp(self) -> int:
        return self.timestamp


class WatermarkOutput(ABC):
    """What a generator emits into."""

    @abstractmethod
    def emit_watermark(self, watermark: Any) -> None: ...

    @abstractmethod
    def mark_idle(self) -> None: ...

    @abstractmethod
    def mark_active(self) -> None: ...


class WatermarkGenerator(ABC):
    """Flink's ``WatermarkGenerator``: sees every event, and is asked periodically (here: at the end of
    each micro-batch) to emit a watermark."""

    @abstractmethod
    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None: ...

    @abstractmethod
    def on_periodic_emit(self, output: WatermarkOutput) -> None: ...


class TimestampAssigner(ABC):
    """Extracts an event timestamp (epoch ms) from an element."""

    @abstractmethod
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int: ...


class BoundedOutOfOrdernessWatermarks(WatermarkGenerator):
    """Emits ``max_ts - bound - 1``; nothing before the first event (``MIN`` is never emitted)."""

    def __init__(self, bound_ms: int) -> None:
        if bound_ms < 0:
            msg = f"the out-of-orderness bound must be >= 0 ms; got {bound_ms}"
            raise InvalidArgumentError(msg)
        self.bound = bound_ms
        self.max_timestamp = LONG_MIN + bound_ms + 1

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        if event_timestamp > self.max_timestamp:
            self.max_timestamp = event_timestamp

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        output.emit_watermark(Watermark(self.max_timestamp - self.bound - 1))

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": "bounded_out_of_orderness", "bound": self.bound, "max_timestamp": self.max_timestamp}

    @classmethod
    def from_dict(cls, data: Dict[str, Any], clock: Clock) -> BoundedOutOfOrdernessWatermarks:
        gen = cls(read_int(data, "bound"))
        gen.max_timestamp = read_int(data, "max_timestamp")
        return gen


class AscendingTimestampsWatermarks(BoundedOutOfOrdernessWatermarks):
    """Monotonous timestamps: bounded out-of-orderness with bound 0."""

    def __init__(self) -> None:
        super().__init__(0)

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": "monotonous", "max_timestamp": self.max_timestamp}

    @classmethod
    def from_dict(cls, data: Dict[str, Any], clock: Clock) -> AscendingTimestampsWatermarks:
        gen = cls()
        gen.max_timestamp = read_int(data, "max_timestamp")
        return gen


class NoWatermarksGenerator(WatermarkGenerator):
    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        return None

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        return None

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": "no_watermarks"}

    @classmethod
    def from_dict(cls, data: Dict[str, Any], clock: Clock) -> NoWatermarksGenerator:
        return cls()


class IdlenessTimer:
    """Flink's idleness clock: activity since the last check resets it; the first quiet check starts it;
    idle once ``now - start > timeout``."""

    def __init__(self, clock: Clock, timeout_ms: int) -> None:
        self.clock = clock
        self.timeout = timeout_ms
        self.counter = 0
        self.last_counter = 0
        self.start_of_inactivity: Optional[int] = None

    def activity(self) -> None:
        self.counter += 1

    def check_if_idle(self) -> bool:
        if self.counter != self.last_counter:
            self.last_counter = self.counter
            self.start_of_inactivity = None
            return False
        now = self.clock.now()
        if self.start_of_inactivity is None:
            self.start_of_inactivity = now
            return False
        return now - self.start_of_inactivity > self.timeout

    def to_dict(self) -> Dict[str, Any]:
        return {
            "timeout": self.timeout,
            "counter": self.counter,
            "last_counter": self.last_counter,
            "start_of_inactivity": self.start_of_inactivity,
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any], clock: Clock) -> IdlenessTimer:
        """Restored on ``clock`` (the running job's clock, never the one of the job that wrote it)."""
        timer = cls(clock, read_int(data, "timeout"))
        timer.counter = read_int(data, "counter")
        timer.last_counter = read_int(data, "last_counter")
        start = data.get("start_of_inactivity")
        timer.start_of_inactivity = None if start is None else read_int(data, "start_of_inactivity")
        return timer


class WatermarksWithIdleness(WatermarkGenerator):
    """Wraps a generator: after ``timeout`` without events the output is marked idle (once)."""

    def __init__(self, generator: WatermarkGenerator, timeout_ms: int, clock: Clock) -> None:
        self.generator = generator
        self.timer = IdlenessTimer(clock, timeout_ms)
        self.is_idle_now = False

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        self.generator.on_event(event, event_timestamp, output)
        self.timer.activity()
        self.is_idle_now = False

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        if self.timer.check_if_idle():
            if not self.is_idle_now:
                output.mark_idle()
                self.is_idle_now = True
        else:
            self.generator.on_periodic_emit(output)

    def to_dict(self, allow_pickle: bool = True) -> Dict[str, Any]:
        return {
            "kind": "idleness",
            "timer": self.timer.to_dict(),
            "is_idle_now": self.is_idle_now,
            "generator": generator_to_dict(self.generator, allow_pickle),
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any], clock: Clock, allow_pickle: bool = False) -> WatermarksWithIdleness:
        inner = generator_from_dict(data["generator"], clock, allow_pickle)
        timer = IdlenessTimer.from_dict(data["timer"], clock)
        gen = cls(inner, timer.timeout, clock)
        gen.timer = timer
        gen.is_idle_now = bool(data["is_idle_now"])
        return gen


_BUILT_IN_GENERATORS: Dict[str, Any] = {
    "bounded_out_of_orderness": BoundedOutOfOrdernessWatermarks,
    "monotonous": AscendingTimestampsWatermarks,
    "no_watermarks": NoWatermarksGenerator,
    "idleness": WatermarksWithIdleness,
}


def generator_to_dict(generator: Any, allow_pickle: bool = True) -> Dict[str, Any]:
    """A watermark generator's state as plain data. Built-in generators (exactly these classes, not
    subclasses) are data; a user's generator is pickled (``{"kind": "user", "class": ..., "object": {"P": ...}}``),
    or refused with a :class:`StateError` when ``allow_pickle`` is False."""
    kind = next((k for k, c in _BUILT_IN_GENERATORS.items() if type(generator) is c), None)
    if kind == "idleness":
        return generator.to_dict(allow_pickle)  # type: ignore[no-any-return]
    if kind is not None:
        return generator.to_dict()  # type: ignore[no-any-return]
    from .codec import encode_value

    name = f"{type(generator).__module__}.{type(generator).__qualname__}"
    if not allow_pickle:
        msg = f"the watermark generator {name} is a user class: it can only be checkpointed pickled, which is not allowed here"
        raise StateError(msg)
    return {"kind": "user", "class": name, "object": encode_value(generator, allow_pickle=True)}


def generator_from_dict(data: Dict[str, Any], clock: Clock, allow_pickle: bool = False) -> WatermarkGenerator:
    """Inverse of :func:`generator_to_dict`, on ``clock``. A pickled user generator is read only with
    ``allow_pickle`` (unpickling runs code: the checkpoint must be writable by the job alone)."""
    if not isinstance(data, dict):
        msg = f"malformed watermark generator state: {data!r}"
        raise StateError(msg)
    kind = data.get("kind")
    if kind == "user":
        if not allow_pickle:
            msg = (
                f"the checkpoint holds a pickled user watermark generator ({data.get('class')}), but this pipeline's "
                "watermark strategy has no user generator: refusing to unpickle it. Restore the old strategy or "
                "start from a new checkpoint location"
            )
            raise StateError(msg)
        from .codec import decode_value

        return decode_value(data.get("object"), allow_pickle=True)  # type: ignore[no-any-return]
    cls = _BUILT_IN_GENERATORS.get(kind)  # type: ignore[arg-type]
    if cls is None:
        msg = f"unknown watermark generator kind {kind!r} in the checkpoint"
        raise StateError(msg)
    if cls is WatermarksWithIdleness:
        return WatermarksWithIdleness.from_dict(data, clock, allow_pickle)
    return cls.from_dict(data, clock)  # type: ignore[no-any-return]


def _as_assigner(assigner: Any) -> Callable[[Any, int], int]:
    fn = getattr(assigner, "extract_timestamp", None)
    if callable(fn):
        return fn  # type: ignore[no-any-return]
    if callable(assigner):
        try:
            import inspect

            n = len(inspect.signature(assigner).parameters)
        except (TypeError, ValueError):
            n = 2
        if n == 1:
            return lambda value, _ts: assigner(value)
        return assigner  # type: ignore[no-any-return]
    msg = (
        "with_timestamp_assigner needs a TimestampAssigner or a callable (value, record_timestamp) -> ms; "
        f"got {type(assigner).__name__}"
    )
    raise InvalidTypeError(msg)


class WatermarkStrategy:
    """How timestamps are assigned and watermarks generated (PyFlink's ``WatermarkStrategy``)."""

    def __init__(
        self,
        generator_factory: Callable[[], WatermarkGenerator],
        description: str,
        timestamp_assigner: Optional[Callable[[Any, int], int]] = None,
        idleness_ms: Optional[int] = None,
        generates: bool = True,
        bound_ms: Optional[int] = None,
    ) -> None:
        self._factory = generator_factory
        self._description = description
        self.bound_ms = bound_ms
        """The out-of-orderness bound of a built-in generator (monotonous: 0); None for custom or none."""
        self.timestamp_assigner = timestamp_assigner
        self.idleness_ms = idleness_ms
        self.generates_watermarks = generates

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: TimeLike) -> WatermarkStrategy:
        bound = to_millis("max_out_of_orderness", max_out_of_orderness)
        BoundedOutOfOrdernessWatermarks(bound)  # validate now
        return WatermarkStrategy(
            lambda: BoundedOutOfOrdernessWatermarks(bound), f"bounded_out_of_orderness({bound} ms)", bound_ms=bound
        )

    @staticmethod
    def for_monotonous_timestamps() -> WatermarkStrategy:
        return WatermarkStrategy(AscendingTimestampsWatermarks, "monotonous_timestamps", bound_ms=0)

    @staticmethod
    def no_watermarks() -> WatermarkStrategy:
        return WatermarkStrategy(NoWatermarksGenerator, "no_watermarks", generates=False)

    @staticmethod
    def for_generator(generator_supplier: Callable[..., WatermarkGenerator]) -> WatermarkStrategy:
        """A custom :class:`WatermarkGenerator`; ``generator_supplier()`` (or ``(ctx)``) makes one per partition."""
        if not callable(generator_supplier):
            msg = f"for_generator needs a callable returning a WatermarkGenerator; got {type(generator_supplier).__name__}"
            raise InvalidTypeError(msg)

        def make() -> WatermarkGenerator:
            try:
                gen = generator_supplier()
            except TypeError:
                gen = generator_supplier(None)
            if not isinstance(gen, WatermarkGenerator) and not (hasattr(gen, "on_event") and hasattr(gen, "on_periodic_emit")):
                msg = f"the generator supplier must return a WatermarkGenerator; got {type(gen).__name__}"
                raise InvalidTypeError(msg)
            return gen

        return WatermarkStrategy(make, f"generator({generator_supplier!r})")

    @property
    def has_user_generator(self) -> bool:
        """Whether generators come from a user's supplier (``for_generator``): only their state may be pickled."""
        return self.generates_watermarks and self.bound_ms is None

    def with_timestamp_assigner(self, timestamp_assigner: Any) -> WatermarkStrategy:
        return WatermarkStrategy(
            self._factory,
            self._description,
            _as_assigner(timestamp_assigner),
            self.idleness_ms,
            self.generates_watermarks,
            self.bound_ms,
        )

    def with_idleness(self, idle_timeout: TimeLike) -> WatermarkStrategy:
        ms = to_millis("idle_timeout", idle_timeout)
        if ms <= 0:
            msg = f"with_idleness needs a timeout > 0 ms; got {ms}"
            raise InvalidArgumentError(msg)
        return WatermarkStrategy(
            self._factory, self._description, self.timestamp_assigner, ms, self.generates_watermarks, self.bound_ms
        )

    def with_watermark_alignment(self, *args: Any, **kwargs: Any) -> WatermarkStrategy:
        from .errors import UnsupportedFeatureError

        msg = "watermark alignment is not supported yet; with micro-batches, bound the input per batch instead"
        raise UnsupportedFeatureError(msg)

    def create_watermark_generator(self, clock: Clock) -> WatermarkGenerator:
        gen = self._factory()
        if self.idleness_ms is not None:
            gen = WatermarksWithIdleness(gen, self.idleness_ms, clock)
        return gen

    def extract_timestamp(self, value: Any, previous: Optional[int]) -> Optional[int]:
        if self.timestamp_assigner is None:
            return previous
        ts = self.timestamp_assigner(value, LONG_MIN if previous is None else previous)
        if isinstance(ts, bool) or not isinstance(ts, int):
            msg = f"the timestamp assigner must return an int of epoch milliseconds; got {type(ts).__name__} {ts!r} for {value!r}"
            raise InvalidTypeError(msg)
        return ts

    def __repr__(self) -> str:
        parts = [f"WatermarkStrategy.{self._description}"]
        if self.idleness_ms is not None:
            parts.append(f"with_idleness({self.idleness_ms} ms)")
        if self.timestamp_assigner is not None:
            parts.append("with_timestamp_assigner(...)")
        return ".".join(parts)


__all__ = [
    "AscendingTimestampsWatermarks",
    "BoundedOutOfOrdernessWatermarks",
    "IdlenessTimer",
    "TimestampAssigner",
    "Watermark",
    "WatermarkGenerator",
    "WatermarkOutput",
    "WatermarkStrategy",
    "WatermarksWithIdleness",
    "generator_from_dict",
    "generator_to_dict",
]
