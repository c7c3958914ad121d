"""A user function that raises: the error names the plan node (name and uid), the function, the key (truncated)
and the window, and carries the original traceback and exception — on the JVM-free engine, and across the
executor/driver boundary of the Spark executors (``spark/plan.py``: the text that reaches the driver inside
Spark's exception is turned back into the same error)."""

from __future__ import annotations

import traceback
from typing import Any, Callable, List

import pytest

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.core.errors import FlinkishError, UserFunctionError
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import AggregateFunction, KeyedProcessFunction, ProcessWindowFunction
from pyspark_flinkish.datastream.window import CountTrigger, TumblingEventTimeWindows

EVENTS = [("a", 1, 1), ("b", 2, 2), ("a", 3, 13), ("a", 25, 4)]


def _strategy(assigner: Callable[[Any, int], int] = lambda e, _: e[1]) -> WatermarkStrategy:
    return WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(2)).with_timestamp_assigner(assigner)


def _run(build: Callable[[Any], Any], assigner: Callable[[Any, int], int] = lambda e, _: e[1]) -> UserFunctionError:
    env = StreamExecutionEnvironment.get_execution_environment()
    source = MicroBatchSource([MicroBatch(EVENTS[:2]), MicroBatch(EVENTS[2:])])
    out: List[Any] = []
    build(env.from_source(source, _strategy(assigner), "events")).add_sink(out.append)
    with pytest.raises(UserFunctionError) as info:
        env.execute()
    return info.value


def _boom(value: Any) -> Any:
    if value[2] == 13:
        msg = f"bad value {value!r}"
        raise ValueError(msg)
    return value


def _check(error: UserFunctionError, name: str, uid: str, *parts: str) -> str:
    first = str(error).splitlines()[0]
    assert first.startswith(f"operator {name!r} (uid {uid!r}): "), first
    for part in parts:
        assert part in first, (part, first)
    assert "Traceback (most recent call last)" in str(error) and "in _boom" in str(error)  # the original traceback
    assert isinstance(error, FlinkishError) and isinstance(error, RuntimeError)
    assert (error.operator, error.uid) == (name, uid)
    assert isinstance(error.__cause__, (ValueError, KeyError)), repr(error.__cause__)  # the user's own exception
    return first


def _keyed(stream: Any) -> Any:
    return stream.key_by(lambda e: e[0])


def test_map_names_the_node_and_the_element() -> None:
    err = _run(lambda s: s.map(_boom).name("parse").uid("parse-1"))
    first = _check(err, "parse", "parse-1", "map(('a', 3, 13))", "raised ValueError: bad value ('a', 3, 13)")
    assert "in _boom" in str(err)
    assert first.count("operator") == 1  # named once, by the innermost node


def test_reduce_names_key_and_window() -> None:
    err = _run(lambda s: _keyed(s).window(TumblingEventTimeWindows.of(Duration.of_millis(10))).reduce(lambda a, b: _boom(b)).name("sums"))
    _check(err, "sums", err.uid or "", "reduce (key='a', window=TimeWindow(start=0, end=10))", "bad value")
    assert err.uid is not None and err.uid.endswith("-operator-sums")  # the generated uid that names its state


class Agg(AggregateFunction):  # type: ignore[type-arg]
    def create_accumulator(self) -> int:
        return 0

    def add(self, value, accumulator):  # type: ignore[no-untyped-def]
        return accumulator + _boom(value)[2]

    def get_result(self, accumulator):  # type: ignore[no-untyped-def]
        return accumulator

    def merge(self, a, b):  # type: ignore[no-untyped-def]
        return a + b


def test_aggregate_add_names_key_and_window() -> None:
    err = _run(lambda s: _keyed(s).window(TumblingEventTimeWindows.of(Duration.of_millis(10))).aggregate(Agg()).uid("agg"))
    _check(err, err.operator or "", "agg", "aggregate function add (key='a', window=TimeWindow(start=0, end=10))")


class Pwf(ProcessWindowFunction):  # type: ignore[type-arg]
    def process(self, key, context, elements):  # type: ignore[no-untyped-def]
        for e in elements:
            _boom(e)
        yield key


def test_process_window_function_names_key_and_window() -> None:
    err = _run(lambda s: _keyed(s).window(TumblingEventTimeWindows.of(Duration.of_millis(10))).process(Pwf()).uid("pwf"))
    _check(err, err.operator or "", "pwf", "window function (key='a', window=TimeWindow(start=0, end=10))")


class Kpf(KeyedProcessFunction):  # type: ignore[type-arg]
    def __init__(self, in_timer: bool) -> None:
        self.in_timer = in_timer

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        if not self.in_timer:
            _boom(value)
        if value[2] == 13:
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 1)
        yield value

    def on_timer(self, timestamp, ctx):  # type: ignore[no-untyped-def]
        _boom(("x", timestamp, 13))
        yield timestamp


