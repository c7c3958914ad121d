"""PyFlink's ``Configuration`` on the Spark environment and ``KeyedStream.execute_and_collect`` on the foreachBatch
executor, compared with real PyFlink 2.3.0 (``jvm-free-tests/datastream/pyflink_configuration.json``, cases in
``configuration_cases.py``): ``execute_and_collect`` of a keyed stream returns PyFlink's ``Row(f0=key, f1=value)``
there too."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pyspark_flinkish.common import Configuration, Row, Types
from pyspark_flinkish.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

pytestmark = pytest.mark.spark
CASES_DIR = Path(__file__).resolve().parents[2] / "jvm-free-tests" / "datastream"
sys.path.insert(0, str(CASES_DIR))
import configuration_cases as cases  # noqa: E402

sys.path.remove(str(CASES_DIR))

from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(cases)  # Spark's Python workers cannot import it
ORACLE = json.loads((CASES_DIR / "pyflink_configuration.json").read_text())


def test_spark_environment_takes_a_configuration(spark) -> None:  # type: ignore[no-untyped-def]
    conf = (
        Configuration()
        .set_integer("parallelism.default", 3)
        .set_integer("pipeline.max-parallelism", 7)
        .set_string("execution.runtime-mode", "batch")
        .set_string("execution.checkpointing.interval", "5 s")
    )
    env = StreamExecutionEnvironment.get_execution_environment(spark, configuration=conf)
    assert env.get_parallelism() == 3
    assert env.get_max_parallelism() == 7 and env.state_partitions == 7  # Flink's key groups: the state partitions
    assert env.get_runtime_mode() is RuntimeExecutionMode.BATCH
    assert env.get_checkpoint_interval() == 5000


@pytest.mark.parametrize("name", ["untyped, key x[0]", "TUPLE, key x[0], key_type INT", "TUPLE, key x[0], limit=1"])
def test_keyed_execute_and_collect_on_foreach_batch_matches_pyflink(spark, name: str) -> None:  # type: ignore[no-untyped-def]
    def env() -> Any:
        return StreamExecutionEnvironment.get_execution_environment(spark)

    result = cases.keyed_collect_cases(env, Types)[name]()
    assert cases.collected(result, Row) == ORACLE["keyed_collect"][name]
