"""Which keys are one key (``core/key_identity.py``) through the foreachBatch executor's real bodies
(``foreach_batch_harness``) and the applyInPandasWithState executor's (``stateful_harness``): the separated cases of ``jvm-free-tests/datastream/key_identity_cases.py`` with their
keys spread over three state partitions (keys Flink holds as one key have one key's bytes and partition, keys it
tells apart have their own), in two micro-batches (state restored from the partition store in between), compared
with real PyFlink 2.3.0's outputs (``pyflink_key_identity.json``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, List

import pytest
from foreach_batch_harness import run_foreach_batch
from stateful_harness import run_apply_in_pandas_with_state

from pyspark_flinkish.common import Duration, Row, Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch

CASES_DIR = Path(__file__).resolve().parents[1] / "datastream"
sys.path.insert(0, str(CASES_DIR))
import key_identity_cases as cases  # noqa: E402

sys.path.remove(str(CASES_DIR))

ORACLE = cases.load()
API = SimpleNamespace(Types=Types, Row=Row)


def source(env: Any, values: List[Any]) -> Any:
    half = len(values) // 2
    return env.from_micro_batches([MicroBatch(list(values[:half])), MicroBatch(list(values[half:]))])


@pytest.mark.parametrize("name", [n for n in cases.case_keys(API) if n.endswith(" separated")])
def test_keys_are_told_apart_as_flink_does_on_the_foreach_batch_executor(tmp_path: Path, name: str) -> None:
    out: List[Any] = []
    run_foreach_batch(lambda env: cases.build(API, env, name, source).add_sink(out.append), str(tmp_path),
                      vectorize=False, partitions=3)
    assert out == ORACLE["cases"][name]


@pytest.mark.parametrize("name", ["untyped tuples separated", "FLOAT separated"])
def test_keys_are_told_apart_as_flink_does_on_apply_in_pandas_with_state(name: str) -> None:
    """One Spark group per key as Flink holds it (Flink's order per key; Spark's across keys)."""
    out: List[Any] = []
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)).with_timestamp_assigner(
        lambda e, _: 0
    )

    def timed(env: Any, values: List[Any]) -> Any:  # the executor needs Spark's kind of watermark
        half = len(values) // 2
        return env.from_micro_batches([MicroBatch(list(values[:half])), MicroBatch(list(values[half:]))], strategy)

    run_apply_in_pandas_with_state(lambda env: cases.build(API, env, name, timed).add_sink(out.append), vectorize=False)
    assert sorted(out) == sorted(ORACLE["cases"][name])
