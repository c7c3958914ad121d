"""A DataFrame source stays fused with the route when processing-time ticks are unioned in (``spark/fused_ticks.py``):
its rows become elements inside the route, never pickled in between, and the tick source is still one of the
query's sources."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

from pyspark_flinkish.common import Types, WatermarkStrategy
from pyspark_flinkish.datastream import DataStream, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.plan import Transformation
from pyspark_flinkish.datastream.state import ValueStateDescriptor
from pyspark_flinkish.spark.fused_ticks import TICK_COLUMN
from pyspark_flinkish.spark.source_rows import DataFrameSource

pytestmark = pytest.mark.spark

COUNT = ValueStateDescriptor("count", Types.LONG())


class Unpicklable:
    """A source element that refuses to be pickled: it can only reach the route if the source is fused with it."""

    def __init__(self, k: str, v: int) -> None:
        self.k, self.v = k, v

    def __reduce__(self) -> Any:
        msg = "a source element was pickled between the DataFrame source and the route"
        raise TypeError(msg)


def element_of(columns: Dict[str, Any]) -> Unpicklable:
    return Unpicklable(str(columns["k"]), int(columns["v"]))


class RunningCount(KeyedProcessFunction):  # type: ignore[type-arg]
    """A running count per key, and a processing-time timer (far off): the job needs ticks on the wall clock."""

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        self.count = runtime_context.get_state(COUNT)

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 3_600_000)
        yield (value[0], value[1], n)


def test_a_dataframe_source_is_fused_with_the_route_when_ticks_are_unioned_in(spark: Any, tmp_path: Path) -> None:
    """A continuing query whose process function registers processing-time timers (so the tick source is in its
    input): the source's elements reach the route unpickled (they refuse pickling), over two batches, none taken for a
    tick though the source has a column of the marker's name, and Spark reports the tick source among the query's
    sources after the file stream (the order of Spark's offsets log)."""
    src = tmp_path / "in"
    src.mkdir()
    # the source has a column of the marker's name: the marker takes another (else every row here would be a tick)
    df = spark.readStream.schema(f"k string, v long, {TICK_COLUMN} boolean").json(str(src))
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    source = DataFrameSource(df, None, None, [], [], element=element_of)
    strategy = WatermarkStrategy.no_watermarks()
    stream = DataStream(env, Transformation("source", "opaque", source=source, watermark_strategy=strategy))
    out: List[Any] = []
    (
        stream.map(lambda o: (o.k, o.v), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
        .key_by(lambda e: e[0])
        .process(RunningCount())
        .add_sink(out.append)
    )
    handle = env.execute("fused-ticks", checkpoint_location=str(tmp_path / "ck"))
    try:
        assert handle.driver.ticks
        for i, batch in enumerate([[("a", 1), ("b", 2), ("a", 3)], [("b", 4), ("a", 5)]]):
            lines = [json.dumps({"k": k, "v": v, TICK_COLUMN: True}) for k, v in batch]
            (src / f"part-{i}.json").write_text("\n".join(lines))
            handle.process_all_available()
        handle.driver.raise_if_failed()
        progress = [p if isinstance(p, dict) else json.loads(p.json) for p in handle.query.recentProgress]
        passes = [p["spark_jobs"]["phases"].get("route, keyed stage, collect") for p in handle.recent_progress()]
    finally:
        handle.stop()
    assert sorted(tuple(r) for r in out) == [("a", 1, 1), ("a", 3, 2), ("a", 5, 3), ("b", 2, 1), ("b", 4, 2)]
    sources = [[s["description"] for s in p["sources"]] for p in progress]
    assert sources and all(len(s) == 2 and "FileStream" in s[0] for s in sources), sources
    # each batch is small: its route, keyed groups and collect run in one Spark job (``in_processing_order``'s
    # ``one_task``; two jobs without it: the route's shuffle write, then the keyed stage with the collect)
    assert passes and all(jobs is not None and len(jobs) == 1 for jobs in passes), passes
