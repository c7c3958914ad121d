"""A function's parallel subtask (``core/subtasks.py``) through the foreachBatch executor's real bodies
(``foreach_batch_harness``): the keyed cases of ``jvm-free-tests/datastream/subtask_cases.py`` on a replayed
micro-batch, whose keys the executor spreads over its own state partitions, compared with real PyFlink 2.3.0's
outputs (``pyflink_subtasks.json``): each key reports the subtask Flink's key groups give it. And ``print()`` at a
parallelism above 1 through both Spark executors' bodies (``print_subtask_cases.py``, ``pyflink_print_subtasks.json``):
each line numbered by the sink subtask that prints it in Flink.
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


PRINT_CASES_DIR = str(CASES_DIR)
sys.path.insert(0, PRINT_CASES_DIR)
import print_subtask_cases  # noqa: E402

sys.path.remove(PRINT_CASES_DIR)


class ReplayedTypedCollection(ReplayedCollection):
    """As :class:`ReplayedCollection`, with the ``type_info`` of ``from_collection`` given by a map after it."""

    def from_collection(self, values: List[Any], type_info: Any = None) -> Any:
        stream = super().from_collection(values)
        return stream if type_info is None else stream.map(lambda v: v, output_type=type_info)


@pytest.mark.parametrize(
    "name", ["keyed p3 id", "keyed untyped p3", "window p2", "keyed map untyped p2 id", "broadcast p3 id", "broadcast p2 sink p3"]
)
def test_print_numbers_its_lines_by_subtask_on_the_foreach_batch_executor(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``print()`` at a parallelism above 1 on the executor's bodies (Spark's driver-side print): each line begins
    with the sink subtask that prints it in Flink (the key's, computed in the keyed task, or the broadcast
    instance's), as real PyFlink 2.3.0 printed them (``pyflink_print_subtasks.json``; compared sorted)."""
    from pyspark_flinkish.datastream.plan import resolve_parallelism

    def build(env: Any) -> None:
        def environment(parallelism: int) -> Any:
            env.set_parallelism(parallelism)
            return ReplayedTypedCollection(env)

        print_subtask_cases.job(API, environment, name)
        resolve_parallelism(env._sinks, env.get_max_parallelism())  # as the job's start does

    run_foreach_batch(build, str(tmp_path), vectorize=False, partitions=3)
    assert sorted(capsys.readouterr().out.splitlines()) == print_subtask_cases.recorded()[name]


@pytest.mark.parametrize("name", ["keyed p3 id", "keyed map p3", "window p2"])
def test_print_numbers_its_lines_by_subtask_on_the_apply_in_pandas_with_state_bodies(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same on the applyInPandasWithState executor's bodies (``stateful_harness``): the key's subtask is
    computed in its stateful function, the line printed on the driver."""
    from stateful_harness import run_apply_in_pandas_with_state

    from pyspark_flinkish.common import WatermarkStrategy
    from pyspark_flinkish.datastream.plan import resolve_parallelism

    at_zero = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, _: 0)

    class AtZero(ReplayedTypedCollection):
        def from_collection(self, values: List[Any], type_info: Any = None) -> Any:
            stream = self.env.from_micro_batches([MicroBatch(list(values))], at_zero)
            return stream if type_info is None else stream.map(lambda v: v, output_type=type_info)

    def build(env: Any) -> None:
        def environment(parallelism: int) -> Any:
            env.set_parallelism(parallelism)
            return AtZero(env)

        print_subtask_cases.job(API, environment, name)
        resolve_parallelism(env._sinks, env.get_max_parallelism())

    run_apply_in_pandas_with_state(build, False)
    assert sorted(capsys.readouterr().out.splitlines()) == print_subtask_cases.recorded()[name]
