"""A static (batch) DataFrame as a bounded source read by the executors: ``from_dataframe`` in BATCH or AUTOMATIC
mode, and ``from_delta(path, bounded=True)`` (the snapshot's DataFrame).

The driver keeps the DataFrame (a plan, no rows) and a replay source of one micro-batch without elements, then end
of input (:class:`StaticFrameSource`). When the job starts, a Spark job converts the DataFrame's rows into the
source rows of the replay stream's first file (``spark/replay.py``, as a bounded ``FileSource``'s files are read):
each row becomes the ``pyspark.sql.Row`` that ``collect()`` would give (Spark's own Arrow-to-``Row`` conversion,
Spark Connect's ``collect``), its timestamp from the strategy's assigner, on the executors. The records never reach
the driver. The order of the elements is the DataFrame's (its partitions in order, each partition's rows in order:
``collect()``'s order), carried by ``monotonically_increasing_id``.
"""

from __future__ import annotations

from typing import Any, Optional

from ..core.watermarks import WatermarkStrategy
from ..datastream.data_stream import DataStream
from ..datastream.plan import Transformation
from ..datastream.sources import MicroBatch, MicroBatchSource
from .error_transport import reported_to_driver
from .plan import Node
from .source_rows import SOURCE_DDL, bounded_source_columns, epoch_millis, source_batch


class ColumnTimestamp:
    """A timestamp assigner reading a timestamp or epoch-millisecond column of a ``Row``."""

    def __init__(self, column: str) -> None:
        self.column = column

    def extract_timestamp(self, value: Any, record_timestamp: Any) -> int:
        return epoch_millis(value[self.column])


class StaticFrameSource(MicroBatchSource):
    """A static DataFrame as a bounded replay source whose rows the executors read (:func:`executor_rows`): on the
    driver one micro-batch without elements, then end of input; ``executors_read``."""

    def __init__(self, df: Any) -> None:
        super().__init__([MicroBatch(())], end_of_input=True)
        self.df = df
        self.executors_read = True

    def __repr__(self) -> str:
        return "StaticFrameSource(1 batch read by the executors, end_of_input=True)"


def bounded_frame_stream(env: Any, df: Any, strategy: WatermarkStrategy, source_name: str) -> DataStream:
    """``df``'s rows as one micro-batch read by the executors, then end of input (:class:`StaticFrameSource`)."""
    return env.from_source(StaticFrameSource(df), strategy, source_name)  # type: ignore[no-any-return]


def bounded_dataframe_stream(
    env: Any,
    df: Any,
    watermark_strategy: Optional[WatermarkStrategy],
    timestamp_column: Optional[str],
    source_name: str,
) -> DataStream:
    """``df``'s rows (``pyspark.sql.Row``, in the DataFrame's order) as one micro-batch, then end of input: a bounded
    source, as ``from_delta(path, bounded=True)`` reads a table's snapshot; read by the executors, any size."""
    strategy = watermark_strategy if watermark_strategy is not None else WatermarkStrategy.no_watermarks()
    if timestamp_column is not None:
        strategy = strategy.with_timestamp_assigner(ColumnTimestamp(timestamp_column))
    return bounded_frame_stream(env, df, strategy, source_name)


def executor_rows(spark: Any, t: Transformation, uid: str, k: int) -> Any:
    """The replayed micro-batch 0 of the :class:`StaticFrameSource` of ``t`` (the ``k``-th replay source), made by
    the executors, as :data:`~.source_rows.SOURCE_DDL` rows: each row the ``Row`` of ``collect()``, pickled, its
    timestamp from the strategy's assigner, partition ``"0"`` (one split), order ``[0, k, n]`` with ``n`` growing in
    the DataFrame's order."""
    from pyspark.sql import functions as F

    df = t.source.df
    schema, width = df.schema, len(df.columns)
    order = "__flinkish_order"
    while order in df.columns:
        order += "_"
    strategy, name = t.watermark_strategy, t.name
    node = Node(index=-1, kind="source", uid=uid, factory=None, keyed=False, key_selector=None, name=name)

    def rows(batches: Any) -> Any:
        import pyarrow as pa
        from pyspark.sql.conversion import ArrowTableToRowsConversion

        for batch in batches:
            with reported_to_driver(node):
                table = pa.Table.from_batches([batch])
                elements = ArrowTableToRowsConversion.convert(table.select(list(range(width))), schema)
                orders = ([0, k, n] for n in table.column(width).to_pylist())
                out = bounded_source_columns(uid, strategy, name, zip(elements, orders))
            yield source_batch(out)

    return df.withColumn(order, F.monotonically_increasing_id()).mapInArrow(rows, SOURCE_DDL)


__all__ = ["ColumnTimestamp", "StaticFrameSource", "bounded_dataframe_stream", "bounded_frame_stream", "executor_rows"]
