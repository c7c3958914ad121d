"""Keyed state of a checkpoint as Spark DataFrames: Flink's State Processor API, Spark's state data source.

:func:`read_state` returns one operator's keyed state for one state descriptor, :func:`read_timers` its pending
timers and :func:`read_windows` the open windows of a window operator, each as a batch DataFrame read from the
newest *committed* state version of a checkpoint (or ``batch_id=``). The operator is named by its uid: the one
given with ``.uid(...)`` in the job, or the generated one that ``handle.progress()["operators"]`` shows.

Which version is committed: the driver writes ``<checkpoint>/flinkish/driver/b=<batch>.json`` only after every
state partition of the batch was written (``spark/driver.py``), so the newest such file names the newest complete
state version; a newer, half-written version (a batch that failed or is running) is never read. The driver keeps
the last three batches; older ones are pruned.

Decoding runs on the executors (``mapInArrow``): the state files are read by Spark, each key's snapshot decoded
with the state codec (``core/codec.py``) and converted to the descriptor's Spark type (``spark/types.py``). The
pure decoding functions (:func:`state_values`, :func:`timer_values`, :func:`window_values`) take the files'
columns and give Python rows. Only :func:`committed_state` (which files hold a committed version) and
:func:`snapshot_frame` / :func:`window_frame` (their columns) know the layout of ``spark/state_store.py``: a new
storage layer replaces these three.

Rows, as Spark's state data source gives them with its default ``flattenCollectionTypes=true``:

* ``ValueStateDescriptor`` (and reducing state: the reduced value; aggregating state: the accumulator):
  ``(key, value)``;
* ``ListStateDescriptor``: one row ``(key, value)`` per element, in list order; ``flatten=False`` gives one row
  ``(key, values)`` per key (Flink's ``KeyedStateReaderFunction`` reads the whole ``Iterable`` per key);
* ``MapStateDescriptor``: one row ``(key, map_key, value)`` per entry; ``flatten=False`` gives ``(key, value)``
  with a map column.

Only state outside windows is read (Flink's ``readKeyedState``); a window's contents come from
:func:`read_windows` (Flink's ``readWindow``). Values kept with TTL are read as they were written; entries that
expired were dropped before the snapshot (as Flink's cleanup on snapshot).

Differences from Flink: the key's type is not in the checkpoint unless the job gave ``key_by(..., key_type=...)``
with a basic type; otherwise give ``key_type=`` (Flink's reader takes the key's ``TypeInformation`` too).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from ..core.codec import decode_snapshot, decode_value, load_document
from ..core.errors import InvalidArgumentError, InvalidTypeError, StateError, UnsupportedFeatureError
from ..core.state import VOID_NAMESPACE
from ..core.state_descriptors import StateDescriptor
from ..core.state_ttl import TtlValue
from ..core.typeinfo import TypeInformation
from ..core.window_operator import CONTENTS, MERGING_SET
from ..core.windows import TimeWindow
from .checkpoint import META_FILE, META_FORMAT, META_VERSION
from .checkpoint_location import local_checkpoint_path
from .keys import decode_key
from .session import default_file_system, spark_path
from .types import spark_type, to_spark_value

RowValues = Tuple[Any, ...]


# ------------------------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class StateVersion:
    """One operator's committed state version: what :func:`committed_state` finds in a checkpoint."""

    uid: str
    batch_id: int
    snapshot_files: Tuple[str, ...]
    """``(key, snapshot)`` Parquet files: one per state partition of an operator with keyed snapshots."""
    window_files: Tuple[str, ...]
    """``(key, window_start, acc)`` Parquet files of a window run batch-wise (rows with a null ``window_start``
    hold keyed snapshots)."""
    signature: Optional[str]
    """The operator's state signature (``spark/signatures.py``), if the checkpoint recorded one."""


