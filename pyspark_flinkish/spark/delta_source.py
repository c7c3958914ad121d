"""A Delta table as a source on the Spark executors (``env.from_delta``).

Streaming with upstream watermarks reads the table's change data feed (the writer enables it on the tables it
creates), whose rows carry their ``_commit_version``. Per Spark batch the driver learns from the query's offset
log (``<checkpoint>/spark/offsets/<batch>``: Delta's ``reservoirVersion``/``index``) which commits are complete
after the batch, and processes the batch as one Flink micro-batch per group of commits: the rows of a commit,
then the watermark recorded with it. Commits without rows only advance the watermark, and merge into the step
before them (firing timers up to ``W1`` then up to ``W2`` with nothing in between is firing up to ``W2``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..core.errors import InvalidArgumentError, InvalidTypeError, StateError, UnsupportedFeatureError
from ..core.watermarks import WatermarkStrategy
from ..datastream.data_stream import DataStream
from ..datastream.plan import Transformation
from .checkpoint import spark_offsets
from .delta_commits import commit_watermarks, table_detail
from .source_rows import DataFrameSource

_log = logging.getLogger("pyspark_flinkish.spark.delta")
CDF_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")
_END_INDEX_MIN = 2**62  # Delta's "version complete" index sentinels are near Long.MaxValue


def consumed_through(offset: Dict[str, Any]) -> int:
    """The last table version a Delta streaming offset has *completely* consumed.

    ``(v, index)``: files up to ``index`` of version ``v`` are consumed; a negative index (Delta's base index)
    means none of ``v``; an index near ``Long.MaxValue`` (Delta's end index) means all of ``v``. A partly
    consumed version counts as not consumed: its watermark waits for the batch that completes it.
    """
    version, index = int(offset["reservoirVersion"]), int(offset["index"])
    if offset.get("isStartingVersion") or offset.get("isInitialSnapshot"):
        return version - 1 if index < _END_INDEX_MIN else version
    return version if index >= _END_INDEX_MIN else version - 1


def read_offset(checkpoint: str, batch_id: int, table_id: str) -> Optional[Dict[str, Any]]:
    """The end offset of ``table_id``'s Delta source in Spark's offset log for ``batch_id`` (None if absent), read
    through the checkpoint's storage layer (a checkpoint on HDFS or S3 as well as a local one)."""
    try:
        entries = spark_offsets(checkpoint, batch_id)
    except StateError:  # no such batch in the log
        return None
    for data in entries:
        if isinstance(data, dict) and data.get("reservoirId") == table_id:
            return data
    return None


def plan_steps(
    prev_through: int, cur_through: int, row_versions: Sequence[int], watermarks: Dict[int, Optional[int]]
) -> List[Tuple[List[int], Optional[int]]]:
    """Group one Spark batch's commits into Flink micro-batches: ``(versions whose rows go in, watermark after)``.

    A commit with rows starts a new step once the current one has a watermark; a commit without rows only
    raises the current step's watermark. Versions after ``cur_through`` (partly consumed) get no watermark yet.

    Example:
        >>> plan_steps(1, 4, [2, 3, 5], {2: 10, 3: None, 4: 30})
        [([2], 10), ([3, 4], 30), ([5], None)]
    """
    rows = set(row_versions)
    steps: List[Tuple[List[int], Optional[int]]] = []
    versions: List[int] = []
    wm: Optional[int] = None
    for v in sorted(set(range(prev_through + 1, cur_through + 1)) | rows):
        if v in rows and wm is not None:
            steps.append((versions, wm))
            versions, wm = [], None
        versions.append(v)
        w = watermarks.get(v) if v <= cur_through else None
        if w is not None:
            wm = w if wm is None else max(wm, w)
    if versions or not steps:
        steps.append((versions, wm))
    return steps


@dataclass
class DeltaTableSource(DataFrameSource):
    """A Delta table read as a stream by the foreachBatch executor (see the module docstring)."""

    path: str = ""
    table_id: str = ""
    uid: str = ""
    starting_version: int = 0
    upstream_watermarks: bool = False
    value_columns: List[str] = field(default_factory=list)
    version_column: Optional[str] = None

    def __post_init__(self) -> None:
        self.explicit_watermarks = self.upstream_watermarks
        if not self.upstream_watermarks:
            self.steps = None  # type: ignore[assignment]  # watermarks from the data: no per-commit steps

    def steps(self, driver: Any, df: Any, batch_id: int) -> Tuple[List[Any], List[Dict[int, Optional[int]]]]:
        """The driver's hook: this Spark batch as Flink micro-batches, each with its explicit watermark."""
        from pyspark.sql import functions as F

        t = next(t for t in driver.plan.transformations if t.kind == "source" and t.source is self)
        uid = driver.plan.nodes[driver.plan.transformations.index(t)].uid
        prev = read_offset(driver.checkpoint, batch_id - 1, self.table_id) if batch_id > 0 else None
        prev_through = consumed_through(prev) if prev is not None else self.starting_version - 1
        cur = read_offset(driver.checkpoint, batch_id, self.table_id)
        cur_through = consumed_through(cur) if cur is not None else prev_through
        mine = F.col("src") == uid
        version = F.col("ord").getItem(0)
        row_versions = [int(r["v"]) for r in df.filter(mine).select(version.alias("v")).distinct().collect()]
        wanted = sorted(set(range(prev_through + 1, cur_through + 1)))
        watermarks = commit_watermarks(driver.spark, self.path, wanted)
        frames, explicit = [], []
        for i, (versions, wm) in enumerate(plan_steps(prev_through, cur_through, row_versions, watermarks)):
            cond = mine & version.isin(versions) if versions else F.lit(False)
            if i == 0:
                cond = cond | ~mine  # other sources' rows go with the first step
            frames.append(df.filter(cond))
            explicit.append({t.id: wm} if wm is not None else {})
        return frames, explicit


def from_delta(
    env: Any,
    path: str,
    timestamp_column: Optional[str] = None,
    watermark_strategy: Optional[WatermarkStrategy] = None,
    bounded: bool = False,
    version: Optional[int] = None,
    starting_version: Optional[int] = None,
    source_name: str = "DeltaSource",
) -> DataStream:
    """See :meth:`SparkStreamExecutionEnvironment.from_delta`."""
    spark = env.spark
    detail = table_detail(spark, path)  # SQL (DESCRIBE DETAIL): a Spark Connect session needs no Delta Connect
    if detail is None:
        msg = f"from_delta: {path!r} is not a Delta table (create it first, e.g. by running the job writing it)"
        raise InvalidArgumentError(msg)
    if bounded:
        return _bounded(env, path, timestamp_column, watermark_strategy, version, source_name)
    if version is not None:
        msg = "from_delta: version= reads a snapshot; give bounded=True (streaming reads start at starting_version=)"
        raise InvalidArgumentError(msg)
    cdf = str((detail["properties"] or {}).get("delta.enableChangeDataFeed", "false")).lower() == "true"
    upstream = watermark_strategy is None
    if upstream and not cdf:
        msg = (
            f"from_delta({path!r}) takes the watermarks recorded by the writing job from the table's change data feed, "
            "which is off for this table: enable it (ALTER TABLE ... SET TBLPROPERTIES "
            "(delta.enableChangeDataFeed = true); DeltaSink does so on the tables it creates) or give a "
            "watermark_strategy to generate watermarks from the data"
        )
        raise InvalidArgumentError(msg)
    if upstream and env.backend != "foreach_batch":
        msg = (
            "from_delta with upstream watermarks needs the foreachBatch executor (the default): the "
            "applyInPandasWithState executor derives its watermark from event times; give a watermark_strategy"
        )
        raise UnsupportedFeatureError(msg)
    reader = spark.readStream.format("delta")
    start = starting_version if starting_version is not None else (0 if upstream else None)
    if cdf:
        reader = reader.option("readChangeFeed", "true").option("startingVersion", str(start if start is not None else 0))
    elif start is not None:
        reader = reader.option("startingVersion", str(start))
    df = reader.load(path)
    columns = [c for c in df.columns if c not in CDF_COLUMNS] if cdf else list(df.columns)
    if cdf:
        df = df.filter("_change_type IN ('insert', 'update_postimage')")
    if timestamp_column is not None and timestamp_column not in columns:
        msg = f"from_delta: timestamp_column {timestamp_column!r} is not a column of {path!r} (columns: {columns})"
        raise InvalidTypeError(msg)
    strategy = watermark_strategy if watermark_strategy is not None else WatermarkStrategy.no_watermarks()
    source = DeltaTableSource(
        df,
        timestamp_column,
        None,
        [],
        [],
        path=path,
        table_id=str(detail["id"]),
        starting_version=start or 0,
        upstream_watermarks=upstream,
        value_columns=columns,
        version_column="_commit_version" if cdf else None,
    )
    return DataStream(env, Transformation("source", source_name, source=source, watermark_strategy=strategy))


def _bounded(
    env: Any,
    path: str,
    timestamp_column: Optional[str],
    watermark_strategy: Optional[WatermarkStrategy],
    version: Optional[int],
    source_name: str,
) -> DataStream:
    """A snapshot as one micro-batch read by the executors, then end of input (``spark/static_frames.py``)."""
    from .static_frames import ColumnTimestamp, bounded_frame_stream

    reader = env.spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", str(version))
    strategy = watermark_strategy
    if strategy is None:
        if timestamp_column is None:
            strategy = WatermarkStrategy.no_watermarks()
        else:
            strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ColumnTimestamp(timestamp_column))
    elif timestamp_column is not None:
        strategy = strategy.with_timestamp_assigner(ColumnTimestamp(timestamp_column))
    return bounded_frame_stream(env, reader.load(path), strategy, source_name)


__all__ = [
    "CDF_COLUMNS",
    "DeltaTableSource",
    "consumed_through",
    "read_offset",
    "plan_steps",
    "from_delta",
]
