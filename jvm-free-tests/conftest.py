"""Guards for the JVM-free test suite.

Tests under ``jvm-free-tests/`` may use plain-Python PySpark objects (``Row``,
``pyspark.sql.types``, ``GroupState``) but must never start a JVM. On import this conftest
replaces PySpark's Py4J gateway launcher with a function that raises ``RuntimeError``, so any
``SparkContext``/``SparkSession`` creation fails loudly instead of silently starting Java.

With ``PYSPARK_FLINKISH_ASSERT_NO_JAVA=1`` (set by ``make test-jvm-free``) it also checks that
no ``java`` executable is reachable on ``PATH``.

Note: this imports ``pyspark`` into the test process; a test proving that a module does not
import pyspark must block it (``sys.modules``) or use a subprocess.
"""

from __future__ import annotations

import importlib
import os
import shutil
from typing import Any, NoReturn

import pytest

GUARD_MESSAGE = (
    "jvm-free-tests must not start a JVM: the Py4J gateway launcher is disabled here; "
    "move tests that need a SparkSession to tests/ and request the `spark` fixture"
)


def _refuse_launch_gateway(*args: object, **kwargs: object) -> NoReturn:
    raise RuntimeError(GUARD_MESSAGE)


def _install_gateway_guard() -> None:
    try:
        java_gateway: Any = importlib.import_module("pyspark.java_gateway")
    except ImportError:
        return
    java_gateway.launch_gateway = _refuse_launch_gateway
    # SparkContext looks the launcher up in its own module namespace (``from ... import``).
    for name in ("pyspark.context", "pyspark.core.context"):
        try:
            module: Any = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "launch_gateway"):
            module.launch_gateway = _refuse_launch_gateway


def _assert_no_java() -> None:
    if os.environ.get("PYSPARK_FLINKISH_ASSERT_NO_JAVA") != "1":
        return
    java = shutil.which("java")
    if java is not None:
        msg = (
            f"PYSPARK_FLINKISH_ASSERT_NO_JAVA=1 but `java` is reachable at {java}; "
            "run the JVM-free suite via `make test-jvm-free` (PATH reduced to .venv/bin, JAVA_HOME unset)"
        )
        raise pytest.UsageError(msg)


_install_gateway_guard()
_assert_no_java()
