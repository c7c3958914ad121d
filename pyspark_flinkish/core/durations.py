"""Durations in Flink's terms: ``Time`` (Flink 1.x) and ``Duration`` (Flink 2.x / ``java.time``).

Every API that takes a span of time accepts a :class:`Duration`, a :class:`Time`, a
:class:`datetime.timedelta` or an ``int`` of milliseconds.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Union

from .errors import InvalidArgumentError, InvalidTypeError


@dataclass(frozen=True, order=True)
class Duration:
    """A span of time in milliseconds, like ``java.time.Duration`` as PyFlink exposes it."""

    millis: int

    @staticmethod
    def of_millis(millis: int) -> Duration:
        return Duration(int(millis))

    @staticmethod
    def of_seconds(seconds: float) -> Duration:
        return Duration(int(round(seconds * 1000)))

    @staticmethod
    def of_minutes(minutes: float) -> Duration:
        return Duration(int(round(minutes * 60_000)))

    @staticmethod
    def of_hours(hours: float) -> Duration:
        return Duration(int(round(hours * 3_600_000)))

    @staticmethod
    def of_days(days: float) -> Duration:
        return Duration(int(round(days * 86_400_000)))

    @staticmethod
    def of_nanos(nanos: int) -> Duration:
        return Duration(int(nanos) // 1_000_000)

    @staticmethod
    def zero() -> Duration:
        return Duration(0)

    def to_milliseconds(self) -> int:
        return self.millis

    def __repr__(self) -> str:
        return f"Duration.of_millis({self.millis})"


@dataclass(frozen=True, order=True)
class Time:
    """Flink 1.x ``Time`` (``Time.seconds(5)``); kept so that 1.x PyFlink code runs unchanged."""

    millis: int

    @staticmethod
    def milliseconds(n: int) -> Time:
        return Time(int(n))

    @staticmethod
    def seconds(n: float) -> Time:
        return Time(int(round(n * 1000)))

    @staticmethod
    def minutes(n: float) -> Time:
        return Time(int(round(n * 60_000)))

    @staticmethod
    def hours(n: float) -> Time:
        return Time(int(round(n * 3_600_000)))

    @staticmethod
    def days(n: float) -> Time:
        return Time(int(round(n * 86_400_000)))

    def to_milliseconds(self) -> int:
        return self.millis

    def __repr__(self) -> str:
        return f"Time.milliseconds({self.millis})"


TimeLike = Union[Duration, Time, _dt.timedelta, int]
"""Anything accepted as a span of time: Duration, Time, timedelta or int milliseconds."""


def to_millis(name: str, value: TimeLike) -> int:
    """Convert a :data:`TimeLike` to integer milliseconds, with an error naming ``name``."""
    if isinstance(value, (Duration, Time)):
        return value.millis
    if isinstance(value, _dt.timedelta):
        return (value.days * 86_400 + value.seconds) * 1000 + value.microseconds // 1000
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    msg = f"{name} must be a Duration, Time, datetime.timedelta or an int of milliseconds; got {type(value).__name__} {value!r}"
    raise InvalidTypeError(msg)


_UNIT_NANOS = {
    **dict.fromkeys(("d", "day", "days"), 86_400_000_000_000),
    **dict.fromkeys(("h", "hour", "hours"), 3_600_000_000_000),
    **dict.fromkeys(("min", "m", "minute", "minutes"), 60_000_000_000),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1_000_000_000),
    **dict.fromkeys(("ms", "milli", "millis", "millisecond", "milliseconds"), 1_000_000),
    **dict.fromkeys(("\u00b5s", "micro", "micros", "microsecond", "microseconds"), 1_000),
    **dict.fromkeys(("ns", "nano", "nanos", "nanosecond", "nanoseconds"), 1),
}
"""Flink's ``TimeUtils`` unit labels (``TimeUtils.TimeUnit``) and their length in nanoseconds."""


def parse_duration(text: str) -> int:
    """Flink's ``TimeUtils.parseDuration`` (how a configuration value such as ``"5 s"`` becomes a duration), in
    milliseconds, truncated as ``Duration.toMillis``: digits, then an optional unit label (``ms``, ``s``/``sec``,
    ``min``/``m``, ``h``, ``d``, ... in any case; none means milliseconds). Raises :class:`ValueError` (an
    :class:`InvalidArgumentError`) for anything else."""
    trimmed = text.strip()
    digits = len(trimmed) - len(trimmed.lstrip("0123456789"))
    number, label = trimmed[:digits], trimmed[digits:].strip().lower()
    if not number:
        msg = f"duration {text!r} does not start with a number (Flink's form: <number> [<unit>], e.g. '500 ms', '5 s')"
        raise InvalidArgumentError(msg)
    if not label:
        return int(number)
    if label not in _UNIT_NANOS:
        msg = f"duration {text!r}: unit {label!r} is none of Flink's ({', '.join(sorted(set(_UNIT_NANOS)))})"
        raise InvalidArgumentError(msg)
    return int(number) * _UNIT_NANOS[label] // 1_000_000


__all__ = [
    "Duration",
    "Time",
    "TimeLike",
    "parse_duration",
    "to_millis",
]
