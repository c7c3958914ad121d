"""Partitioning calls on the foreachBatch executor's real bodies (``foreach_batch_harness``): the same results as
the local engine (which ``datastream/test_pyflink_partitioning.py`` compares with real PyFlink), the partitioner
run on the executors, and its errors failing the job."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest
from foreach_batch_harness import local_outputs, run_foreach_batch

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.core.errors import UserFunctionError
from pyspark_flinkish.datastream import MicroBatch
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

ROW = Types.ROW_NAMED(["k", "t", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])
BATCHES = [
    MicroBatch([("a", 1, 1), ("b", 2, 2), ("a", 3, 3)], partitions=[0, 1, 0]),
    MicroBatch([("c", 12, 4), ("b", 5, 5), ("a", 14, 6)], partitions=[1, 1, 0]),
]


def build(out: Dict[str, List[Any]], partition: Any = lambda k, n: k % n) -> Any:
    def build_on(env: Any) -> None:
        env.set_parallelism(3)
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)).with_timestamp_assigner(
            lambda e, _: e[1]
        )
        ds = env.from_micro_batches(BATCHES, strategy, partitions=[0, 1]).map(lambda e: e, output_type=ROW)
        ds.shuffle().rebalance().map(lambda r: (r.k, r.v), output_type=Types.TUPLE([Types.STRING(), Types.LONG()])).key_by(
            lambda e: e[0]
        ).sum(1).add_sink(out["sums"].append)
        ds.partition_custom(partition, lambda r: r.v).forward().rescale().key_by(lambda r: r.k).window(
            TumblingEventTimeWindows.of(Duration.of_millis(10))
        ).reduce(lambda a, b: a if a.v >= b.v else b).add_sink(out["max"].append)

    return build_on


def _outputs() -> Dict[str, List[Any]]:
    return {"sums": [], "max": []}


@pytest.mark.parametrize("vectorize", [True, False])
def test_partitioned_pipeline_on_the_foreach_batch_bodies_equals_the_local_engine(tmp_path: Any, vectorize: bool) -> None:
    expected, got = _outputs(), _outputs()
    local_outputs(build(expected))
    run_foreach_batch(build(got), str(tmp_path), vectorize)
    assert expected["sums"] == [("a", 1), ("b", 2), ("a", 4), ("c", 4), ("b", 7), ("a", 10)]
    assert sorted(map(repr, got["sums"])) == sorted(map(repr, expected["sums"]))
    assert sorted(map(repr, got["max"])) == sorted(map(repr, expected["max"])) and len(expected["max"]) == 4


def test_a_partition_out_of_range_fails_the_job_on_the_executors(tmp_path: Any) -> None:
    with pytest.raises(UserFunctionError, match=r"partitioner returned 3 .*\[0, 3\)"):
        run_foreach_batch(build(_outputs(), partition=lambda k, n: n), str(tmp_path), True)
