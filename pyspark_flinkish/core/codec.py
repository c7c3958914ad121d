"""A versioned, non-executable encoding of one key's state and timers (the "keyed snapshot").

The Spark executors keep every key's snapshot between micro-batches (in the state store, or in Parquet/
Delta files). The encoding is JSON with type tags, so it can be read without running code:

* JSON scalars stand for themselves; a JSON array is a Python list;
* every JSON object is a tag: ``{"T": [...]}`` tuple, ``{"D": [[k, v], ...]}`` dict (any keys),
  ``{"W": [start, end]}`` TimeWindow, ``{"G": 1}`` GlobalWindow, ``{"C": id}`` CountWindow, ``{"V": 1}`` the void namespace,
  ``{"t": [value, last_access]}`` a TTL-wrapped value, ``{"B": "<base64>"}`` bytes,
  ``{"F": "nan"|"inf"|"-inf"}`` non-finite floats, ``{"S": [...]}`` set (or frozenset; decoded as a set),
  ``{"R": [kind, names or null, [values]]}`` a PyFlink ``Row`` (kind: ``RowKind`` value; null names: positional),
  ``{"P": "<base64>"}`` a pickled user object (any other type).

These tags are pinned by golden files (``jvm-free-tests/golden/``, see ``docs/state-snapshots.md``).

Pickle is used only for values JSON cannot express (user classes as accumulators or state values), and
only when the caller allows it (``allow_pickle``): like Flink's Python state, such snapshots must only be
readable and writable by the job itself. Snapshots carry ``format`` and ``version``; an unknown version is
an error, never a silent reset.

:func:`dump_document` / :func:`load_document` wrap any other JSON state (the Spark driver's watermark state and
checkpoint metadata) with the same ``format`` / ``version`` check.
"""

from __future__ import annotations

import base64
import json
import math
import pickle
from typing import Any, Dict, Hashable, List, Tuple, Union

from .errors import StateError
from .rows import Row, RowKind
from .state_ttl import TtlValue
from .void_namespace import VOID_NAMESPACE
from .windows import CountWindow, GlobalWindow, TimeWindow

FORMAT = "pyspark_flinkish.keyed-snapshot"
VERSION = 1


def encode_value(value: Any, allow_pickle: bool = True) -> Any:
    """Python value -> JSON-compatible tagged structure."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"F": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    t = type(value)
    if t is list:
        return [encode_value(v, allow_pickle) for v in value]
    if t is tuple:
        return {"T": [encode_value(v, allow_pickle) for v in value]}
    if t is dict:
        return {"D": [[encode_value(k, allow_pickle), encode_value(v, allow_pickle)] for k, v in value.items()]}
    if t is TimeWindow:
        return {"W": [value.start, value.end]}
    if t is GlobalWindow:
        return {"G": 1}
    if t is CountWindow:
        return {"C": value.id}
    if value is VOID_NAMESPACE:
        return {"V": 1}
    if t is TtlValue:
        return {"t": [encode_value(value.value, allow_pickle), value.last_access]}
    if t is bytes:
        return {"B": base64.b64encode(value).decode("ascii")}
    if t in (set, frozenset):
        return {"S": [encode_value(v, allow_pickle) for v in value]}
    if t is Row:
        names = getattr(value, "_fields", None)
        values = [encode_value(v, allow_pickle) for v in value]
        return {"R": [value.get_row_kind().value, None if names is None else list(names), values]}
    if allow_pickle:
        return {"P": base64.b64encode(pickle.dumps(value, protocol=4)).decode("ascii")}
    msg = (
        f"cannot encode a {t.__name__} in keyed state without pickle; use JSON-like values "
        "(int, float, str, bool, None, list, tuple, dict, bytes) or allow pickled state"
    )
    raise StateError(msg)


def decode_value(data: Any, allow_pickle: bool = True) -> Any:
    """Inverse of :func:`encode_value`."""
    if data is None or isinstance(data, (bool, str, int, float)):
        return data
    if isinstance(data, list):
        return [decode_value(v, allow_pickle) for v in data]
    if not isinstance(data, dict) or len(data) != 1:
        msg = f"malformed keyed snapshot value: {data!r}"
        raise StateError(msg)
    ((tag, body),) = data.items()
    if tag == "T":
        return tuple(decode_value(v, allow_pickle) for v in body)
    if tag == "D":
        return {_hashable(decode_value(k, allow_pickle)): decode_value(v, allow_pickle) for k, v in body}
    if tag == "W":
        return TimeWindow(body[0], body[1])
    if tag == "G":
        return GlobalWindow()
    if tag == "C":
        return CountWindow(body)
    if tag == "V":
        return VOID_NAMESPACE
    if tag == "t":
        return TtlValue(decode_value(body[0], allow_pickle), body[1])
    if tag == "B":
        return base64.b64decode(body)
    if tag == "F":
        return float(body)
    if tag == "S":
        return {_hashable(decode_value(v, allow_pickle)) for v in body}
    if tag == "R":
        row = Row(*(decode_value(v, allow_pickle) for v in body[2]))
        if body[1] is not None:
            row.set_field_names(list(body[1]))
        row.set_row_kind(RowKind(body[0]))
        return row
    if tag == "P":
        if not allow_pickle:
            msg = "this keyed snapshot holds pickled user objects, but unpickling is not allowed here"
            raise StateError(msg)
        return pickle.loads(base64.b64decode(body))
    msg = f"unknown tag {tag!r} in keyed snapshot"
    raise StateError(msg)


def _hashable(value: Any) -> Hashable:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value  # type: ignore[no-any-return]


def encode_snapshot(snapshot: Dict[str, Any], allow_pickle: bool = True) -> bytes:
    """One key's snapshot (``KeyedOperator.snapshot_key``) -> bytes."""
    state: Dict[Tuple[str, Hashable], Any] = snapshot["state"]
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "state": [[name, encode_value(ns, allow_pickle), encode_value(v, allow_pickle)] for (name, ns), v in state.items()],
        "event_timers": [[ts, encode_value(ns, allow_pickle)] for ts, ns in snapshot["event_timers"]],
        "processing_timers": [[ts, encode_value(ns, allow_pickle)] for ts, ns in snapshot["processing_timers"]],
    }
    return json.dumps(doc, separators=(",", ":"), allow_nan=False).encode("utf-8")


