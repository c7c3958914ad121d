"""The order of keys in BATCH execution (``core/key_order.py``) through the foreachBatch executor's real bodies
(``foreach_batch_harness``): the cases of ``jvm-free-tests/datastream/key_order_cases.py`` with their keys spread over
three state partitions, whose outputs the sink gets in Flink's order (``ord``: the key's sort bytes), compared with
real PyFlink 2.3.0's outputs (``pyflink_key_order.json``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, List

import pytest
from foreach_batch_harness import run_foreach_batch

from pyspark_flinkish.common import Row, Types
from pyspark_flinkish.datastream import MicroBatch
from pyspark_flinkish.datastream.runtime_mode import batch_plan

CASES_DIR = Path(__file__).resolve().parents[1] / "datastream"
sys.path.insert(0, str(CASES_DIR))
import key_order_cases as cases  # noqa: E402

sys.path.remove(str(CASES_DIR))

ORACLE = cases.load()
API = SimpleNamespace(Types=Types, Row=Row)


def source(env: Any, values: List[Any]) -> Any:
    return env.from_micro_batches([MicroBatch(list(values))])


@pytest.mark.parametrize("name", list(cases.case_keys(API)))
def test_batch_keys_in_flinks_order_on_the_foreach_batch_executor(tmp_path: Path, name: str) -> None:
    out: List[Any] = []

    def build(env: Any) -> None:
        cases.build(API, env, name, source).add_sink(out.append)
        env._sinks[:] = batch_plan(env._sinks)  # what the Spark environment runs in BATCH mode (its execute)

    run_foreach_batch(build, str(tmp_path), vectorize=False, partitions=3)
    assert out == ORACLE["cases"][name]
