"""The executable form of a pipeline for Spark: its nodes in topological order with routing edges and levels.

Executors get a copy of the :class:`ExecPlan` without source data (the driver drops the transformations);
a :class:`Node` holds only what running it needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..core.batch_window import batch_eligibility
from ..core.errors import UnsupportedFeatureError
from ..datastream.compiled_graph import CompiledNode, compiled_fields, link
from ..datastream.plan import (
    BatchWriterSinkSpec,
    ForeachBatchSpec,
    TimestampsSpec,
    Transformation,
    TwoInputSpec,
    WindowSpec,
    node_uids,
    topological,
)
from . import state_store
from .record_columns import RecordColumns, declared_columns, extra_ddl, input_columns, key_columns
from .rows import ROW_DDL


@dataclass
class Node(CompiledNode):
    """One plan node as executors see it: its compiled node (``datastream/compiled_graph.py``, as the JVM-free engine
    instantiates it) and what the Spark executors add to it (no source data, only what running it needs)."""

    key_selector: Optional[Callable[[Any], Any]] = None
    level: int = 0  # keyed operators: 1 + the deepest keyed ancestor
    generates_watermarks: bool = False  # assign_timestamps_and_watermarks
    batched: bool = False  # a window run by BatchWindowOperator (core/batch_window.py)
    key_selectors: Optional[List[Optional[Callable[[Any], Any]]]] = None  # keyed two-input: one per input
    broadcast_input: Optional[int] = None  # the input whose records go to every state partition (broadcast state)
    key_type: Any = None  # key_by's key_type (None: untyped): which keys are one key (``core/key_identity.py``)
    # a custom WatermarkGenerator (``WatermarkStrategy.for_generator``) here: its on_event runs in the route
    # (``spark/generators.py``); a source's strategy and declared partitions go with it
    custom_generator: bool = False
    strategy: Optional[Any] = None
    source_partitions: Tuple[Any, ...] = ()


def refuse_per_event_generators(transformations: List[Transformation]) -> None:
    """Refuse a custom ``WatermarkGenerator`` (``WatermarkStrategy.for_generator``) given to a source on the
    applyInPandasWithState executor: Flink's source runs one per source partition and emits what it returns at once,
    which that executor does not follow. One in ``assign_timestamps_and_watermarks`` runs there as Flink runs it
    (``spark/stateful_generators.py``). Raises :class:`UnsupportedFeatureError` naming the alternatives
    (``assign_timestamps_and_watermarks`` after the source; the foreachBatch executor, ``spark/generators.py``)."""
    for t in transformations:
        strategy = generator_strategy(t)
        if t.kind == "source" and strategy is not None and strategy.has_user_generator:
            msg = (
                f"source {t.name!r}: a custom WatermarkGenerator (WatermarkStrategy.for_generator) given to a source is "
                "not supported on the applyInPandasWithState executor (Flink runs one per source partition and emits "
                "what it returns at once). Give the source no watermarks and the generator to "
                "assign_timestamps_and_watermarks right after it, which this executor runs as Flink does, or use the "
                "foreachBatch executor (get_execution_environment(spark), the default backend) or the local engine "
                "(get_execution_environment() without a SparkSession)."
            )
            raise UnsupportedFeatureError(msg)


def generator_strategy(t: Transformation) -> Optional[Any]:
    """The ``WatermarkStrategy`` of a source or an ``assign_timestamps_and_watermarks`` (None elsewhere)."""
    if t.kind == "source":
        return t.watermark_strategy
    if isinstance(t.spec, TimestampsSpec):
        return t.spec.strategy
    return None


def refuse_operator_broadcast_state(transformations: List[Transformation]) -> None:
    """Refuse a non-keyed ``BroadcastProcessFunction`` on the foreachBatch executor: its broadcast state is operator
    state of a non-keyed operator, which runs in the route tasks (one per source partition, fresh every micro-batch),
    so nothing would keep it between micro-batches or give every task the same broadcast elements in Flink's
    order. A keyed stream's broadcast state (``KeyedBroadcastProcessFunction``) runs in the keyed stage, with every
    state partition given every broadcast element and the state checkpointed with the keyed state."""
    for t in transformations:
        if isinstance(t.spec, TwoInputSpec) and t.spec.op == "broadcast_process":
            msg = (
                f"{t.name!r}: a BroadcastProcessFunction on a non-keyed stream is not supported on Spark: its broadcast "
                "state would not survive between micro-batches. Key the stream and use a KeyedBroadcastProcessFunction "
                "(stream.key_by(...).connect(broadcast_stream).process(...)), or run the job on the local engine "
                "(get_execution_environment() without a SparkSession)."
            )
            raise UnsupportedFeatureError(msg)


class ExecPlan:
    """The pipeline's nodes in topological order, with routing edges."""

    def __init__(self, sinks: List[Transformation], vectorize: bool = True) -> None:
        order = topological(sinks)
        self.transformations = order
        index = {t.id: i for i, t in enumerate(order)}
        self.nodes: List[Node] = []
        for i, (t, uid) in enumerate(zip(order, node_uids(order))):
            self.nodes.append(
                Node(
                    **compiled_fields(t, i, uid),  # the compiled node (``datastream/compiled_graph.py``)
                    key_selector=getattr(t.spec, "key_selector", None) if t.keyed else None,
                    generates_watermarks=isinstance(t.spec, TimestampsSpec),
                    batched=vectorize and isinstance(t.spec, WindowSpec) and batch_eligibility(t.factory()) is None,
                    key_selectors=t.spec.key_selectors if isinstance(t.spec, TwoInputSpec) else None,
                    broadcast_input=t.spec.broadcast_input if isinstance(t.spec, TwoInputSpec) else None,
                    key_type=getattr(t.spec, "key_type", None),
                )
            )
            strategy = generator_strategy(t)
            if strategy is not None and strategy.has_user_generator:
                node = self.nodes[-1]
                node.custom_generator = True
                if t.kind == "source":
                    node.strategy = strategy
                    node.source_partitions = tuple(getattr(t.source, "partitions", ()))
        link(self.nodes, order)  # the compiled edges, as the local engine's (``datastream/compiled_graph.py``)
        for i, t in enumerate(order):  # levels of keyed operators
            node = self.nodes[i]
            parents = [self.nodes[index[p.id]] for p in t.inputs]
            deepest = max((p.level for p in parents), default=0)
            node.level = deepest + 1 if node.keyed else deepest
        refuse_operator_broadcast_state(order)
        for node in self.nodes:
            if node.kind == "operator" and not node.keyed and node.generates_watermarks and node.level > 0:
                msg = (
                    "assign_timestamps_and_watermarks after a keyed operator is not supported on Spark yet; "
                    "assign timestamps at the source (from_source's WatermarkStrategy) instead"
                )
                raise UnsupportedFeatureError(msg)
        self.sources = [n.index for n in self.nodes if n.kind == "source"]
        self.sinks = [n.index for n in self.nodes if n.kind == "sink"]
        self.levels = sorted({n.level for n in self.nodes if n.keyed})
        self.future_horizon_ms: Optional[int] = None  # far-future records: see the module docstring
        self.storage_options: Dict[str, str] = {}  # the executors' file-system clients (spark/storage.py)
        # keyed operators whose records cross stages as columns (``spark/record_columns.py``; see
        # :meth:`carry_columns`), by node
        self.record_columns: Dict[int, RecordColumns] = {}
        # keyed operators whose declared keys cross from the route as columns (``record_columns.key_columns``)
        self.key_columns: Dict[int, RecordColumns] = {}

    def carry_columns(self) -> None:
        """Let the records of every one-input keyed operator and every sink written from a ``SinkFrame`` whose input
        type is declared cross stages as columns (``spark/record_columns.py``) instead of pickles, and the keys of every
        keyed operator (one or two inputs) with a declared ``key_type`` instead of their bytes; needs the plan's
        transformations (on the driver)."""
        for i, t in enumerate(self.transformations):
            node = self.nodes[i]
            layout = None
            if node.keyed and not node.two_input:
                layout = input_columns(i, t.inputs)
            elif node.kind == "sink" and isinstance(t.spec, (BatchWriterSinkSpec, ForeachBatchSpec)):
                # sinks written from a ``SinkFrame`` (``DeltaSink``, ``KafkaSink``, ``FileSink``, dead letters,
                # ``foreach_batch``): its typed frame or its writers' tasks read the columns, never the driver
                layout = declared_columns(i, t.inputs[0].output_type)
            if layout is not None:
                self.record_columns[i] = layout
            if node.keyed:  # one-input and two-input (connect, broadcast, interval join) alike
                keys = key_columns(i, node.key_type)
                if keys is not None:
                    self.key_columns[i] = keys

    def typed_columns(self) -> List[RecordColumns]:
        """The column layouts of the stage rows, in the order of their columns: records', then keys'."""
        records = [self.record_columns[i] for i in sorted(self.record_columns)]
        return records + [self.key_columns[i] for i in sorted(self.key_columns)]

    def row_ddl(self) -> str:
        """The schema of the stage rows: :data:`.rows.ROW_DDL`, then the columns of :meth:`typed_columns`."""
        return ROW_DDL + extra_ddl(self.typed_columns())

    def keyed_at(self, level: int) -> List[int]:
        return [n.index for n in self.nodes if n.keyed and n.level == level]

    def parents(self, index: int) -> List[int]:
        return [n.index for n in self.nodes if index in n.main or any(index in v for v in n.side.values())]


def keep_state_layouts(plan: ExecPlan, layouts: Dict[str, str]) -> None:
    """A window whose checkpointed state is keyed snapshots (``layouts[uid]``, from the newest committed batch)
    keeps the general operator though it could run batch-wise: a checkpoint's first run fixes its layout (earlier
    versions of this package ran windows whose functions keep state of their own, or override ``clear()``, on the
    general operator)."""
    for node in plan.nodes:
        if node.batched and layouts.get(node.uid) == state_store.LAYOUT_SNAPSHOTS:
            node.batched = False


__all__ = [
    "ExecPlan",
    "Node",
    "generator_strategy",
    "keep_state_layouts",
    "refuse_operator_broadcast_state",
    "refuse_per_event_generators",
]
