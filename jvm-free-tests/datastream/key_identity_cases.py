"""Which keys Flink tells apart, written once for both APIs: ``benchmarks/pyflink_key_identity.py`` runs these
jobs in real PyFlink 2.3.0 and records their outputs in ``pyflink_key_identity.json``; ``test_pyflink_key_identity.py``
runs them with pyspark_flinkish (local engine and Spark) and compares.

Each case is a sequence of keys (``0.0`` and ``-0.0``, ``1``, ``True`` and ``1.0``, ``FLOAT`` values that round to
one 32-bit value, NaNs, tuples holding them; a ``ROW`` key as a named ``Row``, a positional one and a named one in
another order; ``BIG_DEC`` keys of one value and different scales), once as given and once with a separator key ``"|"`` (or ``-1``)
between every two records; the job is a STREAMING ``key_by(lambda v: v[0], key_type).reduce(count)``, parallelism 1,
each result shown as ``"<repr(key kept in state)> <count>"``.

This module imports neither library: functions take ``api``, a namespace with ``Types`` and ``Row`` from one of them.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

ORACLE = Path(__file__).with_name("pyflink_key_identity.json")

NAN = float("nan")
ROUND_TOGETHER = [0.1, 0.1 + 1e-12, 0.1 - 1e-12]  # one 32-bit float, three doubles


def _base(api: Any) -> Dict[str, Tuple[Optional[Any], List[Any], Any]]:
    """name -> (key type or None, the keys, the separator key)."""
    T = api.Types  # noqa: N806
    R = api.Row  # noqa: N806
    return {
        "untyped zeros": (None, [0.0, -0.0, 0.0, -0.0, 0, False], "|"),
        "untyped one": (None, [1, True, 1.0, 1, True, 1.0], "|"),
        "untyped nan": (None, [NAN, float("nan"), NAN], "|"),
        "untyped float": (None, ROUND_TOGETHER + ROUND_TOGETHER, "|"),
        "untyped tuples": (None, [(0.0, "a"), (-0.0, "a"), (1, "a"), (True, "a"), (1.0, "a"), (0.0, "a")], "|"),
        "FLOAT": (T.FLOAT(), [0.0, -0.0] + ROUND_TOGETHER + [NAN, float("nan"), 0.0], -1.0),
        "DOUBLE": (T.DOUBLE(), [0.0, -0.0, 0.0] + ROUND_TOGETHER + [NAN, float("nan")], -1.0),
        "INT": (T.INT(), [1, True, 1, 0, False], -1),
        "BOOLEAN": (T.BOOLEAN(), [True, 1, False, 0, True], False),
        "TUPLE(DOUBLE, STRING)": (T.TUPLE([T.DOUBLE(), T.STRING()]), [(0.0, "a"), (-0.0, "a"), (0.0, "a")], (-1.0, "|")),
        "ROW_NAMED(id INT, name STRING)": (
            T.ROW_NAMED(["id", "name"], [T.INT(), T.STRING()]),
            [R(id=1, name="a"), R(1, "a"), R(name="a", id=1), R(id=True, name="a"), R(id=1, name="b"), R(1, "a")],
            R(id=-1, name="|"),
        ),
        "ROW(FLOAT, STRING)": (
            T.ROW([T.FLOAT(), T.STRING()]),
            [R(0.1, "a"), R(0.1 + 1e-12, "a"), R(f1="a", f0=0.1 - 1e-12), R(0.0, "a"), R(-0.0, "a"), R(1, "a"), R(1.0, "a")],
            R(-1.0, "|"),
        ),
        "BIG_DEC": (T.BIG_DEC(), [Decimal("1"), 1, Decimal("1.0"), 1.0, Decimal("1.00"), Decimal("1")], Decimal("-1")),
    }


def case_keys(api: Any) -> Dict[str, Tuple[Optional[Any], List[Any]]]:
    """name -> (key type or None, the keys in arrival order): each base case as is and ``separated``."""
    out: Dict[str, Tuple[Optional[Any], List[Any]]] = {}
    for name, (key_type, keys, sep) in _base(api).items():
        out[name] = (key_type, keys)
        spaced: List[Any] = []
        for k in keys:
            spaced += [k, sep]
        out[name + " separated"] = (key_type, spaced)
    return out


def error_cases(api: Any) -> Dict[str, Tuple[Optional[Any], List[Any]]]:
    """name -> (key type, keys): keys of a form PyFlink fails on for their type (the job fails; the oracle keeps
    PyFlink's error under ``errors``), which the package takes (``docs/differences.md``)."""
    T = api.Types  # noqa: N806
    return {"ROW_NAMED(id INT, name STRING) from a tuple": (T.ROW_NAMED(["id", "name"], [T.INT(), T.STRING()]), [(1, "a")])}


def build(
    api: Any,
    env: Any,
    name: str,
    source: Optional[Callable[[Any, List[Any]], Any]] = None,
    form: Optional[Callable[[Any], Any]] = None,
) -> Any:
    """The case's job on ``env`` (``source(env, elements)``, ``from_collection`` by default), up to a stream of
    strings ``"<repr(key)> <count>"``; ``form(key)``: the form the key selector returns each key in (as is by
    default)."""
    key_type, keys = {**case_keys(api), **error_cases(api)}[name]
    if form is not None:
        keys = [form(k) for k in keys]
    data = [(k, 1) for k in keys]
    ds = source(env, data) if source is not None else env.from_collection(data)
    keyed = ds.key_by(lambda v: v[0], key_type) if key_type is not None else ds.key_by(lambda v: v[0])
    return keyed.reduce(lambda a, b: (a[0], a[1] + b[1])).map(lambda v: f"{v[0]!r} {v[1]}", api.Types.STRING())


CURRENT_KEY_CASES = ["INT", "DOUBLE", "FLOAT", "ROW_NAMED(id INT, name STRING)", "ROW(FLOAT, STRING)", "BIG_DEC"]
"""Cases whose keys are also shown as a keyed function gets them (``build_current_key``)."""


def build_current_key(api: Any, env: Any, name: str, source: Optional[Callable[[Any, List[Any]], Any]] = None) -> Any:
    """The case's keys as a ``KeyedProcessFunction`` gets them in ``process_element`` (``ctx.get_current_key()``:
    the key as Flink hands it back), one ``repr`` per record; ``api`` also has ``KeyedProcessFunction``."""

    class CurrentKey(api.KeyedProcessFunction):  # type: ignore[misc,name-defined]
        def process_element(self, value: Any, ctx: Any) -> Any:
            yield repr(ctx.get_current_key())

    key_type, keys = case_keys(api)[name]
    data = [(k, 1) for k in keys]
    ds = source(env, data) if source is not None else env.from_collection(data)
    return ds.key_by(lambda v: v[0], key_type).process(CurrentKey(), api.Types.STRING())


def load() -> Dict[str, Any]:
    return json.loads(ORACLE.read_text())  # type: ignore[no-any-return]
