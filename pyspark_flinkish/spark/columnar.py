"""The columnar path of the foreachBatch executor: a DataFrame source feeding a window that aggregates fields.

When a pipeline starts ``from_dataframe(df, ..., timestamp_column=...)`` → ``key_by(<fields>)`` →
``window(Tumbling|SlidingEventTimeWindows)`` [→ ``allowed_lateness`` / ``side_output_late_data``] →
``aggregate(ColumnAggregate(...), <window function>)``, no element needs to become a Python object on its way
into the window:

* Spark computes each row's windows (Flink's ``start = ts - floorMod(ts - offset, slide)``, with the
  assigner's own size, slide and offset: :func:`window_geometry`, whose SQL a JVM-free property test evaluates
  against the core's assigners), its key columns and its state partition;
* rows all of whose windows are still on time (``max_ts > W``, the operator's watermark before the batch) are
  pre-aggregated by Spark per (key, window) — count, sum, min, max, whose ``merge`` is exact;
* the few other rows (late, or for windows already fired but within the allowed lateness, or without a
  timestamp, or with a window outside Java's ``long``, which the core refuses) become ``Row`` elements and go
  through :meth:`BatchWindowOperator.process_element` one by one in processing order, exactly as on the other
  paths;
* one ``cogroup(...).applyInPandas`` task per state partition merges the partial accumulators into the
  partition's window table, processes those rows, advances the watermark (firing and cleaning up windows) and
  writes the table's next version.

Window firing, the window function, late side output and state layout are those of
:mod:`pyspark_flinkish.core.batch_window`; this module only decides which rows may be pre-aggregated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..core.aggregates import ColumnAggregate
from ..core.assigners import SlidingEventTimeWindows, TumblingEventTimeWindows
from ..core.fields import field_selector
from ..core.javamath import LONG_MAX, LONG_MIN
from ..core.key_identity import distinct_key, plain_key
from ..monitoring import partition_metrics
from . import storage
from .chain import ChainRunner, FixedClock, KeyedOutput
from .error_transport import reported_to_driver
from .keyed_partition import Manifests, restore_window_table, save_window_table, store_metrics
from .keys import encode_key
from .plan import ExecPlan
from .rows import FUTURE_SAMPLES, metric_row, row_frame
from .source_rows import DataFrameSource, python_value
from .state_store import PartitionStore

_KEY_TYPES = ("LongType", "IntegerType", "ShortType", "ByteType", "StringType", "BooleanType")
_INTEGRAL = ("LongType", "IntegerType", "ShortType", "ByteType")
_NUMERIC = (*_INTEGRAL, "DoubleType", "FloatType")


@dataclass
class ColumnarWindow:
    """How one DataFrame source and the window it feeds run column-wise (see the module docstring)."""

    source: int  # plan node index of the source
    window: int  # plan node index of the window
    columns: List[str]  # the source DataFrame's columns (an element is a Row of all of them)
    key_columns: List[str]
    key_integral: List[bool]
    key_is_tuple: bool
    parts: List[Tuple[str, Optional[str]]]  # (count|sum|min|max, field)
    part_integral: List[bool]  # whether a part's accumulator is an int (pandas widens null-bearing ints)
    size: int
    slide: int  # == size for tumbling windows
    offset: int  # already reduced as the assigner does
    timestamp_column: str
    timestamp_is_time: bool
    partition_column: Optional[str]
    order_columns: List[str]


def detect(plan: ExecPlan, transformations: List[Any]) -> Optional[ColumnarWindow]:
    """The columnar plan when the pipeline has that shape, else None (the general path runs it)."""
    if len(plan.sources) != 1:
        return None
    s = plan.sources[0]
    src_t = transformations[s]
    source = src_t.source
    if type(source) is not DataFrameSource or source.timestamp_column is None or source.element is not None:
        return None  # elements made by a connector (e.g. Kafka JSON values) need their Python conversion
    if src_t.watermark_strategy.timestamp_assigner is not None or src_t.watermark_strategy.has_user_generator:
        return None  # (a custom generator runs per element in the route: ``spark/generators.py``)
    if getattr(source, "steps", None) is not None or source.explicit_watermarks:
        return None  # upstream watermarks (from_delta) split a batch into steps
    src = plan.nodes[s]
    if len(src.main) != 1 or src.side:
        return None
    w = src.main[0]
    node = plan.nodes[w]
    if not node.batched or plan.parents(w) != [s]:
        return None
    op = node.factory()  # type: ignore[misc]
    agg = op.contents.agg_fn
    if op.contents.kind != "aggregate" or type(agg) is not ColumnAggregate:
        return None
    traced = field_selector(node.key_selector)  # type: ignore[arg-type]
    if traced is None:
        return None
    schema = {f.name: type(f.dataType).__name__ for f in source.df.schema.fields}
    columns = list(source.df.columns)
    key_columns = []
    for name in traced[0]:
        if isinstance(name, int):
            if not 0 <= name < len(columns):
                return None
            name = columns[name]
        if schema.get(name) not in _KEY_TYPES:
            return None
        key_columns.append(name)
    parts = []
    for p in agg.parts:
        if p.field is not None:
            kind = schema.get(p.field)
            if kind not in (_INTEGRAL if p.op == "sum" else _NUMERIC):
                return None  # float sums run element by element: bit-identical to Flink's sequential sum
        parts.append((p.op, p.field))
    assigner = op.assigner
    if type(assigner) is TumblingEventTimeWindows:
        size = slide = assigner.size
        offset = assigner.offset % assigner.size
    elif type(assigner) is SlidingEventTimeWindows:
        size, slide, offset = assigner.size, assigner.slide, assigner.offset
    else:
        return None
    ts_kind = schema.get(source.timestamp_column)
    if ts_kind not in ("TimestampType", "TimestampNTZType", "LongType", "IntegerType"):
        return None
    return ColumnarWindow(
        source=s,
        window=w,
        columns=columns,
        key_columns=key_columns,
        key_integral=[schema[c] in _INTEGRAL for c in key_columns],
        key_is_tuple=traced[1],
        parts=parts,
        part_integral=[op in ("count", "sum") or schema[f] in _INTEGRAL for op, f in parts],  # type: ignore[index]
        size=size,
        slide=slide,
        offset=offset,
        timestamp_column=source.timestamp_column,
        timestamp_is_time=ts_kind.startswith("Timestamp"),
        partition_column=source.partition_column,
        order_columns=list(source.order_columns),
    )


# ----------------------------------------------------------------------------------------- on the driver
def prepared(cw: ColumnarWindow, df: Any, partitions: int) -> Any:
    """The batch's rows with ``__ts`` (ms), ``__k<i>`` key columns, ``__ord``, ``__part`` and ``__sp``."""
    from pyspark.sql import functions as F

    ts = F.col(cw.timestamp_column)
    ts = F.unix_millis(ts) if cw.timestamp_is_time else ts.cast("long")
    if cw.order_columns:
        order = F.array(*[F.col(c).cast("long") for c in cw.order_columns])
    else:
        order = F.array(F.spark_partition_id().cast("long"), F.monotonically_increasing_id())
    keys = [F.col(c).alias(f"__k{i}") for i, c in enumerate(cw.key_columns)]
    part = F.col(cw.partition_column).cast("string") if cw.partition_column else F.lit(None).cast("string")
    return df.select(
        *[F.col(c) for c in cw.columns],
        ts.alias("__ts"),
        *keys,
        order.alias("__ord"),
        part.alias("__part"),
        F.pmod(F.xxhash64(*[F.col(c) for c in cw.key_columns]), F.lit(partitions)).cast("int").alias("__sp"),
    )


