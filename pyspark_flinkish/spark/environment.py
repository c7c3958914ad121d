"""The Spark environment and its foreachBatch executor (the driver side).

Each Spark micro-batch of the job's streaming query is one micro-batch of Flink's execution model
(``docs/execution-model.md``). For batch ``N`` the driver:

1. restores its watermark bookkeeping as of batch ``N-1`` (in memory, or from
   ``<checkpoint>/flinkish/driver`` after a restart, so that a replayed batch starts from the same point);
2. runs the *route* job: source rows go through the stateless operators on the executors, which report
   per-partition statistics (max timestamp, count) for watermark generation;
3. computes every operator's new watermark with the same core classes as the JVM-free engine (per-partition
   generators, idleness, valves, end of input);
4. runs keyed operators level by level: ``groupBy(operator, state partition).applyInPandas`` restores each
   partition's keyed state (version ``N-1``), processes its records in Flink's order at the previous
   watermark, advances to the new one (firing timers) and writes state version ``N``;
5. hands every sink its records, then records its own state for batch ``N``.

State never passes through the driver; only watermark statistics (a few rows per partition) do.
"""

from __future__ import annotations

import collections
import copy
import glob
import json
import logging
import os
import pickle
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Deque, Dict, Iterator, List, Optional, Sequence, Tuple

from ..core.clock import Clock
from ..core.codec import dump_document, load_document
from ..core.durations import TimeLike, to_millis
from ..core.errors import (
    FlinkishError,
    InvalidPipelineError,
    InvalidTypeError,
    StateError,
    UnsupportedFeatureError,
    UserFunctionError,
)
from ..core.operators import TimestampsAndWatermarksOperator, call_user, in_node, short
from ..core.watermarks import WatermarkStrategy, WatermarksWithIdleness
from ..datastream.data_stream import DataStream
from ..datastream.plan import Transformation
from ..datastream.sources import MicroBatchSource
from ..datastream.stream_execution_environment import JobExecutionResult, StreamExecutionEnvironment
from ..local.executor import LocalExecutor
from ..monitoring import OPERATOR_COUNTERS, log_progress, merge_partitions, write_progress
from . import columnar, state_store
from .dead_letters import dead_letter_counts, with_dead_letter_sinks
from .far_future import DEFAULT_HORIZON_MS, FutureRecords
from .plan import (
    ROW_DDL,
    ExecPlan,
    Node,
    compare_signatures,
    dumps,
    keep_state_layouts,
    loads,
    reported_to_driver,
    route_partition,
    route_records,
    run_keyed_partition,
    state_signature,
    user_error_from,
)
from .session import local_temp_dir, spark_path

_log = logging.getLogger("pyspark_flinkish.spark")

SOURCE_DDL = "src string, value binary, ts long, part string, ord array<long>, batch long, marker boolean"


@dataclass
class _DataFrameSource:
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


