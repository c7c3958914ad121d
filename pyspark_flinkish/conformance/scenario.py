"""Loading and strict validation of conformance scenario files (``conformance/README.md`` in the repository).

Unknown fields anywhere fail loudly: a scenario we do not fully understand must not pass by accident.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Set

from ..core.errors import InvalidArgumentError
from ..core.javamath import LONG_MAX, check_long

TOP_LEVEL = {"format_version", "name", "description", "seed", "tags", "watermark_generation", "window", "end_of_input", "batches"}
REQUIRED = {"name", "window", "batches", "end_of_input"}
WINDOW = {"assigner", "trigger", "evictor", "allowed_lateness", "late_side_output", "function"}
ASSIGNERS: Dict[str, tuple] = {  # type: ignore[type-arg]
    "tumbling": ({"type", "size"}, {"offset"}),
    "sliding": ({"type", "size", "slide"}, {"offset"}),
    "session": ({"type", "gap"}, set()),
    "global": ({"type"}, set()),
    "count": ({"type", "size"}, {"slide"}),
}
TRIGGERS: Dict[str, Set[str]] = {
    "event_time": {"type"},
    "count": {"type", "count"},
    "continuous_event_time": {"type", "interval"},
    "purging": {"type", "nested"},
}
EVICTORS: Dict[str, Set[str]] = {
    "count": {"type", "max_count", "do_evict_after"},
    "time": {"type", "window_size", "do_evict_after"},
}
FUNCTIONS = {"reduce_sum", "aggregate_avg", "process_list"}
EVENT = {"key", "ts", "value"}
BATCH = {"events", "watermark"}


class ScenarioError(InvalidArgumentError):
    """A scenario file that does not follow the format (unknown field, wrong type, ...)."""


def _fields(where: str, obj: Any, required: Set[str], optional: Set[str] = frozenset()) -> Mapping[str, Any]:  # type: ignore[assignment]
    if not isinstance(obj, dict):
        msg = f"{where}: expected an object, got {type(obj).__name__} {obj!r}"
        raise ScenarioError(msg)
    unknown = set(obj) - required - optional
    if unknown:
        msg = f"{where}: unknown field(s) {sorted(unknown)}; this runner knows {sorted(required | optional)}"
        raise ScenarioError(msg)
    missing = required - set(obj)
    if missing:
        msg = f"{where}: missing field(s) {sorted(missing)}"
        raise ScenarioError(msg)
    return obj


def _int(where: str, value: Any) -> int:
    try:
        return check_long(where, value)
    except (TypeError, ValueError) as exc:
        raise ScenarioError(str(exc)) from exc


def _validate_trigger(where: str, trig: Any) -> None:
    if trig is None:
        return
    kind = trig.get("type") if isinstance(trig, dict) else None
    if kind not in TRIGGERS:
        msg = f"{where}: unknown trigger type {kind!r}; known: {sorted(TRIGGERS)}"
        raise ScenarioError(msg)
    _fields(where, trig, TRIGGERS[kind])
    if kind == "count":
        _int(f"{where}.count", trig["count"])
    elif kind == "continuous_event_time":
        _int(f"{where}.interval", trig["interval"])
    elif kind == "purging":
        if trig["nested"] is None:
            msg = f"{where}.nested: a purging trigger needs a nested trigger"
            raise ScenarioError(msg)
        _validate_trigger(f"{where}.nested", trig["nested"])


def validate(scenario: Any, source: str = "scenario") -> Dict[str, Any]:
    """Check ``scenario`` against the format; return it unchanged or raise :class:`ScenarioError`."""
    s = _fields(source, scenario, REQUIRED, TOP_LEVEL - REQUIRED)
    if s.get("format_version", 1) != 1:
        msg = f"{source}: format_version {s['format_version']!r} is not supported (only 1)"
        raise ScenarioError(msg)
    w = _fields(f"{source}.window", s["window"], WINDOW)
    a = w["assigner"]
    kind = a.get("type") if isinstance(a, dict) else None
    if kind not in ASSIGNERS:
        msg = f"{source}.window.assigner: unknown type {kind!r}; known: {sorted(ASSIGNERS)}"
        raise ScenarioError(msg)
    req, opt = ASSIGNERS[kind]
    _fields(f"{source}.window.assigner", a, req, opt)
    for f in req | opt:
        if f != "type" and f in a:
            _int(f"{source}.window.assigner.{f}", a[f])
    if kind == "count" and (w["trigger"] is not None or w["evictor"] is not None):
        msg = f"{source}.window: count assigners define their own trigger and evictor; both must be null"
        raise ScenarioError(msg)
    _validate_trigger(f"{source}.window.trigger", w["trigger"])
    ev = w["evictor"]
    if ev is not None:
        ek = ev.get("type") if isinstance(ev, dict) else None
        if ek not in EVICTORS:
            msg = f"{source}.window.evictor: unknown type {ek!r}; known: {sorted(EVICTORS)}"
            raise ScenarioError(msg)
        _fields(f"{source}.window.evictor", ev, EVICTORS[ek])
        if not isinstance(ev["do_evict_after"], bool):
            msg = f"{source}.window.evictor.do_evict_after must be a boolean"
            raise ScenarioError(msg)
    _int(f"{source}.window.allowed_lateness", w["allowed_lateness"])
    if not isinstance(w["late_side_output"], bool):
        msg = f"{source}.window.late_side_output must be a boolean"
        raise ScenarioError(msg)
    if w["function"] not in FUNCTIONS:
        msg = f"{source}.window.function: unknown {w['function']!r}; known: {sorted(FUNCTIONS)}"
        raise ScenarioError(msg)
    if not isinstance(s["end_of_input"], bool):
        msg = f"{source}.end_of_input must be a boolean"
        raise ScenarioError(msg)
    batches = s["batches"]
    if not isinstance(batches, list) or not batches:
        msg = f"{source}.batches must be a non-empty list"
        raise ScenarioError(msg)
    previous: Optional[int] = None
    for i, b in enumerate(batches):
        _fields(f"{source}.batches[{i}]", b, BATCH)
        wm = _int(f"{source}.batches[{i}].watermark", b["watermark"])
        if wm == LONG_MAX or (previous is not None and wm < previous):
            msg = f"{source}.batches[{i}].watermark {wm} must be non-decreasing and < LONG_MAX"
            raise ScenarioError(msg)
        previous = wm
        if not isinstance(b["events"], list):
            msg = f"{source}.batches[{i}].events must be a list"
            raise ScenarioError(msg)
        for j, e in enumerate(b["events"]):
            _fields(f"{source}.batches[{i}].events[{j}]", e, EVENT)
            if not isinstance(e["key"], str):
                msg = f"{source}.batches[{i}].events[{j}].key must be a string"
                raise ScenarioError(msg)
            _int(f"{source}.batches[{i}].events[{j}].ts", e["ts"])
            _int(f"{source}.batches[{i}].events[{j}].value", e["value"])
    return dict(s)


def load(path: Path) -> Dict[str, Any]:
    """Read and validate one scenario file."""
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError as exc:
        msg = f"{path}: not valid JSON: {exc}"
        raise ScenarioError(msg) from exc
    scenario = validate(data, str(Path(path).name))
    if Path(path).stem != scenario["name"]:
        msg = f"{path}: file name does not match scenario name {scenario['name']!r}"
        raise ScenarioError(msg)
    return scenario


def discover(directory: Path) -> List[Path]:
    """Every ``*.json`` scenario file in ``directory``, sorted by name."""
    return sorted(p for p in Path(directory).glob("*.json") if not p.name.endswith((".expected.json", ".actual.json")))


__all__ = [
    "TOP_LEVEL",
    "REQUIRED",
    "WINDOW",
    "ASSIGNERS",
    "TRIGGERS",
    "EVICTORS",
    "FUNCTIONS",
    "EVENT",
    "BATCH",
    "ScenarioError",
    "validate",
    "load",
    "discover",
]
