"""Functions built once per type information, so that what runs per record walks only the value.

The shaping (:func:`~pyspark_flinkish.core.rows.shaper_for`), the coding
(:func:`~pyspark_flinkish.core.coders.coder_for`) and the two together
(:func:`~pyspark_flinkish.core.declared_output.declaring_function`) of a declared type are each built by one
:class:`PerType` cache.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

_CACHED_TYPES = 4096


class PerType:
    """``build(type_info)``, built once per type information object: cached by identity (a type information need
    not be hashable), each entry holding its object so that its ``id`` stays its own; emptied when it holds
    ``limit`` entries."""

    __slots__ = ("_build", "_cache", "_limit")

    def __init__(self, build: Callable[[Any], Callable[[Any], Any]], limit: int = _CACHED_TYPES) -> None:
        self._build = build
        self._cache: Dict[int, Tuple[Any, Callable[[Any], Any]]] = {}
        self._limit = limit

    def __call__(self, type_info: Any) -> Callable[[Any], Any]:
        found = self._cache.get(id(type_info))
        if found is not None and found[0] is type_info:
            return found[1]
        built = self._build(type_info)
        if len(self._cache) >= self._limit:
            self._cache.clear()
        self._cache[id(type_info)] = (type_info, built)
        return built


__all__ = ["PerType"]