class SparkJobHandle:
    """A running pipeline: the Spark ``StreamingQuery`` plus what the driver knows of watermarks and metrics."""

    def __init__(
        self,
        query: Any,
        driver: Optional[_ForeachBatchDriver],
        stateful_delay: Optional[int] = None,
        spark: Any = None,
    ) -> None:
        self.query = query
        self.driver = driver
        self._stateful_delay = stateful_delay  # applyInPandasWithState: Spark's watermark delay (ms)
        self._spark: Any = spark if spark is not None else (driver.spark if driver is not None else None)
        self._listeners: List[Any] = []

    def await_termination(self, timeout: Optional[float] = None) -> Optional[bool]:
        """Wait for the query; a failed query raises the package error that stopped it (e.g. a
        :class:`UserFunctionError` naming operator, key, window and the original traceback), else Spark's."""
        try:
            result = self.query.awaitTermination(timeout) if timeout is not None else self.query.awaitTermination()
        except Exception as exc:
            self._remove_listeners()
            self._raise_failure(exc)
            raise
        if not self.query.isActive:
            self._remove_listeners()
        if self.driver is not None:
            self.driver.raise_if_failed()
        return result  # type: ignore[no-any-return]

    def process_all_available(self) -> None:
        try:
            self.query.processAllAvailable()
        except Exception as exc:
            self._raise_failure(exc)
            raise
        if self.driver is not None:
            self.driver.raise_if_failed()

    def _raise_failure(self, exc: BaseException) -> None:
        failure = self.driver.failure if self.driver is not None else None
        if isinstance(failure, FlinkishError):
            raise failure
        error = user_error_from(exc)
        if error is not None:
            raise error from exc

    def stop(self) -> None:
        self.query.stop()
        self._remove_listeners()

    @property
    def last_progress(self) -> Any:
        return self.query.lastProgress

    @property
    def is_active(self) -> bool:
        return bool(self.query.isActive)

    def watermarks(self) -> Dict[str, int]:
        """Each operator's current watermark after the last completed micro-batch (foreachBatch executor)."""
        return self.driver.operator_watermarks() if self.driver is not None else {}

    def progress(self, batch_id: Optional[int] = None) -> Optional[Dict[str, Any]]:
        """The combined progress of the last micro-batch (or of ``batch_id``, if still among the recent ones): this
        package's metrics (``docs/operations.md#metrics``) plus, under ``"spark"``, Spark's
        ``StreamingQueryProgress`` of the same batch id as a dict (None until Spark reported it: Spark reports a
        batch after the foreachBatch function returned). None before the first batch."""
        history = self.recent_progress()
        if batch_id is None:
            return history[-1] if history else None
        return next((p for p in history if p.get("batch_id") == batch_id), None)

    def on_progress(self, callback: Callable[[Dict[str, Any]], None]) -> None:
        """Call ``callback`` with the combined progress (see :meth:`progress`, ``"spark"`` always set) of every
        micro-batch, from a ``StreamingQueryListener`` on the session: Spark's ``onQueryProgress`` of this query.
        Batches Spark reported before this call are delivered at once; each batch once. The listener is removed
        by :meth:`stop` and when :meth:`await_termination` sees the query ended, after delivering what Spark's
        asynchronous listener bus had not yet (so every batch of ``query.recentProgress`` is delivered by then). A
        failing callback is logged, never raised into Spark's listener bus."""
        import threading

        from pyspark.sql.streaming import StreamingQueryListener

        handle, query_id, lock, seen = self, str(self.query.id), threading.Lock(), set()

        def deliver(spark_progress: Any) -> None:
            batch_id = spark_progress.get("batchId")
            with lock:  # held during the callback: one batch at a time
                if batch_id in seen:
                    return
                seen.add(batch_id)
                try:
                    callback(handle._combined(spark_progress))
                except Exception:
                    _log.exception("on_progress callback failed for batch %s", batch_id)

        class _Listener(StreamingQueryListener):  # type: ignore[misc]
            def onQueryStarted(self, event: Any) -> None:  # noqa: N802 (Spark's names)
                return None

            def onQueryProgress(self, event: Any) -> None:  # noqa: N802
                if str(event.progress.id) == query_id:
                    deliver(event.progress)

            def onQueryIdle(self, event: Any) -> None:  # noqa: N802
                return None

            def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
                return None

        listener = _Listener()
        self._spark.streams.addListener(listener)
        self._listeners.append((listener, deliver))
        for spark_progress in self.query.recentProgress or []:
            deliver(spark_progress)

    def _combined(self, spark_progress: Any) -> Dict[str, Any]:
        """This package's progress of Spark's batch, with Spark's under ``"spark"``."""
        if self.driver is None:
            return _stateful_progress(spark_progress, self._stateful_delay)
        batch_id = spark_progress.get("batchId")
        ours = next((p for p in reversed(self.driver.history) if p["batch_id"] == batch_id), {"batch_id": batch_id})
        return {**ours, "spark": spark_progress}

    def _remove_listeners(self) -> None:
        while self._listeners:
            listener, deliver = self._listeners.pop()
            self._spark.streams.removeListener(listener)
            for spark_progress in self.query.recentProgress or []:
                deliver(spark_progress)

    def recent_progress(self) -> List[Dict[str, Any]]:
        """The combined progress (see :meth:`progress`) of the recent micro-batches, oldest first: the driver keeps
        the last 100 (they are also in ``<checkpoint>/flinkish/progress``); Spark keeps
        ``spark.sql.streaming.numRecentProgressUpdates`` (100) of its own. With ``apply_in_pandas_with_state`` it
        is built from Spark's progress alone (input records, watermark, Spark's state operator metrics)."""
        spark = {p.get("batchId"): p for p in (self.query.recentProgress or [])}
        if self.driver is None:
            return [_stateful_progress(p, self._stateful_delay) for p in spark.values()]
        return [{**p, "spark": spark.get(p["batch_id"])} for p in list(self.driver.history)]


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
    """

    def __init__(
        self,
        spark: Any,
        clock: Optional[Clock] = None,
        state_partitions: Optional[int] = None,
        backend: str = "foreach_batch",
        vectorize: bool = True,
        future_horizon_ms: Optional[TimeLike] = DEFAULT_HORIZON_MS,
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
        self.spark = spark
        self.backend = backend
        self.vectorize = vectorize
        self.state_partitions = state_partitions or int(spark.conf.get("spark.sql.shuffle.partitions"))

    # -------------------------------------------------------------------- sources
    def from_dataframe(
        self,
        df: Any,
        watermark_strategy: Optional[WatermarkStrategy] = None,
        timestamp_column: Optional[str] = None,
        partition_column: Optional[str] = None,
        order_columns: Sequence[str] = (),
        partitions: Sequence[Any] = (),
        source_name: str = "DataFrame",
    ) -> DataStream:
        """A stream of ``pyspark.sql.Row`` elements from a (streaming) DataFrame.

        ``timestamp_column`` (a timestamp or epoch-millisecond long column) gives event time, else the
        strategy's timestamp assigner does; ``partition_column`` (e.g. Kafka's ``partition``) splits the input
        into source partitions with their own watermark generators; ``order_columns`` (e.g. ``partition``,
        ``offset``) give the processing order within a micro-batch; ``partitions`` lists partitions known up
        front (a silent one holds the watermark back unless the strategy has idleness, as in Flink).

        A timestamp assigner of the strategy wins over ``timestamp_column`` and gets that column's value as its
        ``record_timestamp`` (as Flink's Kafka source hands it the record's Kafka timestamp).
        """
        strategy = watermark_strategy if watermark_strategy is not None else WatermarkStrategy.no_watermarks()
        for col in [c for c in (timestamp_column, partition_column, *order_columns) if c is not None]:
            if col not in df.columns:
                msg = f"from_dataframe: column {col!r} is not in the DataFrame (columns: {df.columns})"
                raise InvalidTypeError(msg)
        src = _DataFrameSource(df, timestamp_column, partition_column, list(order_columns), list(partitions))
        t = Transformation("source", source_name, source=src, watermark_strategy=strategy)
        return DataStream(self, t)

    def from_source(self, source: Any, watermark_strategy: WatermarkStrategy, source_name: str = "Source") -> DataStream:
        """A stream from a ``MicroBatchSource`` (replayed through a file stream) or a
        :class:`~pyspark_flinkish.datastream.connectors.kafka.KafkaSource` (Spark's Kafka source, per-partition
        watermarks)."""
        from ..datastream.connectors.kafka import KafkaSource

        if isinstance(source, KafkaSource):
            if not isinstance(watermark_strategy, WatermarkStrategy):
                msg = f"from_source needs a WatermarkStrategy; got {type(watermark_strategy).__name__}"
                raise InvalidTypeError(msg)
            from .kafka import kafka_stream

            return kafka_stream(self, source, watermark_strategy, source_name)
        return super().from_source(source, watermark_strategy, source_name)

    def from_kafka(
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
        ``bounded=True``: the snapshot (latest, or ``version``) as one micro-batch, then end of input; it is
        collected on the driver (for ``execute_and_collect``, tests and small back-fills). See ``docs/kafka-and-delta.md``.
        """
        from .delta import from_delta

        return from_delta(self, path, timestamp_column, watermark_strategy, bounded, version, starting_version, source_name)

    # -------------------------------------------------------------------- execution
    def execute(  # type: ignore[override]
        self,
        job_name: str = "pyspark_flinkish job",
        checkpoint_location: Optional[str] = None,
        trigger: Optional[Dict[str, Any]] = None,
        progress: Optional[Callable[[Any], None]] = None,
    ) -> SparkJobHandle:
        """Start the pipeline as a streaming query; ``checkpoint_location`` is required (it holds Spark's
        offsets and this package's keyed state and watermarks). ``trigger`` is passed to Spark's
        ``DataStreamWriter.trigger`` (e.g. ``{"processingTime": "5 seconds"}``, ``{"availableNow": True}``)."""
        if not checkpoint_location:
            msg = "execute() on Spark needs checkpoint_location=...: it holds offsets, keyed state and watermarks"
            raise InvalidPipelineError(msg)
        if "://" in checkpoint_location and not checkpoint_location.startswith("file://"):
            msg = (
                f"checkpoint_location {checkpoint_location!r}: keyed state is written with local file APIs; give a "
                "path every executor sees as a local path (a shared mount such as /dbfs/... on Databricks)"
            )
            raise UnsupportedFeatureError(msg)
        # executors resolve relative paths against their own working directories: pin it down here
        checkpoint = os.path.abspath(checkpoint_location.removeprefix("file://"))
        return self._start(job_name, list(self._sinks), checkpoint, trigger, progress)

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
            list(self._sinks) + list(extra_sinks),
            checkpoint,
            {"availableNow": True},
            progress,
        )
        handle.await_termination()
        batches = handle.driver.batches_run if handle.driver is not None else 0
        return JobExecutionResult(job_name or "pyspark_flinkish job", batches, {})

    def _to_dataframe(self, t: Transformation) -> Any:
        if self.backend != "apply_in_pandas_with_state":
            msg = (
                "to_dataframe() needs get_execution_environment(spark, backend='apply_in_pandas_with_state'); the "
                "foreachBatch executor delivers through add_sink/foreach_batch"
            )
            raise UnsupportedFeatureError(msg)
        from .stateful import StatefulQueryBuilder

        return StatefulQueryBuilder(self, t).build()

    def _start_stateful(
        self, job_name: str, sinks: List[Transformation], checkpoint: str, trigger: Optional[Dict[str, Any]]
    ) -> SparkJobHandle:
        """One stateful query for all sinks of the pipeline (they must share its source and keyed operator)."""
        from .stateful import StatefulQueryBuilder

        builder = StatefulQueryBuilder(self, sinks=sinks)
        df = builder.build(raw=True)
        by_dest = dict(zip(builder.targets, sinks))

        def deliver(batch: Any, batch_id: int) -> None:
            rows = sorted(batch.select("dest", "value", "ord").collect(), key=lambda r: list(r["ord"]))
            for dest, t in by_dest.items():
                context = {"checkpoint": checkpoint, "sink_uid": builder.plan.nodes[dest].uid, "watermark": None}
                values = [loads(r["value"]) for r in rows if r["dest"] == dest]
                _deliver_values(self.spark, t, values, batch_id, context)

        writer = df.writeStream.foreachBatch(deliver).option("checkpointLocation", spark_path(os.path.join(checkpoint, "spark")))
        writer = writer.queryName(_query_name(job_name))
        if trigger:
            writer = writer.trigger(**trigger)
        return SparkJobHandle(writer.start(), None, stateful_delay=builder.info["delay"], spark=self.spark)

    def _start(
        self,
        job_name: str,
        sinks: List[Transformation],
        checkpoint: str,
        trigger: Optional[Dict[str, Any]],
        progress: Optional[Callable[[Any], None]],
    ) -> SparkJobHandle:
        if not sinks:
            msg = "no sinks: add_sink(...), foreach_batch(...), print() or execute_and_collect() before execute()"
            raise InvalidPipelineError(msg)
        if self.backend == "apply_in_pandas_with_state":
            return self._start_stateful(job_name, sinks, checkpoint, trigger)
        sinks = with_dead_letter_sinks(sinks, checkpoint)  # Kafka sources with the policy "dead_letter"
        driver = _ForeachBatchDriver(self, sinks, checkpoint, progress)
        stream = driver.input_stream()
        spark_checkpoint = spark_path(os.path.join(checkpoint, "spark"))
        writer = stream.writeStream.foreachBatch(driver).option("checkpointLocation", spark_checkpoint)
        writer = writer.queryName(_query_name(job_name))
        if trigger:
            writer = writer.trigger(**trigger)
        return SparkJobHandle(writer.start(), driver)


