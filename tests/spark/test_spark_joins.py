"""Window joins, co-groups and interval joins on Spark's foreachBatch executor, compared with real Apache Flink 2.3.0's
outputs (``jvm-free-tests/datastream/flink_joins.json``, see ``join_cases.py``): every scenario in one streaming
query, each scenario's steps one micro-batch with its explicit watermark (keyed state, the interval join's
buffers and cleanup timers included, is snapshotted between them)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from pyspark_flinkish.datastream import StreamExecutionEnvironment

pytestmark = pytest.mark.spark
CASES_DIR = Path(__file__).resolve().parents[2] / "jvm-free-tests" / "datastream"
sys.path.insert(0, str(CASES_DIR))
import join_cases  # noqa: E402

sys.path.remove(str(CASES_DIR))

from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(join_cases)  # Spark's Python workers cannot import it
SCENARIOS = join_cases.load()["scenarios"]


def test_joins_on_foreach_batch_match_flink(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    got: Dict[Tuple[str, str], List[Any]] = {}
    for scenario in SCENARIOS:
        for name, stream in join_cases.build(env, scenario).items():
            stream.add_sink(got.setdefault((scenario["name"], name), []).append)
    handle = env.execute("joins", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True})
    handle.await_termination()
    for scenario in SCENARIOS:
        for name, rows in scenario["output"].items():
            actual = join_cases.comparable(scenario, name, got[(scenario["name"], name)])
            assert actual == join_cases.comparable(scenario, name, rows), (scenario["name"], name)
