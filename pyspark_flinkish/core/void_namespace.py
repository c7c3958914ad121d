"""The namespace of keyed state that is not scoped to a window (Flink's ``VoidNamespace``): one value,
:data:`VOID_NAMESPACE`, which ``core/state.py`` scopes such state by and ``core/codec.py`` writes as ``{"V": 1}``.
Its own module, so that the codec needs nothing of the state backend (which holds keys as ``core/key_identity.py``
tells them apart, by their bytes in the codec's encoding)."""

from __future__ import annotations

from typing import Hashable, Optional


class VoidNamespace:
    """The namespace of state that is not scoped to a window; one instance, :data:`VOID_NAMESPACE`."""

    _instance: Optional[VoidNamespace] = None

    def __new__(cls) -> VoidNamespace:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __reduce__(self) -> tuple:  # type: ignore[type-arg]
        return (VoidNamespace, ())

    def __repr__(self) -> str:
        return "VOID_NAMESPACE"


VOID_NAMESPACE: Hashable = VoidNamespace()

__all__ = ["VOID_NAMESPACE", "VoidNamespace"]
