"""``pyflink.datastream.output_tag``: ``OutputTag``."""

from __future__ import annotations

from ..core.records import OutputTag

__all__ = ["OutputTag"]
