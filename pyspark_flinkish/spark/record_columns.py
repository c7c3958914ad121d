"""Records of a declared type cross Spark stages as columns, not pickles: the one encoding rule.

A keyed operator whose input stream has a declared flat type (``Types.ROW_NAMED``/``Types.ROW`` or ``Types.TUPLE``
of basic types, or one basic type; or a ``from_dataframe`` source's rows of basic columns) gets its records from
the route (and from an earlier keyed level) as columns of the stage rows (:mod:`.rows`): one column per field,
``c<dest>_<i>``, and a null mask ``c<dest>_n`` (bit ``i`` set: field ``i`` is ``None``), with ``value`` left null.
Spark moves them as Arrow columns; nothing is pickled or unpickled for them. A ``DeltaSink`` or ``foreach_batch``
sink of a declared flat type gets its records so too: its frame (``spark/sink_frames.py``) selects the columns in
Spark, with no Python pass at all; a ``KafkaSink`` or ``FileSink`` writer's task rebuilds them from the columns
(:func:`arrow_values`) for the user's serializer or encoder.

A keyed operator (one input, or two: ``connect(...).key_by``, a keyed stream connected to a broadcast one) with a
declared ``key_type`` of such a type gets each record's key so too (:func:`key_columns`:
``k<dest>_<i>`` and a mask, with ``key`` left null), by the same rule; the keyed task makes the key's bytes from the
rebuilt key with the one key codec (:func:`frame_keys`), so the state is keyed exactly as when the bytes crossed.

The rule is exact by construction: :meth:`RecordColumns.encode` takes a value only when
:meth:`RecordColumns.decode` gives back what ``pickle`` would (the same class, field names, row kind and values,
bit for bit: a ``FLOAT`` field only when it is already a 32-bit float, as a declared ``FLOAT`` leaves it, a NaN only
when it is the plain NaN (pandas hands Arrow every NaN as a null, read back as the plain NaN), an ``INT`` only in its
range, a ``str`` only when it has a UTF-8 form); any other value of the stream, and every value of an
undeclared or nested type, is pickled as before (``value``), record by record. So a declaration never changes what
an operator receives, only how it travels. Fields of rows that are not such records (statistics, heartbeats,
pickled records) hold a placeholder (0, ``""``, ``False``), never null: pandas would turn a nullable integer column
into floats.

Nothing here imports ``pyspark.sql`` (only ``pyspark.sql.types.Row``, a plain Python class, to rebuild a
``from_dataframe`` row); it runs in the route and keyed tasks and is tested without a JVM.
"""

from __future__ import annotations

import math
import struct
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..core.coders import float32
from ..core.key_identity import distinct_key
from ..core.rows import Row, RowKind

_LEAVES: Dict[str, Tuple[str, str, Any]] = {
    # Flink type: (Spark DDL type, pandas dtype, placeholder)
    "BOOLEAN": ("boolean", "bool", False),
    "BYTE": ("tinyint", "int8", 0),
    "SHORT": ("smallint", "int16", 0),
    "INT": ("int", "int32", 0),
    "LONG": ("bigint", "int64", 0),
    "FLOAT": ("float", "float32", 0.0),
    "DOUBLE": ("double", "float64", 0.0),
    "STRING": ("string", "object", ""),
    "CHAR": ("string", "object", ""),
}
_RANGES = {"BYTE": 2**7, "SHORT": 2**15, "INT": 2**31, "LONG": 2**63}
_SPARK_LEAVES = {  # a DataFrame column's Spark type name (``DataType.typeName()``) -> Flink type
    "boolean": "BOOLEAN",
    "byte": "BYTE",
    "short": "SHORT",
    "integer": "INT",
    "long": "LONG",
    "float": "FLOAT",
    "double": "DOUBLE",
    "string": "STRING",
}
_DOUBLE = struct.Struct("<d")
_NAN = _DOUBLE.pack(math.nan)  # the one NaN a column gives back: pandas hands Arrow every NaN as a null
MAX_FIELDS = 63
"""The most fields a record carried as columns has (its null mask is one ``bigint``)."""
RECORD_PREFIX = "c"
"""The prefix of a record's columns (``c<dest>_<i>``)."""
KEY_PREFIX = "k"
"""The prefix of a key's columns (``k<dest>_<i>``, :func:`key_columns`)."""


