"""The benchmark suite's equality checks at tiny sizes (one data micro-batch, then the two end-of-input batches),
so that ``benchmarks/run_all.py`` cannot rot.

Runs parts 1 and 2 of the suite for the Spark engines (PyFlink is too heavy for CI: it is reported as not run)
and requires every engine to produce the same windows as an independent pandas computation. No timing is
checked: the suite is a benchmark, not a test.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.bench, pytest.mark.spark]

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import run_all  # noqa: E402

TINY = [
    "--repeats", "1", "--events", "2000", "--keys", "40", "--batch-rows", "2000",
    "--general-events", "1000", "--general-keys", "10", "--size", "20", "--slide", "5", "--count", "4",
    "--no-pyflink",
]  # fmt: skip


def test_tumbling_spark_engines_agree(spark: Any, tmp_path: Path) -> None:
    args = run_all.parse_args(TINY)
    (part,) = run_all.part_tumbling(spark, args, str(tmp_path), (None, "not run in CI"))  # no PyFlink: no part 1b
    assert part.mismatches == []
    ran = [e for e in run_all.TUMBLING_SPARK if part.runs[e]]
    assert "native" in ran and "foreach_batch" in ran, part.unavailable
    assert set(part.unavailable) <= {*run_all.TUMBLING_FLINK, *run_all.bc.NOT_IMPLEMENTED}, part.unavailable
    assert all(r["windows"] > 0 for e in ran for r in part.runs[e])


def test_general_path_agrees_with_pandas(spark: Any, tmp_path: Path) -> None:
    args = run_all.parse_args(TINY)
    part = run_all.part_general(spark, args, str(tmp_path), (None, "not run in CI"))
    assert part.mismatches == []
    assert part.runs["foreach_batch_count_window"] and part.runs["foreach_batch_session"], part.unavailable
    assert part.input["late"] > 0  # the input has events lagging more than B (late once batches split them)