def statistics(prepared_df: Any, future_after: Optional[int] = None) -> List[Dict[str, Any]]:
    """Per source partition: max timestamp and number of timestamped rows (the watermark generators' input), and
    with ``future_after`` the far-future records (``ts > future_after``) as ``future`` rows like the route's
    (``spark/rows.py``): their count per partition, and the first few with their order (a second, small job,
    run only when there are some)."""
    from pyspark.sql import functions as F

    aggs = [F.max("__ts").alias("mx"), F.count("__ts").alias("n")]
    if future_after is not None:
        future = F.col("__ts") > F.lit(future_after)
        aggs += [F.count(F.when(future, 1)).alias("fn"), F.max(F.when(future, F.col("__ts"))).alias("fmx")]
    rows = prepared_df.groupBy("__part").agg(*aggs).collect()
    out: List[Dict[str, Any]] = [
        {"kind": "stat", "part": r["__part"], "stat_max": r["mx"], "stat_count": r["n"], "stat_batch": -1} for r in rows
    ]
    if future_after is None or not any(r["fn"] for r in rows):
        return out
    for r in rows:
        if r["fn"]:
            out.append(
                {"kind": "future", "part": r["__part"], "stat_max": r["fmx"], "stat_count": r["fn"], "ts": None, "ord": None}
            )
    samples = prepared_df.filter(F.col("__ts") > F.lit(future_after)).select("__part", "__ts", "__ord").limit(FUTURE_SAMPLES)
    for r in samples.collect():
        out.append(
            {"kind": "future", "part": r["__part"], "stat_max": None, "stat_count": None, "ts": r["__ts"], "ord": r["__ord"]}
        )
    return out


