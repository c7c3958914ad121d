"""Keyed state of a checkpoint as Spark DataFrames: Flink's State Processor API, Spark's state data source.

:func:`read_state` returns one operator's keyed state for one state descriptor, :func:`read_timers` its pending
timers and :func:`read_windows` the open windows of a window operator, each as a batch DataFrame read from the
newest *committed* state version of a checkpoint (or ``batch_id=``). The operator is named by its uid: the one
given with ``.uid(...)`` in the job, or the generated one that ``handle.progress()["operators"]`` shows.

Which version is committed: the driver writes ``<checkpoint>/flinkish/driver/b=<batch>.json`` only after every
state partition of the batch was written (``spark/driver.py``), and that document's manifests name the files that
make up each partition's state then (``spark/state_store.py``: a snapshot and deltas, immutable, each with a
sequence number; a key's rows in a newer file replace all its rows in older ones, and a deletion is such a row
too). The newest document names the newest complete state version; files of a newer, half-written one (a batch
that failed or is running) are named by no manifest and never read. The driver keeps the last three batches'
documents and the files they name; older ones are pruned. A document of the earlier layout (no manifests) names
its batch's one file per partition (``v=``/``w=``), read with their own columns.

Reading runs on the executors: Spark reads the files, keeps each key's rows of the newest file holding it (a
window over the key, never on the driver) and drops deleted keys; ``mapInArrow`` then decodes each key's snapshot
with the state codec (``core/codec.py``) and converts it to the descriptor's Spark type (``spark/types.py``). The
pure decoding functions (:func:`state_values`, :func:`timer_values`, :func:`window_values`) take the files'
columns and give Python rows. Only :func:`committed_state` (which files hold a committed version) and
:func:`latest_frame` (their columns and how they combine; :func:`snapshot_frame` / :func:`window_frame` select
from it) know the layout of ``spark/state_store.py``: a new storage layer replaces these.

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

import gc
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple

from ..core.codec import FORMAT, VERSION, decode_snapshot, decode_value
from ..core.errors import InvalidArgumentError, InvalidTypeError, StateError, UnsupportedFeatureError
from ..core.state import VOID_NAMESPACE
from ..core.state_descriptors import StateDescriptor
from ..core.state_ttl import TtlValue
from ..core.typeinfo import TypeInformation
from ..core.window_operator import CONTENTS, MERGING_SET
from ..core.windows import TimeWindow
from . import state_store, storage
from .checkpoint import META_FILE, committed_batches, driver_document_path, read_driver_document, read_meta
from .checkpoint_location import resolve_checkpoint
from .keys import decode_key
from .savepoint import METADATA_FILE, read_savepoint
from .session import default_file_system, spark_path, storage_options
from .types import spark_type, to_spark_value

RowValues = Tuple[Any, ...]


# ------------------------------------------------------------------------------------------- layout


class StateFile(NamedTuple):
    """One state file of a committed version, as its partition's manifest names it (``spark/state_store.py``)."""

    partition: int
    """The state partition whose directory holds it."""
    path: str
    """Local path (``sp=<partition>/<name>`` at its end; Spark reads it through ``session.spark_path``)."""
    seq: int
    """Its sequence number in the partition: a key's rows in the file with the highest one replace all others."""
    kind: str
    """``snapshot`` or ``delta`` (the columns of ``state_cache.FILE_SCHEMA``), or of the earlier layout
    ``legacy-v`` (``key, snapshot``) / ``legacy-w`` (``key, window_start, acc``)."""


@dataclass(frozen=True)
class StateVersion:
    """One operator's committed state version: what :func:`committed_state` finds in a checkpoint."""

    uid: str
    batch_id: int
    layout: str
    """``state_store.LAYOUT_SNAPSHOTS`` (a keyed snapshot per key) or ``LAYOUT_WINDOWS`` (a window run batch-wise:
    a row per open window, and one with a null ``window_start`` for the keyed snapshot of its functions' state)."""
    files: Tuple[StateFile, ...]
    """Every partition's files, oldest first within a partition."""
    signature: Optional[str]
    """The operator's state signature (``spark/signatures.py``), if the checkpoint recorded one."""

    @property
    def batch_wise_windows(self) -> bool:
        return self.layout == state_store.LAYOUT_WINDOWS




