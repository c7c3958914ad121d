"""Records crossing stages as columns (``spark/record_columns.py``) give the keyed task exactly what pickling gives.

The property: for random declared types (``ROW_NAMED``, ``ROW``, ``TUPLE`` of basic types, one basic type, a
``from_dataframe`` row) and random values, some of the type and many not quite (floats not rounded to 32 bits, ints
out of range, bools for ints, ``None``, lone surrogates, row subclasses, other names or row kinds), the route's rows
(``row_frame``) go through pyspark's own worker conversions (pandas -> Arrow as a ``mapInPandas`` task writes them,
Arrow -> pandas as an ``applyInPandas`` task reads them) and :func:`frame_values` rebuilds the elements: each must be
identical to ``pickle``'s round trip (same class, field names, row kind, values bit for bit).
"""

from __future__ import annotations

import io
import math
import pickle
import struct
from pathlib import Path
from typing import Any, List

import pandas as pd
import pyarrow as pa
import pytest
from foreach_batch_harness import count_key_crossings, local_outputs, run_foreach_batch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyspark.sql.conversion import ArrowBatchTransformer
from pyspark.sql.pandas.serializers import ArrowStreamPandasUDFSerializer
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
)
from pyspark.sql.types import Row as SparkRow

from pyspark_flinkish.common import Types
from pyspark_flinkish.core.coders import float32
from pyspark_flinkish.core.key_identity import distinct_key, plain_key
from pyspark_flinkish.core.rows import Row, RowKind
from pyspark_flinkish.datastream import MicroBatch
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.state import ValueStateDescriptor
from pyspark_flinkish.spark.keys import decode_key, encode_key
from pyspark_flinkish.spark.record_columns import (
    RecordColumns,
    arrow_values,
    dataframe_columns,
    declared_columns,
    frame_keys,
    frame_values,
    key_columns,
)
from pyspark_flinkish.spark.rows import ROW_DDL, dumps, loads, row_frame
from pyspark_flinkish.spark.sink_frames import ORDER_COLUMN, STEP_COLUMN, decode_batches
from pyspark_flinkish.spark.types import to_spark_type

_SPARK = {
    "string": StringType(),
    "binary": BinaryType(),
    "long": LongType(),
    "bigint": LongType(),
    "int": IntegerType(),
    "smallint": ShortType(),
    "tinyint": ByteType(),
    "float": FloatType(),
    "double": DoubleType(),
    "boolean": BooleanType(),
    "array<long>": ArrayType(LongType()),
}
_TYPES = {
    "BOOLEAN": Types.BOOLEAN,
    "BYTE": Types.BYTE,
    "SHORT": Types.SHORT,
    "INT": Types.INT,
    "LONG": Types.LONG,
    "FLOAT": Types.FLOAT,
    "DOUBLE": Types.DOUBLE,
    "STRING": Types.STRING,
}
_BOUNDS = {"BYTE": 2**7, "SHORT": 2**15, "INT": 2**31, "LONG": 2**63}


def _schema(ddl: str) -> StructType:
    fields: List[StructField] = []
    for column in ddl.split(","):
        name, type_name = column.split()
        fields.append(StructField(name, _SPARK[type_name]))
    return StructType(fields)


def _through_spark(frame: pd.DataFrame, ddl: str, int_ext: bool) -> pd.DataFrame:
    """``frame`` written by a ``mapInPandas`` task and read by the next ``applyInPandas`` task, with pyspark's own
    worker conversions."""
    schema = _schema(ddl)
    serializer = ArrowStreamPandasUDFSerializer(
        timezone="UTC",
        safecheck=False,
        assign_cols_by_name=True,
        df_for_struct=True,
        struct_in_pandas="dict",
        ndarray_as_list=False,
        arrow_cast=True,
    )
    stream = io.BytesIO()
    serializer.dump_stream(iter([(frame, schema)]), stream)
    stream.seek(4)  # the START_ARROW_STREAM marker the worker writes first
    batches = list(pa.ipc.open_stream(stream))
    batch = pa.RecordBatch.from_arrays(batches[0].column(0).flatten(), names=schema.names)
    series = ArrowBatchTransformer.to_pandas(pa.Table.from_batches([batch]), timezone="UTC", prefer_int_ext_dtype=int_ext)
    return pd.concat(series, axis=1, keys=schema.names)


