"""A PyFlink user finds every name where PyFlink has it, or a reason why it is absent
(PyFlink's own ``PythonAPICompletenessTestCase`` idea, against a checked-in list)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from pyflink_api import EXCLUDED, PYFLINK_METHODS, PYFLINK_NAMES, Why

CASES = [(module, name) for module, names in PYFLINK_NAMES.items() for name in names]


@pytest.mark.parametrize(("module", "name"), CASES, ids=[f"{m}.{n}" for m, n in CASES])
def test_name_is_where_pyflink_has_it_or_excluded_with_reason(module: str, name: str) -> None:
    mod = importlib.import_module(f"pyspark_flinkish.{module}")
    reason = EXCLUDED.get(module, {}).get(name)
    if reason is None:
        assert hasattr(mod, name), f"pyspark_flinkish.{module} lacks PyFlink's {name}"
        assert name in getattr(mod, "__all__", []), f"{name} is missing from pyspark_flinkish.{module}.__all__"
    else:
        assert not hasattr(mod, name), f"{module}.{name} exists now: drop its exclusion"


WHYS = sorted({id(w): w for names in EXCLUDED.values() for w in names.values()}.values(), key=lambda w: w.reason)


@pytest.mark.parametrize("why", WHYS, ids=[w.reason[:40] for w in WHYS])
def test_every_exclusion_reason_holds(why: Why) -> None:
    """The reason is checked, not just written: the calls that would reach the feature do not exist, what is
    offered instead does, and any further claim is proven."""
    assert why.absent or why.instead or why.proof, f"{why.reason!r}: give evidence (absent, instead or proof)"
    for path in why.absent:
        owner, _, member = path.rpartition(".")
        assert not hasattr(_resolve_path(owner), member), f"{path} exists now: {why.reason!r} no longer holds"
    for path in why.instead:
        assert _resolve_path(path) is not None, path
    if why.proof is not None:
        why.proof()


def _resolve_path(path: str) -> object:
    """``module.Class.member`` under ``pyspark_flinkish``: the longest importable module, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module("pyspark_flinkish." + ".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part)
        return obj
    raise AssertionError(f"no module for {path}")  # noqa: EM102 (a test's failure message)


def test_every_exclusion_names_a_pyflink_name() -> None:
    for module, names in EXCLUDED.items():
        assert set(names) <= set(PYFLINK_NAMES[module]), module


def _resolve(path: str) -> object:
    module, _, rest = path.partition(".")
    obj: object = importlib.import_module(f"pyspark_flinkish.{module}")
    parts = rest.split(".")
    if parts[0] in ("window", "functions", "state"):
        obj = importlib.import_module(f"pyspark_flinkish.{module}.{parts[0]}")
        parts = parts[1:]
    for part in parts:
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("path", sorted(PYFLINK_METHODS))
def test_methods_a_pyflink_user_calls(path: str) -> None:
    cls = _resolve(path)
    missing = [m for m in PYFLINK_METHODS[path] if not callable(getattr(cls, m, None))]
    assert missing == []


def test_evictors_use_flinks_java_names_in_snake_case() -> None:
    from pyspark_flinkish.datastream.window import CountEvictor, DeltaEvictor, TimeEvictor

    assert CountEvictor.of(3, do_evict_after=True).do_evict_after is True
    assert TimeEvictor.of(5).window_size == 5
    for cls in (CountEvictor, TimeEvictor, DeltaEvictor):
        assert callable(cls.evict_before) and callable(cls.evict_after)


def test_every_public_module_declares_all_and_exports_exist() -> None:
    for module in ("common", "datastream", "datastream.window", "datastream.functions", "datastream.state", ""):
        mod = importlib.import_module("pyspark_flinkish" + (f".{module}" if module else ""))
        assert mod.__all__, module
        for name in mod.__all__:
            assert hasattr(mod, name), f"{module}: __all__ names missing {name}"
