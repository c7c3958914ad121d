"""Non-keyed windows (``window_all``, ``count_window_all``) on the local engine, compared with real PyFlink 2.3.0's
outputs (``pyflink_all_windows.json``; see ``all_window_cases.py``)."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest
from all_window_cases import Elements, build, count_all_java_rule, load

from pyspark_flinkish.common import WatermarkStrategy
from pyspark_flinkish.core.errors import InvalidArgumentError, InvalidPipelineError, InvalidTypeError
from pyspark_flinkish.datastream import (
    AllWindowedStream,
    MicroBatch,
    MicroBatchSource,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
)
from pyspark_flinkish.datastream.functions import ProcessAllWindowFunction
from pyspark_flinkish.datastream.state import ValueStateDescriptor
from pyspark_flinkish.datastream.window import (
    CountEvictor,
    CountTrigger,
    EventTimeSessionWindows,
    GlobalWindows,
    TimeWindow,
    TumblingEventTimeWindows,
)

ORACLE = load()
STREAMING = {c["name"]: c for c in ORACLE["cases"] if c.get("mode", "STREAMING") == "STREAMING"}


def split(rows: List[Any]) -> Dict[str, List[Any]]:
    """Main and late rows apart: Flink's union of the two outputs orders only within each."""
    return {kind: [r for r in rows if r[0] == kind] for kind in ("main", "late")}


def run(case: Dict[str, Any], per_element: bool = True) -> List[Any]:
    env = StreamExecutionEnvironment.get_execution_environment()
    out: List[Any] = []
    build(env, case, ORACLE["input"], ORACLE["watermark_bound_ms"], per_element).add_sink(out.append)
    env.execute("all windows")
    return [list(r) for r in out]


def test_oracle_is_real_pyflink_output() -> None:
    assert ORACLE["pyflink_version"] == "2.3.0"
    assert ORACLE["command"].startswith("benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_all_windows.py")
    assert sum(1 for c in ORACLE["cases"] if c["output"]) >= 10


@pytest.mark.parametrize("name", sorted(STREAMING))
def test_window_all_matches_pyflink(name: str) -> None:
    assert split(run(STREAMING[name])) == split(STREAMING[name]["output"])


def test_late_case_has_late_firings_and_late_rows() -> None:
    """The oracle exercises what it should: re-firings within the allowed lateness and a side output."""
    rows = split(STREAMING["tumbling_late"]["output"])
    assert [r[3] for r in rows["main"][:2]] == [[1, 2], [1, 2, 4]]
    assert rows["late"] == [["late", 9000, 6], ["late", 18000, 10], ["late", 2500, 12]]


def test_count_window_all_is_javas_global_window_with_a_purging_count_trigger() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    a: List[Any] = []
    b: List[Any] = []
    count_all_java_rule(env, ORACLE["input"], 3).add_sink(a.append)
    env.from_collection([tuple(e) for e in ORACLE["input"]]).count_window_all(3).process(Elements()).add_sink(b.append)
    env.execute()
    assert a == b == STREAMING["count_all_3"]["output"]


def test_count_window_all_sliding_follows_java() -> None:
    """Java's countWindowAll(size, slide): CountTrigger(slide) + CountEvictor(size), partial first windows included
    (PyFlink has no count_window_all, and its AllWindowedStream no evictor)."""
    env = StreamExecutionEnvironment.get_execution_environment()
    out: List[Any] = []
    env.from_collection([("x", 0, v) for v in range(1, 8)]).count_window_all(3, 2).process(Elements()).add_sink(out.append)
    env.execute()
    assert [r[3] for r in out] == [[1, 2], [2, 3, 4], [4, 5, 6]]


def test_evictor_on_all_windows() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    out: List[Any] = []
    stream = env.from_collection([("x", 0, v) for v in range(1, 6)])
    stream.window_all(GlobalWindows.create()).trigger(CountTrigger.of(2)).evictor(CountEvictor.of(1)).process(
        Elements()
    ).add_sink(out.append)
    env.execute()
    assert [r[3] for r in out] == [[2], [4]]


