"""``read_state``'s columnar decoding (``state_reader.value_columns``) is pinned to the per-value rule: on random
keyed snapshots (the state asked for next to other states, windows' state of the same name, timers, TTL-wrapped
values, values of another type than declared) and random keys, of every type it covers, it gives exactly the columns
of ``state_values`` followed by ``to_spark_value`` of each value."""

from __future__ import annotations

import math
from typing import Any, List, Tuple

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from pyspark_flinkish.common import Types
from pyspark_flinkish.core.codec import encode_snapshot
from pyspark_flinkish.core.rows import Row
from pyspark_flinkish.core.state import VOID_NAMESPACE
from pyspark_flinkish.core.state_ttl import TtlValue
from pyspark_flinkish.core.typeinfo import TypeInformation
from pyspark_flinkish.core.windows import TimeWindow
from pyspark_flinkish.spark.keys import encode_key
from pyspark_flinkish.spark.state_reader import (
    COLUMNAR_TYPES,
    columnar_type,
    state_values,
    value_arrays,
    value_columns,
)
from pyspark_flinkish.spark.types import to_spark_value

SCALARS = {
    "LONG": st.integers(min_value=-(2**63), max_value=2**63 - 1),
    "INT": st.integers(min_value=-(2**31), max_value=2**31 - 1),
    "SHORT": st.integers(min_value=-(2**15), max_value=2**15 - 1),
    "BYTE": st.integers(min_value=-128, max_value=127),
    "STRING": st.text(),
    "CHAR": st.text(max_size=1),
    "BOOLEAN": st.booleans(),
    "FLOAT": st.floats(width=32),
    "DOUBLE": st.floats(),
}
ANY_SCALAR = st.one_of(st.none(), st.integers(), st.text(max_size=5), st.booleans(), st.floats())


@st.composite
def declared(draw: Any) -> TypeInformation:
    """A basic type, or a ROW (named or not) / TUPLE of basic types."""
    basic = st.sampled_from(sorted(SCALARS))
    shape = draw(st.sampled_from(["basic", "row_named", "row", "tuple"]))
    if shape == "basic":
        return TypeInformation(draw(basic))
    children = [TypeInformation(n) for n in draw(st.lists(basic, min_size=1, max_size=3))]
    if shape == "row_named":
        names = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=len(children), max_size=len(children)))
        return Types.ROW_NAMED(names, children)  # duplicate names too: then the by-name rule is not positional
    if shape == "row":
        return Types.ROW(children)
    return Types.TUPLE(children)


def _value(draw: Any, t: TypeInformation) -> Any:
    """A value a state of type ``t`` holds: mostly of the type, sometimes of another (the conversion's rule for it
    must be the same), sometimes None or TTL-wrapped."""
    if draw(st.integers(0, 9)) == 0:
        return draw(ANY_SCALAR)
    if t.name in SCALARS:
        value = draw(SCALARS[t.name])
    else:
        fields = [draw(SCALARS[c.name]) if draw(st.integers(0, 5)) else None for c in t.children]
        form = draw(st.sampled_from(["named", "positional", "other_names", "tuple", "dict", "short"]))
        if form == "named" and t.field_names:
            value = Row(**dict(zip(t.field_names, fields))) if len(set(t.field_names)) == len(fields) else Row(*fields)
            if len(set(t.field_names)) != len(fields):
                value.set_field_names(list(t.field_names))
        elif form == "other_names":
            value = Row(*fields)
            value.set_field_names([f"x{i}" for i in range(len(fields))])
        elif form == "tuple":
            value = tuple(fields)
        elif form == "dict" and t.field_names:
            value = dict(zip(t.field_names, fields))
        elif form == "short" and len(fields) > 1:
            value = Row(*fields[:-1])
        else:
            value = Row(*fields)
    if draw(st.booleans()):
        return TtlValue(value, draw(st.integers(0, 10**13)))
    return value


@st.composite
def snapshots(draw: Any) -> Tuple[TypeInformation, TypeInformation, List[bytes], List[bytes]]:
    key_type = TypeInformation(draw(st.sampled_from(sorted(SCALARS))))
    value_type = draw(declared())
    keys, snaps = [], []
    for _ in range(draw(st.integers(0, 12))):
        keys.append(encode_key(draw(SCALARS[key_type.name])))
        state = {}
        if draw(st.integers(0, 4)):  # some keys do not hold the state asked for
            state[("total", VOID_NAMESPACE)] = _value(draw, value_type)
        if draw(st.booleans()):
            state[("total", TimeWindow(0, 10))] = draw(ANY_SCALAR)  # the same name in a window: not read
        if draw(st.booleans()):
            state[("other", VOID_NAMESPACE)] = draw(ANY_SCALAR)
        if draw(st.booleans()):
            state[("__internal", VOID_NAMESPACE)] = [draw(ANY_SCALAR)]
        items = list(state.items())
        order = draw(st.permutations(range(len(items))))
        timers = [(draw(st.integers(0, 10**13)), VOID_NAMESPACE)] if draw(st.booleans()) else []
        snapshot = {"state": dict(items[i] for i in order), "event_timers": timers, "processing_timers": []}
        snaps.append(encode_snapshot(snapshot))
    return key_type, value_type, keys, snaps


ARROW = {"LONG": pa.int64(), "INT": pa.int32(), "SHORT": pa.int16(), "BYTE": pa.int8(), "BOOLEAN": pa.bool_(),
         "STRING": pa.string(), "CHAR": pa.string(), "FLOAT": pa.float32(), "DOUBLE": pa.float64()}


def _arrow_type(t: TypeInformation) -> Any:
    if t.name in ARROW:
        return ARROW[t.name]
    names = t.field_names or [f"f{i}" for i in range(len(t.children))]
    return pa.struct([pa.field(n, ARROW[c.name]) for n, c in zip(names, t.children)])


