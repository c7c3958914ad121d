"""Testing helpers for user code: operator harnesses (no JVM), output assertions, a test Kafka broker, and
the pytest plugin (:mod:`pyspark_flinkish.testing.plugin`) that turns them into fixtures.

Importing this package imports neither pyspark nor a JVM: a test of a user's own window function needs
neither.
"""

from __future__ import annotations

from .assertions import assert_df_equality, assert_stream_output_equal
from .harness import KeyedProcessHarness, OneInputHarness, WindowHarness

__all__ = [
    "KeyedProcessHarness",
    "OneInputHarness",
    "WindowHarness",
    "assert_df_equality",
    "assert_stream_output_equal",
]
