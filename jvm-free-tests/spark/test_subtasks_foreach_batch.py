"""A function's parallel subtask (``core/subtasks.py``) through the foreachBatch executor's real bodies
(``foreach_batch_harness``): the keyed cases of ``jvm-free-tests/datastream/subtask_cases.py`` on a replayed
micro-batch, whose keys the executor spreads over its own state partitions, compared with real PyFlink 2.3.0's
outputs (``pyflink_subtasks.json``): each key reports the subtask Flink's key groups give it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, List

import pytest
from foreach_batch_harness import run_foreach_batch

from pyspark_flinkish.common import Row, Types
from pyspark_flinkish.datastream import KeyedProcessFunction, MapFunction, MicroBatch

CASES_DIR = Path(__file__).resolve().parents[1] / "datastream"
sys.path.insert(0, str(CASES_DIR))
import subtask_cases as cases  # noqa: E402

sys.path.remove(str(CASES_DIR))

ORACLE = cases.load()
API = SimpleNamespace(Types=Types, Row=Row, KeyedProcessFunction=KeyedProcessFunction, MapFunction=MapFunction)


class ReplayedCollection:
    """The environment the harness builds on, whose ``from_collection`` is a replayed micro-batch."""

    def __init__(self, env: Any) -> None:
        self.env = env

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def from_collection(self, values: List[Any]) -> Any:
        return self.env.from_micro_batches([MicroBatch(list(values))])


@pytest.mark.parametrize("name", ["STRING p3", "untyped p2, operator p3, max parallelism 7", "INT p4, max parallelism 10"])
def test_a_keyed_function_sees_its_keys_subtask_on_the_foreach_batch_executor(tmp_path: Path, name: str) -> None:
    out: List[Any] = []

    def build(env: Any) -> None:
        cases.keyed_job(API, lambda: ReplayedCollection(env), name).add_sink(out.append)

    run_foreach_batch(build, str(tmp_path), vectorize=False, partitions=3)
    assert sorted(out) == ORACLE["keyed"][name]
