"""Declared output's per-type functions (``rows.shaper_for``, ``coders.coder_for``, ``declaring_function``) against
the generic rule they replaced: the walks that re-read the type per value (kept here, as they stood before the
per-type builders, as the oracle). Over generated types and values, fitting or not, both give the same value (its
types, reprs, row kinds, identity) or raise the same exception with the same message (and the same cause)."""

from __future__ import annotations

import datetime
import decimal
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyspark_flinkish.common import Types
from pyspark_flinkish.core.coders import CoderError, coded, coder_for, is_coded, type_name
from pyspark_flinkish.core.declared_output import declared, declaring_function
from pyspark_flinkish.core.rows import Row, RowKind, as_declared, needs_conversion, shaper_for

# ---------------------------------------------------------------------------------------------- the generic rule
_BASIC_NAMES = (
    "FLOAT", "DOUBLE", "BYTE", "SHORT", "INT", "LONG", "BIG_INT", "BOOLEAN", "STRING", "CHAR", "BIG_DEC", "SQL_DATE",
    "SQL_TIME", "SQL_TIMESTAMP",
)  # fmt: skip
_NESTED = ("ROW", "TUPLE", "LIST", "BASIC_ARRAY", "PRIMITIVE_ARRAY", "OBJECT_ARRAY", "MAP")
_REFUSED = (TypeError, ValueError, OverflowError, AttributeError, decimal.InvalidOperation)


def _basic(name: str) -> Any:
    """The basic type's conversion, taken from the per-type coder of that type alone (its leaf, not the walk)."""
    leaf = coder_for(getattr(Types, name)())

    def convert(value: Any) -> Any:
        try:
            return leaf(value)
        except CoderError as exc:
            raise exc.cause from None

    return convert


def generic_coded(value: Any, type_info: Any) -> Any:
    try:
        return _generic_coded(value, type_info)
    except CoderError:
        raise
    except _REFUSED as exc:
        msg = f"{value!r} is not a value of {type_name(type_info)}: PyFlink raises {type(exc).__name__}: {exc}"
        raise CoderError(msg, exc) from exc


def _generic_coded(value: Any, type_info: Optional[Any]) -> Any:
    if value is None or type_info is None:
        return value
    name = type_info.name
    if name in _BASIC_NAMES:
        try:
            return _basic(name)(value)
        except _REFUSED as exc:
            msg = (
                f"{value!r} ({type(value).__name__}) is not a value of {type_name(type_info)}: "
                f"PyFlink raises {type(exc).__name__}: {exc}"
            )
            raise CoderError(msg, exc) from exc
    if name not in _NESTED or not is_coded(type_info):
        return value
    children = type_info.children
    if name == "ROW":
        fields = [_generic_coded(v, c) for v, c in zip(value, children)]
        if all(a is b for a, b in zip(fields, value)):
            return value
        row = Row(*fields)
        row.set_field_names(list(type_info.field_names))
        row.set_row_kind(value.get_row_kind())
        return row
    if name == "TUPLE":
        return tuple(_generic_coded(v, c) for v, c in zip(value, children))
    if name == "MAP":
        return {_generic_coded(k, children[0]): _generic_coded(v, children[1]) for k, v in value.items()}
    return [_generic_coded(v, children[0]) for v in value]


def generic_as_declared(value: Any, type_info: Any) -> Any:
    if value is None or type_info is None:
        return value
    name = type_info.name
    children = type_info.children
    if name == "ROW":
        names = type_info.field_names
        kind = RowKind.INSERT
        if isinstance(value, Row):
            kind = value.get_row_kind()
            items = [value[n] for n in names] if hasattr(value, "_fields") else list(value)
        elif isinstance(value, dict):
            items = [value.get(n) for n in names]
        elif isinstance(value, tuple) and hasattr(value, "__fields__"):
            as_dict = dict(zip(value.__fields__, value))
            items = [as_dict.get(n) for n in names]
        elif isinstance(value, (tuple, list)):
            items = list(value)
        elif hasattr(value, "__dict__"):
            items = [value.__dict__.get(n) for n in names]
        else:
            msg = f"Unexpected tuple {value!r} with RowTypeInfo {type_info!r}"
            raise ValueError(msg)
        if len(items) != len(children):
            msg = f"{value!r} has {len(items)} fields; {type_info!r} has {len(children)}"
            raise ValueError(msg)
        row = Row(*[generic_as_declared(v, c) for v, c in zip(items, children)])
        row.set_field_names(list(names))
        row.set_row_kind(kind)
        return row
    if name == "TUPLE":
        items = list(value)
        if len(items) != len(children):
            msg = f"{value!r} has {len(items)} fields; {type_info!r} has {len(children)}"
            raise ValueError(msg)
        return tuple(generic_as_declared(v, c) for v, c in zip(items, children))
    if name in ("LIST", "BASIC_ARRAY", "PRIMITIVE_ARRAY", "OBJECT_ARRAY"):
        return [generic_as_declared(v, children[0]) for v in value]
    if name == "MAP":
        return {generic_as_declared(k, children[0]): generic_as_declared(v, children[1]) for k, v in value.items()}
    return value


