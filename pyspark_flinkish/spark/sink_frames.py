"""A sink's records of one micro-batch as a distributed DataFrame: written by the executors, never collected.

The stages of a micro-batch leave every record for a sink in their (persisted) output rows (:mod:`.rows`: the
pickled element in ``value``, its position in Flink's processing order in ``ord``). A sink that writes through Spark
(``DeltaSink``, dead letters, ``foreach_batch``) gets those rows as a :class:`SinkFrame`: its :meth:`SinkFrame.typed`
DataFrame decodes the elements into the columns of the stream's type on the executors (``mapInArrow``), and
:meth:`SinkFrame.last_per_key` keeps one row per key, the last in Flink's order, in Spark (a window over the
order). The driver only learns how many records the frame has (:attr:`SinkFrame.count`, counted by the tasks that
produced them, see :meth:`.chain.ChainRunner.output_rows`).

Only PyFlink's driver-side sinks (``add_sink(callable)``, ``print``, ``execute_and_collect``) bring records to the
driver (``spark/delivery.py``).

:func:`decode_batches` is the executors' part and needs no JVM.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, List, Optional, Sequence

from .record_columns import RecordColumns, arrow_values

RECORDS_PER_TASK = 200_000
"""How many of a sink's records one task decodes and writes: a frame has ``ceil(count / RECORDS_PER_TASK)`` partitions,
at most ``spark.sql.shuffle.partitions`` (a small batch is one task and one file, not one per stage output)."""

ORDER_COLUMN = "__flinkish_order"
"""The column of :meth:`SinkFrame.typed` (``with_order=True``) with each record's place in Flink's order."""

STEP_COLUMN = "__flinkish_step"
"""The column the driver adds to a sink's rows: the Flink micro-batch (step) of the Spark batch they belong to."""


