"""``StreamExecutionEnvironment``: where pipelines start (sources) and how they run (``execute``).

``get_execution_environment()`` returns the JVM-free local environment: it runs the whole pipeline in
this Python process, deterministically, one micro-batch at a time (see ``docs/index.md`` for the execution
model). The same pipeline code runs on Spark through the Spark executors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, ClassVar, List, Optional, Sequence, overload

from ..common.configuration import Configuration
from ..common.job_client import JobID
from ..common.job_execution_result import JobExecutionResult
from ..core.clock import Clock, ManualClock, SystemClock
from ..core.coders import CoderError, type_name
from ..core.declared_output import changes_values, declared
from ..core.errors import InvalidArgumentError, InvalidPipelineError, InvalidTypeError, UnsupportedFeatureError
from ..core.typeinfo import TypeInformation
from ..core.watermarks import WatermarkStrategy
from .data_stream import DataStream
from .environment_config import NO_OPERATORS, EnvironmentConfiguration
from .executors import LOCAL, SPARK, executor_entry, require_spark, spark_only_error
from .plan import Transformation, resolve_parallelism
from .runtime_mode import plan_for_mode
from .sources import CollectionSource, MicroBatch, MicroBatchSource

if TYPE_CHECKING:
    from ..spark.environment import SparkStreamExecutionEnvironment


class StreamExecutionEnvironment(EnvironmentConfiguration):
    """The context a pipeline is built in and executed by (PyFlink's ``StreamExecutionEnvironment``).

    Args:
        clock: processing-time clock (default: the wall clock). Pass a :class:`ManualClock` for
            deterministic processing-time timers and idleness; ``MicroBatch.processing_time`` sets it.
    """

    executor: ClassVar[str] = LOCAL
    """The executor that runs this environment's pipelines (:mod:`~pyspark_flinkish.datastream.executors`):
    ``"local"`` here, ``"spark"`` in the Spark environment."""

    def __init__(self, clock: Optional[Clock] = None) -> None:
        self.clock: Clock = clock if clock is not None else SystemClock()
        self._sinks: List[Transformation] = []
        self._parallelism = 1
        self.last_result: Optional[JobExecutionResult] = None

    @overload
    @staticmethod
    def get_execution_environment(
        spark: Optional[Configuration] = None,
        clock: Optional[Clock] = None,
        *,
        configuration: Optional[Configuration] = None,
    ) -> StreamExecutionEnvironment: ...

    @overload
    @staticmethod
    def get_execution_environment(
        spark: Any, clock: Optional[Clock] = None, *, configuration: Optional[Configuration] = None, **options: Any
    ) -> SparkStreamExecutionEnvironment: ...

    @staticmethod
    def get_execution_environment(
        spark: Any = None, clock: Optional[Clock] = None, *, configuration: Optional[Configuration] = None, **options: Any
    ) -> Any:
        """Without arguments: the JVM-free local environment. With a SparkSession: a
        :class:`~pyspark_flinkish.spark.SparkStreamExecutionEnvironment` that runs the same pipeline as a
        Spark Structured Streaming query (``options`` such as ``state_partitions`` go to it).

        With a :class:`~pyspark_flinkish.common.Configuration` (PyFlink's ``get_execution_environment(configuration)``,
        as the first argument or ``configuration=``, also beside a SparkSession): the environment, configured with it
        as :meth:`configure` does (``parallelism.default``, ``execution.runtime-mode``, ...; later changes to the
        configuration do not reach the environment, as in Flink)."""
        if isinstance(clock, Configuration):
            msg = (
                "get_execution_environment(spark, configuration): the second argument is the processing-time clock; "
                "give the Configuration as configuration=... (get_execution_environment(spark, configuration=conf))"
            )
            raise InvalidTypeError(msg)
        if isinstance(spark, Configuration):
            if configuration is not None:
                msg = (
                    "get_execution_environment: got a Configuration as the first argument and as configuration=; "
                    "give it once (the first argument is a SparkSession or PyFlink's configuration)"
                )
                raise InvalidArgumentError(msg)
            spark, configuration = None, spark
        elif isinstance(spark, dict):
            msg = (
                "get_execution_environment takes a SparkSession or a Configuration; got a dict: give its settings as "
                "Configuration.from_dict(d) (pyspark_flinkish.common.Configuration)"
            )
            raise InvalidTypeError(msg)
        if spark is not None:
            env = executor_entry(SPARK)(spark, clock=clock, **options)
        elif options:
            msg = f"options {sorted(options)} apply to the Spark environment only"
            raise UnsupportedFeatureError(msg)
        else:
            env = StreamExecutionEnvironment(clock=clock)
        if configuration is not None:
            env.configure(configuration)
        return env

    # -------------------------------------------------------------------- configuration
    def set_parallelism(self, parallelism: int) -> StreamExecutionEnvironment:  # type: ignore[override]
        """The parallelism of the operators made from now on, as in Flink: what their functions' runtime context
        reports (``core/subtasks.py``) and how often a broadcast operator emits what ``process_broadcast_element``
        returns. The engines run every operator as one instance (results do not depend on parallelism in Flink's
        keyed semantics, except timer ties across keys). As Flink, it takes an integer >= 1 or -1
        (``ExecutionConfig.PARALLELISM_DEFAULT``, the system's default: 1 here)."""
        if not isinstance(parallelism, int) or (parallelism < 1 and parallelism != -1):
            msg = (
                "Parallelism must be at least one, or ExecutionConfig.PARALLELISM_DEFAULT (use system default). "
                f"(set_parallelism: got {parallelism!r}; -1 is the default)"
            )
            raise InvalidArgumentError(msg)
        self._parallelism = parallelism
        return self

    def get_parallelism(self) -> int:
        return self._parallelism

    def set_manual_clock(self, start: int = 0) -> ManualClock:
        clock = ManualClock(start)
        self.clock = clock
        return clock

    # -------------------------------------------------------------------- sources
    def from_source(self, source: Any, watermark_strategy: WatermarkStrategy, source_name: str = "Source") -> DataStream:
        """A stream from ``source`` (a :class:`MicroBatchSource`), with timestamps and per-partition
        watermarks from ``watermark_strategy``. A ``KafkaSource`` needs the Spark environment."""
        from .connectors.kafka import KafkaSource

        if isinstance(source, KafkaSource):
            require_spark(self.executor, "KafkaSource")
        if not isinstance(source, MicroBatchSource):
            msg = f"from_source needs a MicroBatchSource for the local engine; got {type(source).__name__}"
            raise InvalidTypeError(msg)
        if not isinstance(watermark_strategy, WatermarkStrategy):
            msg = f"from_source needs a WatermarkStrategy; got {type(watermark_strategy).__name__}"
            raise InvalidTypeError(msg)
        if source.explicit_watermarks and watermark_strategy.generates_watermarks:
            msg = (
                "this MicroBatchSource gives explicit watermarks per batch; use "
                "WatermarkStrategy.no_watermarks().with_timestamp_assigner(...) so that the two do not compete"
            )
            raise InvalidTypeError(msg)
        output_type = getattr(source, "output_type", None)  # a FileSource of CSV or Parquet: its rows' type
        t = Transformation("source", source_name, source=source, watermark_strategy=watermark_strategy, output_type=output_type)
        return DataStream(self, t)

    def from_micro_batches(
        self,
        batches: Sequence[Any],
        watermark_strategy: Optional[WatermarkStrategy] = None,
        end_of_input: bool = True,
        partitions: Sequence[Any] = (0,),
        source_name: str = "MicroBatches",
    ) -> DataStream:
        """Shorthand for ``from_source(MicroBatchSource(batches, ...), watermark_strategy)``."""
        source = MicroBatchSource(
            [b if isinstance(b, MicroBatch) else MicroBatch(b) for b in batches], end_of_input, list(partitions)
        )
        strategy = watermark_strategy if watermark_strategy is not None else WatermarkStrategy.no_watermarks()
        return self.from_source(source, strategy, source_name)

    def from_collection(self, collection: Sequence[Any], type_info: Optional[TypeInformation] = None) -> DataStream:
        """A bounded stream of ``collection`` without timestamps, in one micro-batch. With ``type_info``, every
        element is that type as PyFlink hands it on: a ``Types.ROW``/``ROW_NAMED`` element (a tuple, list, dict or
        ``Row``) becomes a :class:`~pyspark_flinkish.common.Row` whose fields are reachable by name, and every
        value is as PyFlink's coder for its type leaves it (a ``Types.FLOAT()`` rounded to 32 bits;
        :mod:`~pyspark_flinkish.core.coders`). An element the type cannot hold is refused here, as PyFlink's
        ``from_collection`` refuses it."""
        elements = list(collection)
        if changes_values(type_info):
            try:
                elements = [declared(e, type_info) for e in elements]
            except CoderError as exc:
                msg = f"from_collection(..., type_info={type_name(type_info)}): {exc}. Hint: give values of that type"
                raise InvalidArgumentError(msg) from exc.cause
        t = Transformation(
            "source",
            "Collection",
            source=CollectionSource(elements),
            watermark_strategy=WatermarkStrategy.no_watermarks(),
            output_type=type_info,
        )
        return DataStream(self, t)

    def from_delta(self, path: str, *args: Any, **options: Any) -> DataStream:
        """A Delta table as a source: needs a Spark environment (see
        :meth:`~pyspark_flinkish.spark.SparkStreamExecutionEnvironment.from_delta`); refused here up front."""
        raise spark_only_error(self.executor, "from_delta", f"({path!r})")

    def from_kafka(self, topics: Any, *args: Any, **options: Any) -> DataStream:
        """Kafka topics as a source: needs a Spark environment (see
        :meth:`~pyspark_flinkish.spark.SparkStreamExecutionEnvironment.from_kafka`); refused here up front."""
        raise spark_only_error(self.executor, "from_kafka", f"({topics!r})")

    def from_dataframe(self, df: Any, *args: Any, **options: Any) -> DataStream:
        """A streaming DataFrame as a source: needs a Spark environment (see
        :meth:`~pyspark_flinkish.spark.SparkStreamExecutionEnvironment.from_dataframe`); refused here up front."""
        raise spark_only_error(self.executor, "from_dataframe")

    # -------------------------------------------------------------------- execution
    def _add_sink(self, t: Transformation) -> None:
        self._sinks.append(t)

    def _take_sinks(self, extra_sinks: Sequence[Transformation] = ()) -> List[Transformation]:
        """The sinks added since the last execution (and ``extra_sinks``), which the environment then forgets: as
        Flink's ``getStreamGraph(clearTransformations=true)`` when a job is submitted (``execute``, ``execute_async``,
        ``execute_and_collect``), a second ``execute()`` runs only the sinks added after the first. With none, Flink's
        error: there is nothing to run."""
        sinks = list(self._sinks) + list(extra_sinks)
        self._sinks = []
        if not sinks:
            raise InvalidPipelineError(NO_OPERATORS)
        return sinks

    def _pending_sinks(self) -> List[Transformation]:
        """The sinks added so far, kept (an executor's restartable form of ``execute``); with none, Flink's error."""
        if not self._sinks:
            raise InvalidPipelineError(NO_OPERATORS)
        return list(self._sinks)

    def execute(
        self, job_name: str = "pyspark_flinkish job", progress: Optional[Callable[[Any], None]] = None
    ) -> JobExecutionResult:
        """Run every sink's pipeline (those added since the last ``execute``) to the end of its sources.

        As PyFlink's, it clears the pipeline: a later ``execute()`` runs only sinks added after this one, and raises
        Flink's "No operators defined in streaming topology" when there are none. ``progress``, if given, is called
        after every micro-batch with a :class:`~pyspark_flinkish.local.executor.BatchProgress`.
        """
        return self._run(job_name, self._take_sinks(), progress)

    def _execute(
        self,
        job_name: Optional[str],
        extra_sinks: Sequence[Transformation] = (),
        progress: Optional[Callable[[Any], None]] = None,
    ) -> JobExecutionResult:
        """``execute_and_collect``: the pending sinks and ``extra_sinks`` as one job (Flink's ``executeAsync``)."""
        return self._run(job_name, self._take_sinks(extra_sinks), progress)

    def _run(
        self,
        job_name: Optional[str],
        sinks: List[Transformation],
        progress: Optional[Callable[[Any], None]] = None,
        job_id: Any = None,
    ) -> JobExecutionResult:
        resolve_parallelism(sinks, self.get_max_parallelism())  # the environment's max parallelism, as Flink's job graph
        sinks = plan_for_mode(self.get_runtime_mode(), sinks)  # BATCH: datastream.runtime_mode
        started = self.clock.now()  # the processing-time clock: a ManualClock makes the runtime deterministic
        result = executor_entry(LOCAL)(sinks, self.clock, progress, job_name or "pyspark_flinkish job")
        result.net_runtime = max(0, self.clock.now() - started)
        result.job_id = job_id if job_id is not None else JobID()
        self.last_result = result
        return result



__all__ = ["JobExecutionResult", "StreamExecutionEnvironment"]