def _stateful_progress(spark: Dict[str, Any], delay: Optional[int]) -> Dict[str, Any]:
    """The progress of an ``apply_in_pandas_with_state`` batch from Spark's alone: input records (all sources
    together), the watermark Spark used for the batch as Flink's watermark, and the stateful operator's
    ``numKeys`` (Spark's ``numRowsTotal``: keys with state), ``stateSizeBytes`` (``memoryUsedBytes`` of the
    state store) and ``numRecordsOut`` (``numRowsUpdated``: keys whose state was written). Late records and
    fired windows are not counted on this backend."""
    from .stateful import flink_watermark

    watermark = None
    text = (spark.get("eventTime") or {}).get("watermark")
    if text and delay is not None:
        import datetime

        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        watermark = flink_watermark(int(round(moment.timestamp() * 1000)), delay)
    operators = {}
    for i, op in enumerate(spark.get("stateOperators") or []):
        operators[f"stateful-{i}"] = {
            "name": op.get("operatorName", "applyInPandasWithState"),
            "keyed": True,
            "currentOutputWatermark": watermark,
            "numKeys": op.get("numRowsTotal"),
            "stateSizeBytes": op.get("memoryUsedBytes"),
            "numRecordsOut": op.get("numRowsUpdated"),
        }
    duration = (spark.get("durationMs") or {}).get("triggerExecution")
    return {
        "batch_id": spark.get("batchId"),
        "backend": "apply_in_pandas_with_state",
        "input_records": spark.get("numInputRows"),
        "operators": operators,
        "durations_ms": {"total": duration} if duration is not None else {},
        "spark": spark,
    }


def _query_name(job_name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in job_name)[:60] + "_" + uuid.uuid4().hex[:6]