def _not_a_checkpoint(location: str, root: str, meta_path: str) -> StateError:
    hint = "give the checkpoint_location the job was executed with"
    if storage.exists(storage.join(storage.parent(root), "flinkish", META_FILE)):
        hint = f"this is Spark's part of a job's checkpoint; give its parent, {storage.parent(root)!r}"
    elif storage.is_dir(storage.join(root, "offsets")):
        hint = (
            "this is a Spark streaming checkpoint without the package's state: a job with "
            "backend='apply_in_pandas_with_state' keeps its keyed state in Spark's state store; read it with "
            "Spark's state data source (spark.read.format('statestore'))"
        )
    msg = f"{location!r} is not a checkpoint of a pyspark_flinkish job: {meta_path} is missing ({hint})"
    return StateError(msg)


def committed_state(location: str, uid: str, batch_id: Optional[int] = None, default_fs: str = "file:///") -> StateVersion:
    """The files of operator ``uid``'s state after the newest committed batch of the checkpoint at ``location``
    (or after ``batch_id``). The only function that knows which files hold a committed version: the manifests of
    that batch's driver document (``driver/b=<batch>.json``), never a listing of the state directories.

    Raises:
        StateError: ``location`` is not a checkpoint of this package, it has no committed batch, ``batch_id`` is
            not among the committed ones kept, the batch's state has no operator ``uid`` (the message names the
            uids present), or a file its manifests name is missing.
    """
    root = resolve_checkpoint(location, default_fs)
    if storage.exists(storage.join(root, METADATA_FILE)):  # a savepoint: one version, its batch's
        return _savepoint_state(location, root, uid, batch_id)
    flinkish = storage.join(root, "flinkish")
    meta_path = storage.join(flinkish, META_FILE)
    if not storage.exists(meta_path):
        raise _not_a_checkpoint(location, root, meta_path)
    meta = read_meta(root)
    committed = committed_batches(root)
    if not committed:
        msg = f"checkpoint {location!r} has no committed micro-batch yet: its state has never been completely written"
        raise StateError(msg)

    def not_kept() -> StateError:
        msg = (
            f"batch {batch_id} of checkpoint {location!r} is not a committed state version; committed versions kept: "
            f"{', '.join(map(str, committed))} (older ones are pruned)"
        )
        return StateError(msg)

    if batch_id is not None and batch_id not in committed:
        raise not_kept()
    batch = committed[-1] if batch_id is None else batch_id
    try:
        document = read_driver_document(root, batch)
    except StateError:  # pruned by a running job since the listing
        if storage.exists(driver_document_path(root, batch)):
            raise
        raise not_kept() from None
    state_root = storage.join(flinkish, "state")
    operators = state_store.operators_of(document, state_root, batch, int(meta["state_partitions"]))
    owner = f"checkpoint {location!r} holds no keyed state of an operator with uid {uid!r} after batch {batch}"
    return _version(operators, state_root, uid, batch, meta.get("operators") or {}, owner)


def _version(
    operators: Dict[str, Any], state_root: str, uid: str, batch: int, signatures: Dict[str, str], missing: str
) -> StateVersion:
    """Operator ``uid``'s files among ``operators`` (a driver document's or a savepoint's state); ``missing``
    starts the message when it has none."""
    if uid not in operators:
        msg = f"{missing}; operators with keyed state: {', '.join(map(repr, sorted(operators))) or 'none'}"
        raise StateError(msg)
    op = operators[uid]
    files = []
    for sp, manifest in sorted(op["partitions"].items(), key=lambda item: int(item[0])):
        for file_path, entry in state_store.file_paths(state_root, uid, int(sp), manifest):
            if not storage.exists(file_path):
                msg = (
                    f"keyed state of operator {uid!r} after batch {batch} is missing: {file_path} (the checkpoint "
                    "or savepoint directory was copied partially, or a running job pruned it: it keeps the files of "
                    "its last three committed batches)"
                )
                raise StateError(msg)
            files.append(StateFile(int(sp), file_path, int(entry["seq"]), str(entry["kind"])))
    return StateVersion(uid, batch, str(op["layout"]), tuple(files), signatures.get(uid))


