"""The frames the foreachBatch executor's tasks hand back to Spark convert to Arrow whatever the task's input, also
when its input split holds no row (issue 25).

Spark runs a ``mapInPandas`` task for every input split, also one that reads nothing: a Parquet file larger than
``spark.sql.files.maxPartitionBytes`` is read in several splits, and a split that holds the middle of no row group
reads no row (a 100,000-event file with ``maxPartitionBytes=1m``; one 1M-row file split in two by default on two
cores). The task converting a DataFrame source's rows into the common source rows (``dataframe_rows``: a pipeline
with several sources, or processing-time ticks in a continuing query) built its frame with ``pd.DataFrame`` from
empty lists, which makes every column ``float64``; pyspark's serializer then failed on ``ord array<long>`` with
``pyarrow.lib.ArrowNotImplementedError: NumPyConverter doesn't implement <list<element: int64>> conversion`` and
the micro-batch, and so the query, failed.

Each frame here goes through the serializer pyspark's Python worker writes a ``mapInPandas`` task's output with
(``ArrowStreamPandasUDFSerializer``, set up as ``pyspark.worker`` sets it up for ``SQL_MAP_PANDAS_ITER_UDF``), and
what a task gets is read back from Arrow as Spark hands it over, so that the route runs on such frames too.
"""

from __future__ import annotations

import io
from typing import Any, Callable, ClassVar, Dict, Iterator, List, Tuple

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql.pandas.serializers import ArrowStreamPandasUDFSerializer
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.state import ValueStateDescriptor
from pyspark_flinkish.spark.chain import route_partition
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment
from pyspark_flinkish.spark.plan import ExecPlan
from pyspark_flinkish.spark.rows import ROW_DDL, loads
from pyspark_flinkish.spark.source_rows import SOURCE_DDL, dataframe_rows, source_frame

TOTAL = ValueStateDescriptor("total", Types.LONG())
_TYPES: Dict[str, DataType] = {
    "string": StringType(),
    "binary": BinaryType(),
    "long": LongType(),
    "int": IntegerType(),
    "boolean": BooleanType(),
    "array<long>": ArrayType(LongType()),
}


def _schema(ddl: str) -> StructType:
    """The struct type of a DDL of this package's wire formats (parsing DDL in pyspark needs a JVM)."""
    fields = []
    for column in ddl.split(","):
        name, type_name = column.split()
        fields.append(StructField(name, _TYPES[type_name]))
    return StructType(fields)


def _to_arrow(frame: pd.DataFrame, ddl: str) -> pa.RecordBatch:
    """``frame`` as a ``mapInPandas`` task's output goes to Spark: through pyspark's worker serializer."""
    serializer = ArrowStreamPandasUDFSerializer(
        timezone="UTC",
        safecheck=False,
        assign_cols_by_name=True,
        df_for_struct=True,
        struct_in_pandas="dict",
        ndarray_as_list=False,
        arrow_cast=True,
    )
    stream = io.BytesIO()
    serializer.dump_stream(iter([(frame, _schema(ddl))]), stream)
    stream.seek(4)  # the START_ARROW_STREAM marker the worker writes first
    batches = list(pa.ipc.open_stream(stream))
    assert len(batches) == 1 and batches[0].num_columns == 1  # one struct column, as the worker writes it
    return pa.RecordBatch.from_arrays(batches[0].column(0).flatten(), names=_schema(ddl).names)


def _from_arrow(batch: pa.RecordBatch) -> pd.DataFrame:
    """A record batch as the next ``mapInPandas`` task gets it (arrays as numpy arrays)."""
    return batch.to_pandas()


class Total(KeyedProcessFunction):  # type: ignore[type-arg]
    """A ``ValueState`` total per key and an event-time timer per key (issue 25's job)."""

    def open(self, runtime_context: Any) -> None:
        self.total = runtime_context.get_state(TOTAL)

    def process_element(self, value: Any, ctx: Any) -> Any:
        ctx.timer_service().register_event_time_timer(1_000 + value.k)
        self.total.update((self.total.value() or 0) + value.v)
        yield from ()

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield ctx.get_current_key(), timestamp, self.total.value()
        self.total.clear()


class _StreamingFrame:
    """Stands in for a streaming DataFrame: ``from_dataframe`` reads its columns; ``mapInPandas`` hands back the
    task function and the schema instead of planning a Spark stage."""

    columns: ClassVar[List[str]] = ["k", "t", "v"]
    isStreaming = True  # noqa: N815 (pyspark's name)

    def mapInPandas(self, function: Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]], ddl: str) -> Any:  # noqa: N802
        return function, ddl


def _job() -> Tuple[ExecPlan, Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]], str]:
    env = SparkStreamExecutionEnvironment(None, clock=ManualClock(0), state_partitions=2, future_horizon_ms=None)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
    events = env.from_dataframe(_StreamingFrame(), strategy, timestamp_column="t")  # type: ignore[arg-type]
    events.key_by(lambda r: r.k, key_type=Types.LONG()).process(Total()).uid("total").add_sink(lambda v: None)
    plan = ExecPlan(env._sinks)
    source = plan.transformations[plan.sources[0]]
    convert, ddl = dataframe_rows(source, plan.nodes[plan.sources[0]].uid)
    return plan, convert, ddl


def _input(rows: int, chunk: int = 4) -> List[pd.DataFrame]:
    """A split's rows as Spark hands them to the task: frames of at most ``chunk`` rows."""
    frame = pd.DataFrame({"k": [i % 3 for i in range(rows)], "t": list(range(rows)), "v": [10 * i for i in range(rows)]})
    return [frame.iloc[i : i + chunk].reset_index(drop=True) for i in range(0, rows, chunk)]


def test_an_empty_frame_of_source_rows_converts_to_arrow() -> None:
    batch = _to_arrow(source_frame({c: [] for c in _schema(SOURCE_DDL).names}), SOURCE_DDL)
    assert batch.num_rows == 0
    assert batch.schema.field("ord").type == pa.list_(pa.int64())


@pytest.mark.parametrize("rows", [0, 1, 10], ids=["empty split", "one row", "ten rows"])
def test_source_rows_and_the_route_convert_to_arrow_for_any_split(rows: int) -> None:
    plan, convert, ddl = _job()
    assert ddl == SOURCE_DDL
    frames = list(convert(iter(_input(rows))))
    assert len(frames) == 1
    batch = _to_arrow(frames[0], SOURCE_DDL)  # raised NumPyConverter's ArrowNotImplementedError on an empty split
    assert batch.num_rows == rows
    got = _from_arrow(batch)
    assert [loads(v).asDict() for v in got["value"]] == [{"k": i % 3, "t": i, "v": 10 * i} for i in range(rows)]
    assert [None if pd.isna(t) else int(t) for t in got["ts"]] == list(range(rows))
    assert [[int(x) for x in o] for o in got["ord"]] == [[0, i] for i in range(rows)]  # task 0, position i

    # the route task reading those source rows (the stage whose statistics the driver collects)
    source_index = {plan.nodes[i].uid: i for i in plan.sources}
    routed = list(route_partition(plan, iter([got]), {}, 0, 2, source_index))
    out = _from_arrow(_to_arrow(routed[0], ROW_DDL))
    assert sorted(out["kind"].tolist()) == ["rec"] * rows + ["stat"] * (1 if rows else 0)
    recs = out[out["kind"] == "rec"]
    assert [[int(x) for x in o] for o in recs["ord"]] == [[1, 0, i] for i in range(rows)]