def _leaf_check(name: str) -> Callable[[Any], bool]:
    """Whether a field value of Flink type ``name`` (not None) comes back from its column as it is."""
    if name == "BOOLEAN":
        return lambda v: type(v) is bool
    if name in _RANGES:
        bound = _RANGES[name]
        return lambda v: type(v) is int and -bound <= v < bound
    if name == "FLOAT":
        return lambda v: type(v) is float and (float32(v) == v if v == v else _DOUBLE.pack(v) == _NAN)
    if name == "DOUBLE":
        return lambda v: type(v) is float and (v == v or _DOUBLE.pack(v) == _NAN)
    return _utf8


def _utf8(v: Any) -> bool:
    if type(v) is not str:
        return False
    if v.isascii():
        return True
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: Arrow cannot hold it, pickle can
        return False
    return True


class RecordColumns:
    """How the records for keyed operator ``dest`` cross as columns: their shape (``"row"``: a
    :class:`~pyspark_flinkish.core.rows.Row` with ``names``; ``"tuple"``; ``"spark_row"``: a ``pyspark.sql.Row``
    with ``names``; ``"scalar"``: one value) and the Flink type of each field (``leaves``); ``declared`` is the
    declared type they come from (None for a ``from_dataframe`` row)."""

    def __init__(
        self,
        dest: int,
        shape: str,
        leaves: Sequence[str],
        names: Sequence[str] = (),
        declared: Any = None,
        prefix: str = RECORD_PREFIX,
    ) -> None:
        self.dest = dest
        self.declared = declared  # the declared type (None for a ``from_dataframe`` row)
        self.shape = shape
        self.leaves = tuple(leaves)
        self.names = tuple(names)
        self.prefix = prefix  # ``c``: a record's columns; ``k``: its key's (:func:`key_columns`)
        self.slot = "cols" if prefix == RECORD_PREFIX else "kcols"  # the stage row's entry of the encoded values
        self.columns = [f"{prefix}{dest}_{i}" for i in range(len(self.leaves))] + [f"{prefix}{dest}_n"]
        self.ddl = ", ".join(
            [f"{c} {_LEAVES[t][0]}" for c, t in zip(self.columns, self.leaves)] + [f"{self.columns[-1]} bigint"]
        )
        self.dtypes = [_LEAVES[t][1] for t in self.leaves] + ["int64"]
        self.placeholders = [_LEAVES[t][2] for t in self.leaves] + [0]
        self._checks = [_leaf_check(t) for t in self.leaves]

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        del state["_checks"]  # rebuilt where it is unpickled
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._checks = [_leaf_check(t) for t in self.leaves]

    def __repr__(self) -> str:
        return f"RecordColumns({self.dest}, {self.shape!r}, {list(self.leaves)}, {list(self.names)}, {self.prefix!r})"

    def _fields(self, value: Any) -> Optional[Sequence[Any]]:
        """The value's fields, when its shape is exactly the layout's (None: it is pickled)."""
        t = type(value)
        if self.shape == "scalar":
            return None if value is None else (value,)
        if self.shape == "tuple":
            return value if t is tuple and len(value) == len(self.leaves) else None
        if self.shape == "row":
            if t is not Row or value.get_row_kind() is not RowKind.INSERT or getattr(value, "_fields", None) is None:
                return None
            if tuple(value._fields) != self.names or len(value) != len(self.leaves):
                return None
            return tuple(value)
        if t.__name__ == "Row" and t.__module__ == "pyspark.sql.types" and hasattr(value, "__fields__"):
            return value if tuple(value.__fields__) == self.names and len(value) == len(self.leaves) else None
        return None

    def encode(self, value: Any) -> Optional[Tuple[Any, ...]]:
        """The column values of ``value`` (its fields, then the null mask), or None when it does not come back
        exactly from them (it is then pickled)."""
        if self.shape == "scalar":  # one value, the common key: no field list to build
            return None if value is None or not self._checks[0](value) else (value, 0)
        fields = self._fields(value)
        if fields is None:
            return None
        out: List[Any] = []
        mask = 0
        for i, (v, check) in enumerate(zip(fields, self._checks)):
            if v is None:
                mask |= 1 << i
                out.append(self.placeholders[i])
            elif check(v):
                out.append(v)
            else:
                return None
        out.append(mask)
        return tuple(out)

    def cell(self, value: Any) -> Any:
        """What a task keeps in a stage row (its ``slot``) for ``value``: :meth:`encode`'s values, or, for a
        ``"scalar"`` layout, the value itself (no tuple per record: a task holds its rows until it ends, and one
        more object per record costs the garbage collector). None: not as columns (pickled, or a key's bytes).
        :func:`.rows.row_frame` turns the cells into the columns."""
        if self.shape == "scalar":
            return None if value is None or not self._checks[0](value) else value
        return self.encode(value)

    def decoder(self) -> Callable[[Sequence[Any]], Any]:
        """The function from one record's column values (fields, then mask; Python scalars) to the record."""
        n = len(self.leaves)
        shape, names = self.shape, list(self.names)

        def fields(values: Sequence[Any]) -> List[Any]:
            mask = values[n]
            if not mask:
                return list(values[:n])
            return [None if mask >> i & 1 else values[i] for i in range(n)]

        if shape == "scalar":
            return lambda values: fields(values)[0]
        if shape == "tuple":
            return lambda values: tuple(fields(values))
        if shape == "row":

            def row(values: Sequence[Any]) -> Any:
                r = Row(*fields(values))
                r.set_field_names(list(names))
                return r

            return row
        from pyspark.sql.types import Row as SparkRow  # a plain Python class; no JVM

        factory = SparkRow(*names)
        return lambda values: factory(*fields(values))

    def decode(self, values: Sequence[Any]) -> Any:
        """The record of one record's column values (see :meth:`decoder`)."""
        return self.decoder()(values)


