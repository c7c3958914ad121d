"""Two-input operators (connect + co-functions, broadcast state) on the local engine, compared with real PyFlink
2.3.0's outputs (``pyflink_two_input.json``, written by ``benchmarks/pyflink_two_input.py`` from the same job code,
``two_input_jobs.py``): as one micro-batch, split into several (keyed and broadcast state, timers and the two-input
watermark cross batch boundaries), and with every keyed operator restarted from its encoded snapshots between
batches (what the Spark executors do)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest
import two_input_jobs

from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.local.executor import LocalExecutor

ORACLE = json.loads(Path(__file__).with_name("pyflink_two_input.json").read_text())
CASES: Dict[str, Any] = {c["name"]: c for c in ORACLE["cases"]}


def run(case: str, batches: int = 1, restart: bool = False) -> List[Any]:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(two_input_jobs.PARALLELISM.get(case, 1))
    out: List[str] = []
    sink = two_input_jobs.build(env, two_input_jobs.pyspark_flinkish_api(batches), case).add_sink(out.append)
    if restart:
        LocalExecutor([sink._t], env.clock, restore_every_batch=True).run(case)
    else:
        env.execute(case)
    return two_input_jobs.decode(out)


def test_oracle_is_real_pyflink_output() -> None:
    assert ORACLE["pyflink_version"] == "2.3.0"
    assert ORACLE["command"].startswith("benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_two_input.py")
    assert ORACLE["inputs"] == two_input_jobs.INPUTS
    assert [c["name"] for c in ORACLE["cases"]] == two_input_jobs.CASES
    assert all(c["output"] for c in ORACLE["cases"])


@pytest.mark.parametrize("batches", [1, 3])
@pytest.mark.parametrize("name", two_input_jobs.CASES)
def test_two_input_jobs_match_pyflink(name: str, batches: int) -> None:
    assert run(name, batches) == CASES[name]["output"]


@pytest.mark.parametrize("name", ["keyed_co_process_timers", "watermark_is_min_of_inputs", "keyed_broadcast_process"])
def test_keyed_two_input_state_survives_restarts_from_snapshots(name: str) -> None:
    assert run(name, batches=3, restart=True) == CASES[name]["output"]


def test_timers_wait_for_the_slower_input() -> None:
    """With the slow input holding the operator's watermark at MIN, no timer fires before the end of input: every
    count is the key's total (a max of the inputs' watermarks would fire k's timers after the first batch)."""
    got = run("watermark_is_min_of_inputs", batches=3)
    assert got == [["main", "timer", "j", 2000, 1, 1]] + [["main", "timer", "k", t, 3, 2] for t in (1000, 5000, 9000)]
