"""Two pipelines that once gave results different from Flink's on Spark without any error (issue 12), run through
the foreachBatch executor's real bodies (``foreach_batch_harness``) and the local engine.

1. A ``ProcessWindowFunction`` counting per key in ``global_state()`` through a module-level helper: the batch-wise
   window path dropped that state between micro-batches (counts 1, 1, 1 where Flink gives 1, 2, 3).
2. A per-element ``WatermarkGenerator`` in ``assign_timestamps_and_watermarks`` (PyFlink's own
   ``test_side_output_late_data``): the driver called it once per batch with the batch's maximum timestamp (at a
   source, its watermark waited for the batch end until issue 25's fix: Flink's source emits it at once; checked at a
   replayed source and at a ``from_dataframe`` one, whose route is fused with the source's conversion). The
   foreachBatch executor now runs custom generators as Flink does (``spark/generators.py``: ``on_event`` per element
   in the route, mid-batch watermarks at their place in the keyed tasks); so does the applyInPandasWithState executor
   in ``assign_timestamps_and_watermarks`` (``spark/stateful_generators.py``), which refuses one at the source.
3. (issue 16) The applyInPandasWithState executor ordered a window's on-time firing after a late firing of the
   same window in the same batch (``stateful_harness``; through a merging ``DeltaSink`` in ``tests/delta``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List

import pandas as pd
import pytest
from foreach_batch_harness import PandasStream, local_outputs, run_foreach_batch
from pyspark.sql import Row
from pyspark.sql.types import LongType, StringType, StructField, StructType
from stateful_harness import run_apply_in_pandas_with_state

from pyspark_flinkish.common import Duration, Types, Watermark, WatermarkGenerator, WatermarkStrategy
from pyspark_flinkish.core.errors import UnsupportedFeatureError
from pyspark_flinkish.datastream import MicroBatch, OutputTag
from pyspark_flinkish.datastream.functions import ProcessWindowFunction
from pyspark_flinkish.datastream.state import ValueStateDescriptor
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment
from pyspark_flinkish.spark.stateful import StatefulQueryBuilder

FIRINGS = ValueStateDescriptor("firings", Types.INT())


def next_firing(context: Any) -> int:
    """The key's firing count, kept in the window function's per-key global state."""
    state = context.global_state().get_state(FIRINGS)
    n = (state.value() or 0) + 1
    state.update(n)
    return n


class CountFirings(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield key, context.window().start, next_firing(context)


def counting_pipeline(out: List[Any]) -> Any:
    def build(env: Any) -> None:
        batches = [MicroBatch([("a", 1)]), MicroBatch([("a", 12)]), MicroBatch([("a", 25)])]
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)).with_timestamp_assigner(
            lambda e, _: e[1]
        )
        (
            env.from_micro_batches(batches, strategy)
            .key_by(lambda e: e[0])
            .window(TumblingEventTimeWindows.of(Duration.of_millis(10)))
            .process(CountFirings())
            .add_sink(out.append)
        )

    return build


@pytest.mark.parametrize("vectorize", [True, False])
def test_global_state_through_a_helper_survives_micro_batches(tmp_path: Path, vectorize: bool) -> None:
    local: List[Any] = []
    local_outputs(counting_pipeline(local))
    assert local == [("a", 0, 1), ("a", 10, 2), ("a", 20, 3)]
    spark: List[Any] = []
    driver = run_foreach_batch(counting_pipeline(spark), str(tmp_path), vectorize)
    window = next(n for n in driver.plan.nodes if n.keyed)
    assert window.batched == vectorize  # the batch-wise path keeps it when vectorized
    assert spark == local


class PerElementWatermarks(WatermarkGenerator):
    """Flink's ``PerElementWatermarkGenerator`` (PyFlink's tests): a watermark at every event's timestamp."""

    def on_event(self, event: Any, event_timestamp: int, output: Any) -> None:
        output.emit_watermark(Watermark(event_timestamp))

    def on_periodic_emit(self, output: Any) -> None:
        return None