class _ForeachBatchDriver:
    """The ``foreachBatch`` function: one call per Spark micro-batch."""

    def __init__(
        self,
        env: SparkStreamExecutionEnvironment,
        sinks: List[Transformation],
        checkpoint: str,
        progress: Optional[Callable[[Any], None]],
    ) -> None:
        self.env = env
        self.spark = env.spark
        self.checkpoint = checkpoint
        self.sinks = sinks
        meta = self._meta()
        self.partitions = int(meta["state_partitions"])
        self.plan = ExecPlan(sinks, vectorize=bool(meta["vectorize"]))
        self._check_operators(meta)
        self.state_root = os.path.join(checkpoint, "flinkish", "state")
        keep_state_layouts(self.plan, self.state_root)
        self.driver_root = os.path.join(checkpoint, "flinkish", "driver")
        self.progress = progress
        self.failure: Optional[BaseException] = None
        self.batches_run = 0
        self.durations: Dict[str, float] = {}  # milliseconds per phase of the last batch (progress, profiling)
        self.input_counts: Dict[str, Dict[str, int]] = {}  # progress: records per source and partition, last batch
        self._heartbeats: Any = None  # the columnar path's heartbeat rows, built once per query
        self.metric_rows: List[Tuple[int, int, Dict[str, Any]]] = []  # (step, operator, metrics) of the batch
        self.history: Deque[Dict[str, Any]] = collections.deque(maxlen=100)  # progress of the recent batches
        self.watermark_graph = self._new_graph()
        self.last_batch: Optional[int] = None
        self.columnar = columnar.detect(self.plan, self.plan.transformations) if meta["vectorize"] else None
        self.exec_plan = copy.copy(self.plan)  # what the executors get: no source data, no DataFrames
        self.exec_plan.transformations = []
        self.exec_plan.future_horizon_ms = env.future_horizon_ms
        self.future: Optional[FutureRecords] = None  # far-future records of the current batch
        # hook: a source that maps its own commits to steps with explicit watermarks (``from_delta``)
        self.stepper = _source_stepper(self.plan)
        self.fused = self._fused_source()
        self.step_watermarks: Dict[int, Optional[int]] = {}

    # -- set-up
    def _new_graph(self) -> LocalExecutor:
        """The watermark bookkeeping: the JVM-free engine's graph with watermark-only operators."""
        graph = LocalExecutor(self.sinks, self.env.clock, watermarks_only=True)
        for t in graph.order:
            node = graph.nodes[t.id]
            if node.operator is not None:
                node.operator.open(node, self.env.clock)
        return graph

    def _meta(self) -> Dict[str, Any]:
        """The settings that shape the checkpoint's state (state partitions, vectorize): a checkpoint's first run
        fixes them; later runs use the stored ones and log a warning when the environment asks for others."""
        meta = os.path.join(self.checkpoint, "flinkish", META_FILE)
        wanted = {"state_partitions": self.env.state_partitions, "vectorize": self.env.vectorize}
        legacy = os.path.join(self.checkpoint, "flinkish", "meta.pkl")
        if not os.path.exists(meta) and os.path.exists(legacy):
            self._migrate_pickled_checkpoint(legacy)
        if os.path.exists(meta):
            with open(meta, "rb") as f:
                stored = load_document(f.read(), META_FORMAT, META_VERSION, meta)
            for name, value in wanted.items():
                if stored[name] != value:
                    _log.warning(
                        "checkpoint %s was started with %s=%r; using that instead of %r (its state is laid out so)",
                        self.checkpoint, name, stored[name], value,
                    )
            return stored
        self._write_meta(wanted)
        return wanted

    def _migrate_pickled_checkpoint(self, legacy_meta: str) -> None:
        """Checkpoints of pyspark_flinkish before the JSON driver state kept ``meta.pkl`` and ``driver/b=<batch>.pkl``
        (pickles): read them once, write ``meta.json`` and ``b=<batch>.json``, delete the pickles. ``meta.json`` is
        written last, so an interrupted migration is redone; afterwards no pickle file is ever read."""
        _log.warning("checkpoint %s: converting the pickled driver state of an older version to JSON", self.checkpoint)
        with open(legacy_meta, "rb") as f:
            stored = pickle.load(f)
        stored.pop("format", None)
        stored.setdefault("vectorize", False)  # checkpoints written before batch-wise windows existed
        driver_root = os.path.join(self.checkpoint, "flinkish", "driver")
        names = sorted(os.listdir(driver_root)) if os.path.isdir(driver_root) else []
        for name in names:
            if name.startswith("b=") and name.endswith(".pkl"):
                with open(os.path.join(driver_root, name), "rb") as f:
                    graph = self._new_graph()
                    _restore_pickled_graph(graph, pickle.load(f), self.env.clock)
                _write_atomically(os.path.join(driver_root, name[:-4] + ".json"), _driver_document(graph, int(name[2:14])))
                os.remove(os.path.join(driver_root, name))
        self._write_meta(stored)
        os.remove(legacy_meta)

    def _check_operators(self, meta: Dict[str, Any]) -> None:
        """Refuse to start when a keyed operator's state was written by an incompatible operator (another window
        assigner, trigger, evictor, lateness, contents or aggregate class under the same uid): its state would be
        misread. The first run records the signatures."""
        current = {}
        for node in self.plan.nodes:
            sig = state_signature(self.plan.transformations[node.index])
            if sig is not None:
                current[node.uid] = sig
        stored = meta.get("operators")
        problems, merged = compare_signatures(stored or {}, current)
        if problems:
            msg = (
                f"checkpoint {self.checkpoint} holds state of operators that changed incompatibly: {'; '.join(problems)}. "
                "Restore the old operator, or start from a new checkpoint location (the state is never reset silently)."
            )
            raise StateError(msg)
        if merged != stored:
            self._write_meta({**meta, "operators": merged})

    def _write_meta(self, meta: Dict[str, Any]) -> None:
        path = os.path.join(self.checkpoint, "flinkish", META_FILE)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _write_atomically(path, dump_document(META_FORMAT, META_VERSION, meta))

    def _fused_source(self) -> Optional[int]:
        """The plan index of the one DataFrame source whose conversion runs inside the route (no pickling in
        between), when the pipeline has exactly one source and it is a plain DataFrame source."""
        if self.columnar is not None or self.stepper is not None or len(self.plan.sources) != 1:
            return None
        index = self.plan.sources[0]
        return index if isinstance(self.plan.transformations[index].source, _DataFrameSource) else None

    def input_stream(self) -> Any:
        """One streaming DataFrame with the rows of every source (``SOURCE_DDL`` columns), or the source
        DataFrame itself on the columnar path."""
        if self.columnar is not None:
            return self.plan.transformations[self.columnar.source].source.df
        if self.fused is not None:
            return self.plan.transformations[self.fused].source.df
        frames = []
        replay = [t for t in self.plan.transformations if t.kind == "source" and isinstance(t.source, MicroBatchSource)]
        if replay:
            frames.append(self._replay_stream(replay))
        for t in self.plan.transformations:
            if t.kind == "source" and isinstance(t.source, _DataFrameSource):
                frames.append(_dataframe_rows(t, self.plan.nodes[self.plan.transformations.index(t)].uid))
        stream = frames[0]
        for f in frames[1:]:
            stream = stream.unionByName(f)
        return stream

    def _replay_stream(self, sources: List[Transformation]) -> Any:
        """Replay sources as a file stream: file ``i`` holds every source's batch ``i`` (plus markers, and
        one last end-of-input file), and ``maxFilesPerTrigger=1`` makes each file one micro-batch."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        directory = os.path.join(self.checkpoint, "flinkish", "replay")
        if not os.path.isdir(directory):
            tmp = directory + ".tmp-" + uuid.uuid4().hex[:6]
            os.makedirs(tmp)
            n = max(len(t.source.batches) for t in sources)
            for i in range(n + 1):
                rows: Dict[str, List[Any]] = {c: [] for c in ("src", "value", "ts", "part", "ord", "batch", "marker")}
                for t in sources:
                    uid = self.plan.nodes[self.plan.transformations.index(t)].uid
                    batches = t.source.batches
                    elements = batches[i].elements if i < len(batches) else []
                    for j, value in enumerate(elements):
                        ts = _assign_timestamp(t, self.plan.nodes[self.plan.transformations.index(t)], value, None)
                        part = batches[i].partition_of(j)
                        for c, v in zip(rows, (uid, dumps(value), ts, repr(part), [i, j], i, False)):
                            rows[c].append(v)
                    for c, v in zip(rows, (uid, None, None, None, [i, -1], i, True)):
                        rows[c].append(v)
                table = pa.table(
                    {
                        "src": pa.array(rows["src"], pa.string()),
                        "value": pa.array(rows["value"], pa.binary()),
                        "ts": pa.array(rows["ts"], pa.int64()),
                        "part": pa.array(rows["part"], pa.string()),
                        "ord": pa.array(rows["ord"], pa.list_(pa.int64())),
                        "batch": pa.array(rows["batch"], pa.int64()),
                        "marker": pa.array(rows["marker"], pa.bool_()),
                    }
                )
                path = os.path.join(tmp, f"batch-{i:09d}.parquet")
                pq.write_table(table, path)
                os.utime(path, (1_000_000 + i, 1_000_000 + i))
            os.rename(tmp, directory)
        return self.spark.readStream.schema(SOURCE_DDL).option("maxFilesPerTrigger", 1).parquet(spark_path(directory))

    # -- driver state per batch
    def _state_path(self, batch_id: int) -> str:
        return os.path.join(self.driver_root, f"b={batch_id:012d}.json")

    def _graph_state(self) -> Dict[str, Any]:
        """The watermark bookkeeping as plain JSON data (see ``LocalExecutor.watermark_state``)."""
        return self.watermark_graph.watermark_state()

    def _restore_graph(self, state: Dict[str, Any]) -> None:
        self.watermark_graph.restore_watermark_state(state)

    def _open(self, batch_id: int) -> int:
        """Bring the driver to the state after batch ``batch_id - 1``; returns that batch's id (or -1)."""
        if self.last_batch is not None and self.last_batch == batch_id - 1:
            return self.last_batch
        self.watermark_graph = self._new_graph()
        if not os.path.isdir(self.driver_root):
            return -1
        # only JSON files: pickles of older versions were converted when the checkpoint was opened (``_meta``)
        saved = sorted(
            p for p in os.listdir(self.driver_root) if p.startswith("b=") and p.endswith(".json") and int(p[2:14]) < batch_id
        )
        if not saved:
            if batch_id > 0 and glob.glob(os.path.join(self.state_root, "op=*")):
                msg = f"driver state before batch {batch_id} is missing in {self.driver_root}: the checkpoint is incomplete"
                raise StateError(msg)
            return -1
        path = os.path.join(self.driver_root, saved[-1])
        with open(path, "rb") as f:
            self._restore_graph(load_document(f.read(), DRIVER_FORMAT, DRIVER_VERSION, path))
        return int(saved[-1][2:14])

    def _commit(self, batch_id: int) -> None:
        os.makedirs(self.driver_root, exist_ok=True)
        _write_atomically(self._state_path(batch_id), _driver_document(self.watermark_graph, batch_id))
        self.last_batch = batch_id
        for old in os.listdir(self.driver_root):
            if old.startswith("b=") and old.endswith((".json", ".pkl")) and int(old[2:14]) < batch_id - 2:
                os.remove(os.path.join(self.driver_root, old))
        state_store.prune(self.state_root, batch_id - 2)

    def operator_watermarks(self) -> Dict[str, int]:
        g = self.watermark_graph
        return {
            f"{i}:{t.name}": g.nodes[t.id].operator.current_watermark  # type: ignore[union-attr]
            for i, t in enumerate(g.order)
            if g.nodes[t.id].operator is not None
        }

    def raise_if_failed(self) -> None:
        if self.failure is not None:
            raise self.failure

    # -- one micro-batch
    def __call__(self, df: Any, batch_id: int) -> None:
        try:
            self._run(df, batch_id)
        except BaseException as exc:
            error = user_error_from(exc)  # a user function raised on an executor: its clear message, not Py4J's
            self.failure = exc if error is None else error
            if error is not None and error is not exc:
                raise error from exc
            raise

    def _wm_now(self) -> Dict[int, int]:
        g = self.watermark_graph
        out = {}
        for i, t in enumerate(g.order):
            op = g.nodes[t.id].operator
            if op is not None:
                out[i] = op.current_watermark
        return out

    def _phase(self, name: str) -> Any:
        """Add the time spent in a ``with`` block to ``self.durations[name]`` (ms)."""
        driver = self

        class _Timer:
            def __enter__(self) -> None:
                self.t = time.perf_counter()

            def __exit__(self, *exc: Any) -> None:
                driver.durations[name] = driver.durations.get(name, 0.0) + (time.perf_counter() - self.t) * 1000

        return _Timer()

    def _run(self, df: Any, batch_id: int) -> None:
        self.durations = {}
        self.input_counts = {}
        self.metric_rows = []
        self.future = None
        start = time.perf_counter()
        with self._phase("open"):
            prev_version = self._open(batch_id)
        steps = self._replay_steps(df)
        explicit: List[Dict[int, Optional[int]]] = [{} for _ in steps]
        if self.stepper is not None:
            steps, explicit = self.stepper(self, df, batch_id)
        by_sink: Dict[int, List[Any]] = {i: [] for i in self.plan.sinks}
        materialized: List[Any] = []
        batch_index: Optional[int] = None
        version_in = prev_version
        for step_df, step_watermarks in zip(steps, explicit):
            self.step_watermarks = step_watermarks  # explicit source watermarks after this step (hook)
            # one Flink micro-batch: its rows, then its watermark (a Spark batch holds several replay batches
            # only after a crash between Spark's source log and offset log; each still gets its own watermark)
            step_rows, step_frames, batch_index = self._step(step_df, batch_id, version_in)
            version_in = batch_id  # later steps continue from this batch's own state version
            materialized.extend(step_frames)
            with self._phase("sort"):
                for sink_index, rows in step_rows.items():
                    rows.sort(key=lambda r: list(r["ord"]))
                    by_sink[sink_index].extend(rows)
        with self._phase("deliver"):
            for sink_index, rows in by_sink.items():  # one delivery per Spark batch id: sinks stay idempotent
                self._deliver(self.plan.transformations[sink_index], rows, batch_id)
        with self._phase("commit"):
            for m in materialized:
                m.unpersist()
            self._commit(batch_id)
        self.batches_run += 1
        if self.future is not None:
            self.future.log()
        self.durations["total"] = (time.perf_counter() - start) * 1000
        progress = {
            "batch_id": batch_id,
            "replay_batch": batch_index,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z",
            "watermarks": self.operator_watermarks(),
            "durations_ms": {k: round(v, 1) for k, v in self.durations.items()},
            **self._progress_counters(by_sink),
        }
        progress["sources"] = self._source_metrics(progress)
        progress["operators"] = self._operator_metrics()
        self.history.append(progress)
        try:  # publishing must never fail the batch (a full disk, a logging handler's error)
            log_progress(progress)
            write_progress(self.checkpoint, progress)
        except Exception as exc:
            _log.warning("batch %d: could not publish its progress: %r", batch_id, exc)
        if self.progress is not None:
            self.progress(progress)

    def _source_metrics(self, progress: Dict[str, Any]) -> Dict[str, Dict[str, Dict[str, Any]]]:
        """Per source and source partition: ``currentWatermark`` (None while idle) and ``numRecordsIn``."""
        out: Dict[str, Dict[str, Dict[str, Any]]] = {}
        for name, parts in progress["source_watermarks"].items():
            counts = progress["input_records"].get(name, {})
            out[name] = {
                p: {"currentWatermark": parts.get(p), "numRecordsIn": counts.get(p, 0)} for p in {**counts, **parts}
            }
        return out

    def _operator_metrics(self) -> Dict[str, Dict[str, Any]]:
        """Per operator (by uid): its name, input and output watermark after the batch, and for keyed operators
        the merged metric rows of their state partitions (counters over all steps of the batch, gauges of the
        last step)."""
        g = self.watermark_graph
        out: Dict[str, Dict[str, Any]] = {}
        for i, t in enumerate(self.plan.transformations):
            node = g.nodes.get(t.id)
            if node is None or node.operator is None:
                continue
            entry: Dict[str, Any] = {
                "name": t.name,
                "keyed": bool(t.keyed),
                "currentInputWatermark": node.valve.last_output,
                "currentOutputWatermark": node.operator.current_watermark,
            }
            if t.keyed:
                rows = [(step, m) for step, dest, m in self.metric_rows if dest == i]
                last = max((step for step, _ in rows), default=0)
                counters = merge_partitions([m for _, m in rows])
                gauges = merge_partitions([m for step, m in rows if step == last])
                entry.update({k: (counters[k] if k in OPERATOR_COUNTERS else gauges[k]) for k in counters})
                if self.columnar is not None and i == self.columnar.window:  # Spark pre-aggregated its input
                    source = self.plan.transformations[self.columnar.source].name
                    entry["numRecordsIn"] = sum(self.input_counts.get(source, {}).values())
            out[self.plan.nodes[i].uid] = entry
        return out

    # -- progress counters (demo and monitoring): read-only views of what the batch saw and delivered
    def _progress_counters(self, by_sink: Dict[int, List[Any]]) -> Dict[str, Any]:
        """``input_records`` (this batch, per source and partition), ``source_watermarks`` (per source and
        partition, None while idle), ``sink_records`` (records delivered to each sink this batch, by sink uid),
        ``dead_letters`` (malformed records written to dead-letter tables, per source) and ``future_records``
        (records more than ``future_horizon_ms`` ahead of processing time, per source and partition)."""
        g = self.watermark_graph
        return {
            "input_records": {name: dict(parts) for name, parts in self.input_counts.items()},
            "source_watermarks": {
                t.name: {str(p): wm for p, wm in g.runners[t.id].splits.partition_watermarks().items()}
                for t in g.order
                if t.id in g.runners
            },
            "sink_records": {
                self.plan.nodes[i].uid: len(rows) for i, rows in by_sink.items()
            },
            "dead_letters": dead_letter_counts(self.plan.transformations, by_sink),
            "future_records": {} if self.future is None else {k: dict(v) for k, v in self.future.counts.items()},
        }

    def _replay_steps(self, df: Any) -> List[Any]:
        """The Flink micro-batches in this Spark batch: one, unless the batch holds several replay files."""
        from pyspark.sql import functions as F

        if not any(isinstance(t.source, MicroBatchSource) for t in self.plan.transformations if t.kind == "source"):
            return [df]
        indices = sorted(int(r["batch"]) for r in df.select("batch").distinct().collect() if r["batch"] is not None)
        replay = [i for i in indices if i >= 0]
        if len(replay) <= 1:
            return [df]
        first = F.col("batch") == replay[0]
        steps = [df.filter(first | (F.col("batch") < 0))]  # rows of DataFrame sources go with the first
        steps.extend(df.filter(F.col("batch") == i) for i in replay[1:])
        return steps

    def _step_columnar(self, df: Any, batch_id: int, version_in: int) -> tuple:  # type: ignore[type-arg]
        """:meth:`_step` for the columnar path (``spark/columnar.py``): Spark pre-aggregates on-time rows."""
        cw, plan, parts = self.columnar, self.exec_plan, self.partitions
        assert cw is not None
        now = self.env.clock.now()
        wm_prev = self._wm_now()
        with self._phase("plan"):
            prepared = columnar.prepared(cw, df, parts)  # read twice (statistics, keyed); cheaper than caching it
        with self._phase("stats"):
            horizon = self.exec_plan.future_horizon_ms
            rows = columnar.statistics(prepared, None if horizon is None else now + horizon)
            stats = self._take_future(
                [dict(s, dest=cw.source, part="" if s["part"] is None else s["part"]) for s in rows], now
            )
        with self._phase("watermarks"):
            batch_index = self._advance_watermarks(stats)
            wm_new = self._wm_now()
        with self._phase("plan"):
            partials, others = columnar.split(cw, prepared, wm_prev[cw.window])
            if self._heartbeats is None:
                self._heartbeats = columnar.heartbeats(cw, partials, parts)
            partials = partials.unionByName(self._heartbeats)
            args = (cw, plan, wm_prev[cw.window], wm_new[cw.window], now, parts, self.state_root, batch_id, version_in)
            keyed = partials.groupBy("__sp").cogroup(others.groupBy("__sp")).applyInPandas(_columnar_fn(*args), ROW_DDL)
        if plan.levels[1:]:
            keyed = keyed.persist()
            keyed.count()  # materialise before later levels read it; otherwise the sinks' collect computes it
        return self._levels_and_sinks([keyed], [keyed], plan.levels[1:], wm_prev, wm_new, now, batch_id, version_in) + (
            batch_index,
        )

    def _step(self, df: Any, batch_id: int, version_in: int) -> tuple:  # type: ignore[type-arg]
        """Route, advance watermarks and run the keyed levels for one Flink micro-batch; returns the sink
        rows by sink, the persisted frames to release, and the replay batch index."""
        if self.columnar is not None:
            return self._step_columnar(df, batch_id, version_in)
        from pyspark.sql import functions as F

        plan, parts = self.exec_plan, self.partitions
        now = self.env.clock.now()
        wm_prev = self._wm_now()
        source_index = {plan.nodes[i].uid: i for i in plan.sources}

        if self.fused is not None:
            source_t, node = self.plan.transformations[self.fused], self.fused
            records = _dataframe_records(source_t)
            if source_t.source.order_columns:  # order comes from columns: spread the route over all cores
                df = df.repartition(parts)
            routed = df.mapInPandas(
                lambda frames: route_records(plan, records(frames), wm_prev, now, parts, node), ROW_DDL
            ).persist()
        else:
            routed = df.mapInPandas(
                lambda frames: route_partition(plan, frames, wm_prev, now, parts, source_index), ROW_DDL
            ).persist()
        with self._phase("route"):
            stats = self._take_future(routed.filter(F.col("kind").isin("stat", "future")).collect(), now)
        with self._phase("watermarks"):
            batch_index = self._advance_watermarks(stats)
        wm_new = self._wm_now()

        outputs = [routed.filter(F.col("kind") == "rec")]
        return self._levels_and_sinks(outputs, [routed], plan.levels, wm_prev, wm_new, now, batch_id, version_in) + (
            batch_index,
        )

    def _levels_and_sinks(
        self,
        outputs: List[Any],
        materialized: List[Any],
        levels: List[int],
        wm_prev: Dict[int, int],
        wm_new: Dict[int, int],
        now: int,
        batch_id: int,
        version_in: int,
    ) -> tuple:  # type: ignore[type-arg]
        """Run the keyed ``levels`` on what the earlier stages output, then collect the sink rows."""
        from pyspark.sql import functions as F

        plan, parts = self.exec_plan, self.partitions
        for level in levels:
            nodes = plan.keyed_at(level)
            pending = outputs[0]
            for o in outputs[1:]:
                pending = pending.unionByName(o)
            pending = pending.filter(F.col("dest").isin(nodes))
            heartbeats = self.spark.createDataFrame(
                [("hb", n, sp) for n in nodes for sp in range(parts)], "kind string, dest int, sp int"
            )
            for c in ("key", "value", "ts", "ord", "part", "stat_max", "stat_count", "stat_batch"):
                heartbeats = heartbeats.withColumn(c, F.lit(None).cast(outputs[0].schema[c].dataType))
            keyed = (
                pending.unionByName(heartbeats)
                .groupBy("dest", "sp")
                .applyInPandas(_keyed(plan, wm_prev, wm_new, now, parts, self.state_root, batch_id, version_in), ROW_DDL)
                .persist()
            )
            with self._phase(f"keyed level {level}"):
                keyed.count()
            outputs.append(keyed)
            materialized.append(keyed)

        by_sink: Dict[int, List[Any]] = {i: [] for i in plan.sinks}
        step = len({s for s, _, _ in self.metric_rows})
        with self._phase("collect"):
            for o in outputs:  # the keyed operators' metric rows come with the sinks' rows (no job of their own)
                wanted = F.col("dest").isin(plan.sinks) | (F.col("kind") == "metric")
                for r in o.filter(wanted).select("kind", "dest", "value", "ord").collect():
                    if r["kind"] == "metric":
                        self.metric_rows.append((step, int(r["dest"]), json.loads(r["value"])))
                    else:
                        by_sink[int(r["dest"])].append(r)
        return by_sink, materialized

    def _take_future(self, rows: List[Any], now: int) -> List[Any]:
        """Record the ``future`` rows (far-future records, see ``spark/plan.py``); returns the other rows."""
        out = []
        for row in rows:
            if row["kind"] != "future":
                out.append(row)
                continue
            if self.future is None:
                self.future = FutureRecords(self.exec_plan.future_horizon_ms or 0, now)
            t = self.plan.transformations[int(row["dest"])]
            self.future.add(t.name, row, getattr(t.source, "order_columns", ()) if t.kind == "source" else ())
        return out

    def _advance_watermarks(self, stats: List[Any]) -> Optional[int]:
        """Feed the batch's statistics to the generators and run the periodic emission; returns the replay
        batch index seen (if any). A replay source ends its input after its last batch, as on the local engine."""
        g = self.watermark_graph
        by_source: Dict[int, List[Any]] = {}
        for row in stats:
            by_source.setdefault(int(row["dest"]), []).append(row)
        batch_index = None
        for i, t in enumerate(g.order):
            node = g.nodes[t.id]
            for row in by_source.get(i, ()):
                if row["stat_batch"] is not None and row["stat_batch"] >= 0:
                    batch_index = max(int(row["stat_batch"]), batch_index if batch_index is not None else -1)
                if t.kind == "source":
                    if row["part"] is None:
                        continue  # a batch marker: no partition, no event
                    part = _part(t, row["part"])
                    counts = self.input_counts.setdefault(t.name, {})  # progress counter
                    counts[str(part)] = counts.get(str(part), 0) + int(row["stat_count"] or 0)
                    if row["stat_count"]:
                        g.runners[t.id].observe(part, None, int(row["stat_max"]))
                    else:
                        g.runners[t.id].splits.add_partition(part)
                elif isinstance(node.operator, TimestampsAndWatermarksOperator) and row["stat_count"]:
                    node.operator.generator.on_event(None, int(row["stat_max"]), node.operator.wm_output)
        for t in g.order:
            node = g.nodes[t.id]
            runner = g.runners.get(t.id)
            if runner is not None:
                source = t.source
                if isinstance(source, MicroBatchSource):
                    if batch_index is None:
                        continue
                    if batch_index < len(source.batches):
                        runner.periodic_emit(batch_index)
                else:
                    runner.emit_periodic(self.step_watermarks.get(t.id))
            elif node.operator is not None:
                node.operator.on_periodic_emit()
        for t in g.order:
            runner = g.runners.get(t.id)
            if runner is not None and isinstance(t.source, MicroBatchSource) and batch_index is not None:
                runner.finish_if_done(batch_index)  # the local engine's rule: end of input after the last batch
        return batch_index

    def _deliver(self, t: Transformation, rows: List[Any], batch_id: int) -> None:
        context = {
            "checkpoint": self.checkpoint,
            "sink_uid": self.plan.nodes[self.plan.transformations.index(t)].uid,
            "watermark": self.watermark_graph.nodes[t.id].valve.last_output,  # the sink's input, after the batch
        }
        _deliver_values(self.spark, t, [loads(r["value"]) for r in rows], batch_id, context)