def committed_state(location: str, uid: str, batch_id: Optional[int] = None, default_fs: str = "file:///") -> StateVersion:
    """The files of operator ``uid``'s state after the newest committed batch of the checkpoint at ``location``
    (or after ``batch_id``). The only function that reads the checkpoint's layout (``spark/state_store.py``).

    Raises:
        StateError: ``location`` is not a checkpoint of this package, it has no operator ``uid`` (the message
            names the uids present), no committed batch, or ``batch_id`` is not among the committed ones kept.
    """
    root = local_checkpoint_path(location, default_fs)
    flinkish = os.path.join(root, "flinkish")
    meta_path = os.path.join(flinkish, META_FILE)
    if not os.path.exists(meta_path):
        hint = "give the checkpoint_location the job was executed with"
        if os.path.exists(os.path.join(os.path.dirname(root.rstrip("/")), "flinkish", META_FILE)):
            hint = f"this is Spark's part of a job's checkpoint; give its parent, {os.path.dirname(root.rstrip('/'))!r}"
        elif os.path.isdir(os.path.join(root, "offsets")):
            hint = (
                "this is a Spark streaming checkpoint without the package's state: a job with "
                "backend='apply_in_pandas_with_state' keeps its keyed state in Spark's state store; read it with "
                "Spark's state data source (spark.read.format('statestore'))"
            )
        msg = f"{location!r} is not a checkpoint of a pyspark_flinkish job: {meta_path} is missing ({hint})"
        raise StateError(msg)
    with open(meta_path, "rb") as f:
        meta = load_document(f.read(), META_FORMAT, META_VERSION, meta_path)
    state_root = os.path.join(flinkish, "state")
    present = sorted(d[3:] for d in os.listdir(state_root) if d.startswith("op=")) if os.path.isdir(state_root) else []
    if uid not in present:
        msg = (
            f"checkpoint {location!r} holds no keyed state of an operator with uid {uid!r}; "
            f"operators with keyed state: {', '.join(map(repr, present)) or 'none'}"
        )
        raise StateError(msg)
    driver = os.path.join(flinkish, "driver")
    committed = sorted(
        int(p[2:14]) for p in (os.listdir(driver) if os.path.isdir(driver) else ()) if p.startswith("b=") and p.endswith(".json")
    )
    if not committed:
        msg = f"checkpoint {location!r} has no committed micro-batch yet: its state has never been completely written"
        raise StateError(msg)
    if batch_id is None:
        batch = committed[-1]
    elif batch_id in committed:
        batch = batch_id
    else:
        msg = (
            f"batch {batch_id} of checkpoint {location!r} is not a committed state version; committed versions kept: "
            f"{', '.join(map(str, committed))} (older ones are pruned)"
        )
        raise StateError(msg)
    snapshots, windows = [], []
    for sp in range(int(meta["state_partitions"])):
        base = os.path.join(state_root, f"op={uid}", f"sp={sp:05d}")
        v, w = os.path.join(base, f"v={batch:012d}.parquet"), os.path.join(base, f"w={batch:012d}.parquet")
        if os.path.exists(v):
            snapshots.append(v)
        elif os.path.exists(w):
            windows.append(w)
        else:
            msg = (
                f"keyed state of operator {uid!r} after batch {batch} is missing in {base} (the operator may be "
                "newer than that batch, or the checkpoint directory was copied partially)"
            )
            raise StateError(msg)
    signature = (meta.get("operators") or {}).get(uid)
    return StateVersion(uid, batch, tuple(snapshots), tuple(windows), signature)


def snapshot_frame(spark: Any, version: StateVersion) -> Any:
    """``(key, snapshot)`` rows of ``version`` (binary columns): the keyed snapshots of every key, or of a window
    run batch-wise the keyed state its functions keep (the window contents are in :func:`window_frame`)."""
    if version.snapshot_files:
        df = spark.read.schema("key binary, snapshot binary").parquet(*map(spark_path, version.snapshot_files))
        # a broadcast operator's own state is the row with an empty key (``keyed_partition.OPERATOR_STATE_KEY``)
        return df.where("length(key) > 0")
    df = spark.read.schema("key binary, window_start long, acc binary").parquet(*map(spark_path, version.window_files))
    return df.where("window_start is null").selectExpr("key", "acc as snapshot")


