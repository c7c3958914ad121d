"""Every Flink-produced scenario in the repository's ``conformance/`` (or ``$PYSPARK_FLINKISH_SHARED/conformance``),
discovered at collection time by the root conftest, on the JVM-free engine.

Each runs twice: with operators kept in memory, and with every keyed operator rebuilt from encoded
per-key snapshots after each micro-batch (what the Spark executors do), which proves the snapshots are
complete. Negative cases prove the comparison and the scenario validation can fail.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pyspark_flinkish.conformance import ScenarioError, differences, discover, load, run_local, validate
from pyspark_flinkish.conformance.runner import attach, result
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.local.executor import LocalExecutor


@pytest.fixture
def expected(conformance_dir: Path):  # type: ignore[no-untyped-def]
    """``expected(name)``: the outputs Flink produced for scenario ``name``."""
    return lambda name: json.loads((conformance_dir / "expected" / f"{name}.expected.json").read_text())


def test_scenarios_were_found(conformance_dir: Path) -> None:
    scenarios = discover(conformance_dir / "scenarios")
    assert len(scenarios) >= 42
    assert all((conformance_dir / "expected" / f"{p.stem}.expected.json").is_file() for p in scenarios)


def test_scenario_matches_flink(conformance_scenario: Path, expected) -> None:  # type: ignore[no-untyped-def]
    scenario = load(conformance_scenario)
    assert differences(run_local(scenario), expected(scenario["name"])) == []


def _run_restoring(scenario: dict) -> dict:
    env = StreamExecutionEnvironment.get_execution_environment()
    out = attach(env, scenario)
    LocalExecutor(env._sinks, env.clock, restore_every_batch=True).run(scenario["name"])
    return result(out)


def test_scenario_matches_flink_with_snapshot_restore_every_batch(conformance_scenario: Path, expected) -> None:  # type: ignore[no-untyped-def]
    scenario = load(conformance_scenario)
    assert differences(_run_restoring(scenario), expected(scenario["name"])) == []


def test_comparison_detects_a_changed_result(conformance_dir: Path, expected) -> None:  # type: ignore[no-untyped-def]
    scenario = load(conformance_dir / "scenarios" / "pub_001.json")
    actual = run_local(scenario)
    tampered = copy.deepcopy(actual)
    tampered["main"][0]["result"] = ["not", "flink"]
    assert differences(tampered, expected("pub_001")) != []
    # multiplicity matters: a duplicated record is a difference
    doubled = {"main": actual["main"] + actual["main"][:1], "late": actual["late"]}
    assert differences(doubled, expected("pub_001")) != []


def test_comparison_detects_a_changed_watermark_field(conformance_dir: Path, expected) -> None:  # type: ignore[no-untyped-def]
    scenario = load(conformance_dir / "scenarios" / "edge_tumbling_boundaries.json")
    actual = run_local(scenario)
    actual["main"][0]["watermark"] += 1
    assert differences(actual, expected("edge_tumbling_boundaries")) != []


def test_unknown_fields_fail_loudly(conformance_dir: Path) -> None:
    scenario = json.loads((conformance_dir / "scenarios" / "pub_001.json").read_text())
    for mutate in (
        lambda s: s.update(unexpected=1),
        lambda s: s["window"].update(accumulation="discarding"),
        lambda s: s["window"]["assigner"].update(stagger="random"),
        lambda s: s["window"].update(trigger={"type": "delta", "threshold": 3}),
        lambda s: s["batches"][0]["events"][0].update(partition=2),
        lambda s: s["batches"][0].update(processing_time=5),
        lambda s: s.update(format_version=2),
    ):
        broken = copy.deepcopy(scenario)
        mutate(broken)
        with pytest.raises(ScenarioError):
            validate(broken)


def test_decreasing_watermarks_are_rejected(conformance_dir: Path) -> None:
    scenario = json.loads((conformance_dir / "scenarios" / "pub_001.json").read_text())
    scenario["batches"][2]["watermark"] = scenario["batches"][1]["watermark"] - 1
    with pytest.raises(ScenarioError, match="non-decreasing"):
        validate(scenario)
    scenario["batches"][2]["watermark"] = -(2**63) - 1  # outside Java's long range
    with pytest.raises(ScenarioError, match="Java long"):
        validate(scenario)


def test_cli_runs_all_scenarios_and_reports(tmp_path: Path, conformance_dir: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pyspark_flinkish.conformance", str(conformance_dir / "scenarios"), "--engine", "local",
         "--out", str(tmp_path / "out"), "--expected", str(conformance_dir / "expected")],
        capture_output=True, text=True, timeout=120, check=False,
    )
    scenarios = discover(conformance_dir / "scenarios")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == f"{len(scenarios)} passed, 0 failed"
    written = sorted(p.name for p in (tmp_path / "out").glob("*.actual.json"))
    assert written == sorted(f"{p.stem}.actual.json" for p in scenarios)
    sample = json.loads((tmp_path / "out" / "pub_001.actual.json").read_text())
    assert set(sample) == {"main", "late"}
    assert all(set(r) == {"key", "window_start", "window_end", "result", "watermark"} for r in sample["main"])


def test_cli_fails_on_a_wrong_expectation_and_a_new_unknown_scenario(tmp_path: Path, conformance_dir: Path, expected) -> None:  # type: ignore[no-untyped-def]
    scen_dir, exp_dir = tmp_path / "scenarios", tmp_path / "expected"
    scen_dir.mkdir()
    exp_dir.mkdir()
    good = json.loads((conformance_dir / "scenarios" / "edge_tumbling_boundaries.json").read_text())
    (scen_dir / "edge_tumbling_boundaries.json").write_text(json.dumps(good))
    wrong = expected("edge_tumbling_boundaries")
    wrong["late"] = wrong["late"] + [{"key": "zz", "ts": 1, "value": 1}]
    (exp_dir / "edge_tumbling_boundaries.expected.json").write_text(json.dumps(wrong))
    strange = copy.deepcopy(good)
    strange["name"] = "strange"
    strange["window"]["function"] = "median"
    (scen_dir / "strange.json").write_text(json.dumps(strange))
    proc = subprocess.run(
        [sys.executable, "-m", "pyspark_flinkish.conformance", str(scen_dir), "--engine", "local",
         "--out", str(tmp_path / "out"), "--expected", str(exp_dir)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode == 1
    assert "FAIL edge_tumbling_boundaries" in proc.stdout
    assert "ERROR strange" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "0 passed, 2 failed"
