"""``pyflink.common.watermark_strategy``: ``WatermarkStrategy`` and ``TimestampAssigner``."""

from __future__ import annotations

from ..core.watermarks import TimestampAssigner, WatermarkStrategy

__all__ = ["TimestampAssigner", "WatermarkStrategy"]
