"""A static (batch) DataFrame as the bounded input of a BATCH job: ``from_dataframe`` in BATCH or AUTOMATIC mode."""

from __future__ import annotations

from typing import Any, Optional

from ..core.watermarks import WatermarkStrategy
from ..datastream.data_stream import DataStream
from ..datastream.sources import MicroBatch, MicroBatchSource
from .source_rows import epoch_millis


class ColumnTimestamp:
    """A timestamp assigner reading a timestamp or epoch-millisecond column of a ``Row``."""

    def __init__(self, column: str) -> None:
        self.column = column

    def extract_timestamp(self, value: Any, record_timestamp: Any) -> int:
        return epoch_millis(value[self.column])


def bounded_dataframe_stream(
    env: Any,
    df: Any,
    watermark_strategy: Optional[WatermarkStrategy],
    timestamp_column: Optional[str],
    source_name: str,
) -> DataStream:
    """``df``'s rows (``pyspark.sql.Row``, collected on the driver, in the DataFrame's order) as one micro-batch,
    then end of input: a bounded source, as ``from_delta(path, bounded=True)`` reads a table's snapshot. For inputs
    that fit on the driver (a streaming DataFrame reads any size)."""
    strategy = watermark_strategy if watermark_strategy is not None else WatermarkStrategy.no_watermarks()
    if timestamp_column is not None:
        strategy = strategy.with_timestamp_assigner(ColumnTimestamp(timestamp_column))
    rows = df.collect()
    return env.from_source(MicroBatchSource([MicroBatch(rows)], end_of_input=True), strategy, source_name)  # type: ignore[no-any-return]


__all__ = ["ColumnTimestamp", "bounded_dataframe_stream"]
