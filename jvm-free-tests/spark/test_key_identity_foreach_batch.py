"""Which keys are one key (``core/key_identity.py``) through the foreachBatch executor's real bodies
(``foreach_batch_harness``) and the applyInPandasWithState executor's (``stateful_harness``): the separated cases of ``jvm-free-tests/datastream/key_identity_cases.py`` with their
keys spread over three state partitions (keys Flink holds as one key have one key's bytes and partition, keys it
tells apart have their own), in two micro-batches (state restored from the partition store in between), compared
with real PyFlink 2.3.0's outputs (``pyflink_key_identity.json``). A ``ROW`` key is one key whatever form the
selector returns it in (a named ``Row``, a positional one, one with its names in another order, a tuple).
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
from pyspark_flinkish.datastream.functions import KeyedProcessFunction

CASES_DIR = Path(__file__).resolve().parents[1] / "datastream"
sys.path.insert(0, str(CASES_DIR))
import key_identity_cases as cases  # noqa: E402

sys.path.remove(str(CASES_DIR))

ORACLE = cases.load()
API = SimpleNamespace(Types=Types, Row=Row, KeyedProcessFunction=KeyedProcessFunction)


def source(env: Any, values: List[Any]) -> Any:
    half = len(values) // 2
    return env.from_micro_batches([MicroBatch(list(values[:half])), MicroBatch(list(values[half:]))])


@pytest.mark.parametrize("name", [n for n in cases.case_keys(API) if n.endswith(" separated")])
def test_keys_are_told_apart_as_flink_does_on_the_foreach_batch_executor(tmp_path: Path, name: str) -> None:
    out: List[Any] = []
    run_foreach_batch(lambda env: cases.build(API, env, name, source).add_sink(out.append), str(tmp_path),
                      vectorize=False, partitions=3)
    assert out == ORACLE["cases"][name]


def tuples_for_positional_rows(key: Any) -> Any:
    """A positional ``Row`` key as a tuple: what PyFlink refuses for a ``ROW`` key type and the package takes as the
    row (``docs/differences.md``, values of a ``ROW`` type); the case's output is the same."""
    return tuple(key) if isinstance(key, Row) and not hasattr(key, "_fields") else key


@pytest.mark.parametrize("name", cases.CURRENT_KEY_CASES)
def test_a_keyed_function_gets_the_key_as_flink_hands_it_back_on_the_foreach_batch_executor(
    tmp_path: Path, name: str
) -> None:
    out: List[Any] = []
    run_foreach_batch(lambda env: cases.build_current_key(API, env, name, source).add_sink(out.append), str(tmp_path),
                      vectorize=False, partitions=3)
    assert sorted(out) == sorted(ORACLE["current_keys"][name])  # Flink's order per key, Spark's across keys


ROW_CASES = ["ROW_NAMED(id INT, name STRING) separated", "ROW(FLOAT, STRING) separated"]


def with_tuples(lines: List[str]) -> List[str]:
    """A case's output with its positional rows as tuples: each line shows its key's first record's form."""
    return [line.replace("<Row(", "(").replace(")>", ")") for line in lines]


@pytest.mark.parametrize("name", ROW_CASES)
def test_a_row_key_in_any_form_is_one_key_on_the_foreach_batch_executor(tmp_path: Path, name: str) -> None:
    """Positional rows swapped for tuples: still one key with the named rows (one state, one state partition)."""
    out: List[Any] = []
    run_foreach_batch(
        lambda env: cases.build(API, env, name, source, tuples_for_positional_rows).add_sink(out.append),
        str(tmp_path), vectorize=False, partitions=3,
    )
    assert out == with_tuples(ORACLE["cases"][name])


@pytest.mark.parametrize("name", ["untyped tuples separated", "FLOAT separated", *ROW_CASES])
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
    if name in ROW_CASES:
        out.clear()
        run_apply_in_pandas_with_state(
            lambda env: cases.build(API, env, name, timed, tuples_for_positional_rows).add_sink(out.append), vectorize=False
        )
        assert sorted(out) == sorted(with_tuples(ORACLE["cases"][name]))