class CountWindowProcessFunction(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        return [(key, context.window().start, context.window().end, len(list(elements)))]


def side_output_late_data(main: List[Any], side: List[Any], where: str = "restamp") -> Any:
    """PyFlink's ``test_side_output_late_data`` (the generator in ``assign_timestamps_and_watermarks``, or at the
    source with ``where="source"``)."""
    strategy = WatermarkStrategy.for_generator(PerElementWatermarks).with_timestamp_assigner(lambda e, _: e[1])

    def build(env: Any) -> None:
        tag = OutputTag("late-data")
        elements = [("a", 0), ("a", 8), ("a", 4), ("a", 6)]
        if where == "source":
            ds = env.from_micro_batches([elements], strategy)
        else:
            ds = env.from_micro_batches([elements]).assign_timestamps_and_watermarks(strategy)
        windowed = (
            ds.key_by(lambda e: e[0])
            .window(TumblingEventTimeWindows.of(Duration.of_millis(5)))
            .allowed_lateness(0)
            .side_output_late_data(tag)
            .process(CountWindowProcessFunction())
        )
        windowed.add_sink(main.append)
        windowed.get_side_output(tag).add_sink(side.append)

    return build


def test_per_element_generator_runs_as_flink_on_the_local_engine() -> None:
    main: List[Any] = []
    side: List[Any] = []
    local_outputs(side_output_late_data(main, side))
    assert (main, side) == ([("a", 0, 5, 1), ("a", 5, 10, 2)], [("a", 4)])  # Flink's expected output


@pytest.mark.parametrize("where", ["restamp", "source"])
@pytest.mark.parametrize("vectorize", [True, False])
def test_per_element_generator_on_foreach_batch_gives_flinks_result(tmp_path: Path, where: str, vectorize: bool) -> None:
    main: List[Any] = []
    side: List[Any] = []
    local_outputs(side_output_late_data(main, side, where))
    got_main: List[Any] = []
    got_side: List[Any] = []
    run_foreach_batch(side_output_late_data(got_main, got_side, where), str(tmp_path), vectorize, tasks=2)
    assert (got_main, got_side) == (main, side)
    # Flink's expected output in both places: a FLIP-27 source emits the generator's watermark right after the
    # element too (its split's immediate output), so ("a", 4) is late after ("a", 8) in one batch
    assert (main, side) == ([("a", 0, 5, 1), ("a", 5, 10, 2)], [("a", 4)])


LATE_DATA_BATCHES = [
    [("a", 0), ("b", 8), ("a", 4), ("a", 6)],
    [("b", 3), ("a", 12), ("a", 9), ("b", 14)],
    [("a", 11), ("b", 13), ("a", 25)],
    [("b", 21), ("a", 24), ("b", 30)],
]


def late_data_over_batches(main: List[Any], side: List[Any], where: str) -> Any:
    """``side_output_late_data`` over several micro-batches and two keys: the generator's state (its last
    watermark) must carry over from one batch to the next, across a restart too."""
    strategy = WatermarkStrategy.for_generator(PerElementWatermarks).with_timestamp_assigner(lambda e, _: e[1])

    def build(env: Any) -> None:
        tag = OutputTag("late-data")
        if where == "source":
            ds = env.from_micro_batches(LATE_DATA_BATCHES, strategy)
        else:
            ds = env.from_micro_batches(LATE_DATA_BATCHES).assign_timestamps_and_watermarks(strategy)
        windowed = (
            ds.map(lambda e: e)  # a stateless operator between the generator and the window
            .key_by(lambda e: e[0])
            .window(TumblingEventTimeWindows.of(Duration.of_millis(5)))
            .allowed_lateness(2)
            .side_output_late_data(tag)
            .process(CountWindowProcessFunction())
        )
        windowed.add_sink(main.append)
        windowed.get_side_output(tag).add_sink(side.append)

    return build


@pytest.mark.parametrize("where", ["restamp", "source"])
@pytest.mark.parametrize("vectorize", [True, False])
def test_custom_generator_state_survives_micro_batches_and_a_restart(tmp_path: Path, where: str, vectorize: bool) -> None:
    main: List[Any] = []
    side: List[Any] = []
    local_outputs(late_data_over_batches(main, side, where))
    assert side  # late elements exist: the generator's watermarks matter
    got_main: List[Any] = []
    got_side: List[Any] = []
    build = late_data_over_batches(got_main, got_side, where)
    run_foreach_batch(build, str(tmp_path), vectorize, tasks=2, batches=range(2))
    run_foreach_batch(build, str(tmp_path), vectorize, tasks=2, batches=range(2, len(LATE_DATA_BATCHES) + 1))
    assert sorted(got_main) == sorted(main) and got_side == side


class PunctuatedWatermarks(WatermarkGenerator):
    """A punctuated generator: a watermark at an element marked ``True`` (not the maximum timestamp)."""

    def on_event(self, event: Any, event_timestamp: int, output: Any) -> None:
        if event[2]:
            output.emit_watermark(Watermark(event_timestamp))

    def on_periodic_emit(self, output: Any) -> None:
        return None


def punctuated_two_partitions(out: List[Any], side: List[Any]) -> Any:
    """A punctuated generator at a source with two partitions: one generator per partition, the source's watermark
    the minimum of theirs, emitted right after the element whose ``on_event`` advanced it (Flink's
    ``WatermarkOutputMultiplexer``)."""
    strategy = WatermarkStrategy.for_generator(PunctuatedWatermarks).with_timestamp_assigner(lambda e, _: e[1])
    batches = [
        MicroBatch([("a", 3, True), ("a", 9, False), ("b", 4, True)], partitions=[0, 0, 1]),
        MicroBatch([("a", 12, True), ("b", 7, False), ("b", 11, True), ("a", 2, False)], partitions=[0, 1, 1, 0]),
        MicroBatch([("b", 6, False), ("a", 21, True), ("b", 22, True)], partitions=[1, 0, 1]),
        MicroBatch([("a", 13, False), ("b", 30, False)], partitions=[0, 1]),
    ]

    def build(env: Any) -> None:
        tag = OutputTag("late")
        windowed = (
            env.from_micro_batches(batches, strategy, partitions=[0, 1])
            .key_by(lambda e: e[0])
            .window(TumblingEventTimeWindows.of(Duration.of_millis(5)))
            .side_output_late_data(tag)
            .process(CountWindowProcessFunction())
        )
        windowed.add_sink(out.append)
        windowed.get_side_output(tag).add_sink(side.append)

    return build


@pytest.mark.parametrize("vectorize", [True, False])
def test_punctuated_generator_per_source_partition(tmp_path: Path, vectorize: bool) -> None:
    main: List[Any] = []
    side: List[Any] = []
    local_outputs(punctuated_two_partitions(main, side))
    assert side  # ("b", 6) is late only by the punctuated watermarks (the maxima would hold it back less)
    got_main: List[Any] = []
    got_side: List[Any] = []
    build = punctuated_two_partitions(got_main, got_side)
    run_foreach_batch(build, str(tmp_path), vectorize, tasks=2, batches=range(2))
    run_foreach_batch(build, str(tmp_path), vectorize, tasks=2, batches=range(2, 5))
    assert sorted(got_main) == sorted(main) and sorted(got_side) == sorted(side)


@pytest.mark.parametrize("where", ["restamp", "source"])
def test_mid_batch_watermarks_meeting_another_input_are_refused(tmp_path: Path, where: str) -> None:
    strategy = WatermarkStrategy.for_generator(PerElementWatermarks).with_timestamp_assigner(lambda e, _: e[1])

    def build(env: Any) -> None:
        if where == "source":
            first = env.from_micro_batches([[("a", 1)]], strategy)
        else:
            first = env.from_micro_batches([[("a", 1)]]).assign_timestamps_and_watermarks(strategy)
        second = env.from_micro_batches([[("b", 2)]], WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1]))
        first.union(second).key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(Duration.of_millis(5))).reduce(
            lambda a, b: a
        ).add_sink(lambda v: None)

    what = "the source" if where == "source" else "assign_timestamps_and_watermarks"
    with pytest.raises(UnsupportedFeatureError, match=rf"^{what} .*custom WatermarkGenerator.*another input"):
        run_foreach_batch(build, str(tmp_path), vectorize=True)