def _source_stepper(plan: ExecPlan) -> Optional[Callable[..., Any]]:
    """The ``steps(driver, df, batch_id)`` hook of the one source that splits Spark batches itself, if any."""
    steppers = [t for t in plan.transformations if t.kind == "source" and getattr(t.source, "steps", None) is not None]
    if not steppers:
        return None
    if len(steppers) > 1 or any(isinstance(t.source, MicroBatchSource) for t in plan.transformations if t.kind == "source"):
        msg = (
            "a pipeline may read one source with upstream watermarks (from_delta) and no replay source "
            f"(MicroBatchSource) besides it; got {[t.name for t in plan.transformations if t.kind == 'source']}"
        )
        raise UnsupportedFeatureError(msg)
    return steppers[0].source.steps  # type: ignore[no-any-return]


def _deliver_values(
    spark: Any, t: Transformation, values: List[Any], batch_id: int, context: Optional[Dict[str, Any]] = None
) -> None:
    """Hand a sink its values of one micro-batch: a typed DataFrame for ``foreach_batch``, the values and the
    ``context`` (checkpoint, sink uid, the sink's input watermark after the batch) for a ``batch_writer`` such as
    :class:`~pyspark_flinkish.datastream.connectors.delta.DeltaSink`, else one call per value."""
    if "batch_writer" in t.spec:
        t.spec["batch_writer"](spark, values, batch_id, context or {})
        return
    uid = (context or {}).get("sink_uid") or t.uid or t.name
    try:
        if "foreach_batch" in t.spec:
            from .types import to_rows, to_spark_type

            output_type = t.inputs[0].output_type
            df = spark.createDataFrame(to_rows(values, output_type), to_spark_type(output_type))
            call_user(t.spec["foreach_batch"], lambda: f"{t.name}: foreach_batch function (batch {batch_id})", df, batch_id)
        else:
            for v in values:
                call_user(t.sink, lambda v=v: f"{t.name}: sink function on {short(v)}", v)
    except UserFunctionError as exc:
        raise in_node(exc, t.name, uid)  # noqa: B904 (its cause is the user's exception)


