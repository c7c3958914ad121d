"""Processing-time ticks with a fused DataFrame source: the tick rows in the source's own rows, split off per batch.

A pipeline whose one source is a plain DataFrame source reads that source's rows straight into the route
(``chain.route_records``: a row becomes an element in the task that routes it, nothing pickled in between). When
its keyed operators may register processing-time timers in a continuing query, the tick source
(``spark/ticks.py``) must be part of the query's input, so that a due timer makes Spark run a batch. Here it joins
the source's own DataFrame: :func:`with_ticks` unions the tick stream into it by name
(``unionByName(..., allowMissingColumns=True)``), a tick row having every source column null and a marker column
true, a source row the marker null. In each batch :func:`without_ticks` splits them off again in Spark (a filter on
the marker, then its drop, in the JVM in the route's own stage), before any Python: the route gets the source's
columns and rows exactly as without ticks (a tick row's nulls never share an Arrow batch with source rows, so they
cannot change a column's pandas dtype). A tick carries no element and moves no watermark: it only makes the batch
run. (The batch's DataFrame that ``foreachBatch`` hands over is a ``LogicalRDD`` of the batch's plan, so Spark's
optimizer does not prune the tick branch: the tick source's partition is still a route task, which reads no row.)

The query's streaming sources keep their order: the source's leaves, then the tick source, as when the tick rows
joined the common source rows (``spark/source_logs.py``: Spark's offsets log has one line per source in that order,
which savepoints, restores and restarts of a checkpoint written either way rely on).
"""

from __future__ import annotations

from typing import Any, Sequence, Tuple

TICK_COLUMN = "__flinkish_tick__"
"""The marker column's name (followed by ``_`` until no source column has it)."""


def marker_column(columns: Sequence[str]) -> str:
    """The marker column's name for a source of ``columns``: :data:`TICK_COLUMN`, lengthened if the source has it."""
    name = TICK_COLUMN
    while name in columns:
        name += "_"
    return name


def with_ticks(source: Any, ticks: Any) -> Tuple[Any, str]:
    """The streaming DataFrame ``source`` with the rows of the streaming DataFrame ``ticks`` unioned in (``source``'s
    columns then the marker column, true on a tick row, null on a source row), and the marker column's name."""
    from pyspark.sql import functions as F

    column = marker_column(source.columns)
    marked = ticks.select(F.lit(True).alias(column))
    return source.unionByName(marked, allowMissingColumns=True), column


def without_ticks(df: Any, column: str) -> Any:
    """A batch's DataFrame of :func:`with_ticks` rows without the tick rows and the marker ``column``: the source's
    rows and columns."""
    from pyspark.sql import functions as F

    return df.filter(F.col(column).isNull()).drop(column)


__all__ = ["TICK_COLUMN", "marker_column", "with_ticks", "without_ticks"]