def _same(a: Any, b: Any) -> bool:
    """Identical as the keyed task would see them: class, names, kind, values (floats bit for bit)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, Row):
        if getattr(a, "_fields", None) != getattr(b, "_fields", None) or a.get_row_kind() != b.get_row_kind():
            return False
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, (tuple, list)):
        if getattr(a, "__fields__", None) != getattr(b, "__fields__", None):
            return False
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b  # type: ignore[no-any-return]


def _leaf_values(leaf: str) -> st.SearchStrategy[Any]:
    """Values for a field of Flink type ``leaf``: of the type, and near misses."""
    anything = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=4))
    if leaf == "BOOLEAN":
        own = st.booleans()
    elif leaf in _BOUNDS:
        bound = _BOUNDS[leaf]
        own = st.one_of(st.integers(-bound, bound - 1), st.sampled_from([-bound, bound - 1, bound, -bound - 1]))
    elif leaf == "FLOAT":
        own = st.one_of(st.floats(width=32), st.floats().map(float32), st.just(-0.0), st.just(math.nan))
    elif leaf == "DOUBLE":
        own = st.one_of(st.floats(), st.just(-0.0), st.just(math.nan), st.just(-math.inf))
    else:
        own = st.one_of(st.text(max_size=8), st.just("\ud800"), st.just("é\x00😀"))
    return st.one_of(own, own, own, anything)


_LEAF = st.sampled_from(sorted(_TYPES))


@st.composite
def _layout_and_values(draw: Any) -> Any:
    shape = draw(st.sampled_from(["row", "row_positional", "tuple", "scalar", "spark_row"]))
    leaves = draw(st.lists(_LEAF, min_size=1, max_size=5)) if shape != "scalar" else [draw(_LEAF)]
    names = [f"n{i}_{leaf.lower()}" for i, leaf in enumerate(leaves)]
    if shape == "row":
        layout = declared_columns(3, Types.ROW_NAMED(names, [_TYPES[t]() for t in leaves]))
    elif shape == "row_positional":
        layout = declared_columns(3, Types.ROW([_TYPES[t]() for t in leaves]))
        names = [f"f{i}" for i in range(len(leaves))]
    elif shape == "tuple":
        layout = declared_columns(3, Types.TUPLE([_TYPES[t]() for t in leaves]))
    elif shape == "scalar":
        layout = declared_columns(3, _TYPES[leaves[0]]())
    else:
        spark_names = {"BOOLEAN": "boolean", "BYTE": "byte", "SHORT": "short", "INT": "integer", "LONG": "long",
                       "FLOAT": "float", "DOUBLE": "double", "STRING": "string"}  # fmt: skip
        layout = dataframe_columns(3, [(n, spark_names[t]) for n, t in zip(names, leaves)])
    assert layout is not None
    fields = st.tuples(*[_leaf_values(t) for t in leaves])

    def make(values: Any, variant: int) -> Any:
        if shape == "scalar":
            return values[0]
        if shape == "tuple":
            return tuple(values) if variant else list(values)
        if shape == "spark_row":
            if variant == 2:
                return SparkRow(*names[::-1])(*values)  # other names
            return SparkRow(*names)(*values) if variant else tuple(values)
        row = Row(*values)
        row.set_field_names(list(names[::-1]) if variant == 2 and len(names) > 1 else list(names))
        if variant == 3:
            row.set_row_kind(RowKind.UPDATE_AFTER)
        if variant == 0:
            return Row(*values)  # positional where names are declared
        return row

    values = draw(st.lists(st.tuples(fields, st.sampled_from([1, 1, 1, 0, 2, 3])), max_size=12))
    return layout, [make(v, variant) for v, variant in values]


def _columnar_round_trip(layout: RecordColumns, elements: List[Any], int_ext: bool) -> List[Any]:
    rows = []
    for i, element in enumerate(elements):
        cols = layout.cell(element)  # what the route keeps: encode's values (a scalar's value itself)
        value = dumps(element) if cols is None else None
        rows.append({"kind": "rec", "dest": layout.dest, "sp": 0, "value": value, "ord": [1, i], "cols": cols})
    rows.append({"kind": "hb", "dest": layout.dest, "sp": 0})  # a row that is no record: placeholders
    rows.append({"kind": "rec", "dest": 7, "sp": 0, "value": dumps("other"), "ord": [1, 99]})  # another operator's
    frame = row_frame(rows, [layout])
    read = _through_spark(frame, ROW_DDL + ", " + layout.ddl, int_ext)
    got = frame_values(read, layout)
    assert got[-2] is None and got[-1] == "other"
    return got[:-2]


@settings(max_examples=120, deadline=None)
@given(_layout_and_values(), st.booleans())
def test_columns_give_what_pickle_gives(case: Any, int_ext: bool) -> None:
    layout, elements = case
    pickled = [loads(dumps(e)) for e in elements]
    columnar = _columnar_round_trip(pickle.loads(pickle.dumps(layout)), elements, int_ext)
    for element, want, got in zip(elements, pickled, columnar):
        assert _same(want, got), (element, want, got)


def test_exact_values_travel_as_columns() -> None:
    """What a declared type's coder leaves crosses as columns (None fields too); what it would not is pickled."""
    t = Types.ROW_NAMED(["s", "i", "f", "d", "b"], [Types.STRING(), Types.INT(), Types.FLOAT(), Types.DOUBLE(), Types.BOOLEAN()])
    layout = declared_columns(1, t)
    assert layout is not None
    exact = Row(s="k", i=2**31 - 1, f=float32(0.1), d=0.1, b=True)
    assert layout.encode(exact) == ("k", 2**31 - 1, float32(0.1), 0.1, True, 0)
    with_none = Row(s=None, i=1, f=None, d=1.5, b=False)
    assert layout.encode(with_none) == ("", 1, 0.0, 1.5, False, 0b101)
    assert _same(layout.decode(layout.encode(with_none)), with_none)  # type: ignore[arg-type]
    assert layout.encode(Row(s="k", i=1, f=0.1, d=0.1, b=True)) is None  # 0.1 is no 32-bit float: pickled
    assert layout.encode(Row(s="k", i=2**31, f=0.5, d=0.1, b=True)) is None  # beyond INT
    assert layout.encode(Row(s="k", i=True, f=0.5, d=0.1, b=True)) is None  # a bool is no INT value
    assert layout.encode(Row(i=1, s="k", f=0.5, d=0.1, b=True)) is None  # names in another order
    assert declared_columns(1, Types.ROW_NAMED(["l"], [Types.LIST(Types.INT())])) is None  # nested: pickled
    assert declared_columns(1, Types.PICKLED_BYTE_ARRAY()) is None
    assert declared_columns(1, None) is None


