"""Recognise key selectors that only read fields: ``lambda r: r.user``, ``lambda r: r["user"]``, ``lambda r: r[0]``,
``lambda r: (r.user, r.region)``.

The Spark executors can then compute the key as columns, without calling Python per element. The selector is
called once on a probe that records field reads and refuses everything else (arithmetic, comparisons, ``str()``,
hashing, truth tests, method calls): any such use, any exception, or any result other than the probe's fields
means "not a plain field selector", and the selector is then called per element as usual.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple, Union

FieldName = Union[str, int]


class _RefusedError(Exception):
    pass


class _Field:
    __slots__ = ("name",)

    def __init__(self, name: FieldName) -> None:
        object.__setattr__(self, "name", name)

    def __getattr__(self, item: str) -> Any:
        raise _RefusedError(item)

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise _RefusedError(args)

    __call__ = __getitem__ = __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __mod__ = __rmod__ = _refuse
    __truediv__ = __floordiv__ = __neg__ = __hash__ = __bool__ = __len__ = __iter__ = _refuse
    __str__ = __repr__ = __format__ = __int__ = __float__ = __index__ = __contains__ = _refuse


class _Probe:
    __slots__ = ()

    def __getattr__(self, name: str) -> _Field:
        if name.startswith("__"):
            raise _RefusedError(name)
        return _Field(name)

    def __getitem__(self, item: Any) -> _Field:
        if type(item) not in (str, int):
            raise _RefusedError(repr(item))
        return _Field(item)

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise _RefusedError(args)

    __call__ = __eq__ = __hash__ = __bool__ = __len__ = __iter__ = __str__ = __repr__ = __format__ = _refuse
    __contains__ = _refuse


def field_selector(selector: Callable[[Any], Any]) -> Optional[Tuple[Tuple[FieldName, ...], bool]]:
    """``(fields, is_tuple)`` when ``selector`` returns one field or a tuple of fields of its argument, else None."""
    try:
        result = selector(_Probe())
    except Exception:
        return None
    if type(result) is _Field:
        return (result.name,), False
    if type(result) is tuple and result and all(type(r) is _Field for r in result):
        return tuple(r.name for r in result), True
    return None


__all__ = [
    "FieldName",
    "field_selector",
]
