"""A custom ``WatermarkGenerator`` in ``assign_timestamps_and_watermarks`` on the applyInPandasWithState executor
(``spark/stateful_generators.py``), without a JVM: the punctuated scenarios' Flink 2.3.0 outputs through the
executor's real bodies (``stateful_harness.py``), the generator files, a key's walk over the watermarks, the carrier,
and what stays refused."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict

import pytest
from stateful_harness import run_apply_in_pandas_with_state

from pyspark_flinkish.common import Watermark, WatermarkGenerator, WatermarkStrategy
from pyspark_flinkish.conformance import differences
from pyspark_flinkish.conformance.runner import result
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.core.errors import StateError, UnsupportedFeatureError
from pyspark_flinkish.core.javamath import LONG_MAX, LONG_MIN
from pyspark_flinkish.datastream import MicroBatch
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment
from pyspark_flinkish.spark.stateful import END_OF_INPUT, SHIFT, StatefulQueryBuilder
from pyspark_flinkish.spark.stateful_generators import (
    END_ORDER,
    GeneratorBatch,
    GeneratorFiles,
    Step,
    carrier_time,
    generated_steps,
    task_batch_id,
)

CASES_DIR = Path(__file__).resolve().parents[1] / "datastream"
sys.path.insert(0, str(CASES_DIR))
import punctuated_cases  # noqa: E402

sys.path.remove(str(CASES_DIR))

SCENARIOS = {s["name"]: s for s in punctuated_cases.load()["scenarios"]}
BACKEND = "apply_in_pandas_with_state"


def _run(scenario: Dict[str, Any], vectorize: bool, replay_routes: bool = False, strategy: Any = None) -> Dict[str, Any]:
    holder: Dict[str, Any] = {}

    def build(env: Any) -> None:
        if strategy is None:
            holder["out"] = punctuated_cases.attach_scenario(env, scenario)
        else:
            from pyspark_flinkish.conformance.runner import attach

            holder["out"] = attach(env, scenario, generator=strategy)

    run_apply_in_pandas_with_state(build, vectorize, replay_routes)
    return result(holder["out"])


@pytest.mark.parametrize("vectorize", [True, False], ids=["batch-wise", "general"])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_punctuated_generator_matches_flink_on_the_stateful_bodies(name: str, vectorize: bool) -> None:
    """Flink's outputs (the watermark of every firing included, late side outputs, mid-stream firings), compared as
    the conformance runner compares (multisets): records judged against the watermark before them, timers of keys
    without records fired at the watermark that crossed them."""
    assert differences(_run(SCENARIOS[name], vectorize), SCENARIOS[name]["expected"]) == []


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_replayed_batch_sees_the_generator_state_of_its_first_attempt(name: str) -> None:
    """Every route runs twice (a batch Spark replays): the second attempt reads the state of the batch before, not
    what the first attempt left, so a generator counting events (``every3_sliding``) or tracking its maximum emits the
    same watermarks."""
    assert differences(_run(SCENARIOS[name], True, replay_routes=True), SCENARIOS[name]["expected"]) == []


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_periodic_strategy_of_the_same_bound_gives_other_results_here_too(name: str) -> None:
    """The scenarios tell the generator's watermarks from the batch-end ones: the comparison above fails if the keyed
    tasks saw only Spark's watermark (a built-in strategy in assign_timestamps_and_watermarks is refused, so the
    periodic one is a custom generator emitting only at the batch end)."""

    class BatchEnd(WatermarkGenerator):
        def __init__(self) -> None:
            self.max = LONG_MIN + SCENARIOS[name]["generator"]["bound"] + 1

        def on_event(self, event: Any, event_timestamp: int, output: Any) -> None:
            self.max = max(self.max, event_timestamp)

        def on_periodic_emit(self, output: Any) -> None:
            output.emit_watermark(Watermark(self.max - SCENARIOS[name]["generator"]["bound"] - 1))

    got = _run(SCENARIOS[name], True, strategy=WatermarkStrategy.for_generator(BatchEnd))
    assert differences(got, SCENARIOS[name]["expected"]) != []


def test_generator_files_keep_the_first_attempt_and_read_the_newest_earlier_batch(tmp_path: Path) -> None:
    files = GeneratorFiles(str(tmp_path / "generators"), batch_of=lambda: 0)
    assert files.previous(0) == (None, GeneratorBatch())
    assert files.read(3) is None
    first = GeneratorBatch({4: b"\x00state"}, [([1, 0, 1, 2**62], 7)], 7)
    assert files.write(0, first, None) == first
    assert files.write(0, GeneratorBatch({4: b"other"}, [], 9), None) == first  # a replay keeps the first attempt
    assert files.read(0) == first
    second = GeneratorBatch({4: b"s2"}, [], 7)
    files.write(2, second, 0)  # batch 1 ran no route (no input)
    assert files.previous(2) == (0, first)  # a replay of batch 2 reads batch 0's, not its own
    assert files.previous(3) == (2, second)
    files.write(3, GeneratorBatch({4: b"s3"}, [], 8), 2)
    assert files.batches() == [2, 3]  # older than the file batch 3 read: no batch reads it again


def test_a_generator_file_of_another_format_is_refused(tmp_path: Path) -> None:
    assert GeneratorBatch.from_bytes(GeneratorBatch({1: b"x"}, [([1], 2)], 2).to_bytes()) == GeneratorBatch({1: b"x"}, [([1], 2)], 2)
    with pytest.raises(StateError, match="not a generator file"):
        GeneratorBatch.from_bytes(b'{"format": "something else", "version": 1}', "f.json")


def test_a_key_walks_the_previous_batch_then_this_one_among_its_records() -> None:
    earlier = GeneratorBatch({}, [([1, 0, 2**62], 3), ([1, 4, 2**62], 5)], 5)
    current = GeneratorBatch({}, [([1, 2, 2**62], 8), ([1, 2, 1, 2**62], 8), ([1, 5, 2**62], 12), (END_ORDER, 20)], 20)
    records = [([1, 1, 1], "r1", 4), ([1, 3, 1], "r3", 6), ([1, 6, 1], "r6", 30)]
    steps = list(generated_steps(3, earlier, current, records))
    assert steps == [
        Step(None, 5),  # the previous batch's watermarks above the key's last one (3)
        Step([1, 1, 1], None, "r1", 4),
        Step([1, 2, 2**62], 8),  # emitted after record 2 (another key's), before record 3: record 3 is late for 8
        Step([1, 3, 1], None, "r3", 6),
        Step([1, 5, 2**62], 12),
        Step([1, 6, 1], None, "r6", 30),
        Step(END_ORDER, 20),  # after the key's last record: its timers fire in this call, at the watermark
    ]
    # a key whose last call processed the previous batch entirely, without records now (a timed-out key)
    assert list(generated_steps(5, earlier, None, [])) == []
    assert [s.watermark for s in generated_steps(LONG_MIN, earlier, current, [])] == [3, 5, 8, 12, 20]


def test_the_carrier_holds_the_batch_end_watermark_as_spark_needs_it() -> None:
    delay = 1
    assert carrier_time(LONG_MIN, SHIFT, delay, END_OF_INPUT) is None  # no watermark yet: Spark's stays at 0
    assert carrier_time(7, SHIFT, delay, END_OF_INPUT) - delay == 7 + SHIFT  # Spark's next watermark is 7 shifted
    assert carrier_time(LONG_MAX, SHIFT, delay, END_OF_INPUT) == END_OF_INPUT


def test_the_batch_id_is_spark_s_outside_a_query_there_is_none() -> None:
    with pytest.raises(StateError, match="only in a micro-batch"):
        task_batch_id()


class Noop(KeyedProcessFunction):  # type: ignore[type-arg]
    def process_element(self, value: Any, ctx: Any) -> Any:
        yield value


class Every(WatermarkGenerator):
    def on_event(self, event: Any, event_timestamp: int, output: Any) -> None:
        output.emit_watermark(Watermark(event_timestamp))

    def on_periodic_emit(self, output: Any) -> None:
        return None


def _env() -> SparkStreamExecutionEnvironment:
    return SparkStreamExecutionEnvironment(None, clock=ManualClock(0), state_partitions=1, backend=BACKEND)


def _source(env: Any, strategy: Any = None) -> Any:
    base = strategy or WatermarkStrategy.no_watermarks()
    return env.from_micro_batches([MicroBatch([("a", 1, 1)])], base.with_timestamp_assigner(lambda e, _: e[1]))


def _generator() -> WatermarkStrategy:
    return WatermarkStrategy.for_generator(Every).with_timestamp_assigner(lambda e, _: e[1])


@pytest.mark.parametrize(
    ("build", "checkpoint", "words"),
    [
        (lambda env: _source(env, WatermarkStrategy.for_generator(Every)), "cp", r"given to a source.*assign_timestamps_and_watermarks.*foreachBatch"),
        (lambda env: _source(env).assign_timestamps_and_watermarks(_generator()), None, r"to_dataframe\(\).*execute\(checkpoint_location"),
        (
            lambda env: _source(env).assign_timestamps_and_watermarks(_generator()).assign_timestamps_and_watermarks(_generator()),
            "cp",
            "several assign_timestamps_and_watermarks",
        ),
        (
            lambda env: _source(env).assign_timestamps_and_watermarks(
                WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
            ),
            "cp",
            "built-in WatermarkStrategy",
        ),
    ],
    ids=["at-the-source", "to-dataframe", "two-assigners", "built-in-assigner"],
)
def test_what_stays_refused_names_the_way_on(tmp_path: Path, build: Any, checkpoint: Any, words: str) -> None:
    env = _env()
    build(env).key_by(lambda e: e[0]).process(Noop()).add_sink(lambda v: None)
    with pytest.raises(UnsupportedFeatureError, match=words) as info:
        StatefulQueryBuilder(env, sinks=env._sinks, checkpoint=None if checkpoint is None else str(tmp_path))
    assert "foreachBatch executor" in str(info.value)


def test_a_generator_in_assign_timestamps_and_watermarks_is_accepted_with_a_checkpoint(tmp_path: Path) -> None:
    env = _env()
    _source(env).assign_timestamps_and_watermarks(_generator()).key_by(lambda e: e[0]).process(Noop()).add_sink(lambda v: None)
    builder = StatefulQueryBuilder(env, sinks=env._sinks, checkpoint=str(tmp_path))
    assert builder.files is not None and builder.files.directory == str(tmp_path / "flinkish" / "generators")
    assert builder.info["generator"] is not None
