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
CASES_DIR = Path(__file__).resolve().parents[2] / "jvm-free-tests" / "datastream"
sys.path.insert(0, str(CASES_DIR))
import punctuated_cases  # noqa: E402

sys.path.remove(str(CASES_DIR))

from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(punctuated_cases)  # Spark's Python workers cannot import it
# the generator in assign_timestamps_and_watermarks and at the source (``<name>_at_source``)
PUNCTUATED = {s["name"]: s for at in ("assigner", "source") for s in punctuated_cases.load(at)["scenarios"]}


@pytest.fixture(scope="module")
def spark_results(spark, conformance_dir: Path, tmp_path_factory) -> dict:  # type: ignore[no-untyped-def]
    """The conformance scenarios and the custom punctuated generator's (``punctuated_cases.py``), one query."""
    scenarios = [load(p) for p in discover(conformance_dir / "scenarios")]
    assert not set(PUNCTUATED) & {s["name"] for s in scenarios}
    generators = {name: punctuated_cases.strategy(s["generator"]) for name, s in PUNCTUATED.items()}
    checkpoint = str(tmp_path_factory.mktemp("conformance-checkpoint"))
    return run_spark_all(spark, [*scenarios, *PUNCTUATED.values()], checkpoint, generators)


def test_scenario_matches_flink_on_spark(conformance_scenario: Path, spark_results: dict, conformance_dir: Path) -> None:
    name = conformance_scenario.stem
    expected = json.loads((conformance_dir / "expected" / f"{name}.expected.json").read_text())
    assert differences(spark_results[name], expected) == []


@pytest.mark.parametrize("name", sorted(PUNCTUATED))
def test_custom_punctuated_generator_matches_flink_on_spark(name: str, spark_results: dict) -> None:
    """Watermarks from a Python ``WatermarkGenerator`` (in ``assign_timestamps_and_watermarks`` or at the source)
    emitted mid-batch on markers or every n-th event, in the route task (``spark/generators.py``): Flink 2.3.0's
    outputs (``benchmarks/pyflink_punctuated.py``, with ``--at source`` for the ``_at_source`` scenarios)."""
    assert differences(spark_results[name], PUNCTUATED[name]["expected"]) == []


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