def _keyed(
    plan: ExecPlan,
    wm_prev: Dict[int, int],
    wm_new: Dict[int, int],
    now: int,
    parts: int,
    state_root: str,
    batch_id: int,
    prev_version: int,
) -> Callable[[Any], Any]:
    """The applyInPandas function of one batch's keyed level, with its arguments bound now (not by loop reference)."""

    def keyed(pdf):  # type: ignore[no-untyped-def]
        with reported_to_driver(plan.nodes[int(pdf["dest"].iloc[0])]):
            return run_keyed_partition(plan, pdf, wm_prev, wm_new, now, parts, state_root, batch_id, prev_version)

    return keyed


def _columnar_fn(cw: Any, plan: ExecPlan, *args: Any) -> Callable[[Any, Any], Any]:
    """The cogroup function of one batch's columnar window, with its arguments bound now."""

    def keyed(partials, others):  # type: ignore[no-untyped-def]
        with reported_to_driver(plan.nodes[cw.window]):
            return columnar.run_partition(cw, plan, partials, others, *args)

    return keyed


META_FILE = "meta.json"
META_FORMAT = "pyspark_flinkish.checkpoint-meta"
META_VERSION = 1
DRIVER_FORMAT = "pyspark_flinkish.driver-state"
DRIVER_VERSION = 1


