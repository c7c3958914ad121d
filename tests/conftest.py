"""Integration tests (JVM): Spark, and later Kafka and Delta. Shares the root conftest's ``spark`` fixture."""

from __future__ import annotations

from typing import Any


def pytest_collection_finish(session: Any) -> None:
    """Functions defined in test modules run on Spark's Python workers, which cannot import the test
    modules: ship those modules by value (what ``--py-files`` does for a user's own modules)."""
    from pyspark import cloudpickle

    for module in {getattr(item, "module", None) for item in session.items}:
        if module is not None:
            cloudpickle.register_pickle_by_value(module)
