"""PyFlink's ``DataStream`` API: ``DataStream``, ``KeyedStream``, ``WindowedStream``.

Calls build a plan (:mod:`.plan`); nothing runs until ``env.execute()`` or ``execute_and_collect()``.
Arguments are validated when the call is made, with errors naming the Flink concept.
"""

from __future__ import annotations

import pickle
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, List, NoReturn, Optional, Tuple, Union

from ..core.all_window_functions import NullByteKeySelector
from ..core.assigners import GlobalWindows, WindowAssigner
from ..core.coders import from_java
from ..core.declared_output import declaring
from ..core.durations import TimeLike, to_millis
from ..core.errors import InvalidArgumentError, InvalidPipelineError, InvalidTypeError, UnsupportedFeatureError
from ..core.evictors import CountEvictor, Evictor
from ..core.functions import (
    AggregateFunction,
    FilterFunction,
    FlatMapFunction,
    Function,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    ProcessFunction,
    ProcessWindowFunction,
    ReduceFunction,
    SinkFunction,
    WindowFunction,
)
from ..core.operators import (
    FilterOperator,
    FlatMapOperator,
    KeyedProcessOperator,
    MapOperator,
    ProcessOperator,
    TimestampsAndWatermarksOperator,
)
from ..core.partitioning import CustomPartitioning, Partitioner
from ..core.print_lines import PrintLines, PrintSettings
from ..core.records import OutputTag
from ..core.rows import Row
from ..core.subtasks import MAX_MAX_PARALLELISM
from ..core.triggers import CountTrigger, PurgingTrigger, Trigger
from ..core.typeinfo import RowDataTypeInfo, TypeInformation, Types
from ..core.watermarks import WatermarkStrategy
from ..core.window_operator import (
    PassThroughWindowFunction,
    WindowContents,
    WindowFunctionAdapter,
    WindowOperator,
)
from .connected_streams import BroadcastConnectedStream, BroadcastStream, ConnectedStreams, broadcast_stream, connect
from .executors import require_spark
from .operator_settings import OperatorSettings, SinkSettings
from .plan import (
    ForeachBatchSpec,
    KeyedProcessSpec,
    NodeSpec,
    PrintSinkSpec,
    SinkFunctionSpec,
    StatelessSpec,
    TimestampsSpec,
    Transformation,
    WindowSpec,
    made_with_parallelism,
)

if TYPE_CHECKING:
    from .all_window import AllWindowedStream
    from .join import CoGroupedStreams, IntervalJoin, JoinedStreams
    from .stream_execution_environment import StreamExecutionEnvironment


def _method(obj: Any, method: str, what: str, example: str) -> Callable[..., Any]:
    """The user's function: ``obj.method`` for Function objects, or ``obj`` itself if it is a callable."""
    if isinstance(obj, type) and issubclass(obj, Function):
        msg = f"{what} must be a {example} instance: got the class {obj.__name__}; pass {obj.__name__}(...)"
        raise InvalidTypeError(msg)
    bound = None if isinstance(obj, type) else getattr(obj, method, None)
    if callable(bound):
        return bound  # type: ignore[no-any-return]
    if callable(obj):  # any callable, as in PyFlink: a lambda, a function, a builtin or a class such as int or str
        return obj  # type: ignore[no-any-return]
    msg = f"{what} must be a {example} or a callable; got {type(obj).__name__} {obj!r}"
    raise InvalidTypeError(msg)


