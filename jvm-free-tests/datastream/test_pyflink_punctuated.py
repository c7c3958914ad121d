"""A custom punctuated ``WatermarkGenerator`` on the local engine, in ``assign_timestamps_and_watermarks`` and at the
source, compared with real Apache Flink 2.3.0's outputs (``pyflink_punctuated.json``,
``pyflink_punctuated_source.json``; see ``punctuated_cases.py``) the way the conformance runner compares:
canonically sorted, as multisets, the watermark at every firing included."""

from __future__ import annotations

import copy
from typing import Any, Dict, List

import pytest
from punctuated_cases import attach_scenario, load

from pyspark_flinkish.common import WatermarkStrategy
from pyspark_flinkish.conformance import differences
from pyspark_flinkish.conformance.runner import attach, result
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.local.executor import LocalExecutor

ORACLE = load()
SOURCE_ORACLE = load("source")
# the generator in assign_timestamps_and_watermarks, and at the source (``<name>_at_source``): Flink emits a watermark
# right after the record whose on_event advanced it in both places
SCENARIOS = {s["name"]: s for oracle in (ORACLE, SOURCE_ORACLE) for s in oracle["scenarios"]}
LONG_MAX = 2**63 - 1


def run(scenario: Dict[str, Any], restore_every_batch: bool = False) -> Dict[str, List[Any]]:
    env = StreamExecutionEnvironment.get_execution_environment()
    out = attach_scenario(env, scenario)
    LocalExecutor(env._sinks, env.clock, restore_every_batch=restore_every_batch).run(scenario["name"])
    return result(out)


def rebatched(scenario: Dict[str, Any], sizes: str) -> Dict[str, Any]:
    """The scenario's events in other micro-batches: ``"one"`` per event or ``"all"`` in one."""
    events = [e for b in scenario["batches"] for e in b["events"]]
    batches = [{"events": [e]} for e in events] if sizes == "one" else [{"events": events}]
    return {**scenario, "batches": batches}


def test_oracle_is_real_flink_output_and_exercises_punctuation() -> None:
    for oracle in (ORACLE, SOURCE_ORACLE):
        assert oracle["pyflink_version"] == "2.3.0"
        assert oracle["command"].startswith("benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_punctuated.py")
    assert SOURCE_ORACLE["command"].endswith("--at source")
    assert len(SOURCE_ORACLE["scenarios"]) >= 4
    assert all(s["generator_at"] == "source" for s in SOURCE_ORACLE["scenarios"])
    assert len(SCENARIOS) >= 8
    for s in SCENARIOS.values():
        expected = s["expected"]
        assert expected["late"], s["name"]  # late data reached the side output
        assert any(r["watermark"] < LONG_MAX for r in expected["main"]), s["name"]  # windows fired mid-stream
        assert len({r["key"] for r in expected["main"]}) >= 2, s["name"]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_punctuated_generator_matches_flink(name: str) -> None:
    assert differences(run(SCENARIOS[name]), SCENARIOS[name]["expected"]) == []


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_punctuated_generator_matches_flink_with_snapshot_restore_every_batch(name: str) -> None:
    assert differences(run(SCENARIOS[name], restore_every_batch=True), SCENARIOS[name]["expected"]) == []


@pytest.mark.parametrize("sizes", ["one", "all"])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_micro_batch_boundaries_do_not_matter_to_a_punctuated_generator(name: str, sizes: str) -> None:
    """No periodic emission: the watermarks are where the events put them, whatever the micro-batches."""
    assert differences(run(rebatched(SCENARIOS[name], sizes)), SCENARIOS[name]["expected"]) == []


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_periodic_generator_of_the_same_bound_gives_other_results(name: str) -> None:
    """The scenarios tell punctuation from ``for_bounded_out_of_orderness`` (which emits at the end of every
    micro-batch): the comparison above would fail if the custom generator's watermarks were not used."""
    scenario = SCENARIOS[name]
    env = StreamExecutionEnvironment.get_execution_environment()
    out = attach(env, scenario, generator=WatermarkStrategy.for_bounded_out_of_orderness(scenario["generator"]["bound"]))
    env.execute(name)
    assert differences(result(out), scenario["expected"]) != []


def test_comparison_detects_a_firing_at_another_watermark() -> None:
    scenario = SCENARIOS["marker_tumbling_late"]
    tampered = copy.deepcopy(run(scenario))
    mid = next(r for r in tampered["main"] if r["watermark"] < LONG_MAX)
    mid["watermark"] += 1
    assert differences(tampered, scenario["expected"]) != []