@pytest.mark.parametrize("vectorize", [True, False])
def test_per_element_generator_runs_as_flink_on_apply_in_pandas_with_state(vectorize: bool) -> None:
    main: List[Any] = []
    side: List[Any] = []
    run_apply_in_pandas_with_state(side_output_late_data(main, side), vectorize)
    assert (sorted(main), side) == ([("a", 0, 5, 1), ("a", 5, 10, 2)], [("a", 4)])  # Flink's expected output


def test_per_element_generator_at_the_source_is_refused_on_apply_in_pandas_with_state(tmp_path: Path) -> None:
    env = SparkStreamExecutionEnvironment(None, state_partitions=1, backend="apply_in_pandas_with_state")
    side_output_late_data([], [], "source")(env)
    with pytest.raises(UnsupportedFeatureError, match=r"custom WatermarkGenerator.*given to a source.*assign_timestamps"):
        StatefulQueryBuilder(env, sinks=env._sinks, checkpoint=str(tmp_path))


def test_built_in_strategy_in_assign_timestamps_stays_supported(tmp_path: Path) -> None:
    """Built-in generators depend on the maximum timestamp only: the driver's per-batch call gives Flink's result."""

    def build_with(out: List[Any]) -> Any:
        def build(env: Any) -> None:
            strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(2)).with_timestamp_assigner(
                lambda e, _: e[1]
            )
            (
                env.from_micro_batches([[("a", 0), ("a", 8)], [("a", 4), ("b", 16)], [("a", 6)]])
                .assign_timestamps_and_watermarks(strategy.with_idleness(Duration.of_seconds(5)))
                .key_by(lambda e: e[0])
                .window(TumblingEventTimeWindows.of(Duration.of_millis(5)))
                .process(CountWindowProcessFunction())
                .add_sink(out.append)
            )

        return build

    local: List[Any] = []
    spark: List[Any] = []
    local_outputs(build_with(local))
    run_foreach_batch(build_with(spark), str(tmp_path), vectorize=True)
    assert sorted(spark) == sorted(local) and local