def arrow_schema(schema: Any) -> Any:
    """The Arrow schema Spark expects from ``mapInArrow`` for the Spark ``schema`` (a ``StructType``); timestamps are
    microseconds since the epoch (UTC), whatever the session's time zone."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def decode_batches(
    batches: Iterable[Any],
    output_type: Any,
    schema: Any,
    convert: Optional[Callable[[Any], Any]] = None,
    with_order: bool = False,
    layout: Optional[RecordColumns] = None,
) -> Iterator[Any]:
    """``mapInArrow`` body: Arrow batches of sink rows (``value``, and ``ord`` and the step with ``with_order``) to
    batches of the stream's columns (``schema``, from :func:`~.types.to_spark_type` of ``output_type``), each element
    first passed through ``convert`` if given (e.g. a dead letter's row). With ``with_order`` the last column is
    :data:`ORDER_COLUMN`: ``[step, *ord]``. A row whose ``value`` is null crossed as the columns of ``layout``
    (``spark/record_columns.py``) and is rebuilt from them."""
    import pyarrow as pa

    from .types import to_rows

    target = arrow_schema(schema)
    names = [f.name for f in schema.fields]
    for batch in batches:
        values = arrow_values(batch, layout)
        if convert is not None:
            values = [convert(v) for v in values]
        rows = to_rows(values, output_type)
        arrays = [
            pa.array([r[i] for r in rows], type=target.field(name).type) for i, name in enumerate(names)
        ]
        fields = list(target)
        if with_order:
            steps = batch.column(STEP_COLUMN).to_pylist()
            orders = batch.column("ord").to_pylist()
            arrays.append(pa.array([[s, *o] for s, o in zip(steps, orders)], type=pa.list_(pa.int64())))
            fields.append(pa.field(ORDER_COLUMN, pa.list_(pa.int64())))
        yield pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


class SinkFrame:
    """One sink's records of one micro-batch, still on the executors.

    ``rows`` is a DataFrame of the sink's output rows (``value``, ``ord``, :data:`STEP_COLUMN`, and ``ts``, the record's
    Flink timestamp, in the frames of a job), ``output_type``
    the type of the sink's rows (what its columns are), ``count`` how many records it holds (known without reading
    them; None for a stream of unknown size, such as ``to_dataframe()``'s), ``convert`` what turns an element into a
    value of ``output_type`` (run on the executors; None: the element is one), ``layout`` how the records that
    crossed as columns hold them (``spark/record_columns.py``: their ``value`` is null; None: none did)."""

    def __init__(
        self,
        rows: Any,
        output_type: Any,
        count: Optional[int],
        convert: Optional[Callable[[Any], Any]] = None,
        layout: Optional[RecordColumns] = None,
    ) -> None:
        self.rows = rows
        self.output_type = output_type
        self.count = count
        self.convert = convert
        self.layout = layout

    def value_columns(self) -> List[str]:
        """The columns a writer's task reads its records from (``record_columns.arrow_values``): ``value``, and the
        columns of the records that crossed as columns."""
        return ["value", *(self.layout.columns if self.layout is not None else [])]

    @property
    def session(self) -> Any:
        """The Spark session the rows belong to (the streaming query's)."""
        return self.rows.sparkSession

    def typed(self, output_type: Any = None, with_order: bool = False) -> Any:
        """The records as a DataFrame of the columns of ``output_type`` (default: the frame's), decoded on the
        executors. With ``with_order``, also :data:`ORDER_COLUMN`. Its rows are in no particular order, as a
        DataFrame's are."""
        from pyspark.sql import types as T

        from .types import to_spark_type

        output_type = self.output_type if output_type is None else output_type
        schema = to_spark_type(output_type)
        out_schema = schema
        if with_order:
            out_schema = T.StructType([*schema.fields, T.StructField(ORDER_COLUMN, T.ArrayType(T.LongType()))])
        columns = ["value", "ord", STEP_COLUMN] if with_order else ["value"]
        convert = self.convert
        layout = self.layout

        def decoder(layout: Optional[RecordColumns]) -> Callable[[Iterable[Any]], Iterator[Any]]:
            return lambda batches: decode_batches(batches, output_type, schema, convert, with_order, layout)

        if layout is None or convert is not None or layout.declared != output_type:
            if layout is not None:  # records that crossed as columns are rebuilt from them in Python
                columns = [*columns, *layout.columns]
            rows = self.rows.select(*columns)
            if self.count is not None:  # a known size: as few tasks as it needs (else the rows keep their partitions)
                rows = rows.coalesce(self.partitions())
            return rows.mapInArrow(decoder(layout), out_schema)
        # the records that crossed as columns are selected in Spark; only the pickled ones are decoded in Python (their
        # rows carry no layout columns)
        from pyspark.sql import functions as F

        pickled = self.rows.filter(F.col("value").isNotNull()).select(*columns).mapInArrow(decoder(None), out_schema)
        mask = F.col(layout.columns[-1])
        fields = [
            F.when(mask.bitwiseAND(F.lit(1 << i)) != 0, F.lit(None))
            .otherwise(F.col(c))
            .cast(f.dataType)
            .alias(f.name)
            for i, (c, f) in enumerate(zip(layout.columns, schema.fields))
        ]
        if with_order:
            fields.append(F.concat(F.array(F.col(STEP_COLUMN)), F.col("ord")).alias(ORDER_COLUMN))
        frame = self.rows.filter(F.col("value").isNull()).select(*fields).unionByName(pickled)
        if self.count is not None:
            frame = frame.coalesce(self.partitions())
        return frame

    def partitions(self) -> int:
        """How many tasks decode and write the records (:data:`RECORDS_PER_TASK` each, at most the session's
        ``spark.sql.shuffle.partitions``)."""
        limit = int(self.session.conf.get("spark.sql.shuffle.partitions", "200"))
        return max(1, min(limit, -(-(self.count or 0) // RECORDS_PER_TASK)))

    def ordered(self, output_type: Any = None) -> Any:
        """:meth:`typed`, sorted in Flink's order (``collect()`` returns the records in the order a sink function
        gets them): within its one task when the frame has one, else a global sort."""
        frame = self.typed(output_type, with_order=True)
        frame = frame.sortWithinPartitions(ORDER_COLUMN) if self.partitions() == 1 else frame.orderBy(ORDER_COLUMN)
        return frame.drop(ORDER_COLUMN)

    def last_per_key(self, keys: Sequence[str], output_type: Any = None) -> Any:
        """:meth:`typed`, one row per value of the ``keys`` columns (nulls equal): the last in Flink's order."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        frame = self.typed(output_type, with_order=True)
        latest = Window.partitionBy(*[F.col(k) for k in keys]).orderBy(F.col(ORDER_COLUMN).desc())
        return (
            frame.withColumn("__flinkish_rank", F.row_number().over(latest))
            .filter(F.col("__flinkish_rank") == 1)
            .drop("__flinkish_rank", ORDER_COLUMN)
        )

    @staticmethod
    def of_values(spark: Any, values: Sequence[Any], output_type: Any) -> SinkFrame:
        """A frame of ``values`` given on the driver, in their order (what a sink written outside a job, or a
        test, hands to a batch writer)."""
        from .rows import dumps

        rows = spark.createDataFrame(
            [(dumps(v), [0, i], None, 0) for i, v in enumerate(values)],
            f"value binary, ord array<long>, ts long, {STEP_COLUMN} long",
        )
        return SinkFrame(rows, output_type, len(values))


def sink_rows(
    outputs: List[Any], index: int, step_column: Optional[Any] = None, layout: Optional[RecordColumns] = None
) -> Any:
    """The rows for sink ``index`` among a micro-batch's stage outputs (DataFrames of :data:`.rows.ROW_DDL`
    columns), with ``value``, ``ord``, ``ts`` (the record's Flink timestamp), the columns of ``layout`` (the sink's
    records that crossed as columns, ``spark/record_columns.py``) and :data:`STEP_COLUMN` (``step_column``, a
    literal, default 0)."""
    from pyspark.sql import functions as F

    step = F.lit(0).cast("long") if step_column is None else step_column
    wanted = ["value", "ord", "ts", *(layout.columns if layout is not None else [])]
    selected = [o.filter((F.col("dest") == index) & (F.col("kind") == "rec")).select(*wanted) for o in outputs]
    rows = selected[0]
    for s in selected[1:]:
        rows = rows.unionByName(s)
    return rows.withColumn(STEP_COLUMN, step)


__all__ = [
    "ORDER_COLUMN",
    "RECORDS_PER_TASK",
    "STEP_COLUMN",
    "SinkFrame",
    "arrow_schema",
    "decode_batches",
    "sink_rows",
]
