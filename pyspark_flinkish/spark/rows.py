"""The row wire format between Spark stages of the foreachBatch executor, and how elements are pickled in it.

Nothing here imports pyspark.sql: these functions run inside ``mapInPandas`` / ``applyInPandas`` tasks and are
tested without a JVM. Records travel between Spark stages as rows of :data:`ROW_COLUMNS`:

* ``kind``: ``rec`` (a record for node ``dest``), ``stat`` (watermark statistics), ``hb`` (a heartbeat that
  makes every state partition of a keyed operator run in every batch, so that its timers fire) or ``metric``
  (one per keyed operator ``dest`` and state partition ``sp`` and batch: its metrics as JSON in ``value``,
  see :mod:`pyspark_flinkish.monitoring`) or ``count`` (one per task and sink ``dest`` it sent records to:
  how many in ``stat_count``, so that the driver knows a sink's size without reading its records);
* ``dest``: the plan node the record goes to (a keyed operator or a sink); ``sp``: the state partition;
* ``key``: the encoded key (keyed destinations, :mod:`.keys`; null when a declared key travels as columns:
  ``k<dest>_<i>`` after these, :func:`.record_columns.key_columns`; empty, ``keys.NO_KEY``, for a broadcast input's
  element, which has none); ``value``: the pickled element (null when the
  record travels as columns: ``c<dest>_<i>`` after these, :mod:`.record_columns`); ``ts``: its timestamp;
* ``ord``: the record's position in Flink's processing order within the batch (compared as a list; see
  :mod:`.chain`);
* ``part``, ``stat_max``, ``stat_count``, ``stat_batch``: statistics for watermark generation.

``future`` rows report far-future records (event time more than ``ExecPlan.future_horizon_ms`` ahead of the
batch's processing time) per (node, ``part``): one with ``stat_count`` (how many) and ``stat_max`` (the latest
such time), and up to :data:`FUTURE_SAMPLES` with one record's ``ts`` and source order in ``ord``.

On the one-pass path (``spark/watermark_advance.py``) a route task sends its ``stat``, ``gen`` and ``future`` rows,
and its ``metric`` and ``count`` rows, as one ``stats`` row to every keyed group (``dest``, ``sp``): ``value`` holds
them as a pickled list of dicts (:func:`stats_rows`), so that each keyed task computes the batch's watermarks itself;
one group passes them on to the driver, which so reads nothing from the route's output.
"""

from __future__ import annotations

import json
import pickle
from itertools import repeat
from typing import Any, Dict, List, Sequence, Tuple

ROW_COLUMNS = ["kind", "dest", "sp", "key", "value", "ts", "ord", "part", "stat_max", "stat_count", "stat_batch"]
ROW_DDL = (
    "kind string, dest int, sp int, key binary, value binary, ts long, ord array<long>, part string, "
    "stat_max long, stat_count long, stat_batch long"
)


FUTURE_SAMPLES = 10
"""Far-future records reported with their position, per task, node and source partition (all are counted)."""

_SCALARS = frozenset((int, str, float, bool, bytes, type(None)))


def _plain(value: Any, depth: int = 0) -> bool:
    """Built-in scalars, and tuples/lists/dicts/Rows of them: what plain ``pickle`` handles on any executor."""
    t = type(value)
    if t in _SCALARS:
        return True
    if depth > 2:
        return False
    if t is tuple or t is list or (t.__name__ == "Row" and t.__module__ == "pyspark.sql.types"):
        for v in value:
            if type(v) not in _SCALARS and not _plain(v, depth + 1):
                return False
        return True
    if t is dict:
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in value.items())
    return False


def dumps(value: Any) -> bytes:
    """Pickle an element for the next stage: plain ``pickle`` for built-in data (3x faster), cloudpickle for the
    rest (classes defined in ``__main__`` or a notebook travel by value)."""
    if (type(value) is tuple and _SCALARS.issuperset(map(type, value))) or _plain(value):  # a tuple of scalars: at once
        return pickle.dumps(value, protocol=4)
    from pyspark import cloudpickle  # pure-Python module shipped with pyspark; no JVM

    return cloudpickle.dumps(value, protocol=4)  # type: ignore[no-any-return]


