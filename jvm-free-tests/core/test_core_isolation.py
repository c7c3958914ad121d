"""The semantic core is pure Python: it never imports pyspark or py4j and keeps no module-level state."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List

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


# Functions of the standard library that read a clock (wall, monotonic or CPU): module -> names.
CLOCK_READERS = {
    "time": {"time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "process_time",
             "process_time_ns", "thread_time", "thread_time_ns", "clock_gettime", "clock_gettime_ns", "localtime",
             "gmtime", "ctime", "asctime", "strftime"},
    "datetime": {"now", "utcnow", "today"},  # datetime.datetime.now(), datetime.date.today(), ...
}


def clock_reads(source: str) -> List[str]:
    """Where ``source`` reaches a clock-reading function of ``time`` or ``datetime``, however it was imported
    (``import time as t``, ``from time import monotonic``, ``import datetime as dt`` then ``dt.datetime.now``)."""
    tree = ast.parse(source)
    modules: Dict[str, str] = {}  # local name -> "time" / "datetime" (the module, or a class of datetime)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in CLOCK_READERS:
                    modules[a.asname or a.name] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module in CLOCK_READERS:
            for a in node.names:
                if a.name in CLOCK_READERS[node.module] or a.name == "*":
                    found.append(f"line {node.lineno}: from {node.module} import {a.name}")
                elif node.module == "datetime":
                    modules[a.asname or a.name] = "datetime"  # the datetime / date classes
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in CLOCK_READERS["time"] | CLOCK_READERS["datetime"]:
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in modules and node.attr in CLOCK_READERS[modules[root.id]]:
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_clock_read_finder_sees_through_aliases() -> None:
    assert clock_reads("import time\nx = time.time()") == ["line 2: time.time"]
    assert clock_reads("import time as t\nx = t.monotonic_ns()") == ["line 2: t.monotonic_ns"]
    assert clock_reads("from time import perf_counter as pc\n") == ["line 1: from time import perf_counter"]
    assert clock_reads("import datetime as _dt\nx = _dt.datetime.now()") == ["line 2: _dt.datetime.now"]
    assert clock_reads("from datetime import date\nx = date.today()") == ["line 2: date.today"]
    assert clock_reads("import datetime as _dt\nx = _dt.timedelta(1)\ny = obj.now()") == []


@pytest.mark.parametrize("path", CORE_FILES, ids=[p.stem for p in CORE_FILES])
def test_core_never_reads_a_clock(path: Path) -> None:
    """Processing time comes from an injected Clock; only ``clock.SystemClock`` reads the wall clock."""
    reads = clock_reads(path.read_text())
    if path.name == "clock.py":
        assert [r.split(": ", 1)[1] for r in reads] == ["time.time_ns"], reads  # SystemClock.now, the one wall clock
    else:
        assert reads == [], f"{path.name} reads a clock: {reads}"


def test_the_engine_runs_every_conformance_scenario_with_the_clocks_disabled(conformance_dir: Path) -> None:
    """The same at run time: every clock function of ``time`` and ``datetime`` raises (SystemClock answers 0),
    and the JVM-free engine still runs every scenario, and processing-time windows on a ManualClock."""
    script = textwrap.dedent(
        f"""
        import datetime, sys, time
        from pathlib import Path

        from pyspark_flinkish.conformance import discover, load, run_local
        from pyspark_flinkish.core import clock
        from pyspark_flinkish.core.clock import ManualClock
        from pyspark_flinkish.datastream.window import TumblingProcessingTimeWindows
        from pyspark_flinkish.testing.harness import WindowHarness

        def refuse(*args, **kwargs):
            raise AssertionError("a clock was read")

        for name in {sorted(CLOCK_READERS["time"])!r}:
            if hasattr(time, name):
                setattr(time, name, refuse)
        for cls in ("datetime", "date"):
            guarded = type(cls, (getattr(datetime, cls),), {{m: classmethod(refuse) for m in ("now", "utcnow", "today")}})
            setattr(datetime, cls, guarded)
        clock.SystemClock.now = lambda self: 0

        paths = discover(Path({str(conformance_dir / "scenarios")!r}))
        for path in paths:
            run_local(load(path))
        manual = ManualClock(0)
        h = WindowHarness.reduce(TumblingProcessingTimeWindows.of(10), lambda a, b: a + b, key_selector=lambda v: 0,
                                 clock=manual)
        h.process_element(1)
        h.process_element(2)
        h.set_processing_time(10)
        assert h.extract_output_values() == [3], h.extract_output_values()
        print(len(paths))
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert int(proc.stdout) >= 42
