"""``pyflink.common.typeinfo``: ``Types`` and ``TypeInformation``."""

from __future__ import annotations

from ..core.typeinfo import TypeInformation, Types

__all__ = ["TypeInformation", "Types"]