def decode_snapshot(data: bytes, allow_pickle: bool = True) -> Dict[str, Any]:
    """bytes -> one key's snapshot, for ``KeyedOperator.restore_key``."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        msg = f"keyed snapshot is not valid: {exc}"
        raise StateError(msg) from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        msg = f"not a pyspark_flinkish keyed snapshot (format={doc.get('format') if isinstance(doc, dict) else None!r})"
        raise StateError(msg)
    if doc.get("version") != VERSION:
        msg = (
            f"keyed snapshot version {doc.get('version')!r} is not supported by this version of pyspark_flinkish "
            f"(it reads version {VERSION}); refusing to reset state silently"
        )
        raise StateError(msg)
    state: Dict[Tuple[str, Hashable], Any] = {}
    for name, ns, value in doc["state"]:
        state[(name, decode_value(ns, allow_pickle))] = decode_value(value, allow_pickle)
    event: List[Tuple[int, Hashable]] = [(ts, decode_value(ns, allow_pickle)) for ts, ns in doc["event_timers"]]
    processing: List[Tuple[int, Hashable]] = [(ts, decode_value(ns, allow_pickle)) for ts, ns in doc["processing_timers"]]
    return {"state": state, "event_timers": event, "processing_timers": processing}


def dump_document(format: str, version: int, body: Dict[str, Any]) -> bytes:
    """A JSON document ``{"format": ..., "version": ..., **body}`` as UTF-8 bytes (body: plain JSON data)."""
    doc = {"format": format, "version": version, **body}
    return json.dumps(doc, separators=(",", ":"), allow_nan=False).encode("utf-8")


def load_document(data: bytes, format: str, version: Union[int, Tuple[int, ...]], where: str) -> Dict[str, Any]:
    """Inverse of :func:`dump_document`: the body, or a :class:`StateError` naming ``where`` when the data is not
    such a document or has another version (never a silent reset); ``version`` may name several versions the caller
    reads (the body's ``version`` then says which)."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        msg = f"{where} is not a valid {format} document: {exc}"
        raise StateError(msg) from exc
    if not isinstance(doc, dict) or doc.get("format") != format:
        found = doc.get("format") if isinstance(doc, dict) else None
        msg = f"{where} is not a {format} document (format={found!r})"
        raise StateError(msg)
    accepted = version if isinstance(version, tuple) else (version,)
    if doc.get("version") not in accepted:
        msg = (
            f"{where} has {format} version {doc.get('version')!r}, but this version of pyspark_flinkish reads version "
            f"{' or '.join(map(str, accepted))}; refusing to reset state silently (use the pyspark_flinkish version "
            "that wrote it, or a new checkpoint location)"
        )
        raise StateError(msg)
    body = {k: v for k, v in doc.items() if k not in ("format", "version")}
    if isinstance(version, tuple):
        body["version"] = doc["version"]
    return body


__all__ = [
    "FORMAT",
    "VERSION",
    "encode_value",
    "decode_value",
    "encode_snapshot",
    "decode_snapshot",
    "dump_document",
    "load_document",
]
