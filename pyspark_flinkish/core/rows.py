"""PyFlink's ``Row`` and ``RowKind`` (``pyflink.common.types``), with PyFlink 2.3's behaviour.

A ``Row`` is a fixed-length composite of values, positional (``Row("a", 1)``) or named
(``Row(name="a", count=1)``, names kept in the order given). Fields are reachable by position (``row[0]``) and,
when the row has names, by name (``row["name"]``, ``row.name``). A row also carries its change kind
(:class:`RowKind`, ``+I`` by default). Equality, hashing, ``repr`` (which ``str`` and ``print`` use) and pickling
are PyFlink's: named rows are equal when they hold the same names with the same values and the same kind,
whatever the names' order; a named row never equals a positional one; ``hash`` is that of the values' tuple.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from .per_type import PerType


class RowKind(Enum):
    """The kind of change a row stands for in a changelog; ``str`` gives Flink's short form (``+I``, ``-U``,
    ``+U``, ``-D``)."""

    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3

    def __str__(self) -> str:
        return _SHORT[self.value]


_SHORT = {0: "+I", 1: "-U", 2: "+U", 3: "-D"}


def _create_row(fields: Optional[Sequence[str]], values: Sequence[Any], row_kind: Optional[RowKind] = None) -> Row:
    """A row of ``values`` with the names ``fields`` (None: positional) and ``row_kind``; pickling's constructor."""
    row = Row(*values)
    if fields is not None:
        row._fields = list(fields)
    if row_kind is not None:
        row.set_row_kind(row_kind)
    return row


class Row:
    """A row (``pyflink.common.Row``): ``Row(1, "a")`` (positional fields), ``Row(id=1, name="a")`` (named
    fields, in the order given), or ``Row("id", "name")`` used as a factory: ``Row("id", "name")(1, "a")`` is
    ``Row(id=1, name='a')``."""

    _fields: List[str]
    _values: List[Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args and kwargs:
            msg = "Can not use both args and kwargs to create Row"
            raise ValueError(msg)
        if kwargs:
            self._fields = list(kwargs)
            self._values = [kwargs[n] for n in self._fields]
            self._from_dict = True
        else:
            self._values = list(args)
            self._from_dict = False
        self._row_kind = RowKind.INSERT

    # ------------------------------------------------------------------ PyFlink's methods
    def as_dict(self, recursive: bool = False) -> Dict[str, Any]:
        """The named fields as a dict (nested rows, lists and dicts converted too when ``recursive``); a
        positional row has no names and raises ``TypeError``."""
        if not hasattr(self, "_fields"):
            msg = "Cannot convert a Row class into dict"
            raise TypeError(msg)
        if not recursive:
            return dict(zip(self._fields, self))

        def conv(obj: Any) -> Any:
            if isinstance(obj, Row):
                return obj.as_dict(True)
            if isinstance(obj, list):
                return [conv(o) for o in obj]
            if isinstance(obj, dict):
                return {k: conv(v) for k, v in obj.items()}
            return obj

        return dict(zip(self._fields, (conv(o) for o in self)))

    def get_row_kind(self) -> RowKind:
        return self._row_kind

    def set_row_kind(self, row_kind: RowKind) -> None:
        self._row_kind = row_kind

    def set_field_names(self, field_names: List[str]) -> None:
        self._fields = field_names

    def get_fields_by_names(self, names: List[str]) -> List[Any]:
        """The values of the named fields, in the order of ``names``."""
        if not hasattr(self, "_fields") or names == self._fields:
            return self._values
        missing = list(set(names).difference(set(self._fields)))
        if missing:
            msg = f"Field names {missing} not exist in {self._fields}."
            raise Exception(msg)
        return [self._values[self._fields.index(name)] for name in names]

    @staticmethod
    def of_kind(row_kind: RowKind, *args: Any, **kwargs: Any) -> Row:
        """``Row(*args, **kwargs)`` of the given kind."""
        row = Row(*args, **kwargs)
        row.set_row_kind(row_kind)
        return row

    # ------------------------------------------------------------------ container protocol
    def __contains__(self, item: Any) -> bool:
        if getattr(self, "_fields", None) is not None:
            return item in self._fields
        return item in self._values

    def __call__(self, *args: Any) -> Row:
        """A row used as a factory (``Row("id", "name")``) makes named rows of its values as names."""
        if len(args) > len(self):
            msg = f"Can not create Row with fields {self}, expected {len(self)} values but got {args}"
            raise ValueError(msg)
        return _create_row(self._values, args, self._row_kind)

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, (int, slice)):
            return self._values[item]
        try:
            return self._values[self._fields.index(item)]
        except IndexError:
            raise KeyError(item) from None
        except ValueError:
            raise ValueError(item) from None

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, (int, slice)):
            self._values[key] = value
            return
        try:
            self._values[self._fields.index(key)] = value
        except (IndexError, AttributeError):
            raise KeyError(key) from None
        except ValueError:
            raise ValueError(value) from None

    def __getattr__(self, item: str) -> Any:
        if item.startswith("_"):
            raise AttributeError(item)
        try:
            return self[self._fields.index(item)]
        except (IndexError, ValueError):
            raise AttributeError(item) from None

    def __setattr__(self, key: str, value: Any) -> None:
        if key not in ("_fields", "_from_dict", "_row_kind", "_values"):
            raise AttributeError(key)
        self.__dict__[key] = value

    def __reduce__(self) -> Any:
        return _create_row, (getattr(self, "_fields", None), tuple(self), self._row_kind)

    def __repr__(self) -> str:
        if hasattr(self, "_fields"):
            fields = ", ".join(f"{k}={v!r}" for k, v in zip(self._fields, tuple(self)))
            return f"Row({fields})"
        values = ", ".join(repr(v) for v in self)
        return f"<Row({values})>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Row) or self.__class__ != other.__class__:
            return False
        if self._row_kind != other._row_kind:
            return False
        if hasattr(self, "_fields"):
            if not hasattr(other, "_fields") or sorted(self._fields) != sorted(other._fields):
                return False
            names = sorted(self._fields)
            mine = [self._values[self._fields.index(n)] for n in names]
            return mine == [other._values[other._fields.index(n)] for n in names]
        return not hasattr(other, "_fields") and self._values == other._values

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def needs_conversion(type_info: Any) -> bool:
    """Whether values declared as ``type_info`` can differ from what Flink would hand on (a ``ROW`` or ``TUPLE``
    somewhere in it): :func:`as_declared` is the identity otherwise."""
    name = getattr(type_info, "name", None)
    if name in ("ROW", "TUPLE"):
        return True
    return any(needs_conversion(c) for c in getattr(type_info, "children", ()))


