"""Every Flink-produced scenario on Spark: real streaming queries through the foreachBatch executor."""

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


def _names(conformance_dir_path: Path) -> list[str]:
    return [p.stem for p in discover(conformance_dir_path / "scenarios")]


SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "conformance"


@pytest.mark.parametrize("name", _names(SHARED) if SHARED.is_dir() else [])
def test_scenario_matches_flink_on_spark(name: str, spark_results: dict, conformance_dir: Path) -> None:
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
