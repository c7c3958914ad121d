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
asks for the ``spark`` fixture, once per test session.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REPO_ROOT = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One local SparkSession (``local[2]``) shared by every test of the session, stopped at the end."""
    from pyspark_flinkish.spark import session as flinkish_session

    # the package's own session helper: workers use this interpreter, UTC, few shuffle partitions
    session = flinkish_session("pyspark_flinkish-tests", master="local[2]", shuffle_partitions=2,
                               spark__default__parallelism="2")
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


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