def window_frame(spark: Any, version: StateVersion) -> Any:
    """``(key, window_start, acc)`` rows of a window run batch-wise: one per open window."""
    df = spark.read.schema("key binary, window_start long, acc binary").parquet(*map(spark_path, version.window_files))
    return df.where("window_start is not null")


def declared_states(signature: Optional[str]) -> Optional[Dict[str, str]]:
    """``{state name: kind}`` of the state an operator registers when opened, from its signature (None: unknown)."""
    for part in (signature or "").split(" | ")[1:]:
        if part.startswith("state=[") and part.endswith("]"):
            body = part[len("state=[") : -1]
            return {m.group(1): m.group(2) for m in re.finditer(r"(?:^|,)([^:,]+):(\w+):", body)}
    return None


def declared_key_type(signature: Optional[str]) -> Optional[TypeInformation]:
    """The key's type recorded in the signature (``key_by(..., key_type=...)``), when it is a basic type."""
    for part in (signature or "").split(" | ")[1:]:
        if part.startswith("key=") and re.fullmatch(r"[A-Z_]+", part[4:]):
            return TypeInformation(part[4:])
    return None


def batch_window_size(signature: Optional[str]) -> int:
    """The window size (ms) of a window run batch-wise (tumbling or sliding event time), from its signature."""
    m = re.match(r"window:(?:Tumbling|Sliding)EventTimeWindows\((-?\d+),", signature or "")
    if m is None:
        msg = f"cannot tell the window size of a batch-wise window from its recorded signature {signature!r}"
        raise StateError(msg)
    return int(m.group(1))


# ------------------------------------------------------------------------------------------- decoding


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, TtlValue) else value


def _is_internal(name: str) -> bool:
    return name.startswith("__")


def state_names(snapshots: Iterable[bytes]) -> Set[str]:
    """Names of the user state (outside windows) that the snapshots hold."""
    names: Set[str] = set()
    for data in snapshots:
        for name, ns in decode_snapshot(data)["state"]:
            if ns is VOID_NAMESPACE and not _is_internal(name):
                names.add(name)
    return names


def state_values(
    keys: Sequence[bytes], snapshots: Sequence[bytes], name: str, kind: str, flatten: bool = True
) -> List[RowValues]:
    """Rows of state ``name`` (of descriptor kind ``kind``) outside windows, Python values: ``(key, value)``; a
    list flattened gives one ``(key, element)`` per element, a map flattened ``(key, map_key, value)``."""
    rows: List[RowValues] = []
    for kb, data in zip(keys, snapshots):
        stored = decode_snapshot(data)["state"].get((name, VOID_NAMESPACE))
        if stored is None:
            continue
        key = decode_key(kb)
        if kind == "list":
            values = [_plain(v) for v in stored]
            rows.extend([(key, v) for v in values] if flatten else [(key, values)])
        elif kind == "map":
            entries = {k: _plain(v) for k, v in stored.items()}
            rows.extend([(key, k, v) for k, v in entries.items()] if flatten else [(key, entries)])
        else:
            rows.append((key, _plain(stored)))
    return rows


def _window_bounds(ns: Any) -> Tuple[Optional[int], Optional[int]]:
    if ns is VOID_NAMESPACE:
        return None, None
    if isinstance(ns, TimeWindow):
        return ns.start, ns.end
    msg = f"windows of type {type(ns).__name__} have no start and end; only time windows can be read as rows"
    raise UnsupportedFeatureError(msg)