def declared_columns(dest: int, type_info: Any, prefix: str = RECORD_PREFIX) -> Optional[RecordColumns]:
    """The column layout of records declared as ``type_info`` going to ``dest`` (None: the type is not one carried
    as columns, its records are pickled): a ``ROW``/``TUPLE`` of basic types, or a basic type."""
    if type_info is None:
        return None
    name = type_info.name
    if name in _LEAVES:
        return RecordColumns(dest, "scalar", [name], declared=type_info, prefix=prefix)
    if name in ("ROW", "TUPLE") and 0 < len(type_info.children) <= MAX_FIELDS:
        leaves = [c.name for c in type_info.children]
        if not all(t in _LEAVES for t in leaves):
            return None
        if name == "TUPLE":
            return RecordColumns(dest, "tuple", leaves, declared=type_info, prefix=prefix)
        return RecordColumns(dest, "row", leaves, type_info.field_names, type_info, prefix)
    return None


def key_columns(dest: int, key_type: Any) -> Optional[RecordColumns]:
    """The column layout of the keys of keyed operator ``dest`` declared as ``key_type`` (``key_by(..., key_type)``;
    ``k<dest>_<i>`` and a null mask ``k<dest>_n``): a basic type, or a ``ROW``/``TUPLE`` of them. None: its keys
    cross as their bytes (``key``), as every untyped key does. A key travels as the value ``distinct_key`` gives it
    (``plain_key``: as Flink's coder leaves it, a ``FLOAT`` rounded), by the same exactness rule as a record: one
    that would not come back exactly (a NaN with a payload, a value not of the type) crosses as its bytes."""
    return declared_columns(dest, key_type, KEY_PREFIX)


def frame_keys(pdf: Any, layout: Optional[RecordColumns], key_type: Any) -> List[Tuple[Optional[bytes], Any]]:
    """The key of each row of a frame of stage rows (:mod:`.rows`) as ``(bytes, key)``: a row with ``key`` gives
    its bytes and None (the key is decoded from them where it is needed); a ``rec`` row whose key crossed as the
    ``layout``'s columns gives the key rebuilt from them and its bytes, made by the one key codec
    (``keys.encode_key`` of ``core.key_identity.distinct_key``, so the same bytes, state partition and state as
    the route's); other rows ``(None, None)``."""
    from .keys import encode_key

    kinds, raw = pdf["kind"].tolist(), pdf["key"].tolist()
    out: List[Tuple[Optional[bytes], Any]] = [(None if k is None else bytes(k), None) for k in raw]
    if layout is None:
        return out
    if layout.shape == "scalar":  # one column and its mask: no tuple per row to rebuild
        values, masks = pdf[layout.columns[0]].tolist(), pdf[layout.columns[1]].tolist()
        keys: Any = (None if m else v for v, m in zip(values, masks))
    else:
        decode = layout.decoder()
        keys = (decode(cols) for cols in zip(*[pdf[c].tolist() for c in layout.columns]))
    made: Dict[Any, bytes] = {}  # the bytes of int and str keys, made once per key of the partition
    for i, (kind, k, key) in enumerate(zip(kinds, raw, keys)):
        if kind != "rec" or k is not None:
            continue
        t = type(key)
        if t is int or t is str:  # equal ints (or strs) are one value, so one result of the codec (bools excluded)
            kb = made.get(key)
            if kb is None:
                kb = made[key] = encode_key(distinct_key(key, key_type))
        else:
            kb = encode_key(distinct_key(key, key_type))
        out[i] = (kb, key)
    return out


