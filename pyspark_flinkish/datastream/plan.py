"""The logical plan a pipeline builds: a DAG of transformations, independent of any engine.

Each engine compiles the same plan: the JVM-free engine into in-process operators, the Spark executors
into streaming queries. Operators are created by factories so that every execution starts fresh.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Dict, List, Optional, Tuple

from ..core.all_window_functions import NullByteKeySelector
from ..core.errors import InvalidPipelineError, UnsupportedFeatureError
from ..core.operators import StreamOperator
from ..core.partitioning import BroadcastInstances
from ..core.records import OutputTag
from ..core.subtasks import Subtasks
from ..core.two_input_watermarks import TwoInputWatermarkValve

_ids = itertools.count(1)


# ---------------------------------------------------------------------------------------- node specs
class NodeSpec:
    """What a plan node is, for executors that need more than its operator factory (one subclass per kind)."""


@dataclass(eq=False)
class StatelessSpec(NodeSpec):
    """``map``, ``flat_map``, ``filter``, ``process`` or ``partition_custom``: a one-input operator without keyed
    state (``op``); ``print``:
    the lines of a ``print()`` sink (:class:`~pyspark_flinkish.core.print_lines.PrintLines`), part of the sink in
    Flink's plan."""

    op: str


@dataclass(eq=False)
class DeadLetterRouteSpec(StatelessSpec):
    """The ``process`` after a Kafka source with the malformed-records policy ``dead_letter``: its dead-letter
    tag goes to a Delta table (``table``: a ``DeltaSink`` or None for the default under the checkpoint), which
    the Spark executors add as a sink when the job starts."""

    source: str = ""
    table: Any = None


@dataclass(eq=False)
class TimestampsSpec(NodeSpec):
    """``assign_timestamps_and_watermarks(strategy)``."""

    strategy: Any
    op: ClassVar[str] = "timestamps"


@dataclass(eq=False)
class KeyedProcessSpec(NodeSpec):
    """``key_by(key_selector, key_type).process(...)``."""

    key_selector: Callable[[Any], Any]
    key_type: Any = None
    op: ClassVar[str] = "keyed_process"


@dataclass(eq=False)
class WindowSpec(NodeSpec):
    """A keyed window: ``key_by(...).window(assigner)`` with its trigger, evictor, allowed lateness, late-data tag,
    contents (``WindowContents``: reduce, aggregate or the list of elements) and window function."""

    key_selector: Callable[[Any], Any]
    key_type: Any
    assigner: Any
    trigger: Any
    evictor: Any
    allowed_lateness: int
    late_tag: Optional[OutputTag]
    contents: Any
    window_function: Any
    op: ClassVar[str] = "window"


@dataclass(eq=False)
class TwoInputSpec(NodeSpec):
    """A two-input operator: ``connect(...)`` with a co-function (``op``: ``co_map``, ``co_flat_map``,
    ``co_process``, ``keyed_co_process``) or a broadcast process function (``broadcast_process``,
    ``keyed_broadcast_process``). ``key_selectors`` has one entry per input when keyed (``None`` for the
    broadcast input); ``broadcast_descriptors`` are the ``MapStateDescriptor``s of ``broadcast(...)``."""

    op: str
    key_selectors: Optional[List[Optional[Callable[[Any], Any]]]] = None
    key_type: Any = None
    broadcast_descriptors: Optional[List[Any]] = None

    def make_valve(self) -> TwoInputWatermarkValve:
        """The operator's watermark: the minimum of its two inputs' (``core/two_input_watermarks.py``)."""
        return TwoInputWatermarkValve(2)

    @property
    def broadcast_input(self) -> Optional[int]:
        """The input that carries the broadcast stream (1), or None for ``connect`` of two streams."""
        return 1 if self.broadcast_descriptors is not None else None


@dataclass(eq=False)
class AsyncWaitSpec(NodeSpec):
    """``AsyncDataStream.ordered_wait`` / ``unordered_wait`` (``*_with_retry``): the operator's settings as PyFlink
    records them (an ``AsyncFunctionDescriptor``)."""

    descriptor: Any
    op: ClassVar[str] = "async_wait"


@dataclass(eq=False)
class SinkFunctionSpec(NodeSpec):
    """``add_sink(function)``: the user's ``SinkFunction`` or callable, called once per record."""

    function: Any


