"""A source task and a route task hand their rows on in chunks, not all at their end (issue 25): a Python worker's
memory stays bounded by the chunk whatever the task's input. The chunked output is the one-frame output cut in
pieces: same rows, same order, the statistics last."""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Iterator, List, Tuple

import pandas as pd
import pytest

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.state import ValueStateDescriptor
from pyspark_flinkish.spark import chain, source_rows
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment
from pyspark_flinkish.spark.plan import ExecPlan
from pyspark_flinkish.spark.rows import loads
from pyspark_flinkish.spark.source_rows import dataframe_records, dataframe_rows

TOTAL = ValueStateDescriptor("total", Types.LONG())


class Total(KeyedProcessFunction):  # type: ignore[type-arg]
    def open(self, runtime_context: Any) -> None:
        self.total = runtime_context.get_state(TOTAL)

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.total.update((self.total.value() or 0) + value.v)
        yield from ()


class StreamingFrame:
    """Stands in for a streaming DataFrame: ``mapInPandas`` hands back the task function instead of a stage."""

    columns: ClassVar[List[str]] = ["k", "t", "v"]
    isStreaming = True  # noqa: N815 (pyspark's name)

    def mapInPandas(self, function: Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]], ddl: str) -> Any:  # noqa: N802
        return function


def job() -> Tuple[ExecPlan, Any]:
    env = SparkStreamExecutionEnvironment(None, clock=ManualClock(0), state_partitions=2, future_horizon_ms=None)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
    events = env.from_dataframe(StreamingFrame(), strategy, timestamp_column="t")  # type: ignore[arg-type]
    events.key_by(lambda r: r.k, key_type=Types.LONG()).process(Total()).uid("total").add_sink(lambda v: None)
    plan = ExecPlan(env._sinks)
    return plan, plan.transformations[plan.sources[0]]


def split(rows: int, per_frame: int = 4) -> List[pd.DataFrame]:
    frame = pd.DataFrame({"k": [i % 3 for i in range(rows)], "t": list(range(rows)), "v": [10 * i for i in range(rows)]})
    return [frame.iloc[i : i + per_frame].reset_index(drop=True) for i in range(0, rows, per_frame)]


def comparable(frames: List[pd.DataFrame]) -> List[Tuple[Any, ...]]:
    """The frames' rows, in order, as plain values (``value`` unpickled, ``ord`` as a list)."""
    out = []
    for frame in frames:
        for row in frame.to_dict("records"):
            value = row.get("value")
            out.append(tuple(
                (k, loads(v) if k == "value" and v is not None and row.get("kind") in ("rec", None) else
                 [int(x) for x in v] if k == "ord" and v is not None else v)
                for k, v in sorted(row.items(), key=lambda kv: kv[0]) if not (k == "value" and value is None)
            ))
    return out


@pytest.mark.parametrize("rows", [0, 7, 25])
def test_source_rows_in_chunks_are_the_one_frame_rows(rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    _, source = job()
    whole = list(dataframe_rows(source, "src")(iter(split(rows))))
    monkeypatch.setattr(source_rows, "SOURCE_CHUNK_ROWS", 5)
    chunks = list(dataframe_rows(source, "src")(iter(split(rows))))
    assert len(whole) == 1 and len(whole[0]) == rows
    assert len(chunks) == rows // 5 + 1  # full chunks, then the rest (an empty frame when nothing is left)
    assert all(len(c) <= 5 for c in chunks)
    assert comparable(chunks) == comparable(whole)


@pytest.mark.parametrize("fused", [False, True], ids=["route_partition", "route_records"])
@pytest.mark.parametrize("fanout", [None, [(0, 0), (0, 1)]], ids=["statistics rows", "one pass"])
def test_route_rows_in_chunks_are_the_one_frame_rows(fused: bool, fanout: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    plan, source = job()
    uid = plan.nodes[plan.sources[0]].uid
    node = plan.sources[0]
    if fanout is not None:
        fanout = [(plan.keyed_at(plan.levels[0])[0], sp) for _, sp in fanout]

    def route() -> List[pd.DataFrame]:
        if fused:
            records = dataframe_records(source)(iter(split(25)))
            return list(chain.route_records(plan, records, {}, 0, 2, node, None, fanout))
        converted = pd.concat(list(dataframe_rows(source, uid)(iter(split(25)))), ignore_index=True)
        return list(chain.route_partition(plan, iter([converted]), {}, 0, 2, {uid: node}, None, fanout))

    whole = route()
    monkeypatch.setattr(chain, "ROUTE_CHUNK_ROWS", 4)
    chunks = route()
    assert len(whole) == 1
    assert len(chunks) == 25 // 4 + 1
    assert all(set(c["kind"]) == {"rec"} and len(c) == 4 for c in chunks[:-1])  # records only, before the last
    assert comparable(chunks) == comparable(whole)