class CloseableIterator(Iterator[Any]):
    """The result of ``execute_and_collect``: an iterator that is also a context manager."""

    def __init__(self, values: List[Any]) -> None:
        self._values = values
        self._it = iter(values)

    def __next__(self) -> Any:
        return next(self._it)

    def __iter__(self) -> CloseableIterator:
        return self

    def close(self) -> None:
        self._it = iter(())

    def __enter__(self) -> CloseableIterator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class DataStream(OperatorSettings):
    """A stream of elements (PyFlink's ``DataStream``). Flink's per-operator runtime settings
    (``slot_sharing_group``, ``disable_chaining``, ...) are accepted as no-ops: see :mod:`.operator_settings`."""

    def __init__(self, env: StreamExecutionEnvironment, transformation: Transformation) -> None:
        self._env = env
        self._t = transformation

    # ------------------------------------------------------------------ metadata (accepted, recorded)
    def get_name(self) -> str:
        return self._t.name

    def name(self, name: str) -> DataStream:
        self._t.name = name
        return self

    def uid(self, uid: str) -> DataStream:
        """Stable operator id: names the operator's state in checkpoints (as in Flink)."""
        self._t.uid = uid
        return self

    def set_parallelism(self, parallelism: int) -> DataStream:
        if parallelism < 1:
            msg = f"parallelism must be >= 1; got {parallelism}"
            raise InvalidArgumentError(msg)
        selector = getattr(self._t.spec, "key_selector", None)  # window_all's: NullByteKeySelector().get_key
        if parallelism != 1 and isinstance(getattr(selector, "__self__", selector), NullByteKeySelector):
            msg = f"The parallelism of non parallel operator must be 1 ({self._t.name}, e.g. window_all); got {parallelism}"
            raise InvalidPipelineError(msg)
        self._t.set_parallelism(parallelism)  # an operator whose output depends on it is made with it (broadcast)
        return self

    def set_max_parallelism(self, max_parallelism: int) -> DataStream:
        """The operator's max parallelism (its number of key groups, 1 … 32768): the key groups its keys are
        assigned to, and what its functions' ``get_max_number_of_parallel_subtasks()`` returns."""
        if not isinstance(max_parallelism, int) or not 0 < max_parallelism <= MAX_MAX_PARALLELISM:
            msg = f"max parallelism must be an int in 1..{MAX_MAX_PARALLELISM} (Flink's bound); got {max_parallelism!r}"
            raise InvalidArgumentError(msg)
        self._t.set_max_parallelism(max_parallelism)
        return self

    def get_type(self) -> Optional[TypeInformation]:
        return self._t.output_type

    def get_execution_environment(self) -> StreamExecutionEnvironment:
        return self._env

    # ------------------------------------------------------------------ transformations
    def _one_input(
        self, name: str, factory: Callable[[], Any], output_type: Any, spec: NodeSpec, keyed: bool = False
    ) -> Transformation:
        factory = declaring(factory, output_type)
        t = Transformation("operator", name, [self._t], factory=factory, output_type=output_type, keyed=keyed, spec=spec)
        made_with_parallelism(t, self._env)
        return t

    def map(self, func: Union[MapFunction, Callable[[Any], Any]], output_type: Optional[TypeInformation] = None) -> DataStream:
        fn = _method(func, "map", "map()'s function", "MapFunction")
        obj = func if isinstance(func, MapFunction) else None
        t = self._one_input("Map", lambda: MapOperator("Map", fn, obj), output_type, StatelessSpec("map"))
        return DataStream(self._env, t)

    def flat_map(
        self, func: Union[FlatMapFunction, Callable[[Any], Iterable[Any]]], output_type: Optional[TypeInformation] = None
    ) -> DataStream:
        fn = _method(func, "flat_map", "flat_map()'s function", "FlatMapFunction")
        obj = func if isinstance(func, FlatMapFunction) else None
        t = self._one_input("FlatMap", lambda: FlatMapOperator("FlatMap", fn, obj), output_type, StatelessSpec("flat_map"))
        return DataStream(self._env, t)

    def filter(self, func: Union[FilterFunction, Callable[[Any], bool]]) -> DataStream:
        fn = _method(func, "filter", "filter()'s function", "FilterFunction")
        obj = func if isinstance(func, FilterFunction) else None
        t = self._one_input("Filter", lambda: FilterOperator("Filter", fn, obj), self._t.output_type, StatelessSpec("filter"))
        return DataStream(self._env, t)

    def process(self, func: ProcessFunction, output_type: Optional[TypeInformation] = None) -> DataStream:  # type: ignore[type-arg]
        if isinstance(func, KeyedProcessFunction):
            msg = "a KeyedProcessFunction needs a keyed stream: call key_by(...) before process(...)"
            raise InvalidPipelineError(msg)
        if not callable(getattr(func, "process_element", None)):
            msg = f"process() needs a ProcessFunction; got {type(func).__name__} {func!r}"
            raise InvalidTypeError(msg)
        t = self._one_input("Process", lambda: ProcessOperator("Process", func), output_type, StatelessSpec("process"))
        return DataStream(self._env, t)

    def key_by(
        self, key_selector: Union[KeySelector, Callable[[Any], Any]], key_type: Optional[TypeInformation] = None
    ) -> KeyedStream:
        fn = _method(key_selector, "get_key", "key_by()'s key selector", "KeySelector")
        return KeyedStream(self._env, self._t, fn, key_type)

    def window_all(self, window_assigner: WindowAssigner) -> AllWindowedStream:  # type: ignore[type-arg]
        """Windows over the whole stream (non-keyed): a keyed window of one constant key, as Flink runs it
        (:mod:`~pyspark_flinkish.datastream.all_window`)."""
        from .all_window import AllWindowedStream

        return AllWindowedStream.of(self, window_assigner)

    def count_window_all(self, size: int, slide: int = 0) -> AllWindowedStream:
        """Java Flink's ``countWindowAll`` (PyFlink 2.3 has none): ``count_window``'s rule over the whole stream."""
        from .all_window import AllWindowedStream

        return AllWindowedStream.count(self, size, slide)

    # ------------------------------------------------------------------ partitioning (see core/partitioning.py)
    def shuffle(self) -> DataStream:
        """Flink: each record goes to a uniformly random instance of the next operator. Here, as every
        partitioning: the same records reach the next operator, with the same results (see
        :mod:`pyspark_flinkish.core.partitioning`); Spark keeps its own distribution of the work over tasks."""
        return PartitionedStream(self._env, self._t, "shuffle")

    def rebalance(self) -> DataStream:
        """Flink: records go round-robin to the instances of the next operator. Here: as :meth:`shuffle`."""
        return PartitionedStream(self._env, self._t, "rebalance")

    def rescale(self) -> DataStream:
        """Flink: records go round-robin to a local subset of the next operator's instances. Here: as
        :meth:`shuffle`."""
        return PartitionedStream(self._env, self._t, "rescale")

    def forward(self) -> DataStream:
        """Flink: each instance sends its records to the next operator's instance of the same index (equal
        parallelism). Here: as :meth:`shuffle`."""
        return PartitionedStream(self._env, self._t, "forward")

    def partition_custom(self, partitioner: Union[Partitioner, Callable[[Any, int], int]], key_selector: Any) -> DataStream:  # type: ignore[type-arg]
        """Flink: each record goes to the instance ``partitioner(key_selector(record), n)`` of the next operator,
        ``n`` its parallelism (here the environment's parallelism when this is called). Here the key selector and
        the partitioner run on every record as in PyFlink (``open``/``close`` of function objects included), a
        partition outside ``[0, n)`` fails the job, and the record goes on unchanged: the next operator's results
        are Flink's. Spark does not place records by it (its tasks are not Flink's operator instances)."""
        fn = CustomPartitioning(partitioner, key_selector, self._env.get_parallelism())
        make = lambda: ProcessOperator("PartitionCustom", fn)  # noqa: E731
        t = self._one_input("PartitionCustom", make, self._t.output_type, StatelessSpec("partition_custom"))
        return DataStream(self._env, t)

    def union(self, *streams: DataStream) -> DataStream:
        for s in streams:
            if not isinstance(s, DataStream):
                msg = f"union() takes DataStreams; got {type(s).__name__}"
                raise InvalidTypeError(msg)
            if s._env is not self._env:
                msg = "union() of streams from different environments"
                raise InvalidPipelineError(msg)
        if any(isinstance(s, BroadcastPartitionedStream) for s in (self, *streams)):
            parts = [p for s in (self, *streams) for p in (s._inputs() if isinstance(s, BroadcastUnion) else [s])]
            return BroadcastUnion(self._env, parts)
        t = Transformation("union", "Union", [self._t] + [s._t for s in streams], output_type=self._t.output_type)
        return DataStream(self._env, t)

    def connect(self, ds: Union[DataStream, BroadcastStream]) -> Union[ConnectedStreams, BroadcastConnectedStream]:
        """Connect with ``ds``: a :class:`ConnectedStreams` for a DataStream (co-functions), a
        :class:`BroadcastConnectedStream` for a :class:`BroadcastStream` (broadcast state). See
        :mod:`.connected_streams`."""
        refuse_after_broadcast([self, ds], "connect()", "broadcast state: broadcast(MapStateDescriptor(...))")
        return connect(self, ds, lambda t: DataStream(self._env, t))

    def broadcast(
        self, broadcast_state_descriptor: Any = None, *other_broadcast_state_descriptors: Any
    ) -> Union[DataStream, BroadcastStream]:
        """Without arguments, Flink's ``BroadcastPartitioner``: every element goes to every parallel instance of the
        next operator, so that operator runs once per instance on it and its output comes once per instance (its
        parallelism: its ``set_parallelism``, else the environment's when it was made; a sink's, likewise; the
        package's default is 1, where ``broadcast()`` changes nothing). Each instance has its own copy of the
        functions, and its runtime context's ``get_index_of_this_subtask()`` is the instance's index. As in PyFlink,
        ``key_by`` (so ``window_all``) and ``partition_custom`` after it key each element once (PyFlink's job graph
        gives their operator a forward partitioning in place of the broadcast), and ``execute_and_collect()`` reads
        it once (Flink's collect sink has parallelism 1); a ``union`` with it gives the next operator its elements
        once per instance and the other
        inputs' once (:class:`BroadcastUnion`). Refused right after it, naming the concept: ``connect``, ``join``,
        ``co_group``, ``shuffle``/``rebalance``/``rescale``/``forward``, ``assign_timestamps_and_watermarks``,
        async I/O, ``get_side_output`` and operator settings (it has no operator of its own). On Spark the copies
        are made by the executors, in the task that runs the next operator; Spark's tasks are not Flink's instances.

        With ``MapStateDescriptor``s: a :class:`BroadcastStream` with those broadcast state maps, to ``connect``
        with a (keyed or non-keyed) stream."""
        given = [d for d in (broadcast_state_descriptor, *other_broadcast_state_descriptors) if d is not None]
        if not given:
            return BroadcastPartitionedStream(self._env, self._t)
        return broadcast_stream(self, given)

    def join(self, other_stream: DataStream) -> JoinedStreams:
        """Window join (Flink Java's ``join``): ``.where(key).equal_to(key).window(assigner)...apply(function)``,
        see :mod:`pyspark_flinkish.datastream.join`."""
        from .join import JoinedStreams

        refuse_after_broadcast([self, other_stream], "join()", "apply a map to the broadcast stream first")
        return JoinedStreams(self, other_stream)

    def co_group(self, other_stream: DataStream) -> CoGroupedStreams:
        """Window co-group (Flink Java's ``coGroup``): ``.where(key).equal_to(key).window(assigner)...apply(function)``,
        see :mod:`pyspark_flinkish.datastream.join`."""
        from .join import CoGroupedStreams

        refuse_after_broadcast([self, other_stream], "co_group()", "apply a map to the broadcast stream first")
        return CoGroupedStreams(self, other_stream)

    def assign_timestamps_and_watermarks(self, watermark_strategy: WatermarkStrategy) -> DataStream:
        if not isinstance(watermark_strategy, WatermarkStrategy):
            msg = f"assign_timestamps_and_watermarks needs a WatermarkStrategy; got {type(watermark_strategy).__name__}"
            raise InvalidTypeError(msg)
        t = self._one_input(
            "Timestamps/Watermarks",
            lambda: TimestampsAndWatermarksOperator("Timestamps/Watermarks", watermark_strategy),
            self._t.output_type,
            TimestampsSpec(watermark_strategy),
        )
        return DataStream(self._env, t)

    def get_side_output(self, output_tag: OutputTag) -> DataStream:
        if not isinstance(output_tag, OutputTag):
            msg = f"get_side_output needs an OutputTag; got {type(output_tag).__name__}"
            raise InvalidTypeError(msg)
        t = Transformation(
            "side_output", f"SideOutput({output_tag.tag_id})", [self._t], tag=output_tag, output_type=output_tag.type_info
        )
        return DataStream(self._env, t)

    # ------------------------------------------------------------------ sinks
    def add_sink(self, sink_func: Union[SinkFunction, Callable[[Any], None]]) -> DataStreamSink:  # type: ignore[type-arg]
        """Send every element to ``sink_func`` (a ``SinkFunction`` or a callable ``value -> None``)."""
        invoke = getattr(sink_func, "invoke", None)
        if callable(invoke):
            fn: Callable[[Any], None] = lambda v: invoke(v, None)  # noqa: E731
        elif callable(sink_func):
            fn = sink_func
        else:
            msg = f"add_sink needs a SinkFunction or a callable; got {type(sink_func).__name__}"
            raise InvalidTypeError(msg)
        t = Transformation("sink", "Sink", [self._t], sink=fn, spec=SinkFunctionSpec(sink_func))
        self._env._add_sink(t)
        return DataStreamSink(t)

    def foreach_batch(self, function: Callable[[Any, int], None]) -> DataStreamSink:
        """Spark only: call ``function(dataframe, batch_id)`` with this stream's records of every micro-batch,
        as a DataFrame typed by the stream's ``output_type`` (write it idempotently per ``batch_id`` for
        exactly-once results, e.g. with Delta's ``txnAppId``/``txnVersion``)."""
        if not callable(function):
            msg = f"foreach_batch needs a callable (dataframe, batch_id); got {type(function).__name__}"
            raise InvalidTypeError(msg)
        require_spark(self._env.executor, "foreach_batch")
        t = Transformation("sink", "ForeachBatch", [self._t], sink=None, spec=ForeachBatchSpec(function))
        self._env._add_sink(t)
        return DataStreamSink(t)

    def to_dataframe(self) -> Any:
        """Spark, ``backend="apply_in_pandas_with_state"`` only: this stream as a streaming DataFrame that can be
        written to any Spark sink. Columns come from the stream's ``output_type`` (else ``value``, the pickled
        element, and ``timestamp``). Each DataFrame written is its own query with its own state."""
        require_spark(self._env.executor, "to_dataframe()")
        return self._env._to_dataframe(self._t)  # type: ignore[attr-defined]

    def sink_to(self, sink: Any) -> DataStreamSink:
        """Send every element to ``sink``: a connector sink such as
        :class:`~pyspark_flinkish.datastream.connectors.delta.DeltaSink`, an object with ``write(value)``, or a
        callable."""
        attach = getattr(sink, "_attach", None)
        if callable(attach):
            return attach(self)  # type: ignore[no-any-return]
        write = getattr(sink, "write", None)
        return self.add_sink(write if callable(write) else sink)

    def print(self, sink_identifier: Optional[str] = None) -> DataStreamSink:
        """Write every element to stdout as PyFlink's ``print()`` does for the stream's type: ``+I[a,1]`` for a
        ``ROW``, ``(a,1)`` for a ``TUPLE``, Java's form of basic types (``true``, ``null``), ``str(value)`` when no
        type was declared; prefixed as Flink's ``PrintSinkOutputWriter`` does: ``"<sink_identifier>> "`` when given
        and, at a sink parallelism above 1 (the environment's, or the sink's ``set_parallelism``), the 1-based number
        of the sink subtask that printed the line (``2> ``, ``id:2> ``). That subtask is Flink's where Flink
        decides it (after a keyed operator of the sink's parallelism, right after it or through ``map``/``flat_map``/
        ``filter``/``process`` of that parallelism: the key's; after ``broadcast()``: every instance's); elsewhere the
        job is refused when it starts (Flink's round robin from a random start): ``set_parallelism(1)`` on the sink
        prints without it."""
        settings = PrintSettings(sink_identifier, self._t.output_type, self._env.get_parallelism())
        lines = self._one_input("Print", lambda: PrintLines("Print", settings), Types.STRING(), StatelessSpec("print"))
        t = Transformation("sink", "Sink", [lines], sink=print, spec=PrintSinkSpec(print, settings))
        self._env._add_sink(t)
        return DataStreamSink(t, print_settings=settings)

    def execute_and_collect(
        self, job_execution_name: Optional[str] = None, limit: Optional[int] = None
    ) -> Union[CloseableIterator, List[Any]]:
        """Run the job (every sink of the environment) and return this stream's elements, as PyFlink's client
        reads them back from Java (a ``Types.FLOAT()`` value from its decimal text: ``110.1``;
        :func:`~pyspark_flinkish.core.coders.from_java`): as PyFlink's, a :class:`CloseableIterator` (also a context
        manager), or with ``limit`` a list of the first ``limit``."""
        collected: List[Any] = []
        type_info = self._t.output_type
        if isinstance(type_info, RowDataTypeInfo):
            msg = (
                f"execute_and_collect on {self._t.name!r}: a FileSource's CSV or Parquet records are Flink's RowData, "
                "which PyFlink cannot collect (TypeError: the java type info ... is not supported in PyFlink); map them "
                "first (ds.map(lambda row: row)), which hands a Python function Rows, as in Flink"
            )
            raise UnsupportedFeatureError(msg)
        add = collected.append if type_info is None else (lambda v: collected.append(from_java(v, type_info)))
        t = Transformation("sink", "Collect", [self._t], sink=add)
        self._env._execute(job_execution_name, extra_sinks=[t])
        return CloseableIterator(collected) if limit is None else collected[:limit]


