"""Values of every basic type as PyFlink's coders leave them (issue 28) through the foreachBatch executor's real
bodies (``foreach_batch_harness``): the cases of ``jvm-free-tests/datastream/narrow_types_cases.py`` on a replayed
micro-batch, compared with real PyFlink 2.3.0's outputs (``pyflink_narrow_types.json``) and with the local engine.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, List

import pytest
from foreach_batch_harness import local_outputs, run_foreach_batch

from pyspark_flinkish.common import Duration, Row, Types, WatermarkStrategy
from pyspark_flinkish.core.coders import float32
from pyspark_flinkish.core.errors import UserFunctionError
from pyspark_flinkish.datastream import MicroBatch, OutputTag
from pyspark_flinkish.datastream.functions import AggregateFunction, KeyedProcessFunction, ProcessFunction
from pyspark_flinkish.datastream.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

CASES_DIR = Path(__file__).resolve().parents[1] / "datastream"
sys.path.insert(0, str(CASES_DIR))
import narrow_types_cases as cases  # noqa: E402

sys.path.remove(str(CASES_DIR))

ORACLE = cases.load()
API = SimpleNamespace(
    Types=Types, Row=Row, OutputTag=OutputTag, ProcessFunction=ProcessFunction,
    KeyedProcessFunction=KeyedProcessFunction, AggregateFunction=AggregateFunction,
    ValueStateDescriptor=ValueStateDescriptor, ListStateDescriptor=ListStateDescriptor,
    MapStateDescriptor=MapStateDescriptor,
)
CHAINED = cases.CHAINED  # differs from PyFlink as documented: see test_narrow_types.py


def source(env: Any, values: List[Any]) -> Any:
    return env.from_micro_batches([MicroBatch(list(values))])


@pytest.mark.parametrize("vectorize", [True, False])
@pytest.mark.parametrize("name", sorted(set(cases.case_names(API, source)) - {CHAINED}))
def test_values_match_pyflink_on_the_foreach_batch_executor(tmp_path: Path, name: str, vectorize: bool) -> None:
    out: List[Any] = []
    run_foreach_batch(lambda env: cases.build(API, source, env, name).add_sink(out.append), str(tmp_path), vectorize)
    assert out == ORACLE["cases"][name]


@pytest.mark.parametrize("case", ORACLE["refused"][:6], ids=lambda c: f"{c['type']}-{c['value']}")
def test_refused_values_fail_on_the_foreach_batch_executor(tmp_path: Path, case: Any) -> None:
    value = next(v for t, v in cases.REFUSED if t == case["type"] and repr(v) == case["value"])
    error_type, message = case["error"]
    error_type = error_type.removeprefix("java ")  # Java's BigDecimal fails in PyFlink, on the Java side
    with pytest.raises(UserFunctionError) as info:
        run_foreach_batch(
            lambda env: cases.refused(API, source, env, case["type"], value).add_sink(lambda _: None),
            str(tmp_path), vectorize=False,
        )
    assert f"{error_type}: {message}" in str(info.value) and f"Types.{case['type']}()" in str(info.value)
    assert "'Map'" in str(info.value)


def tips_pipeline(out: List[Any]) -> Any:
    """The hourly tips of issue 28: Types.FLOAT() tips summed per driver in event-time windows (the batch-wise
    window path when vectorized)."""

    def build(env: Any) -> None:
        tips = [("d1", 1.1, 1000), ("d2", 2.2, 1500), ("d1", 2.1, 2000), ("d1", 0.3, 12_000), ("d2", 0.1, 13_000)]
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[2])
        (
            env.from_micro_batches([MicroBatch(tips[:3]), MicroBatch(tips[3:])], strategy)
            .map(lambda e: (e[0], e[1]), Types.TUPLE([Types.STRING(), Types.FLOAT()]))
            .key_by(lambda e: e[0])
            .window(TumblingEventTimeWindows.of(Duration.of_seconds(10)))
            .reduce(lambda a, b: (a[0], a[1] + b[1]))
            .add_sink(out.append)
        )

    return build


@pytest.mark.parametrize("vectorize", [True, False])
def test_float_sums_are_32_bit_on_both_engines(tmp_path: Path, vectorize: bool) -> None:
    local: List[Any] = []
    local_outputs(tips_pipeline(local))
    f = float32
    assert sorted(local) == sorted([("d1", f(f(1.1) + f(2.1))), ("d2", f(2.2)), ("d1", f(0.3)), ("d2", f(0.1))])
    assert ("d1", 3.2) not in local and ("d2", 0.10000000149011612) in local
    spark: List[Any] = []
    run_foreach_batch(tips_pipeline(spark), str(tmp_path), vectorize)
    assert sorted(spark) == sorted(local)  # the order across keys is not specified (Flink: unordered)
