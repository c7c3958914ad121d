"""A local SparkSession configured for pyspark_flinkish (tests, demos, ``spark-submit`` jobs)."""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, Optional


def configure(builder: Any, shuffle_partitions: int = 4, extra: Optional[Dict[str, str]] = None) -> Any:
    """Apply the settings pyspark_flinkish relies on to a ``SparkSession.builder``.

    Python workers use this interpreter (so pandas and pyarrow are there), the session time zone is UTC, and
    shuffles use few partitions (Spark's default of 200 makes each small micro-batch take seconds).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        builder.config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for k, v in (extra or {}).items():
        builder = builder.config(k, v)
    return builder


def session(app_name: str = "pyspark_flinkish", master: str = "local[2]", shuffle_partitions: int = 4, **conf: str) -> Any:
    """Get or create a SparkSession for pyspark_flinkish (``master`` is ignored when a session exists)."""
    from pyspark.sql import SparkSession

    builder = configure(
        SparkSession.builder.appName(app_name).master(master).config("spark.ui.enabled", "false"),
        shuffle_partitions,
        {k.replace("__", "."): v for k, v in conf.items()},
    )
    return builder.getOrCreate()