class PartitionedStream(DataStream):
    """What ``shuffle``/``rebalance``/``rescale``/``forward`` return: the same stream, partitioned. In Flink it has
    no operator of its own, so PyFlink fails (a Py4J error) on every operator setting of it; so does this."""

    def __init__(self, env: StreamExecutionEnvironment, t: Transformation, partitioning: Optional[str] = None) -> None:
        super().__init__(env, t)
        self._partitioning_call = partitioning

    def _one_input(
        self, name: str, factory: Callable[[], Any], output_type: Any, spec: NodeSpec, keyed: bool = False
    ) -> Transformation:
        """The next operator, which records the partitioning call between its input and it (``print()`` depends on
        it: ``datastream/plan.py``)."""
        t = super()._one_input(name, factory, output_type, spec, keyed)
        t.input_partitioning = getattr(self, "_partitioning_call", None)
        return t

    def _no_operator(self, call: str) -> Any:
        msg = (
            f"{call}() on a partitioned stream (shuffle/rebalance/rescale/forward): it has no operator of its own, "
            "as in Flink; set it on the operator before the partitioning call or after it"
        )
        raise InvalidPipelineError(msg)

    def get_name(self) -> str:
        return self._no_operator("get_name")  # type: ignore[no-any-return]

    def name(self, name: str) -> DataStream:
        return self._no_operator("name")  # type: ignore[no-any-return]

    def uid(self, uid: str) -> DataStream:
        return self._no_operator("uid")  # type: ignore[no-any-return]

    def set_parallelism(self, parallelism: int) -> DataStream:
        return self._no_operator("set_parallelism")  # type: ignore[no-any-return]

    def set_max_parallelism(self, max_parallelism: int) -> DataStream:
        return self._no_operator("set_max_parallelism")  # type: ignore[no-any-return]

    def set_uid_hash(self, uid_hash: str) -> DataStream:
        return self._no_operator("set_uid_hash")  # type: ignore[no-any-return]

    def set_description(self, description: str) -> DataStream:
        return self._no_operator("set_description")  # type: ignore[no-any-return]

    def disable_chaining(self) -> DataStream:
        return self._no_operator("disable_chaining")  # type: ignore[no-any-return]

    def slot_sharing_group(self, slot_sharing_group: Any) -> DataStream:
        return self._no_operator("slot_sharing_group")  # type: ignore[no-any-return]

    def force_non_parallel(self) -> DataStream:
        return self._no_operator("force_non_parallel")  # type: ignore[no-any-return]

    def set_buffer_timeout(self, timeout_millis: int) -> DataStream:
        return self._no_operator("set_buffer_timeout")  # type: ignore[no-any-return]

    def start_new_chain(self) -> DataStream:
        return self._no_operator("start_new_chain")  # type: ignore[no-any-return]


