"""``SparkStreamExecutionEnvironment``: the PyFlink environment whose pipelines run as Spark Structured Streaming
queries, and where a job is started on the executor it chose (foreachBatch, or applyInPandasWithState).

The foreachBatch executor's driver is :mod:`.driver` (see its docstring for what one micro-batch does);
``apply_in_pandas_with_state`` builds one stateful query (:mod:`.stateful`). Sources of Spark (DataFrames,
Kafka, Delta) are read here and built in :mod:`.source_rows`, :mod:`.kafka` and :mod:`.delta`.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any, Callable, ClassVar, Dict, List, Optional, Sequence

from ..common.job_execution_result import JobExecutionResult
from ..core.clock import Clock
from ..core.durations import TimeLike, to_millis
from ..core.errors import InvalidArgumentError, InvalidPipelineError, InvalidTypeError, UnsupportedFeatureError
from ..core.watermarks import WatermarkStrategy
from ..datastream.data_stream import DataStream
from ..datastream.execution_mode import RuntimeExecutionMode
from ..datastream.executors import SPARK
from ..datastream.plan import Transformation, resolve_parallelism
from ..datastream.runtime_mode import batch_plan, is_batch
from ..datastream.stream_execution_environment import StreamExecutionEnvironment
from . import storage
from .checkpoint_location import resolve_checkpoint
from .connect import (
    ClientDelivery,
    Outbox,
    check_connect_job,
    is_connect,
    remote_batch_function,
    start_query,
)
from .dead_letters import with_dead_letter_sinks
from .delivery import deliver_frame, deliver_values, is_client_sink
from .delta import with_delta_writers
from .driver import ForeachBatchDriver
from .driver_metrics import sink_metrics
from .error_transport import stops_cleanly
from .far_future import DEFAULT_HORIZON_MS
from .file_sink import with_file_writers
from .job_client import SparkJobClient, query_job_id
from .job_defaults import default_checkpoint_location, default_trigger
from .job_handle import RECENT_BATCHES, SparkJobHandle
from .kafka_sink import with_kafka_writers
from .rows import loads
from .session import default_file_system, local_temp_dir, spark_path, storage_options
from .sink_frames import STEP_COLUMN, SinkFrame
from .source_rows import DataFrameSource


class SparkStreamExecutionEnvironment(StreamExecutionEnvironment):
    """Runs pipelines as Spark Structured Streaming queries (the foreachBatch executor).

    Args:
        spark: the SparkSession.
        clock: processing-time clock of the driver (default: wall clock); read once per micro-batch.
        state_partitions: number of keyed-state partitions (default: ``spark.sql.shuffle.partitions``).
            It is fixed by the first run of a checkpoint.
        backend: ``"foreach_batch"`` (default) or ``"apply_in_pandas_with_state"``.
        vectorize: let the foreachBatch executor run eligible windows batch-wise (tumbling/sliding event time,
            default trigger, no evictor, reduce/aggregate; see ``docs/spark-executors.md``). It changes speed and
            the state files' layout, never results; it is fixed by the first run of a checkpoint.
        future_horizon_ms: records whose event time is more than this ahead of the micro-batch's processing time
            are counted (progress ``future_records``) and logged by the foreachBatch executor — processed as Flink
            would, but they will make later records of their partition late (default: 1 hour; None: off).
        columnar_records: let the foreachBatch executor carry the records of a keyed operator whose input type is
            declared (``Types.ROW_NAMED``/``ROW``/``TUPLE`` of basic types, a basic type, a ``from_dataframe``
            source's rows of basic columns) between Spark stages as Arrow columns instead of pickles
            (``docs/architecture.md``). It changes speed, never what an operator receives; False: every record is
            pickled (to compare the two).
    """

    executor: ClassVar[str] = SPARK

    def __init__(
        self,
        spark: Any,
        clock: Optional[Clock] = None,
        state_partitions: Optional[int] = None,
        backend: str = "foreach_batch",
        vectorize: bool = True,
        future_horizon_ms: Optional[TimeLike] = DEFAULT_HORIZON_MS,
        columnar_records: bool = True,
    ) -> None:
        super().__init__(clock)
        horizon = None if future_horizon_ms is None else to_millis("future_horizon_ms", future_horizon_ms)
        if horizon is not None and horizon < 0:
            msg = f"future_horizon_ms must be >= 0 (or None to turn the check off); got {future_horizon_ms!r}"
            raise InvalidPipelineError(msg)
        self.future_horizon_ms = horizon
        if backend not in ("foreach_batch", "apply_in_pandas_with_state"):
            msg = f"backend must be 'foreach_batch' (default) or 'apply_in_pandas_with_state'; got {backend!r}"
            raise InvalidPipelineError(msg)
        if backend == "apply_in_pandas_with_state" and is_connect(spark):
            msg = (
                "backend='apply_in_pandas_with_state' is not supported on a Spark Connect session (its stateful "
                "function would carry the client's session to the executors, where it cannot be restored); use the "
                "default foreachBatch executor (get_execution_environment(spark)), which runs every pipeline on "
                "Connect: see docs/databricks-and-spark-connect.md"
            )
            raise UnsupportedFeatureError(msg)
        self.spark = spark
        self.connect_python_files: List[str] = []  # Spark Connect: add_python_file's files, for the foreachBatch process
        self.backend = backend
        self.vectorize = vectorize
        self.columnar_records = columnar_records
        self.state_partitions = state_partitions or int(spark.conf.get("spark.sql.shuffle.partitions"))

    # -------------------------------------------------------------------- sources
    def from_dataframe(  # type: ignore[override]
        self,
        df: Any,
        watermark_strategy: Optional[WatermarkStrategy] = None,
        timestamp_column: Optional[str] = None,
        partition_column: Optional[str] = None,
        order_columns: Sequence[str] = (),
        partitions: Sequence[Any] = (),
        source_name: str = "DataFrame",
    ) -> DataStream:
        """A stream of ``pyspark.sql.Row`` elements from a streaming DataFrame (``df.isStreaming``). A static one is
        bounded input when the runtime mode is BATCH or AUTOMATIC (``set_runtime_mode`` before this call): one
        micro-batch read by the executors (each row the ``Row`` of ``collect()``, in the DataFrame's order; the
        driver receives no record), then end of input (``spark/static_frames.py``); refused in STREAMING mode.

        ``timestamp_column`` (a timestamp or epoch-millisecond long column) gives event time, else the
        strategy's timestamp assigner does; ``partition_column`` (e.g. Kafka's ``partition``) splits the input
        into source partitions with their own watermark generators; ``order_columns`` (e.g. ``partition``,
        ``offset``) give the processing order within a micro-batch; ``partitions`` lists partitions known up
        front (a silent one holds the watermark back unless the strategy has idleness, as in Flink).

        A timestamp assigner of the strategy wins over ``timestamp_column`` and gets that column's value as its
        ``record_timestamp`` (as Flink's Kafka source hands it the record's Kafka timestamp).
        """
        if not df.isStreaming:
            if self.get_runtime_mode() is not RuntimeExecutionMode.STREAMING:
                from .static_frames import bounded_dataframe_stream

                options = (("partition_column", partition_column), ("order_columns", order_columns), ("partitions", partitions))
                given = [name for name, value in options if value]
                if given:
                    msg = (
                        f"from_dataframe({source_name!r}): {', '.join(given)} apply to a streaming DataFrame; a static "
                        "one is bounded input read as one split, in the DataFrame's order: sort it first "
                        "(df.orderBy(...)) for another order, or read it as a stream (spark.readStream...) for source "
                        "partitions with their own watermarks"
                    )
                    raise UnsupportedFeatureError(msg)

                return bounded_dataframe_stream(self, df, watermark_strategy, timestamp_column, source_name)
            msg = (
                f"from_dataframe({source_name!r}) needs a streaming DataFrame (df.isStreaming is False) in STREAMING "
                "mode: a static one is bounded input, read with env.set_runtime_mode(RuntimeExecutionMode.BATCH) (or "
                "AUTOMATIC) before from_dataframe (read by the executors as one micro-batch, then end of input), or read it "
                "as a stream "
                "(spark.readStream...), or use from_delta(path, bounded=True) for a table's snapshot"
            )
            raise UnsupportedFeatureError(msg)
        strategy = watermark_strategy if watermark_strategy is not None else WatermarkStrategy.no_watermarks()
        for col in [c for c in (timestamp_column, partition_column, *order_columns) if c is not None]:
            if col not in df.columns:
                msg = f"from_dataframe: column {col!r} is not in the DataFrame (columns: {df.columns})"
                raise InvalidTypeError(msg)
        src = DataFrameSource(df, timestamp_column, partition_column, list(order_columns), list(partitions))
        t = Transformation("source", source_name, source=src, watermark_strategy=strategy)
        return DataStream(self, t)

    def from_source(self, source: Any, watermark_strategy: WatermarkStrategy, source_name: str = "Source") -> DataStream:
        """A stream from a ``MicroBatchSource`` (replayed through a file stream; a bounded ``FileSource`` is one, its
        files read by the executors: ``spark/file_source.py``), a
        :class:`~pyspark_flinkish.datastream.connectors.kafka.KafkaSource` (Spark's Kafka source, per-partition
        watermarks) or a monitored :class:`~pyspark_flinkish.datastream.connectors.file_system.FileSource` (Spark's
        file source)."""
        from ..datastream.connectors.file_system import FileSource
        from ..datastream.connectors.kafka import KafkaSource

        if isinstance(source, FileSource):
            from .file_source import monitored_file_stream, read_by_executors

            if source.monitored:
                return monitored_file_stream(self, source, watermark_strategy, source_name)
            source = read_by_executors(source)  # a bounded one: its files are read by the executors
        if isinstance(source, KafkaSource):
            if not isinstance(watermark_strategy, WatermarkStrategy):
                msg = f"from_source needs a WatermarkStrategy; got {type(watermark_strategy).__name__}"
                raise InvalidTypeError(msg)
            from .kafka import kafka_stream

            return kafka_stream(self, source, watermark_strategy, source_name)
        return super().from_source(source, watermark_strategy, source_name)

    def from_kafka(  # type: ignore[override]
        self,
        topics: Any,
        bootstrap_servers: Optional[str] = None,
        watermark_strategy: Optional[WatermarkStrategy] = None,
        *,
        value_format: str = "json",
        schema: Any = None,
        timestamp_field: Optional[str] = None,
        starting_offsets: Any = "earliest",
        max_offsets_per_trigger: Optional[int] = None,
        include_metadata: bool = False,
        malformed_records_tag: Any = None,
        partitions: Optional[Sequence[Any]] = None,
        options: Optional[Dict[str, str]] = None,
        source_name: str = "Kafka",
        malformed_records: Any = None,
        dead_letter_table: Any = None,
    ) -> DataStream:
        """A stream of the records of Kafka ``topics`` (a name or a list), with a watermark per Kafka partition.

        Args:
            topics: topic name(s) to subscribe to.
            bootstrap_servers: ``host:port,...`` (or ``options={"kafka.bootstrap.servers": ...}``).
            watermark_strategy: e.g. ``for_bounded_out_of_orderness(...).with_idleness(...)`` (default: none).
            value_format: ``"json"`` (a ``Row`` per record; needs ``schema``), ``"string"`` or ``"raw"`` (bytes).
            schema: the JSON value's schema: a Spark DDL string or ``Types.ROW_NAMED([...], [...])``.
            timestamp_field: event time from this JSON field (epoch ms or a timestamp); default: the record's Kafka
                timestamp. A timestamp assigner in the strategy wins (it gets that time as ``record_timestamp``).
            starting_offsets: ``"earliest"`` (default), ``"latest"``, a ``KafkaOffsetsInitializer`` or
                ``{partition: offset}``; applies to a fresh checkpoint only.
            max_offsets_per_trigger: at most this many records per micro-batch (backpressure).
            include_metadata: elements are ``KafkaRecord(topic, partition, offset, timestamp, key, value)``.
            malformed_records_tag: an ``OutputTag`` for values that cannot be decoded (``MalformedRecord`` with the
                reason): they go to that side output (the policy ``"side_output"``).
            partitions: the topic's partitions (default: listed from the brokers now).
            options: ``kafka.*`` consumer properties (SSL, SASL, ...) passed to Spark untouched; other keys are
                Spark Kafka source options (``failOnDataLoss``, ``minPartitions``, ...).
            malformed_records: what happens to values that cannot be decoded (``MalformedRecordPolicy``):
                ``"dead_letter"`` (default: a Delta table, the stream goes on), ``"fail"`` (a
                ``MalformedRecordError`` naming topic, partition and offset) or ``"side_output"`` (needs
                ``malformed_records_tag``, which implies it).
            dead_letter_table: the dead-letter Delta table: a path, a catalog table name or a ``DeltaSink``
                (default: ``<checkpoint_location>/dead_letters``). See ``docs/operations.md``.
        """
        from ..datastream.connectors.kafka import KafkaSource

        source = KafkaSource.from_options(
            topics,
            bootstrap_servers,
            value_format=value_format,
            schema=schema,
            timestamp_field=timestamp_field,
            starting_offsets=starting_offsets,
            max_offsets_per_trigger=max_offsets_per_trigger,
            include_metadata=include_metadata,
            malformed_records_tag=malformed_records_tag,
            partitions=partitions,
            options=options,
            malformed_records=malformed_records,
            dead_letter_table=dead_letter_table,
        )
        strategy = watermark_strategy if watermark_strategy is not None else WatermarkStrategy.no_watermarks()
        return self.from_source(source, strategy, source_name)

    def from_delta(  # type: ignore[override]
        self,
        path: str,
        timestamp_column: Optional[str] = None,
        watermark_strategy: Optional[WatermarkStrategy] = None,
        bounded: bool = False,
        version: Optional[int] = None,
        starting_version: Optional[int] = None,
        source_name: str = "DeltaSource",
    ) -> DataStream:
        """A Delta table as a stream of ``pyspark.sql.Row`` elements (its columns), event time from
        ``timestamp_column`` (a timestamp or epoch-millisecond long column).

        Streaming (default): new commits from ``starting_version`` (default 0). Without a ``watermark_strategy``
        the watermarks are the ones the writing job recorded with each commit (``DeltaSink``): a commit's rows,
        then its watermark, as if both jobs were one (needs the table's change data feed and the foreachBatch
        executor). With a ``watermark_strategy`` they are generated from the data, as ``from_dataframe`` does.
        ``bounded=True``: the snapshot (latest, or ``version``) as one micro-batch read by the executors (the driver
        receives no record; any size), then end of input. See ``docs/kafka-and-delta.md``.
        """
        from .delta_source import from_delta

        return from_delta(self, path, timestamp_column, watermark_strategy, bounded, version, starting_version, source_name)

    # -------------------------------------------------------------------- execution
    def execute(  # type: ignore[override]
        self,
        job_name: str = "pyspark_flinkish job",
        checkpoint_location: Optional[str] = None,
        trigger: Optional[Dict[str, Any]] = None,
        progress: Optional[Callable[[Any], None]] = None,
        from_savepoint: Optional[str] = None,
        allow_non_restored_state: bool = False,
    ) -> Any:
        """Run the pipeline (the sinks added since the last ``execute("name")``/``execute_async``/``execute_and_collect``;
        as PyFlink's, each of those clears the pipeline) as a streaming query.

        **PyFlink's form**, ``execute("name")`` (no ``checkpoint_location``): the checkpoint location is
        ``<spark.sql.streaming.checkpointLocation>/<name>`` when the session sets that root (a later run of the same
        name resumes from it), else a new temporary directory (logged); like PyFlink's, it **blocks** until the job
        ends and returns a :class:`~pyspark_flinkish.common.JobExecutionResult`. A job whose sources are all bounded
        (``from_collection``, ``MicroBatchSource``, ``from_delta(bounded=True)``) runs with
        ``trigger={"availableNow": True}`` to the end of its input; an unbounded one (Kafka, a streaming DataFrame)
        runs until it fails or is stopped (use :meth:`execute_async` to get a client that can cancel it).

        **With** ``checkpoint_location`` (it holds Spark's offsets and this package's keyed state and watermarks):
        starts the query and returns at once with its :class:`SparkJobHandle`. This form (the package's, not PyFlink's)
        keeps the pipeline, so that another ``execute(checkpoint_location=...)`` restarts the same job from its
        checkpoint, as a Spark query is restarted. ``trigger`` is passed to Spark's
        ``DataStreamWriter.trigger`` (e.g. ``{"processingTime": "5 seconds"}``, ``{"availableNow": True}``); without
        one, the interval of ``enable_checkpointing`` is the processing-time trigger. ``progress`` is called with
        each micro-batch's progress document: by the foreachBatch executor at the end of the batch, by
        ``backend="apply_in_pandas_with_state"`` once Spark reported the batch (:meth:`SparkJobHandle.on_progress`).

        ``checkpoint_location`` is read as Spark reads a path: ``/x`` (on ``fs.defaultFS``), a relative path,
        ``file:/x`` or ``file:///x`` (the local file system), ``hdfs://...``, ``s3a://...``, ``gs://...``,
        ``abfss://...`` or ``dbfs:/x``; every file of the job (Spark's checkpoint, keyed state, the driver's
        documents) goes there (``docs/operations.md``, *Running on a cluster*). Other schemes are refused up front.

        ``from_savepoint`` (Flink's ``-s <savepoint>``): a new checkpoint location starts with the keyed state and
        source positions of a savepoint (:meth:`SparkJobHandle.stop_with_savepoint`), in this environment's
        ``state_partitions`` (rescaling); an operator whose state does not fit is refused, naming it and the change,
        as is state of an operator the job lacks unless ``allow_non_restored_state`` (Flink's
        ``--allowNonRestoredState``). Watermarks are not restored (as in Flink). A checkpoint already restored from
        the same savepoint resumes as it is (a restart after a failure). ``docs/operations.md``, *Savepoints*. A
        checkpoint restarted with another ``state_partitions`` is rescaled first (*Rescaling*)."""
        restore = {"from_savepoint": from_savepoint, "allow_non_restored_state": allow_non_restored_state}
        if not checkpoint_location:
            started = time.monotonic()
            handle = self._start_default(job_name, trigger, progress, restore)
            handle.await_termination()
            batches = handle.batches_run
            runtime = int((time.monotonic() - started) * 1000)
            result = JobExecutionResult(job_name, batches, {}, query_job_id(handle), runtime)
            self.last_result = result
            return result
        if trigger is None and self.get_checkpoint_interval() > 0:
            trigger = {"processingTime": f"{self.get_checkpoint_interval()} milliseconds"}
        # read as Spark's Path reads it (file:/x, file:///x, /x, relative, hdfs://..., s3a://...; others refused,
        # naming the URI); qualified here once, so Spark and the executors name the same directory
        checkpoint = resolve_checkpoint(checkpoint_location, default_file_system(self.spark))
        # the package's restartable form keeps the pipeline: the same job is started again from its checkpoint
        # with another execute(checkpoint_location=...) (PyFlink's forms, without one, clear it as Flink does)
        return self._start(job_name, self._pending_sinks(), checkpoint, trigger, progress, restore)

    def execute_async(self, job_name: str = "pyspark_flinkish job") -> SparkJobClient:  # type: ignore[override]
        """Start the job as :meth:`execute` ``("name")`` does (default checkpoint location and trigger) and return at
        once with a :class:`~pyspark_flinkish.common.JobClient` (``get_job_id``, ``get_job_status``, ``cancel``,
        ``get_job_execution_result``); its ``handle`` is the :class:`SparkJobHandle`."""
        return SparkJobClient(self._start_default(job_name, None, None), job_name)

    def _start_default(
        self,
        job_name: str,
        trigger: Optional[Dict[str, Any]],
        progress: Optional[Callable[[Any], None]],
        restore: Optional[Dict[str, Any]] = None,
    ) -> SparkJobHandle:
        sinks = self._take_sinks()
        if trigger is None:
            trigger = default_trigger(sinks, self.get_checkpoint_interval())
        checkpoint = default_checkpoint_location(self.spark, job_name)
        return self._start(job_name, sinks, checkpoint, trigger, progress, restore)

    # -------------------------------------------------------------------- configuration on Spark
    def set_max_parallelism(self, max_parallelism: int) -> SparkStreamExecutionEnvironment:
        """Flink's max parallelism is its number of key groups; here it sets the number of keyed-state partitions
        (``state_partitions``). Differences from Flink: those partitions are the keyed operators' parallelism too, so
        a restart with another number reassigns the keys (``spark/rescale.py``, Flink's restore at another
        parallelism) where Flink refuses another max parallelism."""
        super().set_max_parallelism(max_parallelism)
        self.state_partitions = max_parallelism
        return self

    def add_python_file(self, file_path: str) -> None:
        """``SparkContext.addPyFile``: a ``.py`` file or a ``.zip``/``.egg`` archive is shipped to every executor and
        importable on the driver; a package directory is zipped first (PyFlink accepts directories)."""
        import shutil

        path = os.path.abspath(file_path)
        if not os.path.exists(path):
            msg = f"add_python_file: {file_path!r} does not exist"
            raise InvalidArgumentError(msg)
        if os.path.isdir(path):
            target = os.path.join(local_temp_dir("flinkish-pyfiles-"), os.path.basename(path))
            path = shutil.make_archive(target, "zip", root_dir=os.path.dirname(path), base_dir=os.path.basename(path))
        if is_connect(self.spark):  # the session's artifacts (executors) and, with the job, the foreachBatch process
            self.spark.addArtifacts(path, pyfile=True)
            self.connect_python_files.append(path)
            return
        self.spark.sparkContext.addPyFile(path)

    def add_python_archive(self, archive_path: str, target_dir: Optional[str] = None) -> None:
        """``SparkContext.addArchive``: the archive is extracted into every executor's working directory, under
        ``target_dir`` if given (Spark's ``path#alias``), as PyFlink extracts it for its Python workers. On a Spark
        Connect session: the session's archive artifact (``spark.addArtifacts(..., archive=True)``)."""
        if is_connect(self.spark):
            self.spark.addArtifacts(archive_path + (f"#{target_dir}" if target_dir else ""), archive=True)
            return
        self.spark.sparkContext.addArchive(archive_path + (f"#{target_dir}" if target_dir else ""))

    def _execute(
        self,
        job_name: Optional[str],
        extra_sinks: Sequence[Transformation] = (),
        progress: Optional[Callable[[Any], None]] = None,
    ) -> JobExecutionResult:
        """Bounded run (``execute_and_collect``): process everything available, then stop."""
        checkpoint = local_temp_dir("flinkish-collect-")
        handle = self._start(
            job_name or "pyspark_flinkish job",
            self._take_sinks(extra_sinks),
            checkpoint,
            {"availableNow": True},
            progress,
        )
        handle.await_termination()
        return JobExecutionResult(job_name or "pyspark_flinkish job", handle.batches_run, {}, query_job_id(handle))

    def _to_dataframe(self, t: Transformation) -> Any:
        if self.backend != "apply_in_pandas_with_state":
            msg = (
                "to_dataframe() needs get_execution_environment(spark, backend='apply_in_pandas_with_state'); the "
                "foreachBatch executor delivers through add_sink/foreach_batch"
            )
            raise UnsupportedFeatureError(msg)
        if is_batch(self.get_runtime_mode(), [t]):
            msg = (
                "to_dataframe() runs in STREAMING mode only: BATCH runtime mode needs the foreachBatch executor "
                "(the default backend), which sorts each key's input; set_runtime_mode(RuntimeExecutionMode.STREAMING)"
            )
            raise UnsupportedFeatureError(msg)
        from .stateful import StatefulQueryBuilder

        return StatefulQueryBuilder(self, t).build()

    def _start_stateful(
        self, job_name: str, sinks: List[Transformation], checkpoint: str, trigger: Optional[Dict[str, Any]]
    ) -> SparkJobHandle:
        """One stateful query for all sinks of the pipeline (they must share its source and keyed operator)."""
        from .stateful import StatefulQueryBuilder, check_checkpoint

        storage.configure(storage_options(self.spark))  # the S3 client's settings (a custom generator's files)
        builder = StatefulQueryBuilder(self, sinks=sinks, checkpoint=checkpoint)
        check_checkpoint(checkpoint, builder.plan)  # as the foreachBatch executor checks its own (spark/signatures.py)
        df = builder.build(raw=True)
        by_dest = dict(zip(builder.targets, sinks))
        metrics_by_batch: Dict[int, Dict[str, Dict[str, int]]] = {}  # the sinks' counters, for the handle's progress

        def deliver(batch: Any, batch_id: int) -> None:
            """Driver-side sinks get their values (collected, in Flink's order); the others a frame of their rows,
            written by the executors. One job computes the batch (persisted) and brings its per-sink counts."""
            from pyspark.sql import functions as F

            client = [d for d, t in by_dest.items() if is_client_sink(t)]
            batch = batch.persist()
            try:
                counts = batch.groupBy("dest").agg(F.count(F.lit(1)).alias("n")).select(
                    "dest", F.lit(None).cast("binary").alias("value"), F.lit(None).cast("array<long>").alias("ord"), "n"
                )
                values = batch.filter(F.col("dest").isin(client)).select(
                    "dest", "value", "ord", F.lit(None).cast("long").alias("n")
                )
                collected = counts.unionByName(values).collect()
                sizes = {int(r["dest"]): int(r["n"]) for r in collected if r["n"] is not None}
                rows = sorted((r for r in collected if r["n"] is None), key=lambda r: list(r["ord"]))
                for dest, t in by_dest.items():
                    context = {"checkpoint": checkpoint, "sink_uid": builder.plan.nodes[dest].uid, "watermark": None}
                    if dest in client:
                        values_ = [loads(r["value"]) for r in rows if r["dest"] == dest]
                        deliver_values(self.spark, t, values_, batch_id, context)
                    else:
                        frame_rows = batch.filter(F.col("dest") == dest).select("value", "ord", "ts").withColumn(
                            STEP_COLUMN, F.lit(0).cast("long")
                        )
                        frame = SinkFrame(frame_rows, t.inputs[0].output_type, sizes.get(dest, 0))
                        deliver_frame(self.spark, t, frame, batch_id, context)
                metrics_by_batch[batch_id] = sink_metrics(builder)
                for old in sorted(metrics_by_batch)[:-RECENT_BATCHES]:
                    del metrics_by_batch[old]
            finally:
                batch.unpersist()

        spark_checkpoint = spark_path(storage.join(checkpoint, "spark"))
        writer = df.writeStream.foreachBatch(stops_cleanly(deliver)).option("checkpointLocation", spark_checkpoint)
        writer = writer.queryName(_query_name(job_name))
        if trigger:
            writer = writer.trigger(**trigger)
        return SparkJobHandle(writer.start(), None, stateful_delay=builder.info["delay"], spark=self.spark,
                              stateful_sink_metrics=metrics_by_batch)

    def _start(
        self,
        job_name: str,
        sinks: List[Transformation],
        checkpoint: str,
        trigger: Optional[Dict[str, Any]],
        progress: Optional[Callable[[Any], None]],
        restore: Optional[Dict[str, Any]] = None,
    ) -> SparkJobHandle:
        restore = restore or {}
        if not sinks:
            msg = "no sinks: add_sink(...), foreach_batch(...), print() or execute_and_collect() before execute()"
            raise InvalidPipelineError(msg)
        resolve_parallelism(sinks, self.get_max_parallelism())  # as Flink's job graph (datastream/plan.py)
        connect = is_connect(self.spark)
        if connect:  # the foreachBatch function runs in the server's Python (spark/connect.py)
            check_connect_job(self)
        sinks = with_delta_writers(sinks)  # DeltaSink describes the table; its writer is built here
        sinks = with_kafka_writers(sinks)  # KafkaSink too
        sinks = with_file_writers(sinks, self.clock)  # FileSink: likewise
        if is_batch(self.get_runtime_mode(), sinks):
            if self.backend == "apply_in_pandas_with_state":
                msg = (
                    "BATCH runtime mode runs on the foreachBatch executor (the default backend); "
                    "apply_in_pandas_with_state cannot sort each key's input: use STREAMING there"
                )
                raise UnsupportedFeatureError(msg)
            sinks = batch_plan(sinks)
            trigger = {"availableNow": True}  # the bounded input in one micro-batch, then the query stops
        if self.backend == "apply_in_pandas_with_state":
            if restore.get("from_savepoint"):
                msg = (
                    "from_savepoint: savepoints are taken and restored by the foreachBatch executor (the default "
                    "backend); apply_in_pandas_with_state keeps its state in Spark's state store, restored only from "
                    "its own checkpoint"
                )
                raise UnsupportedFeatureError(msg)
            handle = self._start_stateful(job_name, sinks, checkpoint, trigger)
            if progress is not None:  # after Spark reported each batch (the foreachBatch executor: inside it)
                handle.on_progress(progress)
            return handle
        sinks = with_dead_letter_sinks(sinks, checkpoint)  # Kafka sources with the policy "dead_letter"
        storage.configure(storage_options(self.spark))  # the S3 client's settings from the session's fs.s3a.*
        savepoint = restore.get("from_savepoint")
        if savepoint:  # read as a checkpoint location is
            savepoint = resolve_checkpoint(savepoint, default_file_system(self.spark))
        driver = ForeachBatchDriver(
            self, sinks, checkpoint, progress, savepoint, bool(restore.get("allow_non_restored_state"))
        )
        stream = driver.input_stream(trigger)
        driver.seed_spark_checkpoint(stream)
        spark_checkpoint = spark_path(storage.join(checkpoint, "spark"))
        client, batch_function = None, driver
        if connect:
            outbox = Outbox(checkpoint)
            driver.outbox, driver.progress = outbox, outbox  # the server-side driver writes; this process delivers
            plan = driver.plan
            client_sinks = {i: plan.transformations[i] for i in plan.sinks if is_client_sink(plan.transformations[i])}

            def deliver(t: Transformation, values: List[Any], batch_id: int) -> None:
                uid = plan.nodes[plan.transformations.index(t)].uid
                deliver_values(self.spark, t, values, batch_id, {"checkpoint": checkpoint, "sink_uid": uid})

            client = ClientDelivery(outbox, client_sinks, deliver, progress)
            client.deliver_earlier_runs()
            batch_function = remote_batch_function(driver, self.spark, self.connect_python_files)
        writer = stream.writeStream.foreachBatch(batch_function).option("checkpointLocation", spark_checkpoint)
        writer = writer.queryName(_query_name(job_name))
        if trigger:
            writer = writer.trigger(**trigger)
        return SparkJobHandle(start_query(writer) if connect else writer.start(), driver, client=client)


def _query_name(job_name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in job_name)[:60] + "_" + uuid.uuid4().hex[:6]


__all__ = ["SparkStreamExecutionEnvironment", "SparkJobHandle"]