# ----------------------------------------------------------------------------------------- window geometry in SQL
_LONG_MIN_SQL = "(CAST(-9223372036854775807 AS BIGINT) - CAST(1 AS BIGINT))"


def _long(value: int) -> str:
    """A BIGINT literal both Spark SQL and DuckDB read as such (``Long.MIN_VALUE`` as an expression: its digits alone
    are a wider type in both)."""
    return _LONG_MIN_SQL if value == LONG_MIN else f"CAST({value} AS BIGINT)"


@dataclass(frozen=True)
class WindowGeometry:
    """The event-time windows of a row with timestamp ``ts`` (a BIGINT column), as SQL expressions: Flink's
    ``TimeWindow.getWindowStartWithOffset`` and ``SlidingEventTimeWindows.assignWindows`` as the core computes them
    (``core/assigners.py``, in unbounded integers).

    ``columns`` are ``(name, expression)`` pairs added to the rows in that order (each may read the earlier ones);
    :attr:`count`, :attr:`fits`, :attr:`latest`, :meth:`start` and :meth:`on_time` read them. Every expression stays
    within Java's ``long`` for every ``ts`` (no arithmetic overflow, whether Spark's ANSI mode raises on one or wraps
    around), relying only on ``CASE`` evaluating the branch it takes. A row the core refuses (no timestamp: null or
    ``Long.MIN_VALUE``; a window whose start or end is outside a ``long``) is not :attr:`fits`, so never on time: it
    goes to the core element by element, which raises as on the general path. The expressions are in the SQL both
    Spark and DuckDB read the same way (``CAST``, ``CASE``, ``%``, ``GREATEST``): the JVM-free property test
    (``jvm-free-tests/spark/test_columnar_geometry.py``) evaluates these very strings with DuckDB against the core's
    assigners on random sizes, slides, offsets, watermarks and timestamps."""

    ts: str
    size: int
    slide: int
    columns: Tuple[Tuple[str, str], ...]
    count: str
    """BIGINT: how many windows the row belongs to (0 in a gap between sliding windows, ``slide > size``)."""
    fits: str
    """BOOLEAN: the row has a timestamp and one or more windows, all within Java's ``long``."""
    latest: str
    """BIGINT: the latest window's start (null unless :attr:`fits`)."""
    span: str
    """BIGINT: ``ts`` minus the earliest window's start, in ``[0, size)`` (0 for a row without windows)."""

    def start(self, i: str) -> str:
        """The start of the row's ``i``-th window, latest first (``0 <= i < count``, on a row that :attr:`fits`)."""
        return f"({self.latest} - ({i}) * {_long(self.slide)})"

    def on_time(self, watermark: int) -> str:
        """BOOLEAN, never null: every window of the row is still on time for the operator's watermark ``watermark``
        (its earliest window's ``max_timestamp() > watermark``); false for a row that does not :attr:`fits`."""
        # earliest window's max timestamp: ts - span + size - 1 > watermark  <=>  ts > (watermark - size + 1) + span
        bound = watermark - self.size + 1
        if bound < LONG_MIN:  # every representable earliest start is after it
            return f"({self.fits})"
        return f"({self.fits} AND {self.ts} > {_long(bound)} + {self.span})"