@dataclass(eq=False)
class PrintSinkSpec(SinkFunctionSpec):
    """``print()``: the sink writing the lines of the :class:`~pyspark_flinkish.core.print_lines.PrintLines` operator
    before it (``function``: Python's ``print``); ``settings`` are the sink's (identifier, type, parallelism),
    resolved when the job starts (:func:`resolve_parallelism`)."""

    settings: Any = None


@dataclass(eq=False)
class ForeachBatchSpec(NodeSpec):
    """``foreach_batch(function)`` (Spark only): ``function(dataframe, batch_id)`` once per micro-batch."""

    function: Callable[[Any, int], None]


@dataclass(eq=False, kw_only=True)
class BatchWriterSinkSpec(NodeSpec):
    """A sink written one micro-batch at a time by ``writer(spark, frame, batch_id, context)``, which the executor
    that runs the job builds (None until then); ``frame`` holds the batch's records where the executor keeps them
    (on Spark a ``SinkFrame``: a DataFrame written by the executors)."""

    writer: Any = None


@dataclass(eq=False, kw_only=True)
class DeltaSinkSpec(BatchWriterSinkSpec):
    """``sink_to(DeltaSink...)``: the table's description; the Spark executors build its writer."""

    sink: Any


@dataclass(eq=False, kw_only=True)
class KafkaSinkSpec(BatchWriterSinkSpec):
    """``sink_to(KafkaSink...)``: the sink's description; the Spark executors build its writer (the JVM-free engine
    runs the sink as an operator)."""

    sink: Any


@dataclass(eq=False, kw_only=True)
class FileSinkSpec(BatchWriterSinkSpec):
    """``sink_to(FileSink...)``: the sink's description; each executor builds its writer (the local engine's
    writes local part files, the Spark executors' is a batch writer)."""

    sink: Any


@dataclass(eq=False)
class Transformation:
    """One node of the plan.

    ``kind`` is ``source``, ``operator`` (one input, or two with a :class:`TwoInputSpec`; ``factory`` makes its
    operator), ``union``,
    ``side_output`` (selects ``tag`` of its input) or ``sink``; ``spec`` says what an operator or sink node is
    (a :class:`NodeSpec`).
    """

    kind: str
    name: str
    inputs: List[Transformation] = field(default_factory=list)
    factory: Optional[Callable[[], StreamOperator]] = None
    source: Any = None
    watermark_strategy: Any = None
    tag: Optional[OutputTag] = None
    sink: Any = None
    keyed: bool = False
    spec: Optional[NodeSpec] = None
    output_type: Any = None
    uid: Optional[str] = None
    # the operator's parallelism (``set_parallelism``, else the environment's when the operator was made, as in
    # Flink): its operator is made with it (a broadcast operator's output and its functions' runtime context depend
    # on it); None for what is not an operator
    parallelism: Optional[int] = None
    # the operator's own max parallelism (``set_max_parallelism``); None: the environment's when the job starts
    max_parallelism: Optional[int] = None
    # operators whose parallelism is this one's (``follow_parallelism``): the per-instance copies of a broadcast
    # input of a union that this operator reads
    followers: List[Transformation] = field(default_factory=list)
    # the partitioning call between the operator's input and it (``shuffle``, ``rebalance``, ``rescale``,
    # ``forward``), None without one: the results do not depend on it, what ``print()`` writes does
    input_partitioning: Optional[str] = None
    id: int = field(default_factory=lambda: next(_ids))

    def __post_init__(self) -> None:
        """An operator's factory is a :class:`ParallelOperatorFactory`, which gives the operator its subtasks."""
        if self.kind != "operator" or self.factory is None:
            return
        if not isinstance(self.factory, ParallelOperatorFactory):
            self.factory = ParallelOperatorFactory(_one_instance(self.factory))
        self.factory.key_type = getattr(self.spec, "key_type", None)

    def __repr__(self) -> str:
        return f"Transformation({self.id}, {self.kind}, {self.name!r})"

    def set_parallelism(self, parallelism: int) -> None:
        """Record the operator's parallelism; its operator is made with it (:class:`ParallelOperatorFactory`)."""
        self.parallelism = parallelism
        if isinstance(self.factory, ParallelOperatorFactory):
            self.factory.instances = 1 if parallelism < 1 else parallelism  # Flink's -1 (its default): 1 here
        for follower in self.followers:
            follower.set_parallelism(parallelism)

    def follow_parallelism(self, follower: Transformation) -> None:
        """From now on ``follower`` has this operator's parallelism (whenever it is set)."""
        self.followers.append(follower)
        if self.parallelism is not None:
            follower.set_parallelism(self.parallelism)

    def set_max_parallelism(self, max_parallelism: int) -> None:
        """Record the operator's own max parallelism (its number of key groups)."""
        self.max_parallelism = max_parallelism
        if isinstance(self.factory, ParallelOperatorFactory):
            self.factory.max_parallelism = max_parallelism