def late_after_on_time(out: List[Any]) -> Any:
    """Issue 16: the watermark passes window [0, 10) after batch 1; batch 2 brings a late element within the
    allowed lateness. Flink fires [0, 10) on time (sum 3) at the end of batch 1, then late (sum 7) in batch 2."""

    def build(env: Any) -> None:
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)).with_timestamp_assigner(
            lambda e, _: e[1]
        )
        (
            env.from_micro_batches([[("k", 1, 3)], [("k", 12, 0)], [("k", 5, 4)]], strategy)
            .key_by(lambda e: e[0])
            .window(TumblingEventTimeWindows.of(Duration.of_millis(10)))
            .allowed_lateness(Duration.of_millis(20))
            .reduce(lambda a, b: (a[0], max(a[1], b[1]), a[2] + b[2]))
            .add_sink(out.append)
        )

    return build


@pytest.mark.parametrize("vectorize", [True, False])
def test_apply_in_pandas_with_state_delivers_on_time_firings_before_late_ones(vectorize: bool) -> None:
    local: List[Any] = []
    local_outputs(late_after_on_time(local))
    assert local == [("k", 1, 3), ("k", 5, 7), ("k", 12, 0)]
    spark: List[Any] = []
    run_apply_in_pandas_with_state(late_after_on_time(spark), vectorize)
    assert spark == local


