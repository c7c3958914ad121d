"""Every Flink-produced scenario in ../shared/conformance, discovered at run time, on the JVM-free engine.

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

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "conformance"
SCENARIOS = discover(SHARED / "scenarios") if (SHARED / "scenarios").is_dir() else []


def _expected(name: str) -> dict:
    return json.loads((SHARED / "expected" / f"{name}.expected.json").read_text())


def test_scenarios_were_found(conformance_dir: Path) -> None:
    assert conformance_dir.resolve() == SHARED.resolve()
    assert len(SCENARIOS) >= 42


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_matches_flink(path: Path) -> None:
    scenario = load(path)
    assert differences(run_local(scenario), _expected(scenario["name"])) == []


def _run_restoring(scenario: dict) -> dict:
    env = StreamExecutionEnvironment.get_execution_environment()
    out = attach(env, scenario)
    LocalExecutor(env._sinks, env.clock, restore_every_batch=True).run(scenario["name"])
    return result(out)


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_matches_flink_with_snapshot_restore_every_batch(path: Path) -> None:
    scenario = load(path)
    assert differences(_run_restoring(scenario), _expected(scenario["name"])) == []


def test_comparison_detects_a_changed_result() -> None:
    scenario = load(SHARED / "scenarios" / "pub_001.json")
    actual = run_local(scenario)
    tampered = copy.deepcopy(actual)
    tampered["main"][0]["result"] = ["not", "flink"]
    assert differences(tampered, _expected("pub_001")) != []
    # multiplicity matters: a duplicated record is a difference
    doubled = {"main": actual["main"] + actual["main"][:1], "late": actual["late"]}
    assert differences(doubled, _expected("pub_001")) != []


def test_comparison_detects_a_changed_watermark_field() -> None:
    scenario = load(SHARED / "scenarios" / "edge_tumbling_boundaries.json")
    actual = run_local(scenario)
    actual["main"][0]["watermark"] += 1
    assert differences(actual, _expected("edge_tumbling_boundaries")) != []


def test_unknown_fields_fail_loudly() -> None:
    scenario = json.loads((SHARED / "scenarios" / "pub_001.json").read_text())
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


def test_decreasing_watermarks_are_rejected() -> None:
    scenario = json.loads((SHARED / "scenarios" / "pub_001.json").read_text())
    scenario["batches"][2]["watermark"] = scenario["batches"][1]["watermark"] - 1
    with pytest.raises(ScenarioError, match="non-decreasing"):
        validate(scenario)
    scenario["batches"][2]["watermark"] = -(2**63) - 1  # outside Java's long range
    with pytest.raises(ScenarioError, match="Java long"):
        validate(scenario)


def test_cli_runs_all_scenarios_and_reports(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pyspark_flinkish.conformance", str(SHARED / "scenarios"), "--engine", "local",
         "--out", str(tmp_path / "out"), "--expected", str(SHARED / "expected")],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == f"{len(SCENARIOS)} passed, 0 failed"
    written = sorted(p.name for p in (tmp_path / "out").glob("*.actual.json"))
    assert written == sorted(f"{p.stem}.actual.json" for p in SCENARIOS)
    sample = json.loads((tmp_path / "out" / "pub_001.actual.json").read_text())
    assert set(sample) == {"main", "late"}
    assert all(set(r) == {"key", "window_start", "window_end", "result", "watermark"} for r in sample["main"])


def test_cli_fails_on_a_wrong_expectation_and_a_new_unknown_scenario(tmp_path: Path) -> None:
    scen_dir, exp_dir = tmp_path / "scenarios", tmp_path / "expected"
    scen_dir.mkdir()
    exp_dir.mkdir()
    good = json.loads((SHARED / "scenarios" / "edge_tumbling_boundaries.json").read_text())
    (scen_dir / "edge_tumbling_boundaries.json").write_text(json.dumps(good))
    wrong = _expected("edge_tumbling_boundaries")
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