def _savepoint_state(location: str, root: str, uid: str, batch_id: Optional[int]) -> StateVersion:
    """:func:`committed_state` of a savepoint (``spark/savepoint.py``): the state of the batch it was taken at."""
    metadata = read_savepoint(root)
    batch = int(metadata["batch"])
    if batch_id is not None and batch_id != batch:
        msg = f"savepoint {location!r} holds the state after batch {batch} only; got batch_id={batch_id}"
        raise StateError(msg)
    missing = f"savepoint {location!r} holds no keyed state of an operator with uid {uid!r}"
    return _version(metadata["state"], root, uid, batch, metadata.get("signatures") or {}, missing)


def _sources() -> List[Tuple[Tuple[str, ...], str, Tuple[str, str, str]]]:
    """``(file kinds, the files' columns to read, what is read as FILE_SCHEMA's key, window_start and value)``, one
    entry per column layout of ``state_store.FILE_COLUMNS``."""
    layouts: Dict[Tuple[str, Optional[str], str], List[str]] = {}
    for kind, columns in state_store.FILE_COLUMNS.items():
        layouts.setdefault(columns, []).append(kind)
    out = []
    for (key, start, value), kinds in layouts.items():
        ddl = ", ".join([f"{key} binary", *([f"{start} long"] if start else []), f"{value} binary"])
        out.append((tuple(kinds), ddl, (key, start or "cast(null as long)", value)))
    return out


