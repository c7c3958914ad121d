"""``pyflink.common.time``: ``Time`` and ``Duration``."""

from __future__ import annotations

from ..core.durations import Duration, Time

__all__ = ["Duration", "Time"]
