"""Every Flink-produced scenario on Spark: real streaming queries through the foreachBatch executor.

The scenarios come from the root conftest (the repository's ``conformance/``, or
``$PYSPARK_FLINKISH_SHARED/conformance``): the same folder for collection and for the expected outputs, and no
scenario found is a collection error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pyspark_flinkish.conformance import differences, discover, load
from pyspark_flinkish.conformance.runner import run_spark_all

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark_results(spark, conformance_dir: Path, tmp_path_factory) -> dict:  # type: ignore[no-untyped-def]
    scenarios = [load(p) for p in discover(conformance_dir / "scenarios")]
    return run_spark_all(spark, scenarios, str(tmp_path_factory.mktemp("conformance-checkpoint")))


def test_scenario_matches_flink_on_spark(conformance_scenario: Path, spark_results: dict, conformance_dir: Path) -> None:
    name = conformance_scenario.stem
    expected = json.loads((conformance_dir / "expected" / f"{name}.expected.json").read_text())
    assert differences(spark_results[name], expected) == []


def test_cli_spark_engine(tmp_path: Path, conformance_dir: Path) -> None:
    """The documented command, as a separate driver process with its own SparkSession."""
    scen = tmp_path / "scenarios"
    scen.mkdir()
    for name in ("edge_session_bridge_late", "pub_007", "pub_026"):
        (scen / f"{name}.json").write_text((conformance_dir / "scenarios" / f"{name}.json").read_text())
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyspark_flinkish.conformance",
            str(scen),
            "--engine",
            "spark",
            "--backend",
            "foreach_batch",
            "--out",
            str(tmp_path / "out"),
            "--expected",
            str(conformance_dir / "expected"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "3 passed, 0 failed"
    assert len(list((tmp_path / "out").glob("*.actual.json"))) == 3
