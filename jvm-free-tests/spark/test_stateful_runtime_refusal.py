"""The applyInPandasWithState executor's refusals that only a running query can find: a ``KeyedProcessFunction``
registering a processing-time timer. The Spark task's ``UnsupportedFeatureError`` crosses to the driver intact
(``error_transport``), naming the operator, the executor and the foreachBatch executor."""

from __future__ import annotations

import traceback
from typing import Any, Iterator, Tuple

import pandas as pd
import pytest

from pyspark_flinkish.common import Duration, WatermarkStrategy
from pyspark_flinkish.core.errors import UnsupportedFeatureError, UserFunctionError
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.spark.error_transport import package_error_from, unsupported_error_from, user_error_from
from pyspark_flinkish.spark.keys import encode_key
from pyspark_flinkish.spark.plan import ExecPlan
from pyspark_flinkish.spark.rows import dumps
from pyspark_flinkish.spark.stateful import keyed_function


class _ProcessingTimeAlert(KeyedProcessFunction):  # type: ignore[type-arg]
    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        if value[0] == "b":
            ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 10)
        yield value


class _State:
    """What the function reads of Spark's ``GroupState`` for a key without state."""

    exists = False

    def getCurrentWatermarkMs(self) -> int:  # noqa: N802 (Spark's name)
        return 0

    def remove(self) -> None:
        return None

    def update(self, value: Any) -> None:
        return None

    def setTimeoutTimestamp(self, ms: int) -> None:  # noqa: N802 (Spark's name)
        return None


def _run_key(key: str, element: Tuple[Any, ...]) -> list:
    env = StreamExecutionEnvironment.get_execution_environment()
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5)).with_timestamp_assigner(lambda e, _: e[1])
    env.from_source(MicroBatchSource([MicroBatch([element])]), strategy, "events").key_by(lambda e: e[0]).process(
        _ProcessingTimeAlert()
    ).uid("alerts").add_sink(lambda v: None)
    plan = ExecPlan(list(env._sinks))
    keyed = next(n.index for n in plan.nodes if n.keyed)
    frame = pd.DataFrame({"ord": [[1, 0, 0]], "value": [dumps(element)], "ts": [element[1]]})
    return list(keyed_function(plan, keyed, 6, 0)((encode_key(key),), [frame], _State()))


def test_a_processing_time_timer_fails_the_task_with_an_unsupported_error_for_the_driver() -> None:
    assert len(_run_key("a", ("a", 1_700_000_000_001, 1))) == 1  # no processing-time timer: runs
    with pytest.raises(UnsupportedFeatureError) as info:
        _run_key("b", ("b", 1_700_000_000_002, 2))
    task_error = info.value
    assert str(task_error).startswith("<<pyspark_flinkish unsupported>>")  # marked for the driver

    class SparkLikeError(Exception):
        pass

    text = "".join(traceback.format_exception(task_error))
    spark_error = SparkLikeError(f"[STREAM_FAILED] ... Py4J ...\n{text}\n\tat org.apache.spark.Something(X.scala:1)\n")
    driver_error = package_error_from(spark_error)
    assert isinstance(driver_error, UnsupportedFeatureError) and driver_error.__cause__ is spark_error
    message = str(driver_error)
    assert message.startswith("the apply_in_pandas_with_state executor cannot express processing-time timers")
    assert "uid 'alerts'" in message and "key 'b'" in message and "use the foreachBatch executor" in message
    assert "<<" not in message and "org.apache" not in message
    assert user_error_from(spark_error) is None and unsupported_error_from(SparkLikeError("other")) is None


def test_user_errors_still_cross_as_user_function_errors() -> None:
    error = UserFunctionError("<<pyspark_flinkish error>>operator 'Map' (uid 'm'): boom<</pyspark_flinkish error>>")
    found = package_error_from(RuntimeError(str(error)))
    assert isinstance(found, UserFunctionError) and str(found).startswith("operator 'Map'")
