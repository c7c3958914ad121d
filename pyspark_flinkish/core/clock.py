"""Processing-time clocks. The core never reads the wall clock itself: time is always injected."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> int:
        """Current processing time in epoch milliseconds."""
        ...


class SystemClock:
    """The wall clock (epoch milliseconds)."""

    def now(self) -> int:
        return time.time_ns() // 1_000_000

    def __repr__(self) -> str:
        return "SystemClock()"


class ManualClock:
    """A clock that only moves when told to: deterministic tests of idleness and processing time."""

    def __init__(self, start: int = 0) -> None:
        self._now = int(start)

    def now(self) -> int:
        return self._now

    def set(self, now: int) -> None:
        if now < self._now:
            msg = f"ManualClock cannot go backwards: {now} < {self._now}"
            raise ValueError(msg)
        self._now = int(now)

    def advance(self, millis: int) -> None:
        self.set(self._now + int(millis))

    def __repr__(self) -> str:
        return f"ManualClock({self._now})"


__all__ = [
    "Clock",
    "SystemClock",
    "ManualClock",
]