def _identity(value: Any) -> Any:
    return value


def refuse_after_broadcast(streams: Iterable[Any], call: str, alternative: str) -> None:
    """Refuse ``call`` on (or with) a stream that ``broadcast()`` returned, naming Flink's partitioning and
    ``alternative``: the calls whose per-instance copies the package does not make."""
    if any(isinstance(s, BroadcastPartitionedStream) for s in streams):
        msg = (
            f"{call} right after broadcast() (Flink's BroadcastPartitioner: every element to every parallel instance "
            f"of the next operator, so its output comes once per instance) is not supported; {alternative}"
        )
        raise InvalidPipelineError(msg)


class BroadcastPartitionedStream(PartitionedStream):
    """What ``broadcast()`` without arguments returns: the same stream, every element to every parallel instance of
    the next operator (Flink's ``BroadcastPartitioner``; see :meth:`DataStream.broadcast`). The next one-input
    operator is made as its instances (``ParallelOperatorFactory.broadcast_input``); a sink, which has no operator of
    its own here, gets one that makes the copies, at the sink's parallelism."""

    def _inputs(self) -> List[DataStream]:
        """The streams the next operator reads: this one (a :class:`BroadcastUnion`: every stream of the union)."""
        return [self]

    def _with_copies(self, name: str) -> Tuple[Transformation, List[Transformation]]:
        """What the next operator reads, with every broadcast element already copied once per instance: a ``name``d
        operator per broadcast input that hands on each element once per instance of it (at the environment's
        parallelism), unioned with the other inputs; and those operators."""
        copies, inputs = [], []
        for stream in self._inputs():
            if isinstance(stream, BroadcastPartitionedStream):
                make = lambda: MapOperator(name, _identity)  # noqa: E731
                t = DataStream._one_input(stream, name, make, stream._t.output_type, StatelessSpec("map"))
                t.factory.broadcast_input = True  # type: ignore[union-attr]
                t.factory.input_type = stream._t.output_type  # type: ignore[union-attr]
                copies.append(t)
                inputs.append(t)
            else:
                inputs.append(stream._t)
        if len(inputs) == 1:
            return inputs[0], copies
        return Transformation("union", "Union", inputs, output_type=self._t.output_type), copies

    def _one_input(
        self, name: str, factory: Callable[[], Any], output_type: Any, spec: NodeSpec, keyed: bool = False
    ) -> Transformation:
        if isinstance(spec, TimestampsSpec):
            refuse_after_broadcast([self], "assign_timestamps_and_watermarks()",
                                   "put a map after broadcast() and assign them after it")
        t = super()._one_input(name, factory, output_type, spec, keyed)
        t.factory.broadcast_input = True  # type: ignore[union-attr]
        t.factory.input_type = self._t.output_type  # type: ignore[union-attr]
        return t

    def key_by(
        self, key_selector: Union[KeySelector, Callable[[Any], Any]], key_type: Optional[TypeInformation] = None
    ) -> KeyedStream:
        """As in PyFlink, where ``broadcast()`` changes nothing here: its ``key_by`` is an operator (pairing elements
        with their keys) whose input PyFlink's job graph gives a forward partitioning in place of the broadcast
        (``PythonConfigUtil.alignTransformation``), so each element is keyed once."""
        return DataStream(self._env, self._t).key_by(key_selector, key_type)

    def partition_custom(self, partitioner: Union[Partitioner, Callable[[Any, int], int]], key_selector: Any) -> DataStream:  # type: ignore[type-arg]
        """As :meth:`key_by`: PyFlink's partitioner operator replaces the broadcast with a forward partitioning."""
        return DataStream(self._env, self._t).partition_custom(partitioner, key_selector)

    def _sink(self, attach: Callable[[DataStream], DataStreamSink]) -> DataStreamSink:
        """Every instance of the sink (its ``set_parallelism``, else the environment's) gets every element."""
        t, copies = self._with_copies("Broadcast")
        return DataStreamSink(attach(DataStream(self._env, t))._t, copies)

    def add_sink(self, sink_func: Union[SinkFunction, Callable[[Any], None]]) -> DataStreamSink:  # type: ignore[type-arg]
        return self._sink(lambda stream: stream.add_sink(sink_func))

    def print(self, sink_identifier: Optional[str] = None) -> DataStreamSink:
        """Every element once per instance of the print sink, each line numbered by its instance at a parallelism
        above 1. PyFlink prints an untyped stream through a map to strings, at the environment's parallelism, which
        the broadcast reaches instead: there the sink's own ``set_parallelism`` does not change how often an element
        is printed (and another sink parallelism than the map's is refused: Flink's round robin between them)."""
        sink = super().print(sink_identifier)
        output_type = self._t.output_type
        if output_type is not None and getattr(output_type, "name", None) != "PICKLED_BYTE_ARRAY":
            sink._instances = [sink._t.inputs[0]]  # the PrintLines instances: one per sink instance
        return sink

    def sink_to(self, sink: Any) -> DataStreamSink:
        return self._sink(lambda stream: stream.sink_to(sink))

    def foreach_batch(self, function: Callable[[Any, int], None]) -> DataStreamSink:
        return self._sink(lambda stream: stream.foreach_batch(function))

    def to_dataframe(self) -> Any:
        t, _ = self._with_copies("Broadcast")
        return DataStream(self._env, t).to_dataframe()

    def _partitioning(self) -> DataStream:
        refuse_after_broadcast([self], "a partitioning call", "leave one of the two out")
        return self

    def shuffle(self) -> DataStream:
        return self._partitioning()

    def rebalance(self) -> DataStream:
        return self._partitioning()

    def rescale(self) -> DataStream:
        return self._partitioning()

    def forward(self) -> DataStream:
        return self._partitioning()

    def broadcast(
        self, broadcast_state_descriptor: Any = None, *other_broadcast_state_descriptors: Any
    ) -> Union[DataStream, BroadcastStream]:
        if broadcast_state_descriptor is None and not other_broadcast_state_descriptors:
            return self
        refuse_after_broadcast([self], "broadcast(MapStateDescriptor)", "call it on the stream before broadcast()")
        return self

    def get_side_output(self, output_tag: OutputTag) -> DataStream:
        refuse_after_broadcast([self], "get_side_output()", "call it on the operator before broadcast()")
        return self


