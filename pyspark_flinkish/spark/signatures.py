"""State signatures: what shapes a keyed operator's state, recorded in the checkpoint and compared on restart so
that an incompatible operator under the same uid is refused up front (Flink checks state compatibility when it
restores a savepoint; here the checkpoint's ``meta.json`` keeps the signatures). Both Spark executors check a
checkpoint through :func:`check_operators` when a job starts on it.
"""

from __future__ import annotations

import pickle
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ..core.errors import StateError
from ..core.key_order import knows_bytes
from ..datastream.plan import Transformation, WindowSpec
from .chain import FixedClock

KEY_IDENTITY = "flink"
"""The ``key_identity`` part of a signature with a declared key type: its state holds each key as Flink tells keys
apart (``core/key_identity.py``: a ``FLOAT`` key rounded to 32 bits, an integral ``DOUBLE`` key as a float). A
checkpoint without the part was written before that, under the key as Python held it."""

KEY_IDENTITY_DECLARED_FORM = "flink-declared-form"
"""The ``key_identity`` part for a key type with a ``ROW`` in it, or one whose Flink bytes the package does not know
(``BIG_DEC``, ``BIG_INT``, SQL times, lists, a pickled field; ``core.key_order.knows_bytes``): its state holds each
key by the bytes of the key as Flink holds it (``core.key_identity.key_bytes``): a ``ROW`` key as a ``Row`` with the
type's names whatever form the selector returned it in, a ``BIG_DEC`` key as its type codes it. Under
:data:`KEY_IDENTITY` such a key's bytes were those of the form the selector returned (a tuple, a positional and a
named ``Row`` of one key had three), so such a checkpoint is refused (:func:`compare_signatures`)."""

_ROUNDED_KEY_TYPE = re.compile(r"\b(?:FLOAT|DOUBLE)\b")


def key_identity(key_type: Any) -> str:
    """The ``key_identity`` part of the signature of an operator keyed by ``key_type`` (not None)."""
    if getattr(key_type, "name", None) == "PICKLED_BYTE_ARRAY":
        return KEY_IDENTITY
    return KEY_IDENTITY_DECLARED_FORM if _has_row(key_type) or not knows_bytes(key_type) else KEY_IDENTITY


def _has_row(key_type: Any) -> bool:
    return getattr(key_type, "name", None) == "ROW" or any(_has_row(c) for c in getattr(key_type, "children", ()))


_START_AGAIN = (
    "start it from a new checkpoint location, or let the version that wrote it run the job to its end"
)


def _keys_stored_before_key_identity(old_parts: Dict[str, str], new_parts: Dict[str, str]) -> Optional[str]:
    """What changed for a checkpoint whose state holds keys of a declared ``FLOAT`` or ``DOUBLE`` type (also inside a
    row or tuple) stored before :data:`KEY_IDENTITY`, or keys of a type whose bytes changed with
    :data:`KEY_IDENTITY_DECLARED_FORM` stored before that: such keys now have other bytes, so that state would not
    be found or would split (never a silent reset); None when nothing did."""
    key = old_parts.get("key")
    if key is None or "key_identity" not in new_parts or old_parts.get("key") != new_parts.get("key"):
        return None
    old, new = old_parts.get("key_identity"), new_parts["key_identity"]
    if old is None and _ROUNDED_KEY_TYPE.search(key):
        return (
            f"its state holds keys of type {key} as Python held them, written before keys were held as Flink tells "
            "them apart (a FLOAT key rounded to 32 bits, an integral DOUBLE key as a float; a ROW key as a Row with "
            f"the type's names whatever form the selector returned it in): with other bytes now, that state would "
            f"not be found; {_START_AGAIN}"
        )
    if old != new and new == KEY_IDENTITY_DECLARED_FORM:
        return (
            f"its state holds keys of type {key} by the bytes of the form the key selector returned them in, written "
            "before a key's bytes were made from the key as Flink holds it (key_identity "
            f"{old or 'none'} -> {new}: a ROW key as a Row with the type's names, whether the selector returned a "
            "tuple, a positional or a named Row; a BIG_DEC, BIG_INT, SQL time or list key as its type codes it): "
            f"with other bytes now, a key's state would not be found or would split; {_START_AGAIN}"
        )
    return None


def state_signature(t: Transformation) -> Optional[str]:
    """What shapes a keyed operator's state, so that a restart with an incompatible operator is caught up front:
    for windows the assigner, trigger, evictor, lateness, contents and the aggregate/reduce function's class, else
    the operator and its function's class; then ``" | "``-separated parts known only for some pipelines
    (:func:`signatures_compatible` compares a part only when both sides have it): the declared key type
    (``key_by(..., key_type=...)``), the aggregate's accumulator type and the state the operator declares when
    opened (state descriptors: name, kind, type). A changed function body keeps the signature."""
    if not t.keyed:
        return None
    spec = t.spec
    contents = spec.contents if isinstance(spec, WindowSpec) else None
    if not isinstance(spec, WindowSpec):
        # checkpoints store ``keyed_process:-``: the process function's class has never been part of it
        base = f"{getattr(spec, 'op', None)}:-"
    else:
        fn = getattr(contents, "agg_fn", None) or getattr(contents, "reduce_fn", None)
        parts = [
            repr(spec.assigner),
            repr(spec.trigger),
            repr(spec.evictor),
            f"lateness={spec.allowed_lateness}",
            f"contents={getattr(contents, 'kind', '-')}:{type(fn).__name__ if fn is not None else '-'}",
        ]
        base = "window:" + " ".join(parts)
    extra = {}
    key_type = getattr(spec, "key_type", None)
    if key_type is not None:
        extra["key"] = repr(key_type)
        extra["key_identity"] = key_identity(key_type)
    agg = getattr(contents, "agg_fn", None)
    if agg is not None:
        try:
            extra["accumulator"] = type(agg.create_accumulator()).__name__
        except Exception:  # user code: the part stays unknown
            pass
    declared = _declared_state(t)
    if declared is not None:
        extra["state"] = declared
    return base + "".join(f" | {k}={v}" for k, v in extra.items())