def made_with_parallelism(t: Transformation, env: Any) -> None:
    """Give operator ``t`` the parallelism and max parallelism of ``env`` as they are when it is made, as Flink
    does (a non-parallel operator, ``window_all``'s, gets 1); ``set_parallelism`` / ``set_max_parallelism`` on the
    stream change them later."""
    selector = getattr(t.spec, "key_selector", None)  # window_all's: NullByteKeySelector().get_key
    non_parallel = isinstance(getattr(selector, "__self__", selector), NullByteKeySelector)
    t.set_parallelism(1 if non_parallel else env.get_parallelism())
    if isinstance(t.factory, ParallelOperatorFactory):  # until the job starts (resolve_parallelism)
        t.factory.max_parallelism = env.get_max_parallelism()


def resolve_parallelism(sinks: List[Transformation], env_max_parallelism: int) -> None:
    """When a job starts, as Flink's job graph: each operator's max parallelism is its own, else the environment's
    (-1: Flink's default for its parallelism); an operator whose parallelism is higher is refused, as Flink refuses
    the job."""
    for t in topological(sinks):
        if not isinstance(t.factory, ParallelOperatorFactory):
            continue
        max_parallelism = t.max_parallelism if t.max_parallelism is not None else env_max_parallelism
        t.factory.max_parallelism = max_parallelism
        if 0 < max_parallelism < t.factory.instances:
            msg = (
                f"Vertex {t.name}'s parallelism ({t.factory.instances}) is higher than the max parallelism "
                f"({max_parallelism}). Please lower the parallelism or increase the max parallelism. (Flink refuses "
                "the job with this message too.)"
            )
            raise InvalidPipelineError(msg)
    for t in topological(sinks):
        if isinstance(t.spec, PrintSinkSpec):
            _resolve_print(t)


def _is_pickled(type_info: Any) -> bool:
    return type_info is None or getattr(type_info, "name", None) == "PICKLED_BYTE_ARRAY"


_FORWARDING = ("map", "flat_map", "filter", "process")


def _forwards_subtask(t: Transformation, parallelism: int) -> bool:
    """``t`` is a non-keyed one-input ``map``/``flat_map``/``filter``/``process`` of ``parallelism`` on one input:
    Flink forwards its input to it (same parallelism), so its records are printed by the subtask of its input's, and
    its outputs carry their input's subtask (``core/operators.py``)."""
    factory = t.factory
    return (
        t.kind == "operator"
        and not t.keyed
        and type(t.spec) is StatelessSpec
        and t.spec.op in _FORWARDING
        and len(t.inputs) == 1
        and isinstance(factory, ParallelOperatorFactory)
        and not factory.broadcast_input
        and factory.instances == parallelism
        and not _spreads(t)
    )


def _spreads(t: Transformation) -> bool:
    """A ``shuffle``/``rebalance``/``rescale`` call before ``t``: Flink chooses its subtask of each record at random
    or round robin."""
    return t.input_partitioning not in (None, "forward")


