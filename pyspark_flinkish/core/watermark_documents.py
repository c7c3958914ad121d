"""Reading the plain-data documents of watermark state (what :mod:`.watermarks` and
:mod:`.watermark_alignment` write with ``to_dict``): each field is checked, a malformed one is a
:class:`~.errors.StateError` naming it, never a wrong watermark."""

from __future__ import annotations

from typing import Any, Dict

from .errors import StateError


def read_int(data: Dict[str, Any], name: str) -> int:
    """The int field ``name`` of a watermark state document (a bool is no int)."""
    value = data.get(name) if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"malformed watermark state: {name} must be an int; got {value!r}"
        raise StateError(msg)
    return value


def read_bool_list(data: Dict[str, Any], name: str, n: int) -> list:  # type: ignore[type-arg]
    """The field ``name``: exactly ``n`` booleans."""
    value = data.get(name)
    if not isinstance(value, list) or len(value) != n or not all(isinstance(v, bool) for v in value):
        msg = f"malformed watermark state: {name} must be {n} booleans; got {value!r}"
        raise StateError(msg)
    return value


__all__ = ["read_bool_list", "read_int"]