def test_keyed_process_function_element_and_timer() -> None:
    err = _run(lambda s: _keyed(s).process(Kpf(False)).name("alerts").uid("alerts"))
    _check(err, "alerts", "alerts", "process_element(('a', 3, 13)) (key='a')")
    err = _run(lambda s: _keyed(s).process(Kpf(True)).name("alerts").uid("alerts"))
    _check(err, "alerts", "alerts", "on_timer(4) (key='a')")


def test_key_selector_and_timestamp_assigner() -> None:
    err = _run(lambda s: s.key_by(lambda e: _boom(e)[0]).process(Kpf(True)).name("alerts").uid("alerts"))
    _check(err, "alerts", "alerts", "key selector on ('a', 3, 13)")
    err = _run(lambda s: s, assigner=lambda e, _: _boom(e)[1])
    _check(err, "events", err.uid or "", "timestamp assigner on ('a', 3, 13)")
    assert err.uid is not None and "source" in err.uid


class FailingTrigger(CountTrigger):
    def on_element(self, element, timestamp, window, ctx):  # type: ignore[no-untyped-def]
        _boom(element)
        return super().on_element(element, timestamp, window, ctx)


def test_trigger_names_key_and_window() -> None:
    err = _run(
        lambda s: _keyed(s).window(TumblingEventTimeWindows.of(Duration.of_millis(10))).trigger(FailingTrigger(5)).reduce(lambda a, b: a).uid("w")
    )
    _check(err, err.operator or "", "w", "on_element (key='a', window=TimeWindow(start=0, end=10))")


def test_a_huge_key_is_truncated() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    big = "k" * 10_000
    source = MicroBatchSource([MicroBatch([(big, 1, 13)])])
    env.from_source(source, _strategy(), "events").key_by(lambda e: e[0]).process(Kpf(False)).uid("p").add_sink(print)
    with pytest.raises(UserFunctionError) as info:
        env.execute()
    first = str(info.value).splitlines()[0]
    assert "... (10002 characters))" in first and len(first) < 1_200  # key and element 200, the message 500


def test_the_error_crosses_from_a_spark_task_to_the_driver_intact() -> None:
    """What a Spark task raises reaches the driver as text inside Spark's exception (with Py4J's and the JVM's
    stacks around it): the driver finds the marked message and raises the same error, Spark's as its cause."""
    from pyspark_flinkish.spark.chain import route_records
    from pyspark_flinkish.spark.error_transport import user_error_from
    from pyspark_flinkish.spark.plan import ExecPlan

    env = StreamExecutionEnvironment.get_execution_environment()
    source = MicroBatchSource([MicroBatch(EVENTS)])
    late = OutputTag("late")
    stream = env.from_source(source, _strategy(), "events").map(_boom, output_type=Types.PICKLED_BYTE_ARRAY()).uid("m")
    stream.key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(Duration.of_millis(10))).side_output_late_data(late).reduce(
        lambda a, b: a
    ).add_sink(print)
    plan = ExecPlan(list(env._sinks))
    source_node = plan.sources[0]
    records = [(e, e[1], "0", [0, i]) for i, e in enumerate(EVENTS)]
    with pytest.raises(UserFunctionError) as info:
        list(route_records(plan, records, {n.index: -(2**63) for n in plan.nodes}, 0, 2, source_node))
    task_error = info.value
    assert str(task_error).startswith("<<pyspark_flinkish error>>operator ")  # marked for the driver

    class SparkLikeError(Exception):
        pass

    text = "".join(traceback.format_exception(task_error))
    spark_error = SparkLikeError(f"[STREAM_FAILED] ... Py4J ...\n{text}\n\tat org.apache.spark.Something(X.scala:1)\n")
    driver_error = user_error_from(spark_error)
    assert driver_error is not None and driver_error.__cause__ is spark_error
    first = str(driver_error).splitlines()[0]
    assert first.startswith("operator 'Map' (uid 'm'): Map: map(('a', 3, 13)) raised ValueError"), first
    assert (driver_error.operator, driver_error.uid) == ("Map", "m")
    assert "in _boom" in str(driver_error) and "<<" not in str(driver_error) and "org.apache" not in str(driver_error)
    assert user_error_from(SparkLikeError("some other failure")) is None


def test_a_sink_function_on_the_spark_driver_names_the_sink() -> None:
    """The foreachBatch driver hands each value to a plain sink function; its error names the sink and its uid."""
    from pyspark_flinkish.spark.delivery import deliver_values

    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_source(MicroBatchSource([MicroBatch(EVENTS)]), _strategy(), "events").add_sink(_boom).name("printer")
    sink = env._sinks[0]
    with pytest.raises(UserFunctionError) as info:
        deliver_values(None, sink, EVENTS, 7, {"sink_uid": "003-sink-printer"})
    _check(info.value, "printer", "003-sink-printer", "sink function on ('a', 3, 13)")
