"""Plain ``broadcast()`` (Flink's ``BroadcastPartitioner``) through the real bodies of both Spark executors
(``foreach_batch_harness``, ``stateful_harness``): the jobs of ``jvm-free-tests/datastream/
broadcast_partitioning_cases.py`` on replayed micro-batches, compared with real PyFlink 2.3.0's outputs
(``pyflink_broadcast_partitioning.json``) as multisets: the copies are made by the executors' route, in the task that
runs the next operator, once per Flink instance of it."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, List

import pytest
from foreach_batch_harness import run_foreach_batch
from stateful_harness import run_apply_in_pandas_with_state

from pyspark_flinkish.common import Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, ProcessFunction
from pyspark_flinkish.datastream.window import CountTrigger, GlobalWindows

CASES_DIR = Path(__file__).resolve().parents[1] / "datastream"
sys.path.insert(0, str(CASES_DIR))
import broadcast_partitioning_cases as cases  # noqa: E402

sys.path.remove(str(CASES_DIR))

ORACLE = cases.load()


# event time 0 with monotonous watermarks: what the applyInPandasWithState executor can express
AT_ZERO = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, _: 0)


def source(env: Any, values: List[Any], type_info: Any) -> Any:
    """``values`` in two replayed micro-batches, typed ``type_info``."""
    half = len(values) // 2
    return env.from_micro_batches([MicroBatch(values[:half]), MicroBatch(values[half:])], AT_ZERO).map(
        lambda v: v, output_type=type_info
    )


API = SimpleNamespace(
    Types=Types, ProcessFunction=ProcessFunction, GlobalWindows=GlobalWindows, CountTrigger=CountTrigger, source=source
)
SINKS = [name for name in cases.COLLECTED if not name.startswith("execute_and_collect")]  # a sink is not collect's
ONE_SOURCE = [name for name in SINKS if not name.startswith("union")]  # applyInPandasWithState refuses two sources


@pytest.mark.parametrize("name", SINKS)
def test_broadcast_on_the_foreach_batch_bodies_matches_pyflink(tmp_path: Path, name: str) -> None:
    out: List[Any] = []
    run_foreach_batch(lambda env: cases.collected_job(API, env, name).add_sink(out.append), str(tmp_path), False)
    assert sorted(str(v) for v in out) == ORACLE["collected"][name]


@pytest.mark.parametrize("name", ONE_SOURCE)
def test_broadcast_on_the_apply_in_pandas_with_state_bodies_matches_pyflink(name: str) -> None:
    out: List[Any] = []
    run_apply_in_pandas_with_state(lambda env: cases.collected_job(API, env, name).add_sink(out.append), False)
    assert sorted(str(v) for v in out) == ORACLE["collected"][name]


def test_a_broadcast_sink_on_the_foreach_batch_bodies_writes_once_per_instance(tmp_path: Path) -> None:
    out: List[Any] = []

    def build(env: Any) -> None:
        env.set_parallelism(2)
        source(env, cases.NUMBERS, Types.INT()).broadcast().add_sink(out.append).set_parallelism(3)

    run_foreach_batch(build, str(tmp_path), False)
    assert sorted(out) == sorted(cases.NUMBERS * 3)


COPY_CASES_DIR = str(CASES_DIR)
sys.path.insert(0, COPY_CASES_DIR)
import broadcast_copy_cases  # noqa: E402

sys.path.remove(COPY_CASES_DIR)


class ReplayedCollection:
    """The environment the harness builds on (at parallelism 2), whose ``from_collection`` is a replayed micro-batch
    typed by a map after it."""

    def __init__(self, env: Any) -> None:
        self.env = env
        env.set_parallelism(2)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def from_collection(self, values: List[Any], type_info: Any = None) -> Any:
        stream = self.env.from_micro_batches([MicroBatch(list(values))], AT_ZERO)
        return stream if type_info is None else stream.map(lambda v: v, output_type=type_info)


@pytest.mark.parametrize("name", ["broadcast map Generation", "broadcast map DeepCopied", "broadcast map FLOAT"])
def test_broadcast_copies_on_the_foreach_batch_bodies_match_pyflink(tmp_path: Path, name: str) -> None:
    """Each instance's copy of a broadcast element is Flink's (a pickle round trip for an untyped one, never
    ``copy.deepcopy``) where the executor's route makes the copies (``pyflink_broadcast_copies.json``)."""
    from pyspark_flinkish.datastream.functions import BroadcastProcessFunction
    from pyspark_flinkish.datastream.state import MapStateDescriptor

    api = SimpleNamespace(Types=Types, MapStateDescriptor=MapStateDescriptor, BroadcastProcessFunction=BroadcastProcessFunction)
    out: List[Any] = []
    run_foreach_batch(
        lambda env: broadcast_copy_cases.job(api, lambda: ReplayedCollection(env), name).add_sink(out.append),
        str(tmp_path), False,
    )
    assert sorted(out) == broadcast_copy_cases.recorded()[name]