def dataframe_columns(dest: int, fields: Sequence[Tuple[str, str]]) -> Optional[RecordColumns]:
    """The column layout of a ``from_dataframe`` source's rows (``pyspark.sql.Row`` of the columns ``fields``:
    ``(name, Spark type name)``) going to ``dest``; None when a column is not of a basic type."""
    leaves = [_SPARK_LEAVES.get(t) for _, t in fields]
    if not fields or len(fields) > MAX_FIELDS or None in leaves:
        return None
    return RecordColumns(dest, "spark_row", leaves, [n for n, _ in fields])  # type: ignore[arg-type]


def input_columns(dest: int, parents: Sequence[Any]) -> Optional[RecordColumns]:
    """The column layout of the records keyed operator ``dest`` gets from the transformations ``parents``: their
    declared output type when they all declare the same, else the columns of a ``from_dataframe`` source's rows
    (one parent, elements made of its columns as they are); None: its records are pickled."""
    types = {p.output_type for p in parents}
    if len(types) == 1 and None not in types:
        return declared_columns(dest, next(iter(types)))
    if len(parents) != 1 or parents[0].kind != "source":
        return None
    element_columns = getattr(parents[0].source, "element_columns", None)  # a ``from_dataframe`` source's
    fields = element_columns() if element_columns is not None else None
    return None if fields is None else dataframe_columns(dest, fields)


def frame_values(pdf: Any, layout: Optional[RecordColumns]) -> List[Any]:
    """The element of each ``rec`` row of a frame of stage rows (:mod:`.rows`): unpickled from ``value``, or, when
    ``value`` is null, rebuilt from the ``layout``'s columns; None for the other rows."""
    from .rows import loads

    kinds, values = pdf["kind"].tolist(), pdf["value"].tolist()
    out: List[Any] = [loads(v) if k == "rec" and v is not None else None for k, v in zip(kinds, values)]
    if layout is None:
        return out
    decode = layout.decoder()
    columns = zip(*[pdf[c].tolist() for c in layout.columns])
    for i, (k, v, cols) in enumerate(zip(kinds, values, columns)):
        if k == "rec" and v is None:
            out[i] = decode(cols)
    return out


def arrow_values(batch: Any, layout: Optional[RecordColumns]) -> List[Any]:
    """The element of each row of an Arrow batch of a sink's rows (``value`` and the ``layout``'s columns, as
    :meth:`~.sink_frames.SinkFrame.value_columns` selects them): unpickled from ``value``, or, when ``value`` is
    null, rebuilt from the columns (the writer's task gets the record's typed columns, no pickle)."""
    from .rows import loads

    raw = batch.column("value").to_pylist()
    if layout is None or batch.column("value").null_count == 0:  # every record pickled: no layout column is read
        return [loads(v) for v in raw]
    decode = layout.decoder()
    columns = zip(*[batch.column(c).to_pylist() for c in layout.columns])
    return [loads(v) if v is not None else decode(c) for v, c in zip(raw, columns)]


def extra_ddl(layouts: Sequence[RecordColumns]) -> str:
    """The stage rows' columns for ``layouts`` (after :data:`.rows.ROW_DDL`)."""
    return "".join(f", {layout.ddl}" for layout in layouts)


__all__ = [
    "MAX_FIELDS",
    "RecordColumns",
    "arrow_values",
    "dataframe_columns",
    "declared_columns",
    "KEY_PREFIX",
    "RECORD_PREFIX",
    "extra_ddl",
    "frame_keys",
    "frame_values",
    "input_columns",
    "key_columns",
]