def generic_declared(value: Any, type_info: Any) -> Any:
    if needs_conversion(type_info):
        value = generic_as_declared(value, type_info)
    return generic_coded(value, type_info) if is_coded(type_info) else value


# ---------------------------------------------------------------------------------------------- types and values
_LEAVES = [getattr(Types, n)() for n in _BASIC_NAMES] + [Types.PICKLED_BYTE_ARRAY(), Types.INSTANT()]


def _types() -> st.SearchStrategy[Any]:
    def struct(kind: str, ts: Any) -> Any:
        if kind == "ROW_NAMED":
            return Types.ROW_NAMED([f"n{len(ts) - i}" for i in range(len(ts))], ts)
        return getattr(Types, kind)(ts)

    def nested(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        structs = st.tuples(st.sampled_from(["TUPLE", "ROW", "ROW_NAMED"]), st.lists(children, max_size=4))
        arrays = st.tuples(st.sampled_from(["LIST", "BASIC_ARRAY", "PRIMITIVE_ARRAY", "OBJECT_ARRAY"]), children)
        return st.one_of(
            structs.map(lambda p: struct(*p)),
            structs.map(lambda p: struct(*p)),  # twice as likely as an array or a map
            arrays.map(lambda p: getattr(Types, p[0])(p[1])),
            st.tuples(st.sampled_from(_LEAVES), children).map(lambda kv: Types.MAP(*kv)),
        )

    return st.recursive(st.sampled_from(_LEAVES), nested, max_leaves=8)


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**31, -(2**31) - 1, 2**63, -(2**63) - 1, 255, 256, -1]),
    st.floats(allow_nan=True),
    st.text(max_size=3),
    st.binary(max_size=2),
    st.decimals(allow_nan=False, places=3),
    st.sampled_from([decimal.Decimal("NaN"), decimal.Decimal("-0"), decimal.Decimal("Infinity")]),
    st.dates(),
    st.times(timezones=st.sampled_from([None, datetime.UTC])),
    st.datetimes(min_value=datetime.datetime(1900, 1, 1), max_value=datetime.datetime(2100, 1, 1)),
)
_HASHABLE = _SCALARS.filter(lambda v: not (isinstance(v, decimal.Decimal) and v.is_nan()))


def _named_row(names: Any, values: list) -> Row:
    row = Row(**dict(zip(names, values)))
    return row


def _values(type_info: Any) -> st.SearchStrategy[Any]:
    """Values of ``type_info``'s shape (whose leaves may not fit) and values of the wrong shape."""
    name = type_info.name
    if name in ("ROW", "TUPLE"):
        children = type_info.children
        fields = st.tuples(*[_values(c) for c in children]).map(list) if children else st.just([])
        shaped = [fields.map(tuple), fields, fields.map(lambda vs: Row(*vs))]
        if name == "ROW":
            names = type_info.field_names
            shaped += [
                fields.map(lambda vs: _named_row(names, vs)),
                fields.map(lambda vs: dict(zip(names, vs))),
                st.tuples(fields, st.sampled_from(list(RowKind))).map(lambda p: Row.of_kind(p[1], *p[0])),
            ]
        wrong = st.lists(_SCALARS, max_size=3).map(tuple)
        return st.one_of(*shaped, wrong, _SCALARS)
    if name in ("LIST", "BASIC_ARRAY", "PRIMITIVE_ARRAY", "OBJECT_ARRAY"):
        elements = st.lists(_values(type_info.children[0]), max_size=3)
        return st.one_of(elements, elements.map(tuple), _SCALARS)
    if name == "MAP":
        entries = st.dictionaries(_HASHABLE, _values(type_info.children[1]), max_size=3)
        return st.one_of(entries, _SCALARS)
    return _SCALARS