class _Counting(ProcessAllWindowFunction):  # type: ignore[type-arg]
    """Window state, global state, the context's window type and clear() at cleanup."""

    def __init__(self) -> None:
        self.cleared: List[Any] = []
        self.opened = False

    def open(self, runtime_context: Any) -> None:
        self.opened = True

    def process(self, context: ProcessAllWindowFunction.Context[TimeWindow], elements: Any) -> Any:
        fired = context.window_state().get_state(ValueStateDescriptor("fired"))
        total = context.global_state().get_state(ValueStateDescriptor("total"))
        fired.update((fired.value() or 0) + 1)
        total.update((total.value() or 0) + 1)
        yield [context.window().start, fired.value(), total.value(), context.current_watermark()]

    def clear(self, context: Any) -> None:
        self.cleared.append(context.window().start)


def test_process_all_window_function_context_state_and_clear() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    fn = _Counting()
    out: List[Any] = []
    src = env.from_source(
        MicroBatchSource([MicroBatch([("a", 1000, 1)]), MicroBatch([("a", 12000, 2)]), MicroBatch([("a", 5000, 3)])]),
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1]),
    )
    src.window_all(TumblingEventTimeWindows.of(10_000)).allowed_lateness(5000).process(fn).add_sink(out.append)
    env.execute()
    assert fn.opened
    # window 0 fires at watermark 11999, again for the late 5000; then window 10000 at end of input
    assert out == [[0, 1, 1, 11999], [0, 2, 2, 11999], [10000, 1, 3, 9223372036854775807]]
    assert fn.cleared == [0, 10000]


class _NotMerging(CountTrigger):
    def can_merge(self) -> bool:
        return False


def test_window_all_checks_like_windowed_stream() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    stream = env.from_collection([1, 2, 3])
    assert isinstance(stream.window_all(GlobalWindows.create()), AllWindowedStream)
    with pytest.raises(InvalidTypeError, match="WindowAssigner"):
        stream.window_all("tumbling")  # type: ignore[arg-type]
    with pytest.raises(InvalidPipelineError, match="merging"):
        stream.window_all(EventTimeSessionWindows.with_gap(1000)).trigger(_NotMerging(2))
    with pytest.raises(InvalidArgumentError):
        stream.count_window_all(0)
    with pytest.raises(InvalidTypeError, match="ProcessAllWindowFunction"):
        stream.window_all(GlobalWindows.create()).process(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="AllWindowFunction"):
        stream.window_all(GlobalWindows.create()).reduce(lambda a, b: a, window_function=42)


def test_window_all_names_its_operator_and_is_non_parallel() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    out = env.from_collection([1]).window_all(GlobalWindows.create()).reduce(lambda a, b: a + b)
    assert out.get_name() == "AllWindow(reduce)"
    assert out.set_parallelism(1) is out
    with pytest.raises(InvalidPipelineError, match="non parallel operator must be 1"):
        out.set_parallelism(2)
    keyed = env.from_collection([1]).key_by(lambda x: x).window(GlobalWindows.create()).reduce(lambda a, b: a + b)
    assert keyed.set_parallelism(4) is keyed


# ---------------------------------------------------------------------------------------------- BATCH runtime mode
BATCH = {c["name"]: c for c in ORACLE["cases"] if c.get("mode") == "BATCH"}


def run_batch(case: Dict[str, Any], mode: RuntimeExecutionMode = RuntimeExecutionMode.BATCH) -> List[Any]:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(mode)
    out: List[Any] = []
    build(env, case, ORACLE["input"], ORACLE["watermark_bound_ms"]).add_sink(out.append)
    env.execute("all windows, batch")
    return [list(r) for r in out]


@pytest.mark.parametrize("mode", [RuntimeExecutionMode.BATCH, RuntimeExecutionMode.AUTOMATIC])
@pytest.mark.parametrize("name", sorted(BATCH))
def test_batch_mode_matches_pyflink(name: str, mode: RuntimeExecutionMode) -> None:
    assert run_batch(BATCH[name], mode) == BATCH[name]["output"]


def test_batch_and_streaming_differ_where_flink_says() -> None:
    """Same bounded input: in BATCH nothing is late and each window fires once with its elements in timestamp order;
    a processing-time trigger fires at the end of input instead of never."""
    assert split(STREAMING["tumbling_late"]["output"])["late"] != []
    assert split(BATCH["batch_tumbling_late"]["output"])["late"] == []
    assert STREAMING["global_processing_time_trigger"]["output"] == []
    assert BATCH["batch_global_processing_time_trigger"]["output"] != []
    streaming = {STREAMING[n]["name"]: run(STREAMING[n]) for n in ("tumbling_late", "global_processing_time_trigger")}
    assert split(streaming["tumbling_late"]) == split(STREAMING["tumbling_late"]["output"])
    assert streaming["global_processing_time_trigger"] == []
