"""``FileSource`` on Spark: its files read by the executors, each with its format's rule
(:class:`~pyspark_flinkish.core.file_readers.ReaderFormat`, the JVM-free engine's too).

Monitored (``monitor_continuously(interval)``): Flink lists the directory every ``interval`` and reads each new file
once, remembering the files read in its checkpoints. Spark's file source does the same at every micro-batch trigger
and keeps the files read in the query's checkpoint (``sources/``), so a restarted query reads no file twice and skips
none. Both skip names starting with ``.`` or ``_`` (in-progress files). Text files are read by Spark's text source
(each line, terminated by ``\\n``, ``\\r\\n`` or ``\\r`` as Java's ``readLine``, a ``str``); CSV and Parquet files by
Spark's ``binaryFile`` source, each file whole in one task, which parses it with the format's rule.

Bounded (``process_static_file_set``): the driver lists the files (names only, as Flink's enumerator does on the
JobManager); a Spark job reads and parses them on the executors and writes the source's replayed micro-batch
(``spark/replay.py``): the records never pass through the driver. A file's records keep their order; files are
taken in the order of their paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List

from ..core.errors import UnsupportedFeatureError
from ..core.file_parts import is_hidden
from ..core.file_readers import ReaderFormat
from ..core.typeinfo import Types
from ..datastream.data_stream import DataStream
from ..datastream.plan import Transformation
from .error_transport import reported_to_driver
from .plan import Node
from .rows import dumps, loads
from .source_rows import SOURCE_DDL, DataFrameSource, bounded_source_columns, source_frame

if TYPE_CHECKING:
    from ..core.watermarks import WatermarkStrategy
    from ..datastream.connectors.file_system import FileSource
    from .environment import SparkStreamExecutionEnvironment

PARSED_DDL = "path string, pos long, element binary"
BINARY_FILE_DDL = "path string, modificationTime timestamp, length long, content binary"
"""Spark's ``binaryFile`` source's schema (a streaming read must be given it)."""


def line_of(row: Dict[str, Any]) -> str:
    """A text row's element: its line (runs on the executors)."""
    return row["value"]  # type: ignore[no-any-return]


def element_of(row: Dict[str, Any]) -> Any:
    """A parsed file row's element (runs on the executors)."""
    return loads(row["element"])


def parsed_files(files: Any, reader: ReaderFormat) -> Any:
    """``files`` (a ``binaryFile`` DataFrame) as rows ``(path, position, pickled element)``: each file parsed whole
    by ``reader`` in the task that reads it."""

    def parse(frames: Any) -> Any:
        import pandas as pd

        for pdf in frames:
            out: Dict[str, List[Any]] = {"path": [], "pos": [], "element": []}
            for path, content in zip(pdf["path"], pdf["content"]):
                for j, element in enumerate(reader.read_bytes(bytes(content), path)):
                    out["path"].append(path)
                    out["pos"].append(j)
                    out["element"].append(dumps(element))
            yield pd.DataFrame({"path": pd.Series(out["path"], dtype=object), "pos": pd.Series(out["pos"], dtype="int64"),
                                "element": pd.Series(out["element"], dtype=object)})

    return files.select("path", "content").mapInPandas(parse, PARSED_DDL)


def monitored_file_stream(
    env: SparkStreamExecutionEnvironment, source: FileSource, strategy: WatermarkStrategy, name: str
) -> DataStream:
    """The elements of the files that appear in ``source``'s directory."""
    if len(source.paths) != 1:
        msg = (
            f"FileSource.monitor_continuously on Spark watches one directory (Spark's file source); got "
            f"{list(source.paths)}: give their common parent, or one source per directory joined with union(...)"
        )
        raise UnsupportedFeatureError(msg)
    reader = source.reader
    if reader.kind == "text":
        df = env.spark.readStream.format("text").option("encoding", reader.charset).load(source.paths[0])
        src = DataFrameSource(df, None, None, [], [], element=line_of)
        output_type = Types.STRING()
    else:
        files = env.spark.readStream.format("binaryFile").schema(BINARY_FILE_DDL).load(source.paths[0])
        src = DataFrameSource(parsed_files(files, reader), None, None, [], [], element=element_of)
        output_type = reader.type_info()
    t = Transformation("source", name, source=src, watermark_strategy=strategy, output_type=output_type)
    return DataStream(env, t)


def read_by_executors(source: FileSource) -> FileSource:
    """A bounded ``source`` whose files the executors read (:func:`executor_rows`): the driver keeps only its shape,
    one micro-batch without elements, then end of input."""
    return source.read_elsewhere()


def listed_files(spark: Any, source: FileSource) -> List[str]:
    """The files of a bounded ``source`` (Spark's listing: any Hadoop path; directories recursively, names
    starting with ``.`` or ``_`` skipped), in path order. Only names reach the driver."""
    from .session import spark_path

    paths = [spark_path(p) for p in source.paths]
    listing = spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(paths).select("path")
    return sorted(r["path"] for r in listing.collect() if not is_hidden(r["path"].rstrip("/").rsplit("/", 1)[-1]))


def executor_rows(spark: Any, t: Transformation, uid: str, k: int) -> Any:
    """The replayed micro-batch 0 of the bounded ``FileSource`` of ``t`` (the ``k``-th replay source), read and
    parsed by the executors, as :data:`~.source_rows.SOURCE_DDL` rows: elements pickled, timestamps from the
    strategy's assigner, order ``[0, k, file, position]`` (files in path order)."""
    files = listed_files(spark, t.source)
    if not files:
        return spark.createDataFrame([], SOURCE_DDL)
    index = {p: i for i, p in enumerate(files)}
    reader: ReaderFormat = t.source.reader
    strategy, name = t.watermark_strategy, t.name
    node = Node(index=-1, kind="source", uid=uid, factory=None, keyed=False, key_selector=None, name=name)

    def rows(frames: Any) -> Any:
        for pdf in frames:
            with reported_to_driver(node):
                items = (
                    (element, [0, k, index[path], j])
                    for path, content in zip(pdf["path"], pdf["content"])
                    for j, element in enumerate(reader.read_bytes(bytes(content), path))
                )
                out = bounded_source_columns(uid, strategy, name, items)
            yield source_frame(out)

    return spark.read.format("binaryFile").load(files).select("path", "content").mapInPandas(rows, SOURCE_DDL)


__all__ = [
    "BINARY_FILE_DDL",
    "PARSED_DDL",
    "element_of",
    "executor_rows",
    "line_of",
    "listed_files",
    "monitored_file_stream",
    "parsed_files",
    "read_by_executors",
]
