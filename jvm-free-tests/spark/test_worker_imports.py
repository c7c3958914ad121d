"""What a Python worker imports: unpickling a task's function (the columnar window's, a keyed level's, the route's)
imports ``pyspark_flinkish`` and the modules that function needs, not the driver's side of the executor
(``spark/__init__.py`` resolves the environment and the state reader lazily). Every worker pays it once, in the
first batch that reaches it (``docs/benchmarks.md``, "Fixed costs per batch")."""

from __future__ import annotations

import json
import subprocess
import sys

DRIVER_SIDE = [
    "pyspark_flinkish.spark.environment",
    "pyspark_flinkish.spark.driver",
    "pyspark_flinkish.spark.connect",
    "pyspark_flinkish.spark.savepoint",
    "pyspark_flinkish.spark.state_reader",
    "pyspark.sql.session",
]


def _imported_after(statement: str) -> set:  # type: ignore[type-arg]
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_a_workers_task_modules_do_not_import_the_driver_side() -> None:
    imported = _imported_after(
        "import pyspark_flinkish.spark.columnar, pyspark_flinkish.spark.keyed_partition, pyspark_flinkish.spark.chain"
    )
    assert "pyspark_flinkish.spark.columnar" in imported
    assert sorted(m for m in DRIVER_SIDE if m in imported) == []


def test_the_spark_names_still_resolve_from_the_package() -> None:
    imported = _imported_after(
        "from pyspark_flinkish.spark import SparkStreamExecutionEnvironment, SparkJobHandle, read_state, session\n"
        "assert SparkStreamExecutionEnvironment.__name__ == 'SparkStreamExecutionEnvironment'\n"
        "assert callable(session) and callable(read_state) and SparkJobHandle.__name__ == 'SparkJobHandle'"
    )
    assert "pyspark_flinkish.spark.environment" in imported