def _arrays(columns: Any, types: Tuple[Any, Any]) -> Any:
    """The columns as ``read_state`` makes them Arrow arrays, or the exception that raises."""
    try:
        return [pa.array(c, type=t) for c, t in zip(columns, types)]
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
        return type(exc)


def _per_value(keys: List[bytes], snaps: List[bytes], key_type: TypeInformation, value_type: TypeInformation) -> Any:
    """The per-value rule: ``state_values`` then ``to_spark_value`` of each value; or the exception it raises."""
    try:
        rows = state_values(keys, snaps, "total", "value")
        return [to_spark_value(r[0], key_type) for r in rows], [to_spark_value(r[1], value_type) for r in rows]
    except Exception as exc:  # a value that does not fit the declared row
        return type(exc)


def _columns(keys: List[bytes], snaps: List[bytes], key_type: TypeInformation, value_type: TypeInformation) -> Any:
    try:
        return value_columns(keys, snaps, "total", key_type, value_type)
    except Exception as exc:
        return type(exc)


@settings(max_examples=200, deadline=None)
@given(snapshots())
def test_the_columnar_decoding_gives_the_per_value_codecs_columns(case: Any) -> None:
    """Both batch decodings against the per-value rule, compared as the Arrow arrays ``read_state`` yields (or the
    error it raises): ``value_columns`` (one ``json.loads`` per batch) always, ``value_arrays`` (Arrow's compute
    functions) where it takes the batch."""
    key_type, value_type, keys, snaps = case
    assert columnar_type(key_type) and columnar_type(value_type)
    types = (_arrow_type(key_type), _arrow_type(value_type))
    expected = _per_value(keys, snaps, key_type, value_type)
    got = _columns(keys, snaps, key_type, value_type)
    if isinstance(expected, type):  # the same error both ways
        assert got is expected
        return
    assert got is not None
    assert _same(got[0], expected[0]) and _same(got[1], expected[1])
    expected_arrays = _arrays(expected, types)
    arrays = value_arrays(pa.array(keys, pa.binary()), pa.array(snaps, pa.binary()), "total", key_type, value_type, types)
    if arrays is not None:
        assert not isinstance(expected_arrays, type), f"pa.array raises {expected_arrays}, value_arrays gave {arrays}"
        assert [a.type for a in arrays] == list(types)
        assert _same(arrays[0].to_pylist(), expected_arrays[0].to_pylist())
        assert _same(arrays[1].to_pylist(), expected_arrays[1].to_pylist())


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(SCALARS)), st.sampled_from(sorted(SCALARS)), st.data())
def test_value_arrays_takes_every_batch_of_simple_snapshots_and_gives_pa_arrays_of_the_per_value_rule(
    key_name: str, value_name: str, data: Any
) -> None:
    """Snapshots as a job writes them (the state first, a value of its type, NaN and infinities too): the Arrow
    path takes them unless a value needs the codec (non-finite floats, strings with escapes, integers declared
    as floats), and its arrays equal ``pa.array`` of the per-value rule's columns."""
    key_type, value_type = TypeInformation(key_name), TypeInformation(value_name)
    n = data.draw(st.integers(1, 20))
    raw_keys = [data.draw(SCALARS[key_name]) for _ in range(n)]
    keys = [encode_key(k) for k in raw_keys]
    values = [data.draw(SCALARS[value_name]) for _ in range(n)]
    snaps = [encode_snapshot({"state": {("total", VOID_NAMESPACE): v, ("other", VOID_NAMESPACE): 1},
                              "event_timers": [(5, VOID_NAMESPACE)], "processing_timers": []}) for v in values]
    types = (ARROW[key_name], ARROW[value_name])
    expected = _arrays(_per_value(keys, snaps, key_type, value_type), types)
    arrays = value_arrays(pa.array(keys, pa.binary()), pa.array(snaps, pa.binary()), "total", key_type, value_type, types)
    simple = all(math.isfinite(v) for v in values + raw_keys if type(v) is float) and all(b"\\" not in s for s in snaps + keys)
    if simple and not isinstance(expected, type):
        assert arrays is not None
    if arrays is not None:
        assert not isinstance(expected, type)
        assert _same(arrays[0].to_pylist(), expected[0].to_pylist())
        assert _same(arrays[1].to_pylist(), expected[1].to_pylist())


def _same(a: List[Any], b: List[Any]) -> bool:
    """Equal, NaN equal to NaN, and of the same types (True is not 1)."""

    def norm(v: Any) -> Any:
        if isinstance(v, float) and math.isnan(v):
            return ("nan",)
        if isinstance(v, tuple):
            return tuple(norm(x) for x in v)
        if isinstance(v, dict):
            return tuple((k, norm(x)) for k, x in v.items())
        return (type(v).__name__, v)

    return [norm(v) for v in a] == [norm(v) for v in b]


def test_only_basic_types_and_rows_of_them_are_decoded_by_columns() -> None:
    assert all(columnar_type(TypeInformation(n)) for n in COLUMNAR_TYPES)
    assert columnar_type(Types.ROW_NAMED(["a", "b"], [Types.LONG(), Types.STRING()]))
    assert not columnar_type(Types.LIST(Types.LONG()))
    assert not columnar_type(Types.ROW_NAMED(["a"], [Types.LIST(Types.LONG())]))
    assert not columnar_type(Types.SQL_TIMESTAMP()) and not columnar_type(Types.BIG_INT())
    assert not columnar_type(Types.PICKLED_BYTE_ARRAY())


def test_a_snapshot_that_is_not_json_is_left_to_the_per_value_decoding() -> None:
    assert value_columns([b"1"], [b"not json"], "total", Types.LONG(), Types.LONG()) is None