def window_geometry(ts: str, size: int, slide: int, offset: int) -> WindowGeometry:
    """:class:`WindowGeometry` of the windows of ``size`` every ``slide`` (``== size``: tumbling) aligned to
    ``offset`` (only its value modulo ``slide`` counts, as in the core's formula), for the BIGINT column ``ts``."""
    s, o = _long(slide), _long(offset % slide)
    q, r = divmod(size, slide)  # a row has q windows, and one more when floorMod(ts - offset, slide) < r
    rem = f"({ts} % {s})"  # Java's remainder: the sign of ts
    p = f"(CASE WHEN {rem} < 0 THEN {rem} + {s} ELSE {rem} END)"  # floorMod(ts, slide)
    m = f"(CASE WHEN __gp < {o} THEN (__gp - {o}) + {s} ELSE __gp - {o} END)"  # floorMod(ts - offset, slide)
    if q >= 1:
        # span: ts minus the earliest window's start (in [0, size))
        span = f"(CASE WHEN __gm < {_long(r)} THEN __gm + {_long(q * slide)} ELSE __gm + {_long((q - 1) * slide)} END)"
        count = f"(CASE WHEN __gm < {_long(r)} THEN {_long(q + 1)} ELSE {_long(q)} END)"
        some = ""
    else:  # size < slide: one window or none
        span = f"(CASE WHEN __gm < {_long(r)} THEN __gm ELSE {_long(0)} END)"
        count = f"(CASE WHEN __gm < {_long(r)} THEN {_long(1)} ELSE {_long(0)} END)"
        some = f" AND __gm < {_long(r)}"
    fits = (
        f"({ts} IS NOT NULL AND {ts} > {_LONG_MIN_SQL}{some}"
        f" AND {ts} >= {_LONG_MIN_SQL} + __gspan"  # the earliest start: ts - span >= Long.MIN_VALUE
        f" AND GREATEST({ts}, __gm) - __gm <= {_long(LONG_MAX - size)})"  # the latest end: ts - m + size <= Long.MAX_VALUE
    )
    latest = f"(CASE WHEN __gfits THEN {ts} - __gm END)"
    return WindowGeometry(
        ts=ts,
        size=size,
        slide=slide,
        columns=(("__gp", p), ("__gm", m), ("__gspan", span), ("__gfits", fits), ("__glatest", latest)),
        count=count,
        fits="__gfits",
        latest="__glatest",
        span="__gspan",
    )


def with_geometry(df: Any, geometry: WindowGeometry) -> Any:
    """``df`` with the columns of ``geometry`` added (``__g...``)."""
    from pyspark.sql import functions as F

    for name, expression in geometry.columns:
        df = df.withColumn(name, F.expr(expression))
    return df


def window_starts(geometry: WindowGeometry) -> Any:
    """The start of every window of a row that :attr:`~WindowGeometry.fits` (an ``explode`` of its windows for
    sliding windows), from a frame :func:`with_geometry` made."""
    from pyspark.sql import functions as F

    if geometry.slide == geometry.size:
        return F.expr(geometry.latest)
    return F.explode(F.expr(f"transform(sequence(CAST(0 AS BIGINT), {geometry.count} - 1), __gi -> {geometry.start('__gi')})"))


def split(cw: ColumnarWindow, prepared_df: Any, watermark: int) -> Tuple[Any, Any]:
    """(partial accumulators per (state partition, key, window) of on-time rows, the other rows)."""
    from pyspark.sql import functions as F

    geometry = window_geometry("__ts", cw.size, cw.slide, cw.offset)
    rows = with_geometry(prepared_df, geometry)
    timely_rows = F.expr(geometry.on_time(watermark))
    keys = [f"__k{i}" for i in range(len(cw.key_columns))]
    start = window_starts(geometry)
    fields = sorted({f for _, f in cw.parts if f is not None})
    timely = rows.filter(timely_rows).select("__sp", *keys, *fields, start.alias("__start"))
    aggs = []
    for i, (op, fld) in enumerate(cw.parts):
        c = F.col(fld) if fld is not None else None
        if op == "count":
            aggs.append(F.count(F.lit(1)).alias(f"__a{i}"))
        elif op == "sum":
            aggs.append(F.sum(F.coalesce(c, F.lit(0)).cast("long")).alias(f"__a{i}"))
        else:
            agg = F.min(c) if op == "min" else F.max(c)
            aggs.append(agg.cast("double" if _is_float(prepared_df, fld) else "long").alias(f"__a{i}"))
    partials = timely.groupBy("__sp", *keys, "__start").agg(*aggs, F.lit(False).alias("__hb"))
    others = rows.filter(~timely_rows).select(*prepared_df.columns)
    return partials, others


def heartbeats(cw: ColumnarWindow, partials: Any, partitions: int) -> Any:
    """One row per state partition, shaped like ``partials``, so that every partition runs and fires its timers
    in every batch (built once per query)."""
    from pyspark.sql import functions as F

    spark = partials.sparkSession
    cols = [
        F.col("id").cast("int").alias("__sp") if c == "__sp" else
        (F.lit(True) if c == "__hb" else F.lit(None).cast(partials.schema[c].dataType)).alias(c)
        for c in partials.columns
    ]
    return spark.range(partitions).select(*cols)


def _is_float(df: Any, fld: Optional[str]) -> bool:
    return fld is not None and type(df.schema[fld].dataType).__name__ in ("DoubleType", "FloatType")


# ----------------------------------------------------------------------------------------- on the executors
def _pylist(series: Any, integral: bool = False) -> List[Any]:
    """Python values of a pandas column, with None for nulls; ``integral`` columns that pandas widened to
    floats (because of nulls) come back as ints."""
    out = series.astype(object).where(series.notna(), None).tolist()
    if integral and series.dtype.kind == "f":
        return [None if v is None else int(v) for v in out]
    return [v.item() if hasattr(v, "item") and not isinstance(v, (str, bytes)) else v for v in out]