def latest_frame(spark: Any, version: StateVersion) -> Any:
    """``(key, window_start, value)`` rows of ``version``: of each key, the rows of the newest file (highest
    ``seq`` in its partition) that holds it, deletions dropped (the state as ``state_store.manifest_rows`` makes
    it up, computed by Spark: each file's rows are tagged with its partition and sequence number by their file's
    name, ``_metadata.file_path``, and a window over (partition, key) keeps the newest; with one file per partition,
    as in a savepoint, every row is its key's newest and no window runs). Files of the earlier layout are read with
    their own columns."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    frames = []
    # one file per partition (a savepoint, a partition just snapshotted): every row is its key's newest, no window
    single = len({f.partition for f in version.files}) == len(version.files)
    for kinds, ddl, (key, start, value) in _sources():
        files = [f for f in version.files if f.kind in kinds]
        if not files:
            continue
        if single:
            df = spark.read.schema(ddl).parquet(*(spark_path(f.path) for f in files))
            frames.append(df.select(F.col(key).alias("key"), F.expr(start).alias("window_start"), F.col(value).alias("value")))
            continue
        index = spark.createDataFrame(
            [(f"sp={f.partition:05d}/{f.path.rsplit('/', 1)[-1]}", f.partition, f.seq) for f in files],
            "__file string, __sp int, __seq long",
        )
        df = spark.read.schema(ddl).parquet(*(spark_path(f.path) for f in files))
        df = df.select(
            F.col(key).alias("key"),
            F.expr(start).alias("window_start"),
            F.col(value).alias("value"),
            # the partition's directory and the file's name: plain characters, whatever the path before them
            F.regexp_extract(F.col("_metadata.file_path"), r"(sp=[0-9]+/[^/]+)$", 1).alias("__file"),
        )
        frames.append(df.join(F.broadcast(index), "__file").drop("__file"))
    if not frames:
        return spark.createDataFrame([], "key binary, window_start long, value binary")
    rows = frames[0]
    for more in frames[1:]:
        rows = rows.unionByName(more)
    if not single:
        newest = F.max("__seq").over(Window.partitionBy("__sp", "key"))
        rows = rows.withColumn("__newest", newest).where("__seq = __newest")
    return rows.where("value is not null or window_start is not null").select("key", "window_start", "value")


def snapshot_frame(spark: Any, version: StateVersion) -> Any:
    """``(key, snapshot)`` rows of ``version`` (binary columns): the keyed snapshots of every key, or of a window
    run batch-wise the keyed state its functions keep (the window contents are in :func:`window_frame`)."""
    # a broadcast operator's own state is the row with an empty key (``keyed_partition.OPERATOR_STATE_KEY``)
    df = latest_frame(spark, version).where("window_start is null and length(key) > 0")
    return df.selectExpr("key", "value as snapshot")


def window_frame(spark: Any, version: StateVersion) -> Any:
    """``(key, window_start, acc)`` rows of a window run batch-wise: one per open window."""
    return latest_frame(spark, version).where("window_start is not null").selectExpr("key", "window_start", "value as acc")


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


COLUMNAR_TYPES = frozenset({"STRING", "CHAR", "BOOLEAN", "BYTE", "SHORT", "INT", "LONG", "FLOAT", "DOUBLE"})
"""The declared types whose values :func:`value_columns` decodes a batch at a time (and ``ROW``/``TUPLE`` of them):
a JSON scalar is such a value as the state codec (``decode_value`` gives it back as it is) and Spark's column
(``to_spark_value`` of these types is the identity) take it."""
_SCALARS = frozenset({int, float, str, bool, type(None)})
_MISSING = object()


def columnar_type(t: Optional[TypeInformation]) -> bool:
    """Whether :func:`value_columns` decodes values (or keys) of type ``t``: one of :data:`COLUMNAR_TYPES`, or a
    ``ROW``/``TUPLE`` of them."""
    if t is None:
        return False
    if t.name in COLUMNAR_TYPES:
        return True
    return t.name in ("ROW", "TUPLE") and all(c.name in COLUMNAR_TYPES for c in t.children)


def _json_batch(data: Sequence[bytes]) -> Optional[List[Any]]:
    """The JSON values of ``data`` (one document each), parsed by one ``json.loads``; None when one is not valid."""
    gc.disable()  # millions of new containers, none of them in a cycle: the collector would only rescan them
    try:
        parsed = json.loads(b"[" + b",".join(data) + b"]")
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    finally:
        gc.enable()
    return parsed if isinstance(parsed, list) and len(parsed) == len(data) else None


def _spark_value(data: Any, t: TypeInformation) -> Any:
    """One encoded value (JSON, as in a snapshot or a key's bytes) as :func:`~.types.to_spark_value` gives it after
    ``decode_value`` (a TTL-wrapped value unwrapped, as :func:`state_values` does): a scalar of a basic type and a
    positional or same-named ``Row`` of scalars directly, anything else through those two functions."""
    if type(data) in _SCALARS:
        if t.name in COLUMNAR_TYPES or data is None:
            return data
    elif type(data) is dict and len(data) == 1 and t.name in ("ROW", "TUPLE") and type(data.get("R")) is list:
        if len(data["R"]) != 3 or type(data["R"][2]) is not list:
            return to_spark_value(_plain(decode_value(data)), t)
        _, names, values = data["R"]
        fields = list(t.field_names or (f"f{i}" for i in range(len(t.children))))
        by_position = names is None or (names == fields and len(set(names)) == len(names))
        if by_position and len(values) == len(fields) and all(type(v) in _SCALARS for v in values):
            return tuple(values)
    return to_spark_value(_plain(decode_value(data)), t)


def value_columns(
    keys: Sequence[bytes], snapshots: Sequence[bytes], name: str, key_type: TypeInformation, value_type: TypeInformation
) -> Optional[Tuple[List[Any], List[Any]]]:
    """``(keys, values)`` of value-like state ``name`` (value, reducing, aggregating) outside windows, as the
    columns of the declared Spark types: the same values as :func:`state_values` then ``to_spark_value`` of each
    (``jvm-free-tests/spark/test_state_columns.py`` checks it on random values of every type covered), decoded a batch
    at a time: one ``json.loads`` for the snapshots and one for the keys, and of each snapshot only the state asked
    for. None (decode with :func:`state_values`) when a snapshot or key is not valid JSON; a snapshot of another
    format or version raises the codec's error."""
    docs = _json_batch(snapshots)
    if docs is None:
        return None
    positions: List[int] = []
    values: List[Any] = []
    for i, doc in enumerate(docs):
        if type(doc) is not dict or doc.get("format") != FORMAT or doc.get("version") != VERSION:
            decode_snapshot(snapshots[i])  # raises the codec's error
            return None
        found = _MISSING
        for entry_name, ns, value in doc["state"]:
            # the void namespace's encoding: decode_value gives VOID_NAMESPACE for {"V": anything}, nothing else
            if entry_name == name and type(ns) is dict and len(ns) == 1 and "V" in ns:
                found = value  # the last entry wins, as in decode_snapshot's dict
        if found is not _MISSING and found is not None:  # a null value is no row, as in state_values
            positions.append(i)
            values.append(_spark_value(found, value_type))
    parsed_keys = _json_batch([keys[i] for i in positions])
    if parsed_keys is None:
        return None
    return [_spark_value(k, key_type) for k in parsed_keys], values


_INTEGER = r"-?(?:0|[1-9][0-9]*)"
_SCALAR_PATTERNS = {
    "LONG": _INTEGER, "INT": _INTEGER, "SHORT": _INTEGER, "BYTE": _INTEGER,
    "BOOLEAN": "true|false",
    "STRING": r'"[^"\\]*"', "CHAR": r'"[^"\\]*"',  # no escape: the JSON text is the string itself, in quotes
    "FLOAT": r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][-+]?[0-9]+)?|[eE][-+]?[0-9]+)",  # floats only (JSON ints: by rows)
    "DOUBLE": r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][-+]?[0-9]+)?|[eE][-+]?[0-9]+)",
}