def timer_values(keys: Sequence[bytes], snapshots: Sequence[bytes]) -> List[RowValues]:
    """Pending timers: ``(key, timestamp, kind, window_start, window_end)``, kind ``"event"`` or ``"processing"``;
    the window is the timer's namespace (null for a process function's timers)."""
    rows: List[RowValues] = []
    for kb, data in zip(keys, snapshots):
        snap = decode_snapshot(data)
        key = decode_key(kb)
        for kind in ("event", "processing"):
            for ts, ns in snap[f"{kind}_timers"]:
                rows.append((key, ts, kind, *_window_bounds(ns)))
    return rows


def window_values(keys: Sequence[bytes], snapshots: Sequence[bytes]) -> List[RowValues]:
    """Open windows of a window operator's keyed snapshots: ``(key, window_start, window_end, contents)``;
    contents are the list of elements, the reduced value or the accumulator. A merging (session) window's
    contents live under its state window; the row names the window itself."""
    rows: List[RowValues] = []
    for kb, data in zip(keys, snapshots):
        state = decode_snapshot(data)["state"]
        merged = state.get((MERGING_SET, VOID_NAMESPACE))
        actual = {state_window: window for window, state_window in (_plain(merged) or [])}
        key = decode_key(kb)
        for (name, ns), stored in state.items():
            if name == CONTENTS:
                contents = [_plain(v) for v in stored] if isinstance(stored, list) else _plain(stored)
                rows.append((key, *_window_bounds(actual.get(ns, ns)), contents))
    return rows


def batch_window_values(
    keys: Sequence[bytes], starts: Sequence[Optional[int]], accs: Sequence[bytes], size: int
) -> List[RowValues]:
    """Open windows of a window run batch-wise (``w=`` files): ``(key, window_start, window_end, contents)``."""
    return [
        (decode_key(kb), s, s + size, decode_value(json.loads(a)))
        for kb, s, a in zip(keys, starts, accs)
        if s is not None
    ]


# ------------------------------------------------------------------------------------------- Spark


def _need_type(t: Optional[TypeInformation], what: str) -> TypeInformation:
    if t is None:
        msg = f"{what} has no type information: it gives the column's Spark type (e.g. Types.LONG())"
        raise InvalidTypeError(msg)
    return t