def _resolve_print(sink: Transformation) -> None:
    """Which subtask of a print sink of parallelism above 1 prints each record, as Flink's partitioning between the
    sink and the operator before it decides: the instance that got it after a plain ``broadcast()`` (each instance
    gets every record); the key's subtask after a keyed operator of the same parallelism, right after it or through
    ``map``/``flat_map``/``filter``/``process`` operators of that parallelism (Flink forwards its records to the sink
    subtask of the same index; the keyed operator then gives each record its key's subtask, which those operators'
    outputs carry). An
    untyped stream is printed by PyFlink through a map to strings at the environment's parallelism (the
    ``PrintLines`` operator's), which must forward too. Anything else reaches the sink's subtasks round robin from a
    random start (Flink's ``RebalancePartitioner``) or through a non-keyed operator whose subtask is not determined:
    refused, naming why and the alternative."""
    settings = sink.spec.settings  # type: ignore[union-attr]
    settings.by_instance = False
    parallelism = settings.parallelism
    if parallelism <= 1:
        return
    lines = sink.inputs[0]
    factory: ParallelOperatorFactory = lines.factory  # type: ignore[assignment]
    typed = not _is_pickled(settings.type_info)
    forwarded = typed or factory.instances == parallelism  # PyFlink's map to strings before an untyped stream's sink
    if factory.broadcast_input:
        if forwarded:
            settings.by_instance = True
            return
        why = (
            f"PyFlink prints an untyped stream through a map to strings at the environment's parallelism "
            f"({factory.instances}), whose records reach the sink's {parallelism} subtasks round robin from a random "
            "start (Flink's RebalancePartitioner)"
        )
    else:
        source = lines if _spreads(lines) else lines.inputs[0]
        while _forwards_subtask(source, parallelism):  # Flink forwards through it: the same subtask index
            source = source.inputs[0]
        keyed = source.kind == "operator" and source.keyed and not isinstance(source.spec, TwoInputSpec)
        source_factory = source.factory if isinstance(source.factory, ParallelOperatorFactory) else None
        if _spreads(source):
            why = (
                f"{source.input_partitioning}() before {source.name!r} gives each record to a subtask Flink chooses "
                "at random or round robin"
            )
        elif keyed and source_factory is not None and source_factory.instances == parallelism and forwarded:
            source_factory.stamps_subtask = True
            return
        elif keyed and source_factory is not None and forwarded:
            why = (
                f"the keyed operator {source.name!r} before it runs at parallelism {source_factory.instances}, so its "
                f"records reach the sink's {parallelism} subtasks round robin from a random start (Flink's "
                "RebalancePartitioner)"
            )
        elif keyed and source_factory is not None:
            why = (
                f"PyFlink prints an untyped stream through a map to strings at the environment's parallelism "
                f"({factory.instances}), whose records reach the sink's {parallelism} subtasks round robin from a "
                "random start (Flink's RebalancePartitioner)"
            )
        else:
            why = (
                f"its records come from {source.name!r}, which is not a one-input keyed operator: which of its "
                "subtasks handles a record is Flink's round robin from a random start (RebalancePartitioner), so the "
                "subtask that prints it is not determined (the package knows it after a keyed operator of the "
                "sink's parallelism, by the key, right after it or through map/flat_map/filter/process operators of "
                "that parallelism, and after broadcast())"
            )
    ident = f"({settings.sink_identifier!r}) " if settings.sink_identifier else ""
    msg = (
        f"print() {ident}at parallelism {parallelism}: Flink begins each line with the number of the sink subtask that "
        f"printed it, and here {why}; set_parallelism(1) on the print sink (print().set_parallelism(1)), or print "
        "after a keyed operator of the sink's parallelism"
    )
    raise UnsupportedFeatureError(msg)


def _one_instance(factory: Callable[[], StreamOperator]) -> Callable[[int], StreamOperator]:
    """``factory`` as a :class:`ParallelOperatorFactory`'s ``make``: its operator does not depend on the number of
    instances (the package runs one instance; only the subtask values of its functions' runtime context do)."""
    return lambda instances: factory()


@dataclass
class ParallelOperatorFactory:
    """The factory of an operator, made knowing how many parallel instances Flink runs of it: a broadcast operator's
    output depends on it (each instance emits what ``process_broadcast_element`` returns), and every operator's
    functions see it in their runtime context (:class:`~pyspark_flinkish.core.subtasks.Subtasks`: the number of
    subtasks, the max parallelism, the index of a key's subtask from ``key_type``, the spec's). ``instances`` is the
    transformation's parallelism (:meth:`Transformation.set_parallelism`); 1 for Flink's ``-1``, the system's default,
    which is the machine's cores in a local Flink and 1 in this package. ``max_parallelism``: the operator's or the
    environment's when the operator was made, -1 for Flink's default. Holds the operator's arguments only, never the
    plan: Spark ships factories to its executors."""

    make: Callable[[int], StreamOperator]
    instances: int = 1
    max_parallelism: int = -1
    key_type: Any = None
    broadcast_input: bool = False
    """Its input is ``broadcast()``'s (Flink's ``BroadcastPartitioner``): every instance gets every record, so the
    operator is made as its ``instances`` copies, each with its own subtask index
    (:class:`~pyspark_flinkish.core.partitioning.BroadcastInstances`)."""
    input_type: Any = None
    """The type of a ``broadcast_input`` operator's input: how each instance gets its copy of a record."""
    stamps_subtask: bool = False
    """A keyed operator whose records a print sink numbers by the key's subtask: each record it emits carries it
    (:class:`~pyspark_flinkish.core.subtasks.SubtaskStamping`)."""

    def __call__(self) -> StreamOperator:
        op = self.make(self.instances)
        if self.stamps_subtask:
            op.stamps_subtask = True  # type: ignore[attr-defined]
        if not self.broadcast_input or self.instances == 1:
            op.subtasks = Subtasks(self.instances, self.max_parallelism, self.key_type)
            return op
        copies = BroadcastInstances.of(op, self.instances)
        for index, copy in enumerate(copies):
            copy.subtasks = Subtasks(self.instances, self.max_parallelism, self.key_type, index)
        return BroadcastInstances(copies, self.input_type)