def _driver_document(graph: LocalExecutor, batch_id: int) -> bytes:
    """``driver/b=<batch>.json``: the watermark bookkeeping after ``batch_id`` (plain data; only a user's own
    watermark generator would be pickled, under a ``P`` tag)."""
    return dump_document(DRIVER_FORMAT, DRIVER_VERSION, {"batch": batch_id, **graph.watermark_state()})


def _write_atomically(path: str, data: bytes) -> None:
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _restore_pickled_graph(graph: LocalExecutor, state: Dict[str, Any], clock: Clock) -> None:
    """A driver state pickled by an older version (objects, keyed by position or, older still, by transformation
    id) into ``graph``; only used to convert such a checkpoint to JSON once."""
    by_position = state.get("keys") == "position"
    key = {t.id: (i if by_position else t.id) for i, t in enumerate(graph.order)}
    for t in graph.order:
        n = graph.nodes[t.id]
        saved = state["nodes"][key[t.id]]
        n.valve = saved["valve"]
        if n.operator is not None and saved["op"] is not None:
            n.operator.current_watermark = saved["op"]["wm"]
            if isinstance(n.operator, TimestampsAndWatermarksOperator):
                n.operator.generator = saved["op"]["generator"]
                n.operator.wm_output.current = saved["op"]["current"]
                n.operator.wm_output.idle = saved["op"]["idle"]
    for tid, r in graph.runners.items():
        saved = state["runners"][key[tid]]
        r.splits, r.current, r.idle, r.finished = saved["splits"], saved["current"], saved["idle"], saved["finished"]
    # unpickled generators hold a copy of the clock they were pickled with
    for r in graph.runners.values():
        r.splits.clock = clock
        for gen in r.splits.generators.values():
            _rebind_clock(gen, clock)
    for t in graph.order:
        op = graph.nodes[t.id].operator
        if isinstance(op, TimestampsAndWatermarksOperator):
            _rebind_clock(op.generator, clock)