def loads(data: bytes) -> Any:
    return pickle.loads(data)


def row_frame(rows: List[Dict[str, Any]], typed: Sequence[Any] = ()) -> Any:
    """The rows as a pandas frame of :data:`ROW_COLUMNS`, then the columns of each layout in ``typed``
    (:class:`~.record_columns.RecordColumns`): a record row for a layout's ``dest`` with ``cols`` (its cell,
    ``RecordColumns.cell``; ``kcols`` for a key's layout) fills them, every other row the layout's placeholders."""
    import pandas as pd

    columns = {}
    get = dict.get  # ``map`` calls it on every row without a Python frame per row
    for col in ROW_COLUMNS:
        values = list(map(get, rows, repeat(col, len(rows))))
        if col in ("dest", "sp"):
            columns[col] = pd.Series(values, dtype="int32")
        elif col in ("ts", "stat_max", "stat_count", "stat_batch"):
            columns[col] = _nullable_longs(values)
        else:
            columns[col] = pd.Series(values, dtype=object)
    names = list(ROW_COLUMNS)
    for layout in typed:
        dest = layout.dest
        slot = layout.slot  # a record's columns (``cols``) or its key's (``kcols``): ``RecordColumns.cell``
        encoded = [r.get(slot) if r.get("dest") == dest else None for r in rows]
        if layout.shape == "scalar":  # the cell is the value itself (never None: a None value is not a cell)
            value, mask = layout.columns
            columns[value] = pd.Series([layout.placeholders[0] if e is None else e for e in encoded], dtype=layout.dtypes[0])
            columns[mask] = pd.Series([0] * len(rows), dtype="int64")
            names += [value, mask]
            continue
        for i, (name, dtype, empty) in enumerate(zip(layout.columns, layout.dtypes, layout.placeholders)):
            columns[name] = pd.Series([empty if e is None else e[i] for e in encoded], dtype=dtype)
            names.append(name)
    return pd.DataFrame(columns, columns=names)


_INT_OR_NONE = frozenset((int, type(None)))


def _nullable_longs(values: List[Any]) -> Any:
    """``pd.Series(values, dtype="Int64")``, built from one object array where every value is an ``int`` or None
    (twice as fast for a task's output rows); anything else goes to pandas as it is."""
    import numpy as np
    import pandas as pd

    if not _INT_OR_NONE.issuperset(map(type, values)):
        return pd.Series(values, dtype="Int64")
    data = np.array(values, dtype=object)
    mask = np.equal(data, None)
    data[mask] = 0
    return pd.Series(pd.arrays.IntegerArray(data.astype(np.int64), mask))


def metric_row(index: int, sp: int, metrics: Dict[str, Any]) -> Dict[str, Any]:
    """The ``metric`` row of one keyed operator and state partition (collected with the sinks' rows)."""
    return {"kind": "metric", "dest": index, "sp": sp, "value": json.dumps(metrics).encode()}


def stats_rows(rows: List[Dict[str, Any]], groups: List[Tuple[int, int]]) -> List[Dict[str, Any]]:
    """A route task's statistics and coordination rows (``stat``, ``gen``, ``future``, ``metric``, ``count``) as one
    ``stats`` row per keyed group ``(dest, sp)``: the same pickled list in each (none when the task has none)."""
    if not rows:
        return []
    blob = pickle.dumps(rows, protocol=4)  # built-in data only; ``gen`` values are already pickled bytes
    return [{"kind": "stats", "dest": dest, "sp": sp, "value": blob} for dest, sp in groups]


__all__ = [
    "ROW_COLUMNS",
    "ROW_DDL",
    "FUTURE_SAMPLES",
    "dumps",
    "loads",
    "row_frame",
    "metric_row",
    "stats_rows",
]
