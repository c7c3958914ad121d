"""PyFlink's ``ExecutionConfig`` (``env.get_config()``): the settings of it that mean something here.

Settings Flink uses for its own runtime (closure cleaner, Kryo, object reuse, latency tracking, task cancellation)
are not offered: a PyFlink program calling them fails with ``AttributeError`` instead of being silently ignored.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import InvalidArgumentError, UnsupportedFeatureError

DEFAULT_AUTO_WATERMARK_INTERVAL_MS = 200
"""Flink's default ``pipeline.auto-watermark-interval``."""


class ExecutionConfig:
    """The environment's execution settings (``env.get_config()``), shared with the environment: its
    ``set_parallelism`` is the environment's."""

    def __init__(self, env: Any) -> None:
        self._env = env
        self._auto_watermark_interval = DEFAULT_AUTO_WATERMARK_INTERVAL_MS

    def set_auto_watermark_interval(self, interval: int) -> ExecutionConfig:
        """Flink's periodic watermark interval (ms). **Here watermarks are emitted once per micro-batch** (the end
        of every ``MicroBatch`` on the JVM-free engine, of every Spark trigger on Spark): the value is recorded for
        ``get_auto_watermark_interval``; the micro-batch (``MicroBatch`` boundaries, the Spark ``trigger``) sets the
        cadence. ``0`` (Flink: no periodic watermarks at all) is refused: use ``WatermarkStrategy.no_watermarks()``."""
        if not isinstance(interval, int) or interval < 0:
            msg = f"set_auto_watermark_interval needs an int >= 0 (ms); got {interval!r}"
            raise InvalidArgumentError(msg)
        if interval == 0:
            msg = (
                "set_auto_watermark_interval(0) turns periodic watermarks off in Flink; here they are emitted once per "
                "micro-batch and cannot be turned off: use WatermarkStrategy.no_watermarks() for a stream without them"
            )
            raise UnsupportedFeatureError(msg)
        self._auto_watermark_interval = interval
        return self

    def get_auto_watermark_interval(self) -> int:
        return self._auto_watermark_interval

    def set_parallelism(self, parallelism: int) -> ExecutionConfig:
        self._env.set_parallelism(parallelism)
        return self

    def get_parallelism(self) -> int:
        return int(self._env.get_parallelism())

    def set_max_parallelism(self, max_parallelism: int) -> ExecutionConfig:
        self._env.set_max_parallelism(max_parallelism)
        return self

    def get_max_parallelism(self) -> int:
        return int(self._env.get_max_parallelism())


__all__ = ["DEFAULT_AUTO_WATERMARK_INTERVAL_MS", "ExecutionConfig"]