def _decoded(
    df: Any,
    schema: Any,
    types: Sequence[Optional[TypeInformation]],
    decode: Callable[..., List[RowValues]],
    columns: Sequence[str],
) -> Any:
    """``df`` decoded on the executors: ``decode(*columns)`` gives Python rows, converted to ``schema``
    (``types[i]``: the declared type of column ``i``; None: kept as is)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow_schema = to_arrow_schema(schema, timezone="UTC")

    def fn(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            rows = decode(*(batch.column(c).to_pylist() for c in columns))
            arrays = []
            for i, (t, field) in enumerate(zip(types, arrow_schema)):
                values = [r[i] if t is None else to_spark_value(r[i], t) for r in rows]
                try:
                    arrays.append(pa.array(values, type=field.type))
                except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
                    sample = next((v for v in values if v is not None), None)
                    msg = (
                        f"state column {field.name!r} is declared as {t!r} ({field.type}), but the state holds "
                        f"values such as {sample!r}: declare the type the job keeps ({exc})"
                    )
                    raise InvalidTypeError(msg) from exc
            yield pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)

    return df.mapInArrow(fn, schema)


def _open(
    spark: Any, checkpoint: str, uid: str, batch_id: Optional[int], key_type: Optional[TypeInformation]
) -> Tuple[StateVersion, TypeInformation]:
    version = committed_state(checkpoint, uid, batch_id, default_file_system(spark))
    key = key_type or declared_key_type(version.signature)
    if key is None:
        msg = (
            f"the key type of operator {uid!r} is not recorded in the checkpoint: give key_type= (e.g. "
            "key_type=Types.STRING()), or key_by(..., key_type=...) in the job"
        )
        raise InvalidTypeError(msg)
    return version, key


def read_state(
    spark: Any,
    checkpoint: str,
    uid: str,
    descriptor: StateDescriptor,
    *,
    key_type: Optional[TypeInformation] = None,
    batch_id: Optional[int] = None,
    flatten: bool = True,
) -> Any:
    """The keyed state that ``descriptor`` names in operator ``uid`` of ``checkpoint``, as a DataFrame.

    Args:
        spark: the SparkSession that reads the files.
        checkpoint: the job's ``checkpoint_location`` (as given to ``execute``).
        uid: the operator's uid (``.uid(...)`` in the job).
        descriptor: a ``Value``/``List``/``Map``/``Reducing``/``AggregatingStateDescriptor`` with the state's
            name and type information (a map's ``key_type_info`` too), as the job declares it.
        key_type: the type of the operator's key (needed unless the job declared a basic one in ``key_by``).
        batch_id: a committed batch to read the state after (default: the newest committed one).
        flatten: lists and maps give one row per element/entry (default), or one row per key.

    Returns:
        A DataFrame: ``key, value`` (one row per element of a flattened list), ``key, map_key, value`` for a
        flattened map, ``key, values`` for a list and ``key, value`` (a map column) for a map not flattened.

    Raises:
        StateError: not a checkpoint of this package, unknown uid, no such committed batch, or no state of that
            name in the operator (the message names the states present).
        InvalidTypeError: the descriptor's kind differs from the state's, or a needed type is missing.
    """
    from pyspark.sql import types as T

    if not isinstance(descriptor, StateDescriptor):
        msg = f"read_state needs a state descriptor (e.g. ValueStateDescriptor('total', Types.LONG())); got {descriptor!r}"
        raise InvalidArgumentError(msg)
    version, key = _open(spark, checkpoint, uid, batch_id, key_type)
    name, kind = descriptor.name, descriptor.kind
    value_type = _need_type(descriptor.type_info, repr(descriptor))
    map_key = _need_type(getattr(descriptor, "key_type_info", None), f"the map keys of {descriptor!r}") if kind == "map" else None
    declared = declared_states(version.signature)
    if declared is not None and name in declared and declared[name] != kind:
        msg = (
            f"state {name!r} of operator {uid!r} is {declared[name]} state; read it with a {declared[name]} state "
            f"descriptor, not {descriptor!r}"
        )
        raise InvalidTypeError(msg)
    frame = snapshot_frame(spark, version)
    if declared is None or name not in declared:  # state registered after open(): look for it in the snapshots
        present = {n for n in set(declared or ()) | set(_names_present(frame)) if not _is_internal(n)}
        if name not in present:
            msg = (
                f"operator {uid!r} has no state named {name!r} after batch {version.batch_id}; "
                f"states present: {', '.join(map(repr, sorted(present))) or 'none'}"
            )
            raise StateError(msg)
    key_field = T.StructField("key", spark_type(key))
    if kind == "list" and flatten:
        fields, types = [T.StructField("value", spark_type(value_type))], [value_type]
    elif kind == "list":
        array = TypeInformation("LIST", [value_type])
        fields, types = [T.StructField("values", spark_type(array))], [array]
    elif kind == "map" and map_key is not None and flatten:
        fields = [T.StructField("map_key", spark_type(map_key)), T.StructField("value", spark_type(value_type))]
        types = [map_key, value_type]
    elif kind == "map" and map_key is not None:
        mapping = TypeInformation("MAP", [map_key, value_type])
        fields, types = [T.StructField("value", spark_type(mapping))], [mapping]
    else:
        fields, types = [T.StructField("value", spark_type(value_type))], [value_type]

    def decode(keys: List[bytes], snapshots: List[bytes]) -> List[RowValues]:
        return state_values(keys, snapshots, name, kind, flatten)

    return _decoded(frame, T.StructType([key_field, *fields]), [key, *types], decode, ["key", "snapshot"])


def _names_present(frame: Any) -> List[str]:
    """The user state names in the snapshots (a Spark job: decoded on the executors, distinct names collected)."""
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField("name", T.StringType())])

    def decode(keys: List[bytes], snapshots: List[bytes]) -> List[RowValues]:
        return [(n,) for n in sorted(state_names(snapshots))]

    return [r["name"] for r in _decoded(frame, schema, [None], decode, ["key", "snapshot"]).distinct().collect()]


def read_timers(
    spark: Any, checkpoint: str, uid: str, *, key_type: Optional[TypeInformation] = None, batch_id: Optional[int] = None
) -> Any:
    """Pending timers of operator ``uid``: ``key, timestamp, kind, window_start, window_end`` (kind ``event`` or
    ``processing``; the window of a window operator's timer, else null). A window run batch-wise keeps no timers
    (its firing and cleanup times follow from its windows): it is refused, naming :func:`read_windows`.
    ``key_type`` and ``batch_id`` as in :func:`read_state`."""
    from pyspark.sql import types as T

    version, key = _open(spark, checkpoint, uid, batch_id, key_type)
    if version.window_files:
        msg = (
            f"operator {uid!r} is a window run batch-wise: it keeps no timers (each window fires at its end - 1 "
            "and is cleaned up at end - 1 + allowed lateness); read its windows with read_windows"
        )
        raise UnsupportedFeatureError(msg)
    schema = T.StructType([
        T.StructField("key", spark_type(key)),
        T.StructField("timestamp", T.LongType()),
        T.StructField("kind", T.StringType()),
        T.StructField("window_start", T.LongType()),
        T.StructField("window_end", T.LongType()),
    ])
    return _decoded(snapshot_frame(spark, version), schema, [key, None, None, None, None], timer_values, ["key", "snapshot"])


def read_windows(
    spark: Any,
    checkpoint: str,
    uid: str,
    contents_type: TypeInformation,
    *,
    key_type: Optional[TypeInformation] = None,
    batch_id: Optional[int] = None,
) -> Any:
    """Open windows of window operator ``uid``: ``key, window_start, window_end, contents``.

    ``contents_type`` is the type of a window's contents: the reduced value (``reduce``), the accumulator
    (``aggregate``) or ``Types.LIST(element type)`` (``process``/``apply`` and windows with an evictor).
    ``key_type`` and ``batch_id`` as in :func:`read_state`. Only time windows have rows (count and global
    windows are refused)."""
    from pyspark.sql import types as T

    version, key = _open(spark, checkpoint, uid, batch_id, key_type)
    schema = T.StructType([
        T.StructField("key", spark_type(key)),
        T.StructField("window_start", T.LongType()),
        T.StructField("window_end", T.LongType()),
        T.StructField("contents", spark_type(contents_type)),
    ])
    types = [key, None, None, contents_type]
    if version.window_files:
        size = batch_window_size(version.signature)
        def decode(keys: List[bytes], starts: List[Optional[int]], accs: List[bytes]) -> List[RowValues]:
            return batch_window_values(keys, starts, accs, size)

        return _decoded(window_frame(spark, version), schema, types, decode, ["key", "window_start", "acc"])
    if version.signature is not None and not version.signature.startswith("window:"):
        msg = f"operator {uid!r} is not a window operator; read its state with read_state"
        raise InvalidArgumentError(msg)
    return _decoded(snapshot_frame(spark, version), schema, types, window_values, ["key", "snapshot"])


__all__ = [
    "StateVersion",
    "batch_window_size",
    "batch_window_values",
    "committed_state",
    "snapshot_frame",
    "window_frame",
    "declared_key_type",
    "declared_states",
    "read_state",
    "read_timers",
    "read_windows",
    "state_names",
    "state_values",
    "timer_values",
    "window_values",
]
