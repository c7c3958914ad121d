"""DataFrame sources of the Spark executors and their rows (executor side).

A streaming DataFrame becomes a source (:class:`DataFrameSource`: how a row becomes an element, its timestamp,
source partition and processing order); on the executors its rows become elements (:func:`dataframe_records`)
or the common source rows of :data:`SOURCE_DDL` that every source of a pipeline is unioned into
(:func:`dataframe_rows`). ``from_kafka`` and ``from_delta`` build on the same class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from ..core.errors import UserFunctionError
from ..core.operators import call_user, in_node, short
from ..datastream.plan import Transformation
from .error_transport import reported_steps
from .plan import Node
from .rows import dumps

SOURCE_DDL = "src string, value binary, ts long, part string, ord array<long>, batch long, marker boolean"
SOURCE_DTYPES: Dict[str, Any] = {
    "src": object,
    "value": object,
    "ts": "Int64",
    "part": object,
    "ord": object,
    "batch": "int64",
    "marker": "bool",
}
"""The pandas dtype of each :data:`SOURCE_DDL` column in the frames the executors hand back to Spark."""


@dataclass(frozen=True)
class SourceRestart:
    """How a source whose position Spark keeps in its offsets log (``<checkpoint>/spark/offsets/<batch>``, one entry
    per source) starts again at a recorded position: a savepoint (``spark/savepoint.py``) records the source's entry
    of its last batch and the restored job reads from there (Flink's source split state)."""

    kind: str
    """What the position is (``"kafka"``: ``{topic: {partition: next offset}}``)."""
    owns: Callable[[Any], bool]
    """Whether an entry of the offsets log (parsed JSON) is this source's."""
    frame_at: Callable[[Any], Any]
    """The source's streaming DataFrame starting at such an entry."""


@dataclass
class DataFrameSource:
    """A streaming DataFrame as a source: how rows become elements, timestamps, partitions and order."""

    df: Any
    timestamp_column: Optional[str]
    partition_column: Optional[str]
    order_columns: Sequence[str]
    partitions: Sequence[Any]
    end_of_input: bool = False
    explicit_watermarks: bool = False
    element: Optional[Callable[[Dict[str, Any]], Any]] = None
    """Makes a row's element from its columns (a dict; runs on the executors); default: a ``Row`` of all columns.
    An element with ``no_timestamp_assigner = True`` (a malformed record) skips the strategy's timestamp assigner."""
    restart: Optional[SourceRestart] = None
    """How the source starts at a savepoint's position (None: its position cannot be carried to another checkpoint)."""

    def element_columns(self) -> Optional[List[Tuple[str, str]]]:
        """The columns each element is a ``pyspark.sql.Row`` of, with their Spark type names (``DataType.typeName()``),
        in the element's order; None when :attr:`element` makes the elements."""
        if self.element is not None:
            return None
        types = {f.name: f.dataType.typeName() for f in self.df.schema.fields}
        names = list(getattr(self, "value_columns", None) or self.df.columns)  # hook, as ``dataframe_records``
        return [(n, types[n]) for n in names]


def source_partition(t: Transformation, text: Optional[str]) -> Any:
    """The source partition a row's ``part`` text names (one of the source's declared partitions, else the text)."""
    return partition_from_text(tuple(getattr(t.source, "partitions", ())), text)


def partition_from_text(partitions: Tuple[Any, ...], text: Optional[str]) -> Any:
    """The partition among ``partitions`` whose ``repr`` or ``str`` is ``text`` (else the text itself)."""
    if text is None:
        return None
    for p in partitions:
        if repr(p) == text or str(p) == text:
            return p
    return text


def dataframe_records(t: Transformation) -> Callable[[Any], Iterator[Tuple[Any, Optional[int], Optional[str], List[int]]]]:
    """For a DataFrame source: a function from pandas frames of its rows to ``(element, timestamp, source
    partition, order)`` per row (on the executors)."""
    src: DataFrameSource = t.source
    strategy = t.watermark_strategy
    columns = list(getattr(src, "value_columns", None) or src.df.columns)  # hook: columns that make the element
    version_col = getattr(src, "version_column", None)  # hook: a commit version heading the order (from_delta)
    ts_col, part_col, order_cols = src.timestamp_column, src.partition_column, list(src.order_columns)
    make_element = src.element
    name = t.name

    def records(frames: Any) -> Iterator[Tuple[Any, Optional[int], Optional[str], List[int]]]:
        import pandas as pd
        from pyspark import TaskContext
        from pyspark.sql import Row

        context = TaskContext.get()
        task_partition = context.partitionId() if context is not None else 0
        position = 0
        for pdf in frames:
            for rec in pdf.to_dict("records"):
                if make_element is not None:
                    element = make_element(rec)
                else:
                    element = Row(**{c: python_value(rec[c]) for c in columns})
                ts = None
                if ts_col is not None:
                    raw = rec[ts_col]
                    ts = None if raw is None or (not isinstance(raw, int) and pd.isna(raw)) else epoch_millis(raw)
                if strategy.timestamp_assigner is not None and not getattr(element, "no_timestamp_assigner", False):
                    where = lambda e=element: f"{name}: timestamp assigner on {short(e)}"  # noqa: E731
                    ts = call_user(strategy.extract_timestamp, where, element, ts)
                # without order columns: the row's position in its input split (stable when a batch is replayed)
                order = [int(rec[c]) for c in order_cols] if order_cols else [task_partition, position]
                if version_col is not None:
                    order = [int(rec[version_col]), *order]
                position += 1
                yield element, ts, None if part_col is None else str(rec[part_col]), order

    return records


def assign_timestamp(t: Transformation, node: Any, value: Any, previous: Optional[int]) -> Optional[int]:
    """The source's timestamp assigner on ``value`` (driver side); its error names the source."""
    try:
        where = f"{t.name}: timestamp assigner on {short(value)}"
        return call_user(t.watermark_strategy.extract_timestamp, lambda: where, value, previous)  # type: ignore[no-any-return]
    except UserFunctionError as exc:
        raise in_node(exc, node.name, node.uid)  # noqa: B904 (its cause is the user's exception)


SOURCE_CHUNK_ROWS = 10_000
"""A source task hands its rows on whenever it holds this many (Spark's default Arrow batch), not all at its end:
its Python worker's memory stays bounded by the chunk, not by the task's input split."""


def dataframe_rows(t: Transformation, uid: str) -> Any:
    """Convert a streaming DataFrame source to the common source rows (on the executors)."""
    records = dataframe_records(t)
    node = Node(index=-1, kind="source", uid=uid, factory=None, keyed=False, key_selector=None, name=t.name)

    def convert(frames: Any) -> Any:
        out: Dict[str, List[Any]] = {c: [] for c in SOURCE_DTYPES}

        def chunks() -> Iterator[bool]:
            for element, ts, part, order in records(frames):
                for c, v in zip(out, (uid, dumps(element), ts, part, order, -1, False)):
                    out[c].append(v)
                if len(out["src"]) >= SOURCE_CHUNK_ROWS:
                    yield True

        for _ in reported_steps(chunks(), node):
            yield source_frame(out)
            for column in out.values():
                column.clear()
        yield source_frame(out)  # the rest; a task that read no row yields one empty frame of the right dtypes

    return t.source.df.mapInPandas(convert, SOURCE_DDL)


def source_frame(columns: Dict[str, List[Any]]) -> Any:
    """The common source rows (``columns``: a list of values per :data:`SOURCE_DDL` column) as the pandas frame a
    ``mapInPandas`` task returns, every column of its :data:`SOURCE_DTYPES` dtype.

    The dtypes are given, never inferred from the values: Spark runs the task of an input split that holds no rows
    too (a Parquet file larger than ``spark.sql.files.maxPartitionBytes`` is read in several splits, and a split
    that holds the middle of no row group reads nothing), and pandas makes every column of a frame built from empty
    lists ``float64``, which pyarrow cannot convert to ``ord``'s ``array<long>`` (``NumPyConverter doesn't
    implement <list<element: int64>> conversion``): the whole micro-batch failed."""
    import pandas as pd

    return pd.DataFrame(
        {c: pd.Series(columns[c], dtype=dtype) for c, dtype in SOURCE_DTYPES.items()}, columns=list(SOURCE_DTYPES)
    )


def source_batch(columns: Dict[str, List[Any]]) -> Any:
    """The common source rows (``columns``: a list of values per :data:`SOURCE_DDL` column) as an Arrow record batch
    (what a ``mapInArrow`` task returns, or a replay file's content), every column of its :data:`SOURCE_DDL` type."""
    import pyarrow as pa

    schema = pa.schema(
        [
            ("src", pa.string()),
            ("value", pa.binary()),
            ("ts", pa.int64()),
            ("part", pa.string()),
            ("ord", pa.list_(pa.int64())),
            ("batch", pa.int64()),
            ("marker", pa.bool_()),
        ]
    )
    return pa.RecordBatch.from_pydict({c: columns[c] for c in SOURCE_DTYPES}, schema=schema)


def bounded_source_columns(
    uid: str, strategy: Any, name: str, items: Iterable[Tuple[Any, List[int]]]
) -> Dict[str, List[Any]]:
    """The common source rows of a bounded source's ``(element, order)`` items, read on an executor (a
    ``FileSource``'s files, a static DataFrame's rows): each element pickled, its timestamp from the strategy's
    assigner (whose error names the source), partition ``"0"`` (one split), micro-batch 0."""
    out: Dict[str, List[Any]] = {c: [] for c in SOURCE_DTYPES}
    for element, order in items:
        ts = None
        if strategy.timestamp_assigner is not None:
            where = lambda e=element: f"{name}: timestamp assigner on {short(e)}"  # noqa: E731
            ts = call_user(strategy.extract_timestamp, where, element, None)
        for c, v in zip(out, (uid, dumps(element), ts, "0", order, 0, False)):
            out[c].append(v)
    return out


def python_value(value: Any) -> Any:
    if hasattr(value, "item") and not isinstance(value, (bytes, str)):
        try:
            return value.item()
        except (ValueError, AttributeError):
            return value
    return value


def epoch_millis(value: Any) -> int:
    import pandas as pd

    if isinstance(value, pd.Timestamp):
        return int(value.value // 1_000_000)
    if hasattr(value, "timestamp"):
        return int(round(value.timestamp() * 1000))
    return int(value)


__all__ = [
    "SOURCE_DDL",
    "SOURCE_DTYPES",
    "SOURCE_CHUNK_ROWS",
    "DataFrameSource",
    "SourceRestart",
    "partition_from_text",
    "source_partition",
    "dataframe_records",
    "assign_timestamp",
    "dataframe_rows",
    "source_batch",
    "bounded_source_columns",
    "source_frame",
    "python_value",
    "epoch_millis",
]
