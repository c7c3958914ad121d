"""The semantic core is pure Python: it never imports pyspark or py4j and keeps no module-level state."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "pyspark_flinkish"
CORE_FILES = sorted((PKG / "core").glob("*.py"))
JVM_FREE_PACKAGES = ["core", "common", "datastream", "local", "conformance", "testing", "demo"]


def test_core_and_local_engine_import_with_pyspark_and_py4j_blocked() -> None:
    script = textwrap.dedent(
        f"""
        import importlib, pkgutil, sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split('.')[0] in ('pyspark', 'py4j'):
                    raise ImportError('blocked: ' + name)
                return None

        sys.meta_path.insert(0, Block())
        import pyspark_flinkish
        for sub in {JVM_FREE_PACKAGES!r}:
            pkg = importlib.import_module('pyspark_flinkish.' + sub)
            for info in pkgutil.iter_modules(pkg.__path__):
                importlib.import_module(f'pyspark_flinkish.{{sub}}.{{info.name}}')
        assert not any(m.split('.')[0] in ('pyspark', 'py4j') for m in sys.modules), sorted(sys.modules)
        print('ok')
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


@pytest.mark.parametrize("path", CORE_FILES, ids=[p.stem for p in CORE_FILES])
def test_core_module_has_no_pyspark_import(path: Path) -> None:
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        assert not any(n.split(".")[0] in ("pyspark", "py4j") for n in names), f"{path.name}: {names}"


@pytest.mark.parametrize("path", CORE_FILES, ids=[p.stem for p in CORE_FILES])
def test_core_module_has_no_module_level_mutable_state(path: Path) -> None:
    tree = ast.parse(path.read_text())
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        value = getattr(node, "value", None)
        for target in targets:
            if not isinstance(target, ast.Name) or target.id == "__all__":
                continue
            constant_name = target.id.lstrip("_").isupper()
            mutable = isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)) or (
                isinstance(value, ast.Call) and getattr(value.func, "id", "") in ("list", "dict", "set", "defaultdict")
            )
            assert constant_name or not mutable, f"{path.name}: module-level mutable {target.id}"


def test_core_never_reads_the_wall_clock() -> None:
    for path in CORE_FILES:
        if path.name == "clock.py":  # SystemClock is the one injectable wall clock
            continue
        source = path.read_text()
        for forbidden in ("time.time(", "time.monotonic(", "datetime.now(", "time_ns("):
            assert forbidden not in source, f"{path.name} reads the wall clock ({forbidden})"
