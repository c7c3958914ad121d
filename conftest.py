"""Shared pytest fixtures for the whole repository.

Test layout:

* ``jvm-free-tests/`` -- unit and conformance tests that never start a JVM. They mirror
  ``pyspark_flinkish/`` module for module and run through the pure-Python semantic core and
  the local engine. Their own ``conftest.py`` makes any attempt to launch a Py4J gateway fail,
  and ``make test-jvm-free`` runs them with no ``java`` reachable at all.
* ``tests/`` -- Spark, Kafka and Delta integration tests. They need a JVM (Java 17) and request
  the session-scoped :func:`spark` fixture below; mark them ``@pytest.mark.spark`` (and
  ``@pytest.mark.kafka`` when they need a broker).

The conformance material (scenarios and the outputs Apache Flink produced for them) is vendored in the
repository's ``conformance/`` directory (a byte-identical copy of the project's shared material, checked by
``jvm-free-tests/conformance/test_vendored_copy.py``); ``PYSPARK_FLINKISH_SHARED=DIR`` makes every test read
``DIR/conformance`` instead. A test taking a ``conformance_scenario`` argument runs once per scenario file found
there, and finding none is a collection error, never an empty (skipped) parametrization.

Nothing here imports pyspark at module level: the SparkSession is created only when a test
asks for the ``spark`` fixture, once per test session. ``spark`` is the ``flinkish_spark`` fixture of the
package's pytest plugin (:mod:`pyspark_flinkish.testing.plugin`), which users get too; the plugin's other
fixtures (``jvm_free_env``, ``window_harness``, ``keyed_process_harness``, ``kafka_broker``, ...) are
available to every test here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# The package's pytest plugin (its ``pytest11`` entry point registers it once the package is installed); the
# fixtures are imported as well so that a checkout whose installed metadata predates the entry point has them.
from pyspark_flinkish.testing.plugin import (
    flinkish_spark,
    flinkish_spark_options,
    jvm_free_env,
    keyed_process_harness,
    window_harness,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["flinkish_spark", "flinkish_spark_options", "jvm_free_env", "keyed_process_harness", "window_harness"]

REPO_ROOT = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def spark(flinkish_spark: SparkSession) -> SparkSession:
    """The plugin's ``flinkish_spark``: one local SparkSession (``local[2]``, 2 shuffle partitions, Delta and
    Kafka configured) shared by every test of the session, stopped at the end."""
    return flinkish_spark


SHARED_ENV = "PYSPARK_FLINKISH_SHARED"
STATE_CACHE_ENV = "PYSPARK_FLINKISH_STATE_CACHE"  # spark/state_cache.py's CACHE_DIR_ENV (no pyspark import here)
_own_state_cache: list = []  # type: ignore[type-arg]


def pytest_sessionstart(session: pytest.Session) -> None:
    """The executors' keyed-state caches (``spark/state_cache.py``; local mode: this machine) of a test session go
    to a directory of its own, deleted at its end, unless the caller chose one: Spark's Python workers inherit it."""
    if not os.environ.get(STATE_CACHE_ENV):
        import tempfile

        _own_state_cache.append(tempfile.mkdtemp(prefix="pyspark_flinkish-test-state-cache-"))
        os.environ[STATE_CACHE_ENV] = _own_state_cache[0]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _own_state_cache:
        import shutil

        shutil.rmtree(_own_state_cache.pop(), ignore_errors=True)
        os.environ.pop(STATE_CACHE_ENV, None)


_module_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Adds up each test module's setup, call and teardown time (reports reach xdist's controller too)."""
    module = report.nodeid.split("::", 1)[0]
    _module_seconds[module] = _module_seconds.get(module, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """With ``--durations``, also each module's total, longest first: what ``tests/conftest.py``'s
    ``LONGEST_FIRST`` (the order the integration suite's modules start in) is kept current from."""
    if config.getoption("durations", None) is None or not _module_seconds:
        return
    terminalreporter.write_sep("=", "slowest 15 modules (setup + call + teardown)")
    for module, seconds in sorted(_module_seconds.items(), key=lambda kv: -kv[1])[:15]:
        terminalreporter.write_line(f"{seconds:8.1f}s {module}")


def conformance_root() -> Path:
    """The conformance material the tests run: the repository's vendored ``conformance/``, or
    ``$PYSPARK_FLINKISH_SHARED/conformance`` when that variable is set."""
    override = os.environ.get(SHARED_ENV)
    return (Path(override) / "conformance").resolve() if override else REPO_ROOT / "conformance"


def _conformance_root_or_fail() -> Path:
    path = conformance_root()
    source = f"${SHARED_ENV}/conformance" if os.environ.get(SHARED_ENV) else "the repository's vendored conformance/"
    if not (path / "scenarios").is_dir() or not (path / "expected").is_dir():
        pytest.fail(
            f"conformance material not found: {path} (from {source}) needs scenarios/ and expected/; "
            f"unset {SHARED_ENV} to use the vendored copy",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    """The conformance directory (:func:`conformance_root`): ``scenarios/NAME.json`` and
    ``expected/NAME.expected.json``."""
    return _conformance_root_or_fail()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A ``conformance_scenario`` argument: one test per scenario file of :func:`conformance_root`, or a
    collection error when there is none (an override pointing at the wrong folder must not pass silently)."""
    if "conformance_scenario" not in metafunc.fixturenames:
        return
    from pyspark_flinkish.conformance import discover

    root = _conformance_root_or_fail()
    paths = discover(root / "scenarios")
    if not paths:
        pytest.fail(f"no scenario files in {root / 'scenarios'}", pytrace=False)
    metafunc.parametrize("conformance_scenario", paths, ids=[p.stem for p in paths])
