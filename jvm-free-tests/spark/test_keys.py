"""A key's bytes on Spark (``spark/keys.py``: ``encode_key``, ``core.key_identity.key_bytes``) are a function of its
identity (``core.key_identity.distinct_key``): two keys have equal bytes, and so one state, state partition and
cache entry, exactly when Flink holds them as one key, whatever form the key selector returned them in (a tuple, a
positional or a named ``Row``, in the type's order or not), for every declared key type (basic types, ``TUPLE`` and
``ROW`` of them, ``BIG_DEC``, ``BIG_INT``, SQL times, lists) and keys that are not of their type."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from typing import Any, List

from hypothesis import example, given, settings
from hypothesis import strategies as st

from pyspark_flinkish.common import Row, RowKind, Types
from pyspark_flinkish.core.key_identity import DistinctKey, distinct_key, plain_key
from pyspark_flinkish.spark.keys import decode_key, encode_key, state_partition

_SCALARS = {
    "STRING": Types.STRING,
    "CHAR": Types.CHAR,
    "BOOLEAN": Types.BOOLEAN,
    "BYTE": Types.BYTE,
    "INT": Types.INT,
    "LONG": Types.LONG,
    "FLOAT": Types.FLOAT,
    "DOUBLE": Types.DOUBLE,
    "BIG_INT": Types.BIG_INT,
    "BIG_DEC": Types.BIG_DEC,
    "SQL_DATE": Types.SQL_DATE,
    "SQL_TIMESTAMP": Types.SQL_TIMESTAMP,
}
# few values, so that keys meet: Python-equal ones of other types or forms (1, True, 1.0, Decimal("1"), ...)
_VALUES = st.sampled_from(
    [
        None, 0, 1, True, False, -1, 2**40, 0.0, -0.0, 1.0, 0.1, 0.1 + 1e-12, 1.5, math.nan, math.inf,
        Decimal("1"), Decimal("1.0"), Decimal("1.00"), Decimal("0.1"), "a", "1", "ab", "",
        datetime.date(2024, 1, 2), datetime.datetime(2024, 1, 2, 3, 4, 5, 6000), datetime.datetime(2024, 1, 2, 3, 4, 5, 6999),
    ]
)  # fmt: skip


@st.composite
def _key_type_and_keys(draw: Any) -> Any:
    """A key type (a scalar, a ``TUPLE``, a ``ROW``/``ROW_NAMED``, a ``LIST``, or a ``ROW`` holding a ``TUPLE``) and
    keys for it in every form a selector may return: tuples, lists, positional and named rows (names in the type's
    order or reversed, another row kind), and values not of the type."""
    shape = draw(st.sampled_from(["scalar", "tuple", "row", "row_positional", "list", "nested"]))
    n = 1 if shape in ("scalar", "list") else draw(st.integers(1, 3))
    leaves = [_SCALARS[draw(st.sampled_from(sorted(_SCALARS)))]() for _ in range(n)]
    names = [f"k{i}" for i in range(n)]
    key_type = {
        "scalar": lambda: leaves[0],
        "list": lambda: Types.LIST(leaves[0]),
        "tuple": lambda: Types.TUPLE(leaves),
        "row": lambda: Types.ROW_NAMED(names, leaves),
        "row_positional": lambda: Types.ROW(leaves),
        "nested": lambda: Types.ROW_NAMED(["t", "s"], [Types.TUPLE(leaves), Types.STRING()]),
    }[shape]()
    field_names = names if shape == "row" else [f"f{i}" for i in range(n)]

    def form(values: List[Any], variant: int) -> Any:
        if variant == 0:
            return tuple(values)
        if variant == 1:
            return list(values)
        if variant == 2:
            return Row(*values)
        row = Row(**dict(zip(field_names, values)))
        if variant == 3:
            return row
        if variant == 4:
            return Row(**dict(reversed(list(zip(field_names, values)))))
        row.set_row_kind(RowKind.UPDATE_AFTER)
        return row

    def key(values: List[Any], variant: int) -> Any:
        if shape == "scalar":
            return values[0]
        if shape == "list":
            return list(values) if variant % 2 else tuple(values)
        if shape == "nested":
            inner = tuple(values) if variant % 2 else Row(*values)
            return (inner, "s") if variant < 3 else Row(s="s", t=inner)
        return form(values, variant)

    drawn = draw(st.lists(st.tuples(st.lists(_VALUES, min_size=n, max_size=n), st.integers(0, 5)), min_size=1, max_size=8))
    return key_type, [key(v, variant) for v, variant in drawn]


def _same_key(a: Any, b: Any) -> bool:
    """Whether two distinct keys are one key (a NaN in a key held as Python holds it is not equal to itself)."""
    return a is b or a == b


@settings(max_examples=400, deadline=None)
@given(_key_type_and_keys())
@example((Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()]), [Row(id=1, name="a"), (1, "a"), Row(1, "a")]))
@example((Types.ROW_NAMED(["k0", "k1"], [Types.STRING(), Types.INT()]), [Row(k0="a", k1=1), Row(k1=1, k0="a")]))
@example((Types.ROW([Types.FLOAT()]), [(0.1,), Row(0.1 + 1e-12)]))
@example((Types.BIG_DEC(), [1, Decimal("1"), Decimal("1.0"), True]))
def test_a_keys_bytes_are_a_function_of_its_identity(case: Any) -> None:
    """Equal bytes exactly for one key (so one state partition); the bytes read back give the same key and bytes
    (a restored key finds its state); ``distinct_key`` is idempotent and its value is what the bytes hold."""
    key_type, keys = case
    distinct = [distinct_key(k, key_type) for k in keys]
    data = [encode_key(d) for d in distinct]
    for a, da in zip(distinct, data):
        assert distinct_key(a, key_type) == a or not _same_key(a, a)
        again = distinct_key(decode_key(da), key_type)
        assert encode_key(again) == da, (a, da, encode_key(again))
        if type(a) is DistinctKey:
            assert encode_key(plain_key(a)) == da  # the value Flink hands back has the key's bytes
        for b, db in zip(distinct, data):
            if a is b:
                continue
            assert _same_key(a, b) == (da == db), (key_type, a, b, da, db)
            if da == db:
                assert hash(a) == hash(b) and state_partition(da, 7) == state_partition(db, 7)


def test_the_forms_of_one_row_key_have_one_byte_string() -> None:
    """What the property guards against: under the old rule (a key's bytes made from the form the selector returned
    it in) four forms of one ``ROW`` key, one identity, had four byte strings; now one."""
    from pyspark_flinkish.core.codec import encode_value

    key_type = Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()])
    forms = [Row(id=1, name="a"), (1, "a"), Row(1, "a"), Row(name="a", id=1)]
    assert len({distinct_key(k, key_type) for k in forms}) == 1
    assert len({encode_key(distinct_key(k, key_type)) for k in forms}) == 1
    old = {repr(encode_value(k)) for k in forms}
    assert len(old) == 4


def test_a_row_key_is_handed_back_as_a_named_row() -> None:
    """As Flink's ``RowCoder`` decodes it: the type's field names, in its order, whatever form it came in."""
    key_type = Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()])
    for form in [(1, "a"), [1, "a"], Row(1, "a"), Row(name="a", id=1), {"id": 1, "name": "a"}, Row(id=True, name="a")]:
        key = plain_key(distinct_key(form, key_type))
        assert type(key) is Row and key.as_dict() == {"id": 1, "name": "a"} and list(key) == [1, "a"], form
        assert type(key[0]) is int
    assert encode_key(distinct_key((1, "a"), key_type)) == b'{"R":[0,["id","name"],[1,"a"]]}'