def node_uid(t: Transformation, position: int) -> str:
    """The uid that names a node's state: the user's ``.uid(...)``, else one made of the node's position in
    :func:`topological` order, its kind and name (stable while the pipeline's shape stays the same)."""
    if t.uid:
        return t.uid
    uid = f"{position:03d}-{t.kind}-{t.name}"
    return uid.replace("/", "_").replace(" ", "_").replace("(", "_").replace(")", "")


def node_uids(order: List[Transformation]) -> List[str]:
    """:func:`node_uid` of each node of a :func:`topological` order. The lines node a ``print()`` sink puts before
    itself (part of the sink in Flink's plan) takes no position: the nodes after it keep the uids they had before
    ``print()`` had that node, so checkpoints of jobs without explicit uids restore as before."""
    uids: List[str] = []
    position = 0
    for t in order:
        if isinstance(t.spec, StatelessSpec) and t.spec.op == "print" and not t.uid:
            uids.append(node_uid(t, position).replace("-", "-print-", 1))
            continue
        uids.append(node_uid(t, position))
        position += 1
    return uids


def topological(sinks: List[Transformation]) -> List[Transformation]:
    """All transformations the sinks depend on, inputs before consumers, in creation order."""
    seen: Dict[int, Transformation] = {}

    def visit(t: Transformation) -> None:
        if t.id in seen:
            return
        for i in t.inputs:
            visit(i)
        seen[t.id] = t

    for s in sinks:
        visit(s)
    return sorted(seen.values(), key=lambda t: t.id)


@dataclass
class Consumers:
    """Who reads one node's output in a compiled graph, by position in the :func:`topological` order: ``main``, the
    consumers of its main output as ``(consumer, the consumer's input it is)``, and ``side``, those of each side
    output by tag (each a ``side_output`` node, its input 0)."""

    main: List[Tuple[int, int]] = field(default_factory=list)
    side: Dict[OutputTag, List[Tuple[int, int]]] = field(default_factory=dict)


def consumers(order: List[Transformation]) -> List[Consumers]:
    """The edges of a :func:`topological` order, per node (:class:`Consumers`): the one rule both executors compile
    their graph with (``local/executor.py``'s ``LocalExecutor``, ``spark/plan.py``'s ``ExecPlan``). A
    ``side_output`` node reads its input's side output of its tag, every other node the main output of each of its
    inputs, in input order (one stream read twice, ``a.union(a)``, is two edges); consumers are listed in the order
    of ``order``, which is the order records reach them in (depth-first)."""
    position = {t.id: i for i, t in enumerate(order)}
    edges = [Consumers() for _ in order]
    for i, t in enumerate(order):
        for channel, parent in enumerate(t.inputs):
            out = edges[position[parent.id]]
            if t.kind == "side_output":
                out.side.setdefault(t.tag, []).append((i, channel))  # type: ignore[arg-type]
            else:
                out.main.append((i, channel))
    return edges


__all__ = [
    "AsyncWaitSpec",
    "BatchWriterSinkSpec",
    "Consumers",
    "DeadLetterRouteSpec",
    "DeltaSinkSpec",
    "FileSinkSpec",
    "ForeachBatchSpec",
    "KafkaSinkSpec",
    "KeyedProcessSpec",
    "NodeSpec",
    "ParallelOperatorFactory",
    "PrintSinkSpec",
    "made_with_parallelism",
    "resolve_parallelism",
    "SinkFunctionSpec",
    "StatelessSpec",
    "TimestampsSpec",
    "Transformation",
    "TwoInputSpec",
    "WindowSpec",
    "consumers",
    "node_uid",
    "node_uids",
    "topological",
]
