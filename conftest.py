"""Shared pytest fixtures for the whole repository.

Test layout:

* ``jvm-free-tests/`` -- unit and conformance tests that never start a JVM. They mirror
  ``pyspark_flinkish/`` module for module and run through the pure-Python semantic core and
  the local engine. Their own ``conftest.py`` makes any attempt to launch a Py4J gateway fail,
  and ``make test-jvm-free`` runs them with no ``java`` reachable at all.
* ``tests/`` -- Spark, Kafka and Delta integration tests. They need a JVM (Java 17) and request
  the session-scoped :func:`spark` fixture below; mark them ``@pytest.mark.spark`` (and
  ``@pytest.mark.kafka`` when they need a broker).

The shared conformance material (Flink-produced scenarios and expected outputs) lives in
``../shared/conformance`` next to the repository; ``PYSPARK_FLINKISH_SHARED`` points elsewhere.

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


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The shared material directory: ``../shared`` beside the repo, or ``$PYSPARK_FLINKISH_SHARED``."""
    override = os.environ.get("PYSPARK_FLINKISH_SHARED")
    path = Path(override).resolve() if override else (REPO_ROOT.parent / "shared").resolve()
    if not path.is_dir():
        source = "PYSPARK_FLINKISH_SHARED" if override else "the default ../shared beside the repository"
        pytest.fail(
            f"shared directory not found: {path} (from {source}); check out the shared material "
            "next to the repository or set PYSPARK_FLINKISH_SHARED to its path",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="session")
def conformance_dir(shared_dir: Path) -> Path:
    """``<shared>/conformance``: ``scenarios/NAME.json`` and ``expected/NAME.expected.json``."""
    return shared_dir / "conformance"