def _rebind_clock(generator: Any, clock: Clock) -> None:
    """Point a (restored) watermark generator's idleness timer at ``clock``."""
    if isinstance(generator, WatermarksWithIdleness):
        generator.timer.clock = clock
        _rebind_clock(generator.generator, clock)


def _part(t: Transformation, text: Optional[str]) -> Any:
    if text is None:
        return None
    for p in getattr(t.source, "partitions", ()):
        if repr(p) == text or str(p) == text:
            return p
    return text


def _dataframe_records(t: Transformation) -> Callable[[Any], Iterator[Tuple[Any, Optional[int], Optional[str], List[int]]]]:
    """For a DataFrame source: a function from pandas frames of its rows to ``(element, timestamp, source
    partition, order)`` per row (on the executors)."""
    src: _DataFrameSource = t.source
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
                    element = Row(**{c: _py(rec[c]) for c in columns})
                ts = None
                if ts_col is not None:
                    raw = rec[ts_col]
                    ts = None if raw is None or (not isinstance(raw, int) and pd.isna(raw)) else _to_millis(raw)
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


def _assign_timestamp(t: Transformation, node: Any, value: Any, previous: Optional[int]) -> Optional[int]:
    """The source's timestamp assigner on ``value`` (driver side); its error names the source."""
    try:
        where = f"{t.name}: timestamp assigner on {short(value)}"
        return call_user(t.watermark_strategy.extract_timestamp, lambda: where, value, previous)  # type: ignore[no-any-return]
    except UserFunctionError as exc:
        raise in_node(exc, node.name, node.uid)  # noqa: B904 (its cause is the user's exception)


def _dataframe_rows(t: Transformation, uid: str) -> Any:
    """Convert a streaming DataFrame source to the common source rows (on the executors)."""
    records = _dataframe_records(t)
    node = Node(index=-1, kind="source", uid=uid, factory=None, keyed=False, key_selector=None, name=t.name)

    def convert(frames: Any) -> Any:
        import pandas as pd

        out: Dict[str, List[Any]] = {c: [] for c in ("src", "value", "ts", "part", "ord", "batch", "marker")}
        with reported_to_driver(node):
            for element, ts, part, order in records(frames):
                for c, v in zip(out, (uid, dumps(element), ts, part, order, -1, False)):
                    out[c].append(v)
        frame = pd.DataFrame(out)
        frame["ts"] = frame["ts"].astype("Int64")
        yield frame

    return t.source.df.mapInPandas(convert, SOURCE_DDL)


def _py(value: Any) -> Any:
    if hasattr(value, "item") and not isinstance(value, (bytes, str)):
        try:
            return value.item()
        except (ValueError, AttributeError):
            return value
    return value


def _to_millis(value: Any) -> int:
    import pandas as pd

    if isinstance(value, pd.Timestamp):
        return int(value.value // 1_000_000)
    if hasattr(value, "timestamp"):
        return int(round(value.timestamp() * 1000))
    return int(value)