def _scalar_array(text: Any, t: TypeInformation, arrow_type: Any) -> Any:
    """The JSON scalars ``text`` (an Arrow string array matching ``_SCALAR_PATTERNS[t.name]``) as ``arrow_type``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if t.name == "BOOLEAN":
        return pc.equal(text, "true").cast(arrow_type)
    if t.name in ("STRING", "CHAR"):
        return pc.utf8_slice_codeunits(text, 1, -1).cast(arrow_type)
    if t.name == "FLOAT":  # as Python's float (a double), then rounded to 32 bits as pa.array does
        return pc.cast(pc.cast(text, pa.float64()), arrow_type, safe=False)
    return pc.cast(text, arrow_type)  # checked: a value out of the type's range raises (then: by rows)


def value_arrays(keys: Any, snapshots: Any, name: str, key_type: TypeInformation, value_type: TypeInformation,
                 arrow_types: Tuple[Any, Any]) -> Optional[Tuple[Any, Any]]:
    """``(keys, values)`` of value-like state ``name`` as Arrow arrays of ``arrow_types``, computed with Arrow's
    compute functions (no Python object per value), when every snapshot of the batch is as ``encode_snapshot``
    writes it with that state's entry first and a JSON scalar of the declared basic type as its value, and every key
    is such a scalar: the same arrays as ``pa.array`` of :func:`value_columns`' columns (pinned by
    ``jvm-free-tests/spark/test_state_columns.py``). None otherwise (or when a value does not fit its Arrow type):
    decode the batch with :func:`value_columns`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    key_pattern, value_pattern = _SCALAR_PATTERNS.get(key_type.name), _SCALAR_PATTERNS.get(value_type.name)
    if key_pattern is None or value_pattern is None or len(snapshots) == 0:
        return None
    entry = json.dumps(name) + ',{"V":1},'
    head = '{"format":' + json.dumps(FORMAT) + ',"version":' + json.dumps(VERSION) + ',"state":[['
    try:
        text = pc.cast(snapshots, pa.string())
        prefix = head + entry  # ASCII (json.dumps escapes the rest): as many code units as bytes
        if not pc.all(pc.starts_with(text, prefix)).as_py():
            return None
        found = pc.extract_regex(pc.utf8_slice_codeunits(text, len(prefix)), f"^(?P<v>{value_pattern})\\][,\\]]")
        key_text = pc.cast(keys, pa.string())
        if found.null_count or not pc.all(pc.match_substring_regex(key_text, f"^(?:{key_pattern})$")).as_py():
            return None
        values = _scalar_array(pc.struct_field(found, [0]), value_type, arrow_types[1])
        return _scalar_array(key_text, key_type, arrow_types[0]), values
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


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
    """Open windows of a window run batch-wise (the rows of :func:`window_frame`): ``(key, window_start, window_end,
    contents)``."""
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
    decode_columns: Optional[Callable[..., Optional[Sequence[List[Any]]]]] = None,
    decode_arrays: Optional[Callable[..., Optional[Sequence[Any]]]] = None,
) -> Any:
    """``df`` decoded on the executors: ``decode(*columns)`` gives Python rows, converted to ``schema``
    (``types[i]``: the declared type of column ``i``; None: kept as is). ``decode_columns(*columns)``, when given,
    gives the converted columns of a batch at once (e.g. :func:`value_columns`), or None to decode it by rows;
    before it, ``decode_arrays(arrow types, *columns as Arrow arrays)`` the batch's Arrow arrays, or None."""
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    arrow_types = tuple(field.type for field in arrow_schema)

    def fn(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            done = decode_arrays(arrow_types, *(batch.column(c) for c in columns)) if decode_arrays else None
            if done is not None:
                yield pa.RecordBatch.from_arrays(list(done), schema=arrow_schema)
                continue
            inputs = [batch.column(c).to_pylist() for c in columns]
            converted = decode_columns(*inputs) if decode_columns is not None else None
            if converted is None:
                rows = decode(*inputs)
                converted = [
                    [r[i] if t is None else to_spark_value(r[i], t) for r in rows] for i, t in enumerate(types)
                ]
            arrays = []
            for t, field, values in zip(types, arrow_schema, converted):
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
    # the S3 client's settings from the session's fs.s3a.*, as a job's execute() takes them: a process that only
    # reads a checkpoint on s3a:// (no job ran in it) must reach the same endpoint as Spark's s3a does
    storage.configure(storage_options(spark))
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
        checkpoint: the job's ``checkpoint_location`` (as given to ``execute``), or a savepoint's path (what
            ``stop_with_savepoint`` returned).
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

    columnar = None
    if kind not in ("list", "map") and columnar_type(key) and columnar_type(value_type):

        def columnar(keys: List[bytes], snapshots: List[bytes]) -> Optional[Tuple[List[Any], List[Any]]]:
            return value_columns(keys, snapshots, name, key, value_type)

    def arrays(arrow_types: Tuple[Any, Any], keys: Any, snapshots: Any) -> Optional[Tuple[Any, Any]]:
        return value_arrays(keys, snapshots, name, key, value_type, arrow_types)

    schema = T.StructType([key_field, *fields])
    vectorized = arrays if columnar is not None else None
    return _decoded(frame, schema, [key, *types], decode, ["key", "snapshot"], columnar, vectorized)


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
    if version.batch_wise_windows:
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
    if version.batch_wise_windows:
        size = batch_window_size(version.signature)
        def decode(keys: List[bytes], starts: List[Optional[int]], accs: List[bytes]) -> List[RowValues]:
            return batch_window_values(keys, starts, accs, size)

        return _decoded(window_frame(spark, version), schema, types, decode, ["key", "window_start", "acc"])
    if version.signature is not None and not version.signature.startswith("window:"):
        msg = f"operator {uid!r} is not a window operator; read its state with read_state"
        raise InvalidArgumentError(msg)
    return _decoded(snapshot_frame(spark, version), schema, types, window_values, ["key", "snapshot"])


__all__ = [
    "StateFile",
    "StateVersion",
    "batch_window_size",
    "batch_window_values",
    "COLUMNAR_TYPES",
    "columnar_type",
    "committed_state",
    "latest_frame",
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
    "value_arrays",
    "value_columns",
    "window_values",
]
