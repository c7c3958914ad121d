"""Issue 14's "done when" job (``pyflink_done_when_job.py``: Row, connect + KeyedCoProcessFunction with an event-time
timer, keyed broadcast state, window_all, KeyedStream.sum, in one job written against PyFlink's API) on the local
engine, compared with real PyFlink 2.3.0's output (``pyflink_done_when.json``, written by
``benchmarks/pyflink_done_when.py`` from the same code) as a multiset (the union's interleaving is not defined): its
input in one micro-batch, in several, and with every keyed operator restarted from its snapshots between batches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List

import pyflink_done_when_job as job
import pytest

from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.local.executor import LocalExecutor

ORACLE = json.loads(Path(__file__).with_name("pyflink_done_when.json").read_text())


def run(batches: int, restart: bool = False) -> List[Any]:
    env = StreamExecutionEnvironment.get_execution_environment()
    out: List[str] = []
    sink = job.build(env, job.pyspark_flinkish_api(batches)).add_sink(out.append)
    if restart:
        LocalExecutor([sink._t], env.clock, restore_every_batch=True).run("done when")
    else:
        env.execute("done when")
    return job.decode(out)


def test_oracle_is_real_pyflink_output() -> None:
    assert ORACLE["pyflink_version"] == "2.3.0"
    assert ORACLE["command"].startswith("benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_done_when.py")
    assert ORACLE["inputs"] == job.INPUTS
    kinds = {o[0] for o in ORACLE["output"]}
    assert kinds == {"checked", "window", "sum"}


@pytest.mark.parametrize("batches", [1, 2, 6])
def test_done_when_job_matches_pyflink(batches: int) -> None:
    assert run(batches) == ORACLE["output"]


def test_done_when_job_survives_restarts_from_snapshots() -> None:
    assert run(3, restart=True) == ORACLE["output"]