@pytest.mark.parametrize("int_ext", [False, True])
def test_the_property_can_fail(int_ext: bool) -> None:
    """A rule that took floats as FLOAT columns without checking them would change them: the comparison sees it."""

    class Lax(RecordColumns):
        def encode(self, value: Any) -> Any:
            return (value, 0)

        def cell(self, value: Any) -> Any:
            return value  # a scalar's cell: unchecked

    lax = Lax(3, "scalar", ["FLOAT"])
    got = _columnar_round_trip(lax, [0.1], int_ext)
    assert not _same(loads(dumps(0.1)), got[0])


EVENT = Types.ROW_NAMED(["user", "amount", "note", "n"], [Types.STRING(), Types.FLOAT(), Types.STRING(), Types.LONG()])


class Seen(KeyedProcessFunction):  # type: ignore[type-arg]
    """Emits what it receives as it sees it (class, names, kind, each field's class and bits) and a running count
    in ValueState, so that any difference in what crossed shows in its output."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        fields = [(type(v).__name__, struct.pack("<d", v).hex() if isinstance(v, float) else v) for v in value]
        yield (type(value).__name__, getattr(value, "_fields", None), str(value.get_row_kind()), fields, n)


def enrichment(out: List[Any]) -> Any:
    def build(env: Any) -> None:
        events = [("a", 1.1, None, 1), ("b", 2.5, "x", 2**62), ("a", float("nan"), "é", -3), ("a", 0.1, None, 4)]
        batches = [MicroBatch(events[:2]), MicroBatch(events[2:])]
        (
            env.from_micro_batches(batches)
            .map(lambda e: Row(user=e[0], amount=e[1], note=e[2], n=e[3]), EVENT)
            .key_by(lambda r: r.user)
            .process(Seen())
            .add_sink(out.append)
        )

    return build


def test_a_keyed_job_gets_the_same_records_either_way(tmp_path: Path, monkeypatch: Any) -> None:
    """Through the foreachBatch executor's real bodies: a declared ROW crosses from the route to the keyed stage as
    columns (FLOAT rounded by the map's type, None fields, a NaN), and the keyed function sees exactly what it sees
    when every record is pickled, and what the local engine gives it."""
    encoded: List[bool] = []
    cell = RecordColumns.cell

    def counting(self: RecordColumns, value: Any) -> Any:
        cols = cell(self, value)
        encoded.append(cols is not None)
        return cols

    monkeypatch.setattr(RecordColumns, "cell", counting)
    local: List[Any] = []
    local_outputs(enrichment(local))
    pickled: List[Any] = []
    run_foreach_batch(enrichment(pickled), str(tmp_path / "pickled"), vectorize=True, columnar_records=False)
    assert encoded == []
    columnar: List[Any] = []
    run_foreach_batch(enrichment(columnar), str(tmp_path / "columns"), vectorize=True)
    assert encoded == [True] * 4  # every record crossed as columns
    assert sorted(map(repr, columnar)) == sorted(map(repr, pickled)) == sorted(map(repr, local))
    assert ("Row", ["user", "amount", "note", "n"], "+I", [("str", "a"), ("float", struct.pack("<d", float32(1.1)).hex()), ("NoneType", None), ("int", 1)], 1) in columnar


def test_a_sink_frame_decodes_records_that_crossed_as_columns() -> None:
    """``decode_batches`` (a sink frame's Python path) and ``arrow_values`` (the tasks of the Kafka and file sinks'
    writers) rebuild a record that crossed as columns as they would have unpickled it: the same elements, and the
    same Arrow output as when every record is pickled."""
    layout = declared_columns(5, EVENT)
    assert layout is not None
    values = [Row(user="a", amount=float32(1.1), note=None, n=1), Row(user="b", amount=0.1, note="x", n=2)]
    encoded = [layout.encode(v) for v in values]
    assert encoded[0] is not None and encoded[1] is None  # 0.1 is no 32-bit float: pickled
    schema = to_spark_type(EVENT)

    def batch(columnar: bool) -> pa.RecordBatch:
        arrays = {
            "value": pa.array([None if columnar and e is not None else dumps(v) for v, e in zip(values, encoded)],
                              pa.binary()),
            "ord": pa.array([[1, i] for i in range(len(values))], pa.list_(pa.int64())),
            STEP_COLUMN: pa.array([0, 0], pa.int64()),
        }
        for i, c in enumerate(layout.columns):  # type: ignore[union-attr]
            arrays[c] = pa.array([layout.placeholders[i] if e is None else e[i] for e in encoded])  # type: ignore[union-attr]
        return pa.RecordBatch.from_pydict(arrays)

    # the writers' tasks (``KafkaSink``, ``FileSink``) get the elements as pickling gives them
    rebuilt = arrow_values(batch(True), layout)
    assert all(_same(got, loads(dumps(v))) for got, v in zip(rebuilt, values))
    assert all(_same(got, v) for got, v in zip(arrow_values(batch(False), None), values))
    both = list(decode_batches([batch(True)], EVENT, schema, with_order=True, layout=layout))
    pickled = list(decode_batches([batch(False)], EVENT, schema, with_order=True))
    assert both[0].to_pylist() == pickled[0].to_pylist()
    assert both[0].to_pylist()[0] == {"user": "a", "amount": float32(1.1), "note": None, "n": 1, ORDER_COLUMN: [0, 1, 0]}
    # the pickled records of a frame whose columnar ones Spark selects itself (``SinkFrame.typed``'s fast path) come
    # without the layout's columns: decoded from ``value`` alone, with or without the layout
    only_pickled = batch(False).select(["value", "ord", STEP_COLUMN])
    for lay in (layout, None):
        again = list(decode_batches([only_pickled], EVENT, schema, with_order=True, layout=lay))
        assert again[0].to_pylist() == pickled[0].to_pylist()


# ------------------------------------------------------------------------------------------ keys as columns


@st.composite
def _key_type_and_keys(draw: Any) -> Any:
    """A declared ``key_type`` (a basic type, a ``TUPLE``, a ``ROW``/``ROW_NAMED`` of them) and keys a selector may
    return for it: of the type and near misses (other shapes, names, kinds, values)."""
    shape = draw(st.sampled_from(["scalar", "tuple", "row", "row_positional"]))
    leaves = [draw(_LEAF)] if shape == "scalar" else draw(st.lists(_LEAF, min_size=1, max_size=3))
    names = [f"k{i}" for i in range(len(leaves))]
    types = [_TYPES[t]() for t in leaves]
    key_type = {
        "scalar": lambda: types[0],
        "tuple": lambda: Types.TUPLE(types),
        "row": lambda: Types.ROW_NAMED(names, types),
        "row_positional": lambda: Types.ROW(types),
    }[shape]()
    fields = st.tuples(*[_leaf_values(t) for t in leaves])

    def make(values: Any, variant: int) -> Any:
        if shape == "scalar":
            return values[0]
        if variant == 0:
            return tuple(values)
        row = Row(*values)
        if variant >= 2:
            row.set_field_names(list(names) if shape == "row" else [f"f{i}" for i in range(len(values))])
        if variant == 3:
            row.set_row_kind(RowKind.DELETE)
        return row

    keys = draw(st.lists(st.tuples(fields, st.sampled_from([0, 1, 2, 2, 3])), max_size=10))
    return key_type, [make(v, variant) for v, variant in keys]


def _keys_round_trip(key_type: Any, keys: List[Any], int_ext: bool) -> List[Any]:
    """The keys as the route sends them (as columns where they come back exactly, else as their bytes), through
    pyspark's worker conversions, as the keyed task reads them (``frame_keys``); and the route's bytes."""
    layout = key_columns(4, key_type)
    assert layout is not None
    layout = pickle.loads(pickle.dumps(layout))  # shipped to the executors
    rows, sent = [], []
    for i, key in enumerate(keys):
        dk = distinct_key(key, key_type)
        kb = encode_key(dk)
        kcols = layout.cell(plain_key(dk))
        sent.append((kb, kcols is not None))
        rows.append({"kind": "rec", "dest": 4, "sp": 0, "key": kb if kcols is None else None, "value": dumps(i), "ord": [1, i],
                     "kcols": kcols})
    rows.append({"kind": "hb", "dest": 4, "sp": 0})  # no record: placeholders, no key
    frame = row_frame(rows, [layout])
    read = _through_spark(frame, ROW_DDL + ", " + layout.ddl, int_ext)
    got = frame_keys(read, layout, key_type)
    assert got[-1] == (None, None)
    return list(zip(sent, got[:-1]))


@settings(max_examples=150, deadline=None)
@given(_key_type_and_keys(), st.booleans())
@example(  # found by a random run: a NaN in a key Flink cannot serialize (a null TUPLE field)
    (Types.TUPLE([Types.BYTE(), Types.DOUBLE(), Types.BOOLEAN()]),
     [Row(f0=-8, f1=float("-inf"), f2=False), (None, 0.0, False), (None, float("nan"), None)]),
    True,
)  # fmt: skip
def test_keys_as_columns_keep_their_bytes_and_identity(case: Any, int_ext: bool) -> None:
    """A declared key that crossed as columns gives the keyed task the same bytes (so the same state partition and
    state) the route made, and the key those bytes decode to (class and values bit for bit): Flink's key identity
    (``core/key_identity.py``) is untouched. A key that would not come back exactly crossed as its bytes."""
    key_type, keys = case
    for key, ((kb, as_columns), (got_bytes, rebuilt)) in zip(keys, _keys_round_trip(key_type, keys, int_ext)):
        assert got_bytes == kb, (key, kb, got_bytes)
        if as_columns:
            assert _same(rebuilt, decode_key(kb)), (key, rebuilt, decode_key(kb))
            # a key Flink's serializer cannot write (a null field of a TUPLE) is its own distinct key, and a NaN in
            # it is not equal to itself as another object: compare it as the keyed task sees it
            got, want = distinct_key(rebuilt, key_type), distinct_key(key, key_type)
            assert got == want or _same(got, want), (key, got, want)
        else:
            assert rebuilt is None


def test_key_identity_edge_cases_cross_as_columns() -> None:
    """Keys Flink tells apart stay apart, keys it holds as one stay one, whichever way they cross: ``-0.0`` and
    ``0.0`` (two keys of a ``DOUBLE`` key_type), two ``FLOAT`` keys rounding to one 32-bit value (one key), ``True``
    for an ``INT`` key_type (the key ``1``), a NaN (the plain one, as columns; one with a payload, as its bytes)."""

    def crossed(key_type: Any, keys: List[Any]) -> List[Any]:
        out = _keys_round_trip(key_type, keys, int_ext=False)
        assert all(as_columns for (_, as_columns), _ in out[: len(keys) - 1])
        return [got for _, got in out]

    zero, minus_zero = crossed(Types.DOUBLE(), [0.0, -0.0, 0.0])[:2]
    assert zero[0] != minus_zero[0]
    assert struct.pack("<d", minus_zero[1]) == struct.pack("<d", -0.0)
    a, b = crossed(Types.FLOAT(), [0.1, float32(0.1) + 1e-12, 0.1])[:2]  # both round to float32(0.1)
    assert a == b and a[1] == float32(0.1)
    one, true = crossed(Types.INT(), [1, True, 1])[:2]
    assert one == true == (b"1", 1) and type(true[1]) is int
    payload_nan = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000001))[0]
    out = _keys_round_trip(Types.DOUBLE(), [math.nan, payload_nan], int_ext=False)
    assert out[0][0][1] and math.isnan(out[0][1][1])  # the plain NaN as a column
    assert not out[1][0][1] and out[1][1] == (out[1][0][0], None)  # a payload NaN as its bytes
    assert key_columns(1, Types.PICKLED_BYTE_ARRAY()) is None and key_columns(1, None) is None  # untyped: bytes
    assert key_columns(1, Types.TUPLE([Types.STRING(), Types.LIST(Types.INT())])) is None  # nested: bytes


class KeySeen(KeyedProcessFunction):  # type: ignore[type-arg]
    """Emits the current key (class and bits) and a running count in ValueState, and one timer's firing per key."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        if n == 1:
            ctx.timer_service().register_event_time_timer(10_000)
        key = ctx.get_current_key()
        yield ("seen", type(key).__name__, struct.pack("<d", key).hex(), value[1], n)

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield ("timer", struct.pack("<d", ctx.get_current_key()).hex(), self.count.value())


KEY_BATCHES = [
    [(0.0, 1), (-0.0, 2), (math.nan, 3), (1.5, 4)],
    [(-0.0, 5), (0.0, 6), (math.nan, 7), (1.5, 8), (2.5, 9)],
    [(0.0, 10), (-0.0, 11), (1.5, 12)],
]


def keyed_by_double(out: List[Any]) -> Any:
    from pyspark_flinkish.common import Duration, WatermarkStrategy
    from pyspark_flinkish.datastream.sources import MicroBatchSource
    from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

    def build(env: Any) -> None:
        source = MicroBatchSource([MicroBatch(b, processing_time=1_000 * (i + 1)) for i, b in enumerate(KEY_BATCHES)])
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1] * 1_000)
        keyed = env.from_source(source, strategy, "events").key_by(lambda e: e[0], key_type=Types.DOUBLE())
        keyed.process(KeySeen()).uid("seen").add_sink(out.append)
        windows = keyed.window(TumblingEventTimeWindows.of(Duration.of_seconds(4)))
        windows.reduce(lambda a, b: (a[0], a[1] + b[1])).uid("sums").map(
            lambda e: ("sum", struct.pack("<d", e[0]).hex(), e[1])
        ).add_sink(out.append)

    return build