class BroadcastUnion(BroadcastPartitionedStream):
    """``union`` of streams of which one or more is ``broadcast()``'s: the next operator's every instance gets every
    element of a broadcast input and its share of the others (Flink: one instance each). The package runs the next
    operator as one instance over the broadcast elements copied once per instance of it (an operator per broadcast
    input, whose parallelism follows the next operator's) and the other elements once; its functions'
    ``get_index_of_this_subtask()`` is refused at a parallelism above 1, as for any non-keyed operator.
    ``execute_and_collect()`` reads each element once (Flink's collect sink has parallelism 1)."""

    def __init__(self, env: StreamExecutionEnvironment, streams: List[DataStream]) -> None:
        super().__init__(env, Transformation("union", "Union", [s._t for s in streams], output_type=streams[0]._t.output_type))
        self._streams = streams

    def _inputs(self) -> List[DataStream]:
        return list(self._streams)

    def broadcast(
        self, broadcast_state_descriptor: Any = None, *other_broadcast_state_descriptors: Any
    ) -> Union[DataStream, BroadcastStream]:
        """Without arguments: every input of the union broadcast."""
        if broadcast_state_descriptor is None and not other_broadcast_state_descriptors:
            return BroadcastUnion(self._env, [s.broadcast() for s in self._streams])  # type: ignore[misc]
        return super().broadcast(broadcast_state_descriptor, *other_broadcast_state_descriptors)

    def _one_input(
        self, name: str, factory: Callable[[], Any], output_type: Any, spec: NodeSpec, keyed: bool = False
    ) -> Transformation:
        if isinstance(spec, TimestampsSpec):
            refuse_after_broadcast([self], "assign_timestamps_and_watermarks()",
                                   "put a map after broadcast() and assign them after it")
        source, copies = self._with_copies("Broadcast")
        t = DataStream(self._env, source)._one_input(name, factory, output_type, spec, keyed)
        for c in copies:  # as many copies as the next operator has instances
            t.follow_parallelism(c)
        return t


class DataStreamSink(SinkSettings):
    """Returned by ``add_sink``; lets the sink be named (Flink's runtime settings are no-ops, as on a stream).
    ``instances``: after ``broadcast()``, the operators that make the sink's per-instance copies (their parallelism
    is the sink's)."""

    def __init__(
        self,
        transformation: Transformation,
        instances: Optional[List[Transformation]] = None,
        print_settings: Optional[PrintSettings] = None,
    ) -> None:
        self._t = transformation
        self._instances = instances or []
        self._print_settings = print_settings

    def name(self, name: str) -> DataStreamSink:
        self._t.name = name
        return self

    def uid(self, uid: str) -> DataStreamSink:
        self._t.uid = uid
        return self

    def set_parallelism(self, parallelism: int) -> DataStreamSink:
        """The sink's parallelism: recorded where it changes the output (after ``broadcast()``, every instance
        writes every element; ``print()`` numbers its lines by subtask above 1), else a no-op."""
        if (self._instances or self._print_settings is not None) and parallelism < 1:
            msg = f"parallelism must be >= 1; got {parallelism}"
            raise InvalidArgumentError(msg)
        for t in self._instances:
            t.set_parallelism(parallelism)
        if self._print_settings is not None:
            self._print_settings.parallelism = parallelism
        return self


