"""A keyed task's input streamed in processing order (``spark/keyed_partition.py``: ``in_processing_order``,
``KeyedInput``), without a JVM: the task's function is of ``applyInPandas``' iterator form, a group read in chunks of
any size gives the results of its records in ``ord`` order, and input out of that order is refused, not processed.

The function below keeps the previous value of its key in ``ValueState`` and emits ``(key, previous, value)``: any
record processed out of order changes an output. ``tests/spark/test_large_batches.py`` checks on Spark that the
plan sorts no group twice and that every group's rows reach its task in order across Arrow batches."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pandas as pd
import pytest
from foreach_batch_harness import group_frames

from pyspark_flinkish.common import Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.state import ValueStateDescriptor
from pyspark_flinkish.spark.keyed_partition import KeyedInput, OutOfOrderInputError, keyed_level_function, run_keyed_partition
from pyspark_flinkish.spark.keys import encode_key
from pyspark_flinkish.spark.plan import ExecPlan
from pyspark_flinkish.spark.rows import dumps, loads

LONG_MIN = -(2**63)


class Previous(KeyedProcessFunction):  # type: ignore[type-arg]
    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        self.last = runtime_context.get_state(ValueStateDescriptor("last", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        previous = self.last.value()
        self.last.update(value[1])
        yield (value[0], previous, value[1])


def _plan() -> Tuple[ExecPlan, int]:
    env = StreamExecutionEnvironment.get_execution_environment()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
    events = env.from_source(MicroBatchSource([MicroBatch([])]), strategy, "events")
    events.key_by(lambda e: e[0]).process(Previous()).add_sink(lambda v: None)
    plan = ExecPlan(env._sinks)
    return plan, next(n.index for n in plan.nodes if n.keyed)


def _rows(node: int, n: int) -> List[Dict[str, Any]]:
    """``n`` records of keys ``a``..``c`` in processing order (``ord [1, i]``), a heartbeat and two ``stats`` rows."""
    rows: List[Dict[str, Any]] = [{"kind": "hb", "dest": node, "sp": 0, "key": None, "value": None, "ts": None, "ord": None}]
    rows += [{"kind": "stats", "dest": node, "sp": 0, "key": None, "value": bytes([s]), "ts": None, "ord": None} for s in (1, 2)]
    for i in range(n):
        k = "abc"[i % 3]
        rows.append({"kind": "rec", "dest": node, "sp": 0, "key": encode_key(k), "value": dumps((k, i)), "ts": i, "ord": [1, i]})
    return rows


def _outputs(plan: ExecPlan, frames: List[pd.DataFrame], root: Path) -> List[Tuple[Any, ...]]:
    node = next(n.index for n in plan.nodes if n.keyed)
    group = KeyedInput(plan, frames)
    out = pd.concat(list(run_keyed_partition(plan, group, {node: LONG_MIN}, {node: LONG_MIN}, 0, 1, str(root), 0, {})))
    records = out[out["kind"] == "rec"]
    return [tuple(loads(v)) for _, v in sorted(zip(records["ord"].map(list), records["value"]))]


def test_the_keyed_function_is_of_the_iterator_form() -> None:
    """pyspark picks ``applyInPandas``' form from the function's type hints: the keyed function must be taken as
    an iterator of frames (the whole-group form would hold the partition's whole input in one frame)."""
    from pyspark.sql.pandas.typehints import infer_group_pandas_eval_type_from_func
    from pyspark.util import PythonEvalType

    plan, node = _plan()
    function = keyed_level_function(plan, {node: LONG_MIN}, {node: LONG_MIN}, 0, 1, "/nonexistent", 0, {})
    assert infer_group_pandas_eval_type_from_func(function) == PythonEvalType.SQL_GROUPED_MAP_PANDAS_ITER_UDF


@pytest.mark.parametrize("seed", range(4))
def test_a_group_gives_the_results_of_its_ord_order_in_chunks_of_any_size(tmp_path: Path, seed: int) -> None:
    plan, node = _plan()
    rows = _rows(node, 40)
    expected = [("abc"[i % 3], None if i < 3 else i - 3, i) for i in range(40)]
    random.Random(seed).shuffle(rows)  # as the route tasks' rows reach the shuffle: any order
    frame = pd.DataFrame(rows)
    for chunk in (1, 2, 7, 1000):
        assert _outputs(plan, group_frames(frame, chunk), tmp_path / f"state-{chunk}") == expected


def test_a_group_reads_its_stats_keys_and_counts_across_chunks() -> None:
    plan, node = _plan()
    group = KeyedInput(plan, group_frames(pd.DataFrame(_rows(node, 10)), 4))
    assert group.stats == [b"\x01", b"\x02"]
    assert group.keys == {encode_key(k) for k in "abc"}
    assert group.received == 10
    read = [order for orders, _ in group.chunks() for order in orders]
    assert read == [[1, i] for i in range(10)]
    assert list(group.chunks()) == []  # read once: the spilled rows are gone


@pytest.mark.parametrize("swap", [(4, 5), (5, 6), (3, 12)], ids=["within-a-chunk", "across-chunks", "far"])
def test_input_out_of_processing_order_is_refused(swap: Tuple[int, int]) -> None:
    """Rows out of ``ord`` order (what a plan that lost ``in_processing_order``'s sort would give) stop the task
    naming the two orders, within a chunk or across two."""
    plan, node = _plan()
    rows = _rows(node, 14)  # 3 rows without ord, then records 0..13: frames of 3 rows, record i in frame (i + 3) // 3
    i, j = swap[0] + 3, swap[1] + 3
    rows[i], rows[j] = rows[j], rows[i]
    frame = pd.DataFrame(rows)
    frames = [frame.iloc[k : k + 3].reset_index(drop=True) for k in range(0, len(frame), 3)]
    with pytest.raises(OutOfOrderInputError, match=r"out of processing order \(ord \[1, \d+\] after \[1, \d+\]\)"):
        KeyedInput(plan, frames)
