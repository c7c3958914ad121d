"""``pyflink.common.types``: ``Row`` and ``RowKind``."""

from __future__ import annotations

from ..core.rows import Row, RowKind

__all__ = ["Row", "RowKind"]