def _typed_values() -> st.SearchStrategy[Any]:
    return _types().flatmap(lambda t: st.tuples(st.just(t), _values(t)))


def _outcome(fn: Any, value: Any, type_info: Any) -> Any:
    """What ``fn(value, type_info)`` gives, to the byte: the value (types, reprs, row kinds, whether it is ``value``
    itself) or the exception (type, message, and a CoderError's cause)."""
    try:
        result = fn(value, type_info)
    except CoderError as exc:
        return ("raises", type(exc), str(exc), type(exc.cause), str(exc.cause))
    except Exception as exc:  # any exception must be the same on both sides
        return ("raises", type(exc), str(exc))
    return ("value", _canon(result), result is value)


def _canon(x: Any) -> Any:
    if isinstance(x, Row):
        return ("Row", repr(x), str(x.get_row_kind()), [_canon(v) for v in x])
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, [_canon(v) for v in x])
    if isinstance(x, dict):
        return ("dict", [(_canon(k), _canon(v)) for k, v in x.items()])
    return (type(x).__name__, repr(x))


# ---------------------------------------------------------------------------------------------- properties
@settings(max_examples=400, deadline=None)
@given(_typed_values())
def test_per_type_functions_equal_the_generic_rule(typed: Any) -> None:
    type_info, value = typed
    assert _outcome(lambda v, t: shaper_for(t)(v), value, type_info) == _outcome(generic_as_declared, value, type_info)
    assert _outcome(as_declared, value, type_info) == _outcome(generic_as_declared, value, type_info)
    shaped = generic_as_declared(value, type_info) if _outcome(generic_as_declared, value, type_info)[0] == "value" else value
    for v in (value, shaped):
        assert _outcome(lambda v, t: coder_for(t)(v), v, type_info) == _outcome(generic_coded, v, type_info)
        assert _outcome(coded, v, type_info) == _outcome(generic_coded, v, type_info)
    assert _outcome(declared, value, type_info) == _outcome(generic_declared, value, type_info)


def test_the_examples_cover_refusals_and_values() -> None:
    """The generator reaches both sides of the rule: values that code, coder refusals and wrong shapes."""
    seen = set()

    @settings(max_examples=120, deadline=None, database=None)
    @given(_typed_values())
    def collect(typed: Any) -> None:
        type_info, value = typed
        outcome = _outcome(generic_declared, value, type_info)
        seen.add(outcome[0] if outcome[0] == "value" else outcome[1].__name__)

    collect()
    assert {"value", "CoderError", "ValueError"} <= seen, seen


def test_built_once_per_type_information() -> None:
    t = Types.TUPLE([Types.LONG()] * 4)
    assert coder_for(t) is coder_for(t)
    assert shaper_for(t) is shaper_for(t)
    assert declaring_function(t) is declaring_function(t)
    # an equal type information of its own (a RowData's repr differs) gets its own functions
    u = Types.TUPLE([Types.LONG()] * 4)
    assert u == t and coder_for(u) is not coder_for(t)
    assert declaring_function(t)([1, 2.9, True, -3]) == (1, 2, 1, -3)


def test_refusals_name_the_value_and_the_type() -> None:
    t = Types.TUPLE([Types.LONG(), Types.INT()])
    with pytest.raises(CoderError) as info:
        declared((1, 2**40), t)
    assert str(info.value) == (
        "1099511627776 (int) is not a value of Types.INT(): PyFlink raises OverflowError: "
        "value too large to convert to int32_t"
    )
    assert isinstance(info.value.cause, OverflowError)
    with pytest.raises(CoderError) as info:
        coded(5, Types.MAP(Types.STRING(), Types.LONG()))
    assert str(info.value) == (
        "5 is not a value of MAP(STRING, LONG): PyFlink raises AttributeError: 'int' object has no attribute 'items'"
    )
