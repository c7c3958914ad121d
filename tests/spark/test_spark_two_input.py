"""Two-input operators (connect + co-functions, keyed broadcast state) on Spark's foreachBatch executor, compared with
real PyFlink 2.3.0's outputs (``jvm-free-tests/datastream/pyflink_two_input.json``): the jobs of
``two_input_jobs.py``, written against PyFlink's API, in one streaming query with their inputs split into micro-batches
(keyed and broadcast state, timers and the two-input watermark cross batch boundaries). The same query runs issue 14's
"done when" job (``pyflink_done_when_job.py``: Row, connect + KeyedCoProcessFunction, keyed broadcast state,
window_all, KeyedStream.sum), against ``pyflink_done_when.json``, and plain ``broadcast()`` jobs of
``broadcast_partitioning_cases.py`` against ``pyflink_broadcast_partitioning.json``. Outputs are compared as
multisets: Flink does not order a two-input operator's inputs (nor a union's, nor its parallel instances' outputs)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List

import pytest

from pyspark_flinkish.common import Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, ProcessFunction, StreamExecutionEnvironment
from pyspark_flinkish.datastream.window import CountTrigger, GlobalWindows

pytestmark = pytest.mark.spark
CASES_DIR = Path(__file__).resolve().parents[2] / "jvm-free-tests" / "datastream"
sys.path.insert(0, str(CASES_DIR))
import broadcast_partitioning_cases  # noqa: E402
import pyflink_done_when_job  # noqa: E402
import two_input_jobs  # noqa: E402

sys.path.remove(str(CASES_DIR))

from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(two_input_jobs)  # Spark's Python workers cannot import it
cloudpickle.register_pickle_by_value(pyflink_done_when_job)
cloudpickle.register_pickle_by_value(broadcast_partitioning_cases)
ORACLE = json.loads((CASES_DIR / "pyflink_two_input.json").read_text())
DONE_WHEN = json.loads((CASES_DIR / "pyflink_done_when.json").read_text())
BROADCAST = broadcast_partitioning_cases.load()
# plain broadcast() (Flink's BroadcastPartitioner) into a map, a process function reading its subtask index,
# key_by/reduce and a union: the copies made per Flink instance by the executors' route (a sink is not
# execute_and_collect's)
ON_SPARK_BROADCAST = ["map p3, operator p2", "process index p3", "key_by reduce p2, reduce p3", "union map p2, operator p3"]
# non-keyed broadcast state: refused
ON_SPARK = [c for c in two_input_jobs.CASES if c not in ("broadcast_process", "broadcast_per_instance")]


def broadcast_source(env: Any, values: List[Any], type_info: Any) -> Any:
    """``values`` in two micro-batches, typed ``type_info`` (event time 0)."""
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, _: 0)
    batches = [MicroBatch(values[:1]), MicroBatch(values[1:])]
    return env.from_micro_batches(batches, strategy).map(lambda v: v, output_type=type_info)


def test_two_input_jobs_on_foreach_batch_match_pyflink(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    api = two_input_jobs.pyspark_flinkish_api(2)
    got: Dict[str, List[str]] = {}
    for case in ON_SPARK:
        env.set_parallelism(two_input_jobs.PARALLELISM.get(case, 1))  # an operator takes the environment's as made
        two_input_jobs.build(env, api, case).add_sink(got.setdefault(case, []).append)
    broadcast_api = SimpleNamespace(
        Types=Types, ProcessFunction=ProcessFunction, GlobalWindows=GlobalWindows, CountTrigger=CountTrigger,
        source=broadcast_source,
    )
    for case in ON_SPARK_BROADCAST:  # each sets the environment's parallelism
        broadcast_partitioning_cases.collected_job(broadcast_api, env, case).add_sink(got.setdefault(case, []).append)
    env.set_parallelism(1)
    done_when: List[str] = []
    pyflink_done_when_job.build(env, pyflink_done_when_job.pyspark_flinkish_api(2)).add_sink(done_when.append)
    handle = env.execute("two inputs", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True})
    handle.await_termination()
    expected = {c["name"]: c["output"] for c in ORACLE["cases"]}
    for case in ON_SPARK:
        assert two_input_jobs.decode(got[case]) == expected[case], case
    assert pyflink_done_when_job.decode(done_when) == DONE_WHEN["output"]
    for case in ON_SPARK_BROADCAST:  # a multiset: Flink does not order its instances' outputs
        assert sorted(str(v) for v in got[case]) == BROADCAST["collected"][case], case
    # the keyed two-input operators with a declared key_type (``key_by(..., key_type=Types.STRING())``, also of a
    # keyed stream connected to a broadcast one) got their keys as typed columns, not as their bytes
    plan = handle.driver.exec_plan
    declared = [n for n in plan.nodes if n.keyed and n.two_input and n.key_type is not None]
    assert declared and all(n.index in plan.key_columns for n in declared)
    crossed = {n.uid: 0 for n in declared}
    for p in handle.recent_progress():
        for uid, o in p["operators"].items():
            if uid in crossed:
                crossed[uid] += o.get("numKeysInAsColumns") or 0
    assert all(crossed.values()), crossed