class KeyedStream(DataStream):
    """A stream partitioned by key: keyed state, timers and windows are per key."""

    def __init__(
        self,
        env: StreamExecutionEnvironment,
        input_t: Transformation,
        key_selector: Callable[[Any], Any],
        key_type: Optional[TypeInformation] = None,
    ) -> None:
        super().__init__(env, input_t)
        self._key_selector = key_selector
        self._key_type = key_type

    def execute_and_collect(
        self, job_execution_name: Optional[str] = None, limit: Optional[int] = None
    ) -> Union[CloseableIterator, List[Any]]:
        """Run the job and return the keyed stream's elements as PyFlink's ``KeyedStream`` holds them:
        ``Row(f0=key, f1=value)`` per element. As in PyFlink 2.3, each field is what PyFlink's serializer of its type
        hands over: the key as given with ``key_by(..., key_type=...)``, else (its type ``PICKLED_BYTE_ARRAY``) the
        ``bytearray`` of the pickled key; the value as the stream's type has it (a tuple, a ``Row``, ...), and the
        ``bytearray`` of the pickled value on a stream without a declared type. (``print()``, ``add_sink`` and every
        operator see the values alone, as in PyFlink.) ``limit``: a list, as :meth:`DataStream.execute_and_collect`."""
        key_type, value_type = self._key_type, self._t.output_type
        with_key = _WithKey(self._key_selector, pickled_key=key_type is None, pickled_value=value_type is None)
        row_type = Types.ROW([key_type or Types.PICKLED_BYTE_ARRAY(), value_type or Types.PICKLED_BYTE_ARRAY()])
        keyed = DataStream(self._env, self._t).map(with_key, output_type=row_type)
        keyed._t.name = KEY_BY_MAP_OPERATOR_NAME
        return keyed.execute_and_collect(job_execution_name, limit)

    def process(self, func: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        if not isinstance(func, KeyedProcessFunction) and not callable(getattr(func, "process_element", None)):
            msg = f"KeyedStream.process() needs a KeyedProcessFunction; got {type(func).__name__} {func!r}"
            raise InvalidTypeError(msg)
        ks = self._key_selector
        t = self._one_input(
            "KeyedProcess",
            lambda: KeyedProcessOperator("KeyedProcess", ks, func),
            output_type,
            KeyedProcessSpec(ks, self._key_type),
            keyed=True,
        )
        return DataStream(self._env, t)

    def broadcast(self, *args: Any) -> BroadcastStream:
        """Not supported, as in PyFlink: the partitioning of a KeyedStream cannot be overridden."""
        msg = "Cannot override partitioning for KeyedStream (PyFlink raises the same); broadcast the stream before key_by"
        raise InvalidPipelineError(msg)

    def interval_join(self, other_stream: KeyedStream) -> IntervalJoin:
        """Interval join (Flink Java's ``intervalJoin``) with another keyed stream: ``.between(lower, upper)...process(
        ProcessJoinFunction)``, see :mod:`pyspark_flinkish.datastream.join`."""
        from .join import IntervalJoin

        return IntervalJoin(self, other_stream)

    def window(self, window_assigner: WindowAssigner) -> WindowedStream:  # type: ignore[type-arg]
        if not isinstance(window_assigner, WindowAssigner):
            msg = (
                "window() needs a WindowAssigner (e.g. TumblingEventTimeWindows.of(Duration.of_seconds(5))); "
                f"got {type(window_assigner).__name__} {window_assigner!r}"
            )
            raise InvalidTypeError(msg)
        return WindowedStream(self, window_assigner)

    def count_window(self, size: int, slide: int = 0) -> WindowedStream:
        """Count windows per key, built as Java Flink's ``KeyedStream.countWindow`` builds them.

        ``count_window(n)``: ``GlobalWindows`` + ``PurgingTrigger.of(CountTrigger.of(n))``, every ``n`` elements
        (a remainder is never emitted) -- the same windows as PyFlink's, but the window is the ``GlobalWindow``.

        ``count_window(size, slide)``: ``GlobalWindows`` + ``CountTrigger.of(slide)`` + ``CountEvictor.of(size)``:
        every ``slide`` elements, over the last ``size``, so the first firings hold fewer than ``size`` elements
        (size 3, slide 2 over 1…7: ``[1,2]``, ``[2,3,4]``, ``[4,5,6]``). **PyFlink differs**: its
        ``count_window(size, slide)`` is ``window(CountSlidingWindowAssigner.of(size, slide))``, which emits only
        full windows (``[1,2,3]``, ``[3,4,5]``, ``[5,6,7]``). For PyFlink's behaviour use that assigner, which this
        package offers too (``pyspark_flinkish.datastream.window``); see docs/migrating-from-pyflink.md.
        """
        if size <= 0 or slide < 0:
            msg = f"count_window needs size > 0 and slide >= 0; got size={size}, slide={slide}"
            raise InvalidArgumentError(msg)
        ws = WindowedStream(self, GlobalWindows.create())
        if slide == 0:
            return ws.trigger(PurgingTrigger.of(CountTrigger.of(size)))
        return ws.trigger(CountTrigger.of(slide)).evictor(CountEvictor.of(size))

    # ------------------------------------------------------------------ PyFlink refuses these on a KeyedStream
    # (a plain Exception with PyFlink's message: name or set them on the operator that follows key_by)
    def name(self, name: str) -> DataStream:
        _refuse("Set name for KeyedStream is not supported.")

    def get_name(self) -> str:
        _refuse("Get name of KeyedStream is not supported.")

    def uid(self, uid: str) -> DataStream:
        _refuse("Set uid for KeyedStream is not supported.")

    def set_uid_hash(self, uid_hash: str) -> DataStream:
        _refuse("Set uid hash for KeyedStream is not supported.")

    def set_parallelism(self, parallelism: int) -> DataStream:
        _refuse("Set parallelism for KeyedStream is not supported.")

    def set_max_parallelism(self, max_parallelism: int) -> DataStream:
        _refuse("Set max parallelism for KeyedStream is not supported.")

    def force_non_parallel(self) -> DataStream:
        _refuse("Set force non-parallel for KeyedStream is not supported.")

    def set_buffer_timeout(self, timeout_millis: int) -> DataStream:
        _refuse("Set buffer timeout for KeyedStream is not supported.")

    def start_new_chain(self) -> DataStream:
        _refuse("Start new chain for KeyedStream is not supported.")

    def disable_chaining(self) -> DataStream:
        _refuse("Disable chaining for KeyedStream is not supported.")

    def slot_sharing_group(self, slot_sharing_group: Any) -> DataStream:
        _refuse("Setting slot sharing group for KeyedStream is not supported.")

    def set_description(self, description: str) -> DataStream:
        # PyFlink fails here too (a Py4J error: Java's KeyedStream has no setDescription)
        _refuse("Set description for KeyedStream is not supported: describe the operator that follows key_by.")

    def shuffle(self) -> DataStream:
        _refuse("Cannot override partitioning for KeyedStream.")

    def rebalance(self) -> DataStream:
        _refuse("Cannot override partitioning for KeyedStream.")

    def rescale(self) -> DataStream:
        _refuse("Cannot override partitioning for KeyedStream.")

    def forward(self) -> DataStream:
        _refuse("Cannot override partitioning for KeyedStream.")

    def partition_custom(self, partitioner: Any, key_selector: Any) -> DataStream:
        _refuse("Cannot override partitioning for KeyedStream.")

    # ------------------------------------------------------------------ simple functions with keyed state
    def _keyed_function(self, name: str, adapter: KeyedProcessFunction, output_type: Any) -> DataStream:  # type: ignore[type-arg]
        stream = self.process(adapter, output_type)
        stream._t.name = name
        return stream

    def map(self, func: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        """Map per key: a ``MapFunction`` whose ``open(runtime_context)`` gets keyed state (``get_state``, ...)
        runs as a keyed operator, as in PyFlink; a plain callable, which cannot reach keyed state, as a map."""
        if not _has_open(func):
            return DataStream(self._env, self._t).map(func, output_type)
        fn = _method(func, "map", "map()'s function", "MapFunction")
        return self._keyed_function("Map", _KeyedAdapter(func, lambda v: [fn(v)]), output_type)

    def flat_map(self, func: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        """Flat map per key; keyed state in ``open()`` as for :meth:`map`."""
        if not _has_open(func):
            return DataStream(self._env, self._t).flat_map(func, output_type)
        fn = _method(func, "flat_map", "flat_map()'s function", "FlatMapFunction")
        return self._keyed_function("FlatMap", _KeyedAdapter(func, fn), output_type)

    def filter(self, func: Any) -> DataStream:
        """Filter per key; keyed state in ``open()`` as for :meth:`map`."""
        if not _has_open(func):
            return DataStream(self._env, self._t).filter(func)
        fn = _method(func, "filter", "filter()'s function", "FilterFunction")
        return self._keyed_function("Filter", _KeyedAdapter(func, lambda v: [v] if fn(v) else []), self._t.output_type)

    def reduce(self, func: Union[ReduceFunction, Callable[[Any, Any], Any]]) -> DataStream:
        """Rolling reduce per key: emits the running reduction after every element (the first element of a key
        as it is), typed as the input stream. A ``ReduceFunction``'s ``open(runtime_context)`` and ``close()``
        are called, as in PyFlink."""
        fn = _method(func, "reduce", "reduce()'s function", "ReduceFunction")
        # named "KeyedProcess" (PyFlink: "Reduce"): the name is part of the state's uid in existing checkpoints
        return self.process(_RollingReduce(fn, func), self._t.output_type)

    # ------------------------------------------------------------------ rolling aggregations
    def _accumulate(self, position: Union[int, str], how: str) -> DataStream:
        if isinstance(position, bool) or not isinstance(position, (int, str)):
            msg = (
                "The field position must be of int or str type to locate the value to calculate for min, max, "
                f"min_by, max_by and sum.The given type is: {type(position)}"
            )
            raise TypeError(msg)
        return self.reduce(RollingAggregation(position, how))

    def sum(self, position_to_sum: Union[int, str] = 0) -> DataStream:
        """Rolling sum of the field at ``position_to_sum`` (index, or name for a Row) per key; the other fields
        are those of the key's first element. A plain value (not a tuple, list or Row) takes position 0."""
        return self._accumulate(position_to_sum, "sum")

    def min(self, position_to_min: Union[int, str] = 0) -> DataStream:
        """Rolling minimum of one field per key; the other fields are those of the key's first element (use
        :meth:`min_by` for the whole element holding the minimum)."""
        return self._accumulate(position_to_min, "min")

    def max(self, position_to_max: Union[int, str] = 0) -> DataStream:
        """Rolling maximum of one field per key; the other fields are those of the key's first element (use
        :meth:`max_by` for the whole element holding the maximum)."""
        return self._accumulate(position_to_max, "max")

    def min_by(self, position_to_min_by: Union[int, str] = 0) -> DataStream:
        """Rolling element with the smallest value in one field per key; on ties the earlier element stays."""
        return self._accumulate(position_to_min_by, "min_by")

    def max_by(self, position_to_max_by: Union[int, str] = 0) -> DataStream:
        """Rolling element with the largest value in one field per key; on ties the earlier element stays."""
        return self._accumulate(position_to_max_by, "max_by")


def _refuse(message: str) -> NoReturn:
    """What PyFlink's ``KeyedStream`` raises for calls it refuses: a plain ``Exception`` with its message."""
    raise Exception(message)  # PyFlink's exception type, so that code catching it runs unchanged


def _has_open(func: Any) -> bool:
    """Whether ``func`` is a Function object with its own ``open()`` (the only place it can get keyed state)."""
    return isinstance(func, Function) and type(func).open is not Function.open


KEY_BY_MAP_OPERATOR_NAME = "_stream_key_by_map_operator"
"""The name of the operator that pairs a ``KeyedStream``'s elements with their keys (PyFlink's
``PythonConfigUtil.STREAM_KEY_BY_MAP_OPERATOR_NAME``)."""

PICKLE_PROTOCOL = 5
"""The pickle protocol of PyFlink's ``PICKLED_BYTE_ARRAY`` values (cloudpickle's default on Python 3.8+)."""


class _WithKey:
    """``Row(key, value)`` of an element, as PyFlink's ``key_by`` makes it; a field whose type is
    ``PICKLED_BYTE_ARRAY`` as the ``bytearray`` PyFlink hands over for it."""

    def __init__(self, key_selector: Callable[[Any], Any], pickled_key: bool, pickled_value: bool) -> None:
        self.key_selector = key_selector
        self.pickled_key = pickled_key
        self.pickled_value = pickled_value

    def __call__(self, value: Any) -> Row:
        key = self.key_selector(value)
        return Row(
            bytearray(pickle.dumps(key, protocol=PICKLE_PROTOCOL)) if self.pickled_key else key,
            bytearray(pickle.dumps(value, protocol=PICKLE_PROTOCOL)) if self.pickled_value else value,
        )


class _KeyedAdapter(KeyedProcessFunction):  # type: ignore[type-arg]
    """A map/flat_map/filter function run as a KeyedProcessFunction (PyFlink's adapters): its ``open()`` gets
    the keyed runtime context."""

    def __init__(self, function: Any, results: Callable[[Any], Iterable[Any]]) -> None:
        self.function = function
        self.results = results

    def open(self, runtime_context: Any) -> None:
        self.function.open(runtime_context)

    def close(self) -> None:
        self.function.close()

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        return self.results(value)


class RollingAggregation(ReduceFunction):  # type: ignore[type-arg]
    """The reduce behind ``KeyedStream.sum/min/max/min_by/max_by`` (``how``), with PyFlink's semantics: on a
    tuple, list or Row, ``sum``/``min``/``max`` replace the field at ``position`` of the running value (the other
    fields stay those of the key's first element); ``min_by``/``max_by`` keep the whole element whose field is
    smallest/largest, the earlier one on ties. A plain value is its own field 0. A new value is built each time
    (a Row keeps its names and kind), so emitted elements never change afterwards."""

    def __init__(self, position: Union[int, str], how: str) -> None:
        self.position = position
        self.how = how

    def reduce(self, value1: Any, value2: Any) -> Any:
        pos, how = self.position, self.how
        composite = isinstance(value2, (tuple, list, Row))
        if how in ("min_by", "max_by"):
            a, b = (value1[pos], value2[pos]) if composite else (value1, value2)
            return value2 if (b < a if how == "min_by" else b > a) else value1
        if not composite:
            if pos != 0:
                msg = (
                    f"The {pos} field selected on a basic type. A field expression on a basic type can only select "
                    "the 0th field (which means selecting the entire basic type)."
                )
                raise TypeError(msg)
            if how == "sum":
                return value1 + value2
            return value2 if (value2 < value1 if how == "min" else value2 > value1) else value1
        a, b = value1[pos], value2[pos]
        if how == "sum":
            field = a + b
        else:
            field = b if (b < a if how == "min" else b > a) else a
        if isinstance(value1, Row):
            row = Row(*value1)
            if hasattr(value1, "_fields"):
                row.set_field_names(list(value1._fields))
            row.set_row_kind(value1.get_row_kind())
            row[pos] = field
            return row
        items = list(value1)
        items[pos] = field
        return tuple(items) if isinstance(value1, tuple) else items

    def __repr__(self) -> str:
        return f"RollingAggregation({self.how}, {self.position!r})"


class _RollingReduce(KeyedProcessFunction):  # type: ignore[type-arg]
    rolling_aggregation = True
    """BATCH mode emits only each key's final value (``datastream.runtime_mode``)."""

    def __init__(self, fn: Callable[[Any, Any], Any], function: Any = None) -> None:
        self.fn = fn
        self.function = function if isinstance(function, Function) else None

    def open(self, runtime_context: Any) -> None:
        from ..core.state_descriptors import ValueStateDescriptor

        if self.function is not None:
            self.function.open(runtime_context)
        self.state = runtime_context.get_state(ValueStateDescriptor("__rolling_reduce"))

    def close(self) -> None:
        if self.function is not None:
            self.function.close()

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        current = self.state.value()
        result = value if current is None else self.fn(current, value)
        self.state.update(result)
        return [result]


class WindowedStream:
    """A keyed stream split into windows (PyFlink's ``WindowedStream``): configure the trigger, evictor,
    allowed lateness and late-data side output, then give the window function."""

    def __init__(self, keyed: KeyedStream, assigner: WindowAssigner) -> None:  # type: ignore[type-arg]
        self._keyed = keyed
        self._assigner = assigner
        self._trigger: Optional[Trigger] = None  # type: ignore[type-arg]
        self._evictor: Optional[Evictor] = None  # type: ignore[type-arg]
        self._allowed_lateness = 0
        self._late_tag: Optional[OutputTag] = None

    def trigger(self, trigger: Trigger) -> WindowedStream:  # type: ignore[type-arg]
        """Replace the assigner's default trigger."""
        if not isinstance(trigger, Trigger):
            msg = f"trigger() needs a Trigger (e.g. CountTrigger.of(3)); got {type(trigger).__name__} {trigger!r}"
            raise InvalidTypeError(msg)
        from ..core.assigners import MergingWindowAssigner

        if isinstance(self._assigner, MergingWindowAssigner) and not trigger.can_merge():
            msg = (
                f"{trigger!r} cannot be used with the merging assigner {self._assigner!r}: "
                "session windows need a trigger whose can_merge() is True (Flink rejects this too)"
            )
            raise InvalidPipelineError(msg)
        self._trigger = trigger
        return self

    def evictor(self, evictor: Evictor) -> WindowedStream:  # type: ignore[type-arg]
        """Buffer all elements and evict some before/after each firing (no incremental aggregation)."""
        if not isinstance(evictor, Evictor):
            msg = f"evictor() needs an Evictor (e.g. CountEvictor.of(10)); got {type(evictor).__name__} {evictor!r}"
            raise InvalidTypeError(msg)
        self._evictor = evictor
        return self

    def allowed_lateness(self, time_ms: TimeLike) -> WindowedStream:
        """Keep windows ``time_ms`` past their end: late elements within it fire the window again."""
        ms = to_millis("allowed_lateness", time_ms)
        if ms < 0:
            msg = f"allowed_lateness cannot be negative; got {ms} ms"
            raise InvalidArgumentError(msg)
        if not self._assigner.is_event_time() and ms != 0:
            warnings.warn(
                f"allowed_lateness({ms}) has no effect with {self._assigner!r}, which is not an event-time "
                "assigner; Flink ignores it too",
                stacklevel=2,
            )
        self._allowed_lateness = ms
        return self

    def side_output_late_data(self, output_tag: OutputTag) -> WindowedStream:
        """Send elements that are too late for every window to ``output_tag`` instead of dropping them."""
        if not isinstance(output_tag, OutputTag):
            msg = f"side_output_late_data needs an OutputTag; got {type(output_tag).__name__}"
            raise InvalidTypeError(msg)
        self._late_tag = output_tag
        return self

    # ------------------------------------------------------------------ window functions
    def _build(
        self, name: str, contents: WindowContents, window_function: Any, user_functions: List[Any], output_type: Any
    ) -> DataStream:
        keyed = self._keyed
        assigner = self._assigner
        trigger = self._trigger if self._trigger is not None else assigner.get_default_trigger()
        evictor = self._evictor
        lateness = self._allowed_lateness if assigner.is_event_time() else 0
        late_tag = self._late_tag
        ks = keyed._key_selector

        def factory() -> WindowOperator:
            return WindowOperator(
                name, ks, assigner, trigger, contents, window_function, evictor, lateness, late_tag, user_functions
            )

        factory()  # validate the combination now, not at execute()
        t = keyed._one_input(
            name,
            factory,
            output_type,
            WindowSpec(
                key_selector=ks,
                key_type=keyed._key_type,
                assigner=assigner,
                trigger=trigger,
                evictor=evictor,
                allowed_lateness=lateness,
                late_tag=late_tag,
                contents=contents,
                window_function=window_function,
            ),
            keyed=True,
        )
        return DataStream(keyed._env, t)

    @staticmethod
    def _window_fn(window_function: Any) -> Any:
        if window_function is None:
            return PassThroughWindowFunction()
        if isinstance(window_function, ProcessWindowFunction) or (
            callable(getattr(window_function, "process", None)) and not isinstance(window_function, WindowFunction)
        ):
            return window_function
        if isinstance(window_function, WindowFunction) or callable(window_function):
            return WindowFunctionAdapter(window_function)
        msg = (
            "the window function must be a ProcessWindowFunction, a WindowFunction or a callable; "
            f"got {type(window_function).__name__}"
        )
        raise InvalidTypeError(msg)

    def reduce(
        self,
        reduce_function: Union[ReduceFunction, Callable[[Any, Any], Any]],
        window_function: Any = None,
        output_type: Optional[TypeInformation] = None,
    ) -> DataStream:
        """Incremental reduce per window; ``window_function`` (optional) gets the one reduced value. Without a
        window function the output is typed as the input (as in PyFlink: a ``Types.FLOAT()`` sum is 32-bit)."""
        fn = _method(reduce_function, "reduce", "reduce()'s function", "ReduceFunction")
        if window_function is None and output_type is None:
            output_type = self._keyed._t.output_type
        wf = self._window_fn(window_function)
        users = [reduce_function if isinstance(reduce_function, ReduceFunction) else None, wf]
        return self._build("Window(reduce)", WindowContents("reduce", reduce_fn=fn), wf, users, output_type)

    def aggregate(
        self,
        aggregate_function: AggregateFunction,  # type: ignore[type-arg]
        window_function: Any = None,
        accumulator_type: Optional[TypeInformation] = None,
        output_type: Optional[TypeInformation] = None,
    ) -> DataStream:
        """Incremental aggregate per window; ``window_function`` (optional) gets the one result."""
        for m in ("create_accumulator", "add", "get_result"):
            if not callable(getattr(aggregate_function, m, None)):
                msg = f"aggregate() needs an AggregateFunction; {type(aggregate_function).__name__} has no {m}()"
                raise InvalidTypeError(msg)
        wf = self._window_fn(window_function)
        return self._build(
            "Window(aggregate)", WindowContents("aggregate", agg_fn=aggregate_function), wf, [aggregate_function, wf], output_type
        )

    def process(
        self, process_window_function: ProcessWindowFunction, output_type: Optional[TypeInformation] = None
    ) -> DataStream:  # type: ignore[type-arg]
        """Call ``process(key, context, elements)`` with all of the window's elements at each firing."""
        if not callable(getattr(process_window_function, "process", None)):
            msg = f"process() needs a ProcessWindowFunction; got {type(process_window_function).__name__}"
            raise InvalidTypeError(msg)
        return self._build(
            "Window(process)", WindowContents("list"), process_window_function, [process_window_function], output_type
        )

    def apply(self, window_function: Any, output_type: Optional[TypeInformation] = None) -> DataStream:
        """The legacy ``WindowFunction.apply(key, window, inputs)`` with all of the window's elements."""
        wf = WindowFunctionAdapter(window_function)
        if not callable(wf._apply):
            msg = f"apply() needs a WindowFunction or a callable (key, window, inputs); got {type(window_function).__name__}"
            raise InvalidTypeError(msg)
        return self._build("Window(apply)", WindowContents("list"), wf, [wf], output_type)


__all__ = [
    "CloseableIterator",
    "DataStream",
    "DataStreamSink",
    "KEY_BY_MAP_OPERATOR_NAME",
    "KeyedStream",
    "PICKLE_PROTOCOL",
    "BroadcastPartitionedStream",
    "BroadcastUnion",
    "PartitionedStream",
    "refuse_after_broadcast",
    "RollingAggregation",
    "WindowedStream",
]
