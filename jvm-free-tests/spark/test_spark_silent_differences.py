"""Two pipelines that once gave results different from Flink's on Spark without any error (issue 12), run through
the foreachBatch executor's real bodies (``foreach_batch_harness``) and the local engine.

1. A ``ProcessWindowFunction`` counting per key in ``global_state()`` through a module-level helper: the batch-wise
   window path dropped that state between micro-batches (counts 1, 1, 1 where Flink gives 1, 2, 3).
2. A per-element ``WatermarkGenerator`` in ``assign_timestamps_and_watermarks`` (PyFlink's own
   ``test_side_output_late_data``): the driver called it once per batch with the batch's maximum timestamp. It is
   now refused up front, on every Spark executor.
3. (issue 16) The applyInPandasWithState executor ordered a window's on-time firing after a late firing of the
   same window in the same batch (``stateful_harness``; through a merging ``DeltaSink`` in ``tests/delta``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List

import pytest
from foreach_batch_harness import local_outputs, run_foreach_batch
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
def test_per_element_generator_is_refused_on_foreach_batch(tmp_path: Path, where: str, vectorize: bool) -> None:
    main: List[Any] = []
    with pytest.raises(UnsupportedFeatureError, match=r"custom WatermarkGenerator.*on_event.*for_bounded_out_of_orderness.*local engine"):
        run_foreach_batch(side_output_late_data(main, [], where), str(tmp_path), vectorize)
    assert main == []


@pytest.mark.parametrize("where", ["restamp", "source"])
def test_per_element_generator_is_refused_on_apply_in_pandas_with_state(where: str) -> None:
    env = SparkStreamExecutionEnvironment(None, state_partitions=1, backend="apply_in_pandas_with_state")
    side_output_late_data([], [], where)(env)
    with pytest.raises(UnsupportedFeatureError, match=r"custom WatermarkGenerator.*on_event"):
        StatefulQueryBuilder(env, sinks=env._sinks)


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
