"""A monitored ``FileSource`` on Spark: Spark's text file source over the watched directory.

Flink's ``FileSource...monitor_continuously(interval)`` lists the directory every ``interval`` and reads each new
file once, remembering the files read in its checkpoints. Spark's file source does the same at every micro-batch
trigger and keeps the files read in the query's checkpoint (``sources/``), so a restarted query reads no file twice
and skips none. Both skip names starting with ``.`` or ``_`` (in-progress files). Each line (terminated by
``\\n``, ``\\r\\n`` or ``\\r``, as Java's ``readLine``) is a ``str`` element; a file's lines keep their order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict

from ..core.errors import UnsupportedFeatureError
from ..core.typeinfo import Types
from ..datastream.data_stream import DataStream
from ..datastream.plan import Transformation
from .source_rows import DataFrameSource

if TYPE_CHECKING:
    from ..core.watermarks import WatermarkStrategy
    from ..datastream.connectors.file_system import FileSource
    from .environment import SparkStreamExecutionEnvironment


def line_of(row: Dict[str, Any]) -> str:
    """A text row's element: its line (runs on the executors)."""
    return row["value"]  # type: ignore[no-any-return]


def monitored_file_stream(
    env: SparkStreamExecutionEnvironment, source: FileSource, strategy: WatermarkStrategy, name: str
) -> DataStream:
    """The lines of the files that appear in ``source``'s directory, as a stream of ``str``."""
    if len(source.paths) != 1:
        msg = (
            f"FileSource.monitor_continuously on Spark watches one directory (Spark's file source); got "
            f"{list(source.paths)}: give their common parent, or one source per directory joined with union(...)"
        )
        raise UnsupportedFeatureError(msg)
    df = env.spark.readStream.format("text").option("encoding", source.stream_format.charset_name).load(source.paths[0])
    src = DataFrameSource(df, None, None, [], [], element=line_of)
    t = Transformation("source", name, source=src, watermark_strategy=strategy, output_type=Types.STRING())
    return DataStream(env, t)


__all__ = ["line_of", "monitored_file_stream"]
