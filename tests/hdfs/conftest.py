"""The test HDFS for ``tests/hdfs``: the session-scoped ``hdfs_cluster`` fixture of
:mod:`pyspark_flinkish.testing.fixtures` (also offered by the package's pytest plugin)."""

from __future__ import annotations

from pyspark_flinkish.testing.fixtures import hdfs_cluster

__all__ = ["hdfs_cluster"]