def test_a_checkpoint_of_the_general_operator_keeps_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A window function with state of its own ran on the general operator before (``v=`` snapshot files); a
    restart on that checkpoint keeps that layout instead of looking for window tables that were never written."""
    from pyspark_flinkish.spark import plan as plan_module

    local: List[Any] = []
    local_outputs(counting_pipeline(local))
    out: List[Any] = []
    monkeypatch.setattr(plan_module, "batch_eligibility", lambda op: "not eligible in an earlier version")
    first = run_foreach_batch(counting_pipeline(out), str(tmp_path), vectorize=True, batches=range(2))
    assert not any(n.batched for n in first.plan.nodes)
    monkeypatch.undo()
    assert any(n.batched for n in run_foreach_batch(counting_pipeline([]), str(tmp_path / "fresh"), True, batches=range(1)).plan.nodes)
    restarted = run_foreach_batch(counting_pipeline(out), str(tmp_path), vectorize=True, batches=range(2, 4))
    assert not any(n.batched for n in restarted.plan.nodes)
    assert out == local == [("a", 0, 1), ("a", 10, 2), ("a", 20, 3)]


class ZeroAmountWatermarks(WatermarkGenerator):
    """A punctuated generator reading a ``Row``: a watermark just below an element whose ``amount`` is 0."""

    def on_event(self, event: Any, event_timestamp: int, output: Any) -> None:
        if event.amount == 0:
            output.emit_watermark(Watermark(event_timestamp - 1))

    def on_periodic_emit(self, output: Any) -> None:
        return None


DATAFRAME_BATCHES = [[("a", 5, 0), ("a", 3, 1), ("a", 12, 0), ("a", 4, 1)], [("a", 9, 1), ("a", 20, 0)]]
DATAFRAME_SCHEMA = StructType([StructField("user", StringType()), StructField("ts", LongType()), StructField("amount", LongType())])


def punctuated_dataframe_source(main: List[Any], side: List[Any]) -> Any:
    """A punctuated generator at a ``from_dataframe`` source (on Spark the route fused with the source's conversion,
    ``chain.route_records``), the same ``Row`` elements from ``from_micro_batches`` on the local engine."""
    strategy = WatermarkStrategy.for_generator(ZeroAmountWatermarks)

    def build(env: Any) -> None:
        if isinstance(env, SparkStreamExecutionEnvironment):
            frames = [pd.DataFrame(b, columns=DATAFRAME_SCHEMA.fieldNames()) for b in DATAFRAME_BATCHES]
            ds = env.from_dataframe(PandasStream(DATAFRAME_SCHEMA, frames), strategy, timestamp_column="ts")
        else:
            rows = [[Row(user=u, ts=t, amount=a) for u, t, a in b] for b in DATAFRAME_BATCHES]
            ds = env.from_micro_batches(rows, strategy.with_timestamp_assigner(lambda r, _: r.ts), end_of_input=False)
        tag = OutputTag("late")
        windowed = (
            ds.key_by(lambda r: r.user)
            .window(TumblingEventTimeWindows.of(Duration.of_millis(5)))
            .side_output_late_data(tag)
            .process(CountWindowProcessFunction())
        )
        windowed.add_sink(main.append)
        windowed.get_side_output(tag).add_sink(lambda r: side.append((r.user, r.ts)))

    return build


@pytest.mark.parametrize("vectorize", [True, False])
def test_punctuated_generator_at_a_dataframe_source(tmp_path: Path, vectorize: bool) -> None:
    main: List[Any] = []
    side: List[Any] = []
    local_outputs(punctuated_dataframe_source(main, side))
    # Flink's rule: the watermark 4 right after ("a", 5) fires [0, 5) and makes ("a", 3) and ("a", 4) late in the
    # same batch, 11 after ("a", 12) fires [5, 10) before ("a", 9) of the next batch; 19 after ("a", 20) fires [10, 15)
    assert (main, side) == ([("a", 5, 10, 1), ("a", 10, 15, 1)], [("a", 3), ("a", 4), ("a", 9)])
    got_main: List[Any] = []
    got_side: List[Any] = []
    run_foreach_batch(punctuated_dataframe_source(got_main, got_side), str(tmp_path), vectorize)
    assert (got_main, got_side) == (main, side)