def _declared_state(t: Transformation) -> Optional[str]:
    """The state descriptors a fresh copy of the operator registers when opened (the user's ``open`` included),
    or None when it cannot be opened here (the part of the signature then stays unknown)."""
    from pyspark import cloudpickle  # what executors get: a copy, the user's function objects stay untouched

    try:
        op = pickle.loads(cloudpickle.dumps(t.factory))()  # type: ignore[misc]
        op.open(_NullOutput(), FixedClock(0))
        descriptors = op.backend.descriptors
        text = ",".join(
            f"{name}:{d.kind}:{d.type_info!r}" + (":ttl" if d._ttl() is not None else "")
            for name, d in sorted(descriptors.items())
        )
        op.close()
    except Exception:  # user code that cannot run on the driver
        return None
    return f"[{text}]"


class _NullOutput:
    def collect(self, record: Any) -> None:
        return None

    def collect_side(self, tag: Any, record: Any) -> None:
        return None

    def emit_watermark(self, watermark: int) -> None:
        return None

    def emit_idle(self, idle: bool) -> None:
        return None


def compare_signatures(stored: Dict[str, str], current: Dict[str, str]) -> Tuple[List[str], Dict[str, str]]:
    """Compare a checkpoint's operator signatures (uid -> :func:`state_signature`) with the pipeline's: returns
    one line per incompatible operator (its uid and what changed) and the signatures to store from now on.

    The first part of a signature must be equal; a ``" | "`` part only when both sides have it (a checkpoint
    written before the part existed, or state that could not be inspected this time); stored parts the pipeline
    cannot tell are kept. Operators the checkpoint has no state for are new and get recorded."""
    problems, merged = [], dict(stored)
    for uid, sig in current.items():
        old = stored.get(uid)
        if old is None:
            merged[uid] = sig
            continue
        old_base, *old_rest = old.split(" | ")
        new_base, *new_rest = sig.split(" | ")
        old_parts = dict(p.split("=", 1) for p in old_rest)
        new_parts = dict(p.split("=", 1) for p in new_rest)
        changes = [] if old_base == new_base else [f"[{old_base}] -> [{new_base}]"]
        rekeyed = _keys_stored_before_key_identity(old_parts, new_parts)
        changes += [
            f"{k} {old_parts[k]} -> {new_parts[k]}"
            for k in old_parts
            if k in new_parts and old_parts[k] != new_parts[k] and not (k == "key_identity" and rekeyed is not None)
        ]
        if rekeyed is not None and not changes:
            changes.append(rekeyed)
        if changes:
            problems.append(f"operator {uid!r}: " + "; ".join(changes))
        else:
            merged[uid] = new_base + "".join(f" | {k}={v}" for k, v in {**old_parts, **new_parts}.items())
    return problems, merged


def plan_signatures(nodes: Iterable[Tuple[str, Transformation]]) -> Dict[str, str]:
    """``{uid: state_signature}`` of the keyed operators among ``nodes`` (``(uid, transformation)`` pairs)."""
    current = {}
    for uid, t in nodes:
        sig = state_signature(t)
        if sig is not None:
            current[uid] = sig
    return current


def before_key_identity(current: Dict[str, str]) -> Dict[str, str]:
    """The signatures ``current`` would have had before they recorded anything but their first part and the key
    type: what stands for the unknown signatures of a checkpoint written before the executor kept them (its state
    laid out by the same operators, its keys as Python held them), so that :func:`compare_signatures` refuses what
    such a checkpoint cannot restore (keys of a declared ``FLOAT``/``DOUBLE`` type) and records the rest."""
    legacy = {}
    for uid, sig in current.items():
        base, *rest = sig.split(" | ")
        legacy[uid] = base + "".join(f" | {p}" for p in rest if p.startswith("key="))
    return legacy


def check_operators(checkpoint: str, stored: Optional[Dict[str, str]], current: Dict[str, str]) -> Dict[str, str]:
    """Refuse to start on ``checkpoint`` when a keyed operator's state was written by an incompatible operator
    (:func:`compare_signatures` of its ``stored`` signatures with the pipeline's ``current`` ones): its state would be
    misread or not found. Returns the signatures to store from now on."""
    problems, merged = compare_signatures(stored or {}, current)
    if problems:
        msg = (
            f"checkpoint {checkpoint} holds state of operators that changed incompatibly: {'; '.join(problems)}. "
            "Restore the old operator, or start from a new checkpoint location (the state is never reset silently)."
        )
        raise StateError(msg)
    return merged


__all__ = [
    "KEY_IDENTITY",
    "KEY_IDENTITY_DECLARED_FORM",
    "before_key_identity",
    "check_operators",
    "compare_signatures",
    "key_identity",
    "plan_signatures",
    "state_signature",
]