def test_declared_keys_cross_as_columns_with_flinks_identity(tmp_path: Path, monkeypatch: Any) -> None:
    """Through the foreachBatch executor's real bodies: the keys of a ``DOUBLE`` key_type (``0.0``, ``-0.0``, a NaN)
    cross from the route to the keyed stage as columns, into a process function (state, timers) and a batch-wise
    window, and give what the local engine gives and what crossing as bytes gives. A checkpoint written with every
    key as its bytes (``columnar_records=False``) goes on with keys as columns: the state is keyed by the same bytes,
    so no key's state splits."""
    crossed = count_key_crossings(monkeypatch)
    local: List[Any] = []
    local_outputs(keyed_by_double(local))
    as_bytes: List[Any] = []
    run_foreach_batch(keyed_by_double(as_bytes), str(tmp_path / "bytes"), vectorize=True, columnar_records=False)
    assert crossed == []
    as_columns: List[Any] = []
    run_foreach_batch(keyed_by_double(as_columns), str(tmp_path / "columns"), vectorize=True)
    assert crossed and all(crossed)  # every key of both operators crossed as columns
    assert len(crossed) == 2 * sum(map(len, KEY_BATCHES))
    assert sorted(map(repr, as_columns)) == sorted(map(repr, as_bytes)) == sorted(map(repr, local))
    minus_zero = struct.pack("<d", -0.0).hex()
    assert ("seen", "float", minus_zero, 11, 3) in as_columns  # -0.0's own count, apart from 0.0's
    mixed: List[Any] = []
    ck = str(tmp_path / "mixed")
    n = len(KEY_BATCHES) + 1
    run_foreach_batch(keyed_by_double(mixed), ck, vectorize=True, columnar_records=False, batches=range(0, 2))
    run_foreach_batch(keyed_by_double(mixed), ck, vectorize=True, batches=range(2, n))
    assert sorted(map(repr, mixed)) == sorted(map(repr, local))
