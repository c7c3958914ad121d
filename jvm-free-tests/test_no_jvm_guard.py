"""The JVM-free suite's guard (``jvm-free-tests/conftest.py``) really blocks the JVM."""

from __future__ import annotations

import os
import shutil

import pytest


def test_launch_gateway_raises() -> None:
    import pyspark.java_gateway

    with pytest.raises(RuntimeError, match="jvm-free-tests must not start a JVM"):
        pyspark.java_gateway.launch_gateway()


def test_spark_session_cannot_start() -> None:
    from pyspark.sql import SparkSession

    with pytest.raises(RuntimeError, match="jvm-free-tests must not start a JVM"):
        SparkSession.builder.master("local[1]").appName("must-not-start").getOrCreate()


@pytest.mark.skipif(
    os.environ.get("PYSPARK_FLINKISH_ASSERT_NO_JAVA") != "1",
    reason="only asserted when PYSPARK_FLINKISH_ASSERT_NO_JAVA=1 (make test-jvm-free)",
)
def test_java_not_on_path() -> None:
    assert shutil.which("java") is None