def _keys(cw: ColumnarWindow, pdf: Any, names: Optional[List[str]] = None) -> List[Any]:
    names = names or [f"__k{i}" for i in range(len(cw.key_columns))]
    cols = [_pylist(pdf[name], cw.key_integral[i]) for i, name in enumerate(names)]
    if cw.key_is_tuple:
        return list(zip(*cols))
    return cols[0]


def run_partition(
    cw: ColumnarWindow,
    plan: ExecPlan,
    partials: Any,
    others: Any,
    wm_prev: int,
    wm_new: int,
    now: int,
    parts: int,
    state_root: str,
    batch_id: int,
    manifests: Manifests,
) -> Any:
    """``cogroup(...).applyInPandas`` body for one state partition of the columnar window; the output ends with
    the partition's ``metric`` row (``numRecordsIn`` is left to the driver: Spark pre-aggregated the rows). Its
    Spark task runs it inside :func:`~pyspark_flinkish.spark.error_transport.reported_to_driver`."""
    import time

    from pyspark.sql import Row

    started = time.perf_counter()

    storage.configure(plan.storage_options)
    sp = int(partials["__sp"].iloc[0]) if len(partials) else int(others["__sp"].iloc[0])
    node = plan.nodes[cw.window]
    runner = ChainRunner(plan, {cw.window: wm_prev}, now, parts)
    op = node.factory()  # type: ignore[misc]
    out = KeyedOutput(runner, cw.window, op, sp)
    op.open(out, FixedClock(now))
    if len(others):
        others = others.assign(__o=others["__ord"].map(lambda o: [int(x) for x in o])).sort_values("__o", kind="stable")
        other_keys = _keys(cw, others, cw.key_columns)  # Spark may prune the __k aliases of the source columns here
    else:
        other_keys = []
    data = partials[~partials["__hb"].astype(bool)]
    partial_keys = _keys(cw, data) if len(data) else []
    if node.key_type is not None:  # as the general path hands them on: as Flink holds them (a DOUBLE key of a LONG
        # column is 1.0), so that their bytes find their state (``core.key_identity.key_bytes``)
        other_keys = [plain_key(distinct_key(k, node.key_type)) for k in other_keys]
        partial_keys = [plain_key(distinct_key(k, node.key_type)) for k in partial_keys]
    store = PartitionStore(state_root, node.uid, sp, manifests.get(node.uid, {}).get(sp))
    touched = {encode_key(k) for k in (*other_keys, *partial_keys)}
    batch = restore_window_table(op, store, sorted(touched), wm_prev, wm_new, now)

    # rows that are not all on time: one by one, in processing order
    if len(others):
        values = {c: _pylist(others[c]) for c in cw.columns}
        for i, (key, ts, order) in enumerate(zip(other_keys, _pylist(others["__ts"], True), others["__o"])):
            out.base, out.n, out.phase = [1, *order], 0, None
            batch.process_element(key, Row(**{c: python_value(values[c][i]) for c in cw.columns}), ts)
    # partial accumulators of on-time rows
    if len(data):
        accs = list(zip(*[_pylist(data[f"__a{i}"], cw.part_integral[i]) for i in range(len(cw.parts))]))
        for key, start, acc in zip(partial_keys, _pylist(data["__start"], True), accs):
            batch.merge_partial(key, start, acc)
    out.phase = 2
    batch.advance_watermark(wm_new)
    op.close()
    runner.finish()
    manifest = save_window_table(batch, store, batch_id)
    metrics = store_metrics(partition_metrics(op, None, out.emitted, started), store, manifest, True)
    return row_frame([*runner.output_rows(), metric_row(cw.window, sp, metrics)], plan.typed_columns())


def columnar_function(cw: Any, plan: ExecPlan, *args: Any) -> Callable[[Any, Any], Any]:
    """The cogroup function of one batch's columnar window, with its arguments bound now."""

    def keyed(partials, others):  # type: ignore[no-untyped-def]
        with reported_to_driver(plan.nodes[cw.window]):
            return run_partition(cw, plan, partials, others, *args)

    return keyed


__all__ = [
    "ColumnarWindow",
    "detect",
    "prepared",
    "statistics",
    "split",
    "heartbeats",
    "run_partition",
    "columnar_function",
    "WindowGeometry",
    "window_geometry",
    "window_starts",
    "with_geometry",
]