def as_declared(value: Any, type_info: Any) -> Any:
    """``value`` as Flink hands it on after serializing it with ``type_info`` (PyFlink's coders): a ``ROW`` is a
    :class:`Row` with the type's field names (its kind kept; from a named ``Row``, a ``pyspark.sql.Row``, a dict or
    an object's attributes by name, from a positional ``Row``, a tuple or list by position), a ``TUPLE`` a tuple,
    a ``LIST``/array a list, a ``MAP`` a dict, nested types converted likewise; other values are left as they are.
    A value that does not fit a ``ROW`` or ``TUPLE`` raises ``ValueError``, as PyFlink's serializer does.
    The rule is :func:`shaper_for`'s (what an operator's output calls per record)."""
    return shaper_for(type_info)(value)


def shaper_for(type_info: Any) -> Callable[[Any], Any]:
    """:func:`as_declared` for values of ``type_info``: the function is built once per type information (cached
    by identity), so that per value only the value is walked."""
    return _SHAPERS(type_info)


def _same(value: Any) -> Any:
    return value


def _shaper(type_info: Any) -> Optional[Callable[[Any], Any]]:
    """The shaping of values of ``type_info`` (None: values are left as they are)."""
    if type_info is None:
        return None
    try:
        name = type_info.name
        children = type_info.children
        if name == "ROW":
            return _row_shaper(type_info, children, type_info.field_names)
    except AttributeError:
        return _unread(type_info)
    if name == "TUPLE":
        return _tuple_shaper(type_info, children)
    if name in ("LIST", "BASIC_ARRAY", "PRIMITIVE_ARRAY", "OBJECT_ARRAY", "MAP"):
        element = _child(children, 0)
        if name != "MAP":
            return lambda value: None if value is None else [element(v) for v in value]
        item = _child(children, 1)
        return lambda value: None if value is None else {element(k): item(v) for k, v in value.items()}
    return None


def _child(children: Tuple[Any, ...], i: int) -> Callable[[Any], Any]:
    if i < len(children):
        return _shaper(children[i]) or _same

    def missing(value: Any) -> Any:
        return children[i]  # raises IndexError where the rule reads the missing child

    return missing


def _unread(type_info: Any) -> Callable[[Any], Any]:
    # not a type information: a value (not None) fails where the rule reads the attribute it lacks
    def shape(value: Any) -> Any:
        if value is None:
            return None
        if type_info.name == "ROW" and type_info.children is not None:
            return type_info.field_names
        return type_info.children

    return shape


_SHAPERS = PerType(lambda type_info: _shaper(type_info) or _same)


def _field_shapers(children: Tuple[Any, ...]) -> Tuple[List[Callable[[Any], Any]], bool]:
    """The shapers of a ``ROW``'s or ``TUPLE``'s fields, and whether every field is left as it is."""
    fields = [_shaper(c) for c in children]
    return [f or _same for f in fields], not any(fields)


def _row_shaper(type_info: Any, children: Tuple[Any, ...], names: Tuple[str, ...]) -> Callable[[Any], Any]:
    shapers, plain = _field_shapers(children)
    count = len(children)

    def shape(value: Any) -> Any:
        if value is None:
            return None
        kind = RowKind.INSERT
        if isinstance(value, Row):
            kind = value.get_row_kind()
            items = [value[n] for n in names] if hasattr(value, "_fields") else list(value)
        elif isinstance(value, dict):
            items = [value.get(n) for n in names]
        elif isinstance(value, tuple) and hasattr(value, "__fields__"):  # a pyspark.sql.Row: by name
            as_dict = dict(zip(value.__fields__, value))
            items = [as_dict.get(n) for n in names]
        elif isinstance(value, (tuple, list)):
            items = list(value)
        elif hasattr(value, "__dict__"):
            items = [value.__dict__.get(n) for n in names]
        else:
            msg = f"Unexpected tuple {value!r} with RowTypeInfo {type_info!r}"
            raise ValueError(msg)
        if len(items) != count:
            msg = f"{value!r} has {len(items)} fields; {type_info!r} has {count}"
            raise ValueError(msg)
        return _create_row(names, items if plain else [f(v) for v, f in zip(items, shapers)], kind)

    return shape


def _tuple_shaper(type_info: Any, children: Tuple[Any, ...]) -> Callable[[Any], Any]:
    shapers, plain = _field_shapers(children)
    count = len(children)

    def shape(value: Any) -> Any:
        if value is None:
            return None
        items = list(value)
        if len(items) != count:
            msg = f"{value!r} has {len(items)} fields; {type_info!r} has {count}"
            raise ValueError(msg)
        return tuple(items) if plain else tuple([f(v) for v, f in zip(items, shapers)])

    return shape


__all__ = ["Row", "RowKind", "as_declared", "needs_conversion", "shaper_for"]
