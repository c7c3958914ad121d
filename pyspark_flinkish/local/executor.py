"""Runs a plan in this process, following the micro-batch execution model.

For every micro-batch ``i``: (1) the processing-time clock is set (``MicroBatch.processing_time``) and due
processing-time timers fire; (2) every source emits batch ``i``'s elements in order — each record flows
depth-first through the operator chain, so downstream operators see it at their current (previous)
watermark; (3) the periodic watermark emission runs in topological order: sources emit their explicit or
generated watermark (min over non-idle partitions), ``assign_timestamps_and_watermarks`` operators emit
theirs, and every operator fires its due event-time timers before forwarding the watermark downstream.
A bounded source that has run out of batches then emits ``LONG_MAX`` (end of input); processing-time
timers never fire after that (Flink quiesces them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Hashable, List, Mapping, Optional, Tuple

from ..common.job_execution_result import JobExecutionResult
from ..core.clock import Clock, ManualClock
from ..core.errors import FlinkishError, StateError, UserFunctionError
from ..core.javamath import LONG_MAX, LONG_MIN
from ..core.operators import StreamOperator, TimestampsAndWatermarksOperator, call_user, in_node, short
from ..core.records import OutputTag, StreamRecord
from ..core.watermark_alignment import SplitWatermarks
from ..datastream.compiled_graph import CompiledNode, compile_graph
from ..datastream.plan import FileSinkSpec, Transformation, topological
from ..datastream.sources import MicroBatchSource
from ..monitoring import watermark_lag
from .file_sink import LocalFileSinkWriter
from .graph_runner import GraphRunner


@dataclass
class BatchProgress:
    """What happened in one micro-batch: the inputs, the watermarks and the operators' counters.

    ``source_watermarks`` maps source name -> partition -> watermark (None while the partition is idle);
    ``operator_watermarks`` maps operator name -> its current watermark; ``metrics`` maps operator name ->
    cumulative counters (``windows_fired``, ``late_records_side_output``, ``late_records_dropped``, ...).
    """

    batch: int
    processing_time: int
    input_records: int
    source_watermarks: Dict[str, Dict[Hashable, Optional[int]]] = field(default_factory=dict)
    operator_watermarks: Dict[str, int] = field(default_factory=dict)
    metrics: Dict[str, Dict[str, int]] = field(default_factory=dict)

    def total(self, metric: str) -> int:
        """A counter summed over all operators."""
        return sum(m.get(metric, 0) for m in self.metrics.values())

    @property
    def watermark_lags(self) -> Dict[str, Optional[int]]:
        """Per operator (as ``operator_watermarks``): ``processing_time`` minus its current watermark, Flink's
        watermark lag (:func:`~pyspark_flinkish.monitoring.watermark_lag`; None before the first watermark and
        after the end of input)."""
        return {name: watermark_lag(self.processing_time, wm) for name, wm in self.operator_watermarks.items()}


class _Node:
    """A running transformation: an instance of its compiled node (``datastream/compiled_graph.py``) in the job's
    :class:`~.graph_runner.GraphRunner`, which holds its operator (if any), its sink function and its input valve;
    the output its operator is opened with (records and watermarks go on through the runner) and where idleness
    goes (``main`` and ``side``: the nodes its edges lead to)."""

    def __init__(self, t: Transformation, compiled: CompiledNode, runner: GraphRunner) -> None:
        self.t = t
        self.compiled = compiled
        self.index = compiled.index
        self.uid = compiled.uid
        self.runner = runner
        self.main: List[Tuple[_Node, int]] = []
        self.side: Dict[OutputTag, List[Tuple[_Node, int]]] = {}

    @property
    def operator(self) -> Optional[StreamOperator]:
        return self.runner.operators.get(self.index)

    @operator.setter
    def operator(self, op: StreamOperator) -> None:
        self.runner.operators[self.index] = op

    @property
    def valve(self) -> Any:
        return self.runner.valves[self.index]

    @valve.setter
    def valve(self, valve: Any) -> None:
        self.runner.valves[self.index] = valve

    # -- Output protocol (the operator's output goes to the downstream edges, through the runner)
    def collect(self, record: StreamRecord) -> None:
        self.runner.forward(self.index, record)

    def collect_side(self, tag: OutputTag, record: StreamRecord) -> None:
        self.runner.forward_side(self.index, tag, record)

    def emit_watermark(self, watermark: int) -> None:
        self.runner.forward_watermark(self.index, watermark)

    def emit_idle(self, idle: bool) -> None:
        for node, ch in self.main + [e for edges in self.side.values() for e in edges]:
            node.push_idle(ch, idle)

    # -- inputs
    def push_idle(self, channel: int, idle: bool) -> None:
        new, status = self.valve.input_idle(channel, idle)
        operator = self.operator
        passes = operator is None and self.compiled.kind != "sink"  # a pass-through node hands it on
        if new is not None:
            if operator is not None:
                operator.process_watermark(new)
            elif passes:
                self.emit_watermark(new)
        if status is not None:
            if operator is not None:
                operator.process_idle(status)
            elif passes:
                self.emit_idle(status)


class SourceRunner:
    """A source's watermarks: per-partition generators (or explicit per-batch watermarks), idleness, and
    end of input. Shared by the JVM-free engine and the Spark driver, which feeds it statistics."""

    def __init__(self, node: _Node, clock: Clock) -> None:
        self.node = node
        self.source = node.t.source
        self.strategy = node.t.watermark_strategy
        self.splits = SplitWatermarks(self.strategy, clock)
        for p in getattr(self.source, "partitions", ()):
            self.splits.add_partition(p)
        self.current = LONG_MIN
        self.idle = False
        self.finished = False

    @property
    def explicit(self) -> bool:
        return bool(getattr(self.source, "explicit_watermarks", False))

    def observe(self, partition: Hashable, value: Any, timestamp: Optional[int]) -> Optional[int]:
        """An element of ``partition`` was emitted (its generator sees it if it has a timestamp); returns the
        source's new watermark if the generator's ``on_event`` advanced it (``SplitWatermarks.on_event``), which
        :meth:`emit_event_watermark` passes on right after the element, as Flink's source does."""
        if timestamp is not None:
            return self.splits.on_event(partition, value, timestamp)
        self.splits.add_partition(partition)
        return None

    def emit_batch(self, index: int) -> None:
        if index >= len(self.source.batches):
            return
        batch = self.source.batches[index]
        node = self.node
        for i, value in enumerate(batch.elements):
            try:
                where = lambda v=value: f"{node.t.name}: timestamp assigner on {short(v)}"  # noqa: E731
                ts = call_user(self.strategy.extract_timestamp, where, value, None)
            except UserFunctionError as exc:
                raise in_node(exc, node.t.name, node.uid)  # noqa: B904 (its cause is the user's exception)
            node.collect(StreamRecord(value, ts))
            advanced = self.observe(batch.partition_of(i), value, ts)
            if advanced is not None:
                self.emit_event_watermark(advanced)

    def periodic_emit(self, index: Optional[int], explicit_watermark: Optional[int] = None) -> None:
        """End of micro-batch ``index``: a replayed source (``MicroBatchSource``) emits the explicit watermark of its
        batch ``index``, or the generated one (nothing past its last batch, nor for ``index`` None: a Spark batch
        that read none of its batches); any other source (a DataFrame Spark reads) ``explicit_watermark`` (from a
        source that steps Spark batches itself), or the generated one."""
        if not isinstance(self.source, MicroBatchSource):
            self.emit_periodic(explicit_watermark)
            return
        if index is None or self.finished or index >= len(self.source.batches):
            return
        self.emit_periodic(self.source.batches[index].watermark if self.explicit else None)

    def emit_periodic(self, explicit_watermark: Optional[int]) -> None:
        if self.finished:
            return
        if self.explicit:
            if explicit_watermark is not None:
                self._emit(explicit_watermark)
            return
        new = self.splits.on_periodic_emit()
        if self.splits.idle and not self.idle:
            self.idle = True
            self.node.emit_idle(True)
        elif not self.splits.idle and self.idle and new is not None:
            self.idle = False
            self.node.emit_idle(False)
        if new is not None:
            self._emit(new)

    def emit_event_watermark(self, watermark: int) -> None:
        """A watermark a generator's ``on_event`` advanced (right after its element, within the micro-batch): an
        idle source becomes active with it, as Flink's ``WatermarkOutputMultiplexer`` marks its output active."""
        if self.finished:
            return
        if self.idle:
            self.idle = False
            self.node.emit_idle(False)
        self._emit(watermark)

    def finish_if_done(self, index: Optional[int], later: bool = False) -> None:
        """After micro-batch ``index``'s periodic emission everywhere: a bounded replayed source emits end of input
        (``LONG_MAX``) if that was its last batch. ``later`` (the Spark executor's rule): in the batch after its last
        one, so that every Spark batch advances each operator's watermark once (``docs/differences.md``), except a
        BATCH job's source (``datastream.runtime_mode``), which ends in its one batch as here."""
        if index is None or not isinstance(self.source, MicroBatchSource):
            return
        last = len(self.source.batches) - 1
        if later and not getattr(self.source, "batch_execution", False):
            last += 1
        if index >= last and self.source.end_of_input:
            self.end_input()

    def end_input(self) -> None:
        if self.finished:
            return
        self.finished = True
        if self.idle:
            self.idle = False
            self.node.emit_idle(False)
        self._emit(LONG_MAX)

    def partition_watermarks(self) -> Dict[Hashable, Optional[int]]:
        if self.explicit:
            return {p: self.current for p in self.source.partitions}
        return self.splits.partition_watermarks()

    def _emit(self, watermark: int) -> None:
        if watermark > self.current:
            self.current = watermark
            self.node.emit_watermark(watermark)

    def to_dict(self) -> Dict[str, Any]:
        """The source's watermark bookkeeping as plain data (user generators pickled, see ``generator_to_dict``)."""
        return {
            "splits": self.splits.to_dict(allow_pickle=self.strategy.has_user_generator),
            "current": self.current,
            "idle": self.idle,
            "finished": self.finished,
        }

    def restore(self, data: Dict[str, Any]) -> None:
        """Inverse of :meth:`to_dict`; pickled generators are read only if this source's strategy has a user
        generator (a built-in strategy never unpickles anything)."""
        self.splits.restore(data["splits"], allow_pickle=self.strategy.has_user_generator)
        self.current, self.idle, self.finished = int(data["current"]), bool(data["idle"]), bool(data["finished"])


class LocalExecutor:
    """Compiles the plan into nodes and runs it to the end of its sources."""

    def __init__(
        self,
        sinks: List[Transformation],
        clock: Clock,
        restore_every_batch: bool = False,
        progress: Optional[Callable[[BatchProgress], None]] = None,
        watermarks_only: bool = False,
    ) -> None:
        self.clock = clock
        self.restore_every_batch = restore_every_batch
        self.progress = progress
        self.order = topological(sinks)
        self.graph = compile_graph(sinks)  # the compiled graph both executors start from
        self.runner = GraphRunner(self.graph)  # the one dispatch of both executors (``local/graph_runner.py``)
        self.nodes: Dict[int, _Node] = {}
        for t, compiled in zip(self.order, self.graph):
            op = compiled.factory() if compiled.factory is not None else None
            if watermarks_only and op is not None and not isinstance(op, TimestampsAndWatermarksOperator):
                op = StreamOperator(op.name)  # the Spark driver tracks watermarks only: forward them
            if op is not None:
                self.runner.operators[compiled.index] = op
            if t.sink is not None:
                self.runner.sink_functions[compiled.index] = t.sink
            self.runner.valves[compiled.index] = compiled.make_valve()
            self.nodes[t.id] = _Node(t, compiled, self.runner)
        # FileSink: local part files, committed at the end of every micro-batch (the engine's checkpoint)
        self.file_writers: List[LocalFileSinkWriter] = []
        for t in self.order:
            if isinstance(t.spec, FileSinkSpec) and not watermarks_only:
                writer = LocalFileSinkWriter(t.spec.sink, t.inputs[0].output_type, clock)
                self.file_writers.append(writer)
                self.runner.sink_functions[self.nodes[t.id].index] = writer.write
        # the compiled edges (as ``spark/plan.py`` ships them), as the nodes they lead to; a side-output selector is
        # itself a pass-through node
        ordered = [self.nodes[t.id] for t in self.order]
        for node, compiled in zip(ordered, self.graph):
            node.main = [(ordered[c], compiled.channel_of(p)) for p, c in enumerate(compiled.main)]
            node.side = {tag: [(ordered[c], 0) for c in edges_of] for tag, edges_of in compiled.side.items()}
        self.sources = [SourceRunner(self.nodes[t.id], clock) for t in self.order if t.kind == "source"]
        self.runners = {t.id: r for t, r in zip([t for t in self.order if t.kind == "source"], self.sources)}

    def run(self, job_name: str) -> JobExecutionResult:
        operators = [n.operator for n in (self.nodes[t.id] for t in self.order) if n.operator is not None]
        for t in self.order:
            node = self.nodes[t.id]
            if node.operator is not None:
                node.operator.open(node, self.clock)
        n_batches = max((len(s.source.batches) for s in self.sources), default=0)
        try:
            for i in range(n_batches):
                self.set_clock(i)
                now = self.clock.now()
                for op in operators:
                    try:
                        op.advance_processing_time(now)
                    except UserFunctionError as exc:
                        node = next(n for n in self.nodes.values() if n.operator is op)
                        raise in_node(exc, node.t.name, node.uid)  # noqa: B904 (its cause is the user's exception)
                for s in self.sources:
                    s.emit_batch(i)
                self.periodic_emission(i)
                for writer in self.file_writers:
                    writer.commit()
                if self.progress is not None:
                    self.progress(self._progress(i, now))
                if self.restore_every_batch:
                    self._restore_watermarks_from_json()
                    operators = self._restart_keyed_operators()
            for t in self.order:
                node = self.nodes[t.id]
                if node.operator is None:
                    continue
                try:
                    node.operator.end_input()
                except UserFunctionError as exc:
                    raise in_node(exc, node.t.name, node.uid)  # noqa: B904 (its cause is the user's exception)
            for writer in self.file_writers:
                writer.commit()
        finally:
            for op in operators:
                try:
                    op.close()
                except FlinkishError:
                    pass
        metrics = {f"{t.id}:{t.name}": dict(self.nodes[t.id].operator.metrics) for t in self.order if self.nodes[t.id].operator}  # type: ignore[union-attr]
        return JobExecutionResult(job_name, n_batches, metrics)

    def watermark_state(self) -> Dict[str, Any]:
        """The watermark bookkeeping (every node's valve and watermark, ``assign_timestamps_and_watermarks``
        generators, every source's per-partition generators) as plain JSON data, by position in the
        topological order (transformation ids differ between builds of the same pipeline). Keyed state is
        not part of it. The Spark driver checkpoints this after every micro-batch."""
        from ..core.watermarks import generator_to_dict

        nodes = []
        for t in self.order:
            n = self.nodes[t.id]
            op: Any = None
            if n.operator is not None:
                op = {"watermark": n.operator.current_watermark}
                if isinstance(n.operator, TimestampsAndWatermarksOperator):
                    o = n.operator
                    op["generator"] = generator_to_dict(o.generator, o.strategy.has_user_generator)
                    op["output"] = [o.wm_output.current, o.wm_output.idle]
            nodes.append({"valve": n.valve.to_dict(), "operator": op})
        position = {t.id: i for i, t in enumerate(self.order)}
        sources = [[position[tid], r.to_dict()] for tid, r in self.runners.items()]
        return {"nodes": nodes, "sources": sources}

    def restore_watermark_state(self, state: Dict[str, Any]) -> None:
        """Inverse of :meth:`watermark_state`, into this (freshly built and opened) graph."""
        from ..core.watermarks import generator_from_dict

        nodes = state.get("nodes")
        if not isinstance(nodes, list) or len(nodes) != len(self.order):
            found = len(nodes) if isinstance(nodes, list) else nodes
            msg = (
                f"the checkpoint's watermark state has {found} nodes, the pipeline {len(self.order)}: the pipeline "
                "changed shape; restore it or start from a new checkpoint location"
            )
            raise StateError(msg)
        for t, saved in zip(self.order, nodes):
            n = self.nodes[t.id]
            n.valve = type(n.valve).from_dict(saved["valve"])
            op, saved_op = n.operator, saved["operator"]
            if op is None or saved_op is None:
                continue
            op.current_watermark = int(saved_op["watermark"])
            if isinstance(op, TimestampsAndWatermarksOperator) and "generator" in saved_op:
                op.generator = generator_from_dict(saved_op["generator"], self.clock, op.strategy.has_user_generator)
                op.wm_output.current, op.wm_output.idle = int(saved_op["output"][0]), bool(saved_op["output"][1])
        runners = list(self.runners.values())
        position = {t.id: i for i, t in enumerate(self.order)}
        saved_sources = {int(i): data for i, data in state.get("sources", [])}
        for tid, r in zip(self.runners, runners):
            if position[tid] not in saved_sources:
                msg = f"the checkpoint's watermark state has no entry for source {self.nodes[tid].t.name!r}"
                raise StateError(msg)
            r.restore(saved_sources[position[tid]])

    def _progress(self, index: int, now: int) -> BatchProgress:
        records = sum(len(s.source.batches[index].elements) for s in self.sources if index < len(s.source.batches))
        nodes = [self.nodes[t.id] for t in self.order]
        return BatchProgress(
            batch=index,
            processing_time=now,
            input_records=records,
            source_watermarks={s.node.t.name: s.partition_watermarks() for s in self.sources},
            operator_watermarks={f"{n.t.id}:{n.t.name}": n.operator.current_watermark for n in nodes if n.operator is not None},
            metrics={f"{n.t.id}:{n.t.name}": dict(n.operator.metrics) for n in nodes if n.operator is not None},
        )

    def _restore_watermarks_from_json(self) -> None:
        """Put the watermark bookkeeping through its JSON encoding and back, as the Spark driver does between
        micro-batches (with ``restore_every_batch``: proves the encoding holds everything)."""
        import json

        self.restore_watermark_state(json.loads(json.dumps(self.watermark_state(), allow_nan=False)))

    def _restart_keyed_operators(self) -> List[StreamOperator]:
        """Replace every keyed operator by a fresh one restored from encoded per-key snapshots: what the
        Spark executors do between micro-batches. Used by tests to prove snapshots are complete."""
        from ..core.codec import decode_snapshot, encode_snapshot
        from ..core.operators import KeyedOperator

        for t in self.order:
            node = self.nodes[t.id]
            old = node.operator
            if not isinstance(old, KeyedOperator):
                continue
            blobs = {k: encode_snapshot(s) for k in old.active_keys() if (s := old.snapshot_key(k)) is not None}
            old.close()
            fresh: Any = t.factory()  # type: ignore[misc]
            fresh.open(node, self.clock)
            fresh.restore_watermark(old.current_watermark)
            for key, blob in blobs.items():
                fresh.restore_key(key, decode_snapshot(blob))
            if hasattr(old, "snapshot_broadcast_state"):  # broadcast state: operator state, through the same codec
                fresh.restore_broadcast_state(decode_snapshot(encode_snapshot(old.snapshot_broadcast_state())))
            node.operator = fresh
        return [n.operator for n in (self.nodes[t.id] for t in self.order) if n.operator is not None]

    def set_clock(self, index: int) -> None:
        """Set the processing-time clock for micro-batch ``index``: the latest ``MicroBatch.processing_time`` of
        the sources' batch ``index`` (never backwards; a batch without one leaves the clock as it is). The one
        rule of both engines: the Spark driver calls it for every replayed micro-batch."""
        replayed = [s.source.batches for s in self.sources if isinstance(s.source, MicroBatchSource)]  # not a DataFrame
        times = [batches[index].processing_time for batches in replayed if index < len(batches)]
        times = [t for t in times if t is not None]
        if times:
            if not isinstance(self.clock, ManualClock):
                msg = "MicroBatch.processing_time needs the environment to use a ManualClock (env.set_manual_clock())"
                raise FlinkishError(msg)
            self.clock.set(max(max(times), self.clock.now()))

    def periodic_emission(
        self, index: Optional[int], explicit: Optional[Mapping[int, Optional[int]]] = None, end_later: bool = False
    ) -> None:
        """The end of micro-batch ``index``: the periodic watermark emission and the end of input, the one rule of
        both engines (this engine's run, and the Spark executor's watermark advance on its driver and in its keyed
        tasks, ``spark/watermark_advance.py``). In topological order, every source's periodic emission
        (:meth:`SourceRunner.periodic_emit`: its explicit or generated watermark, idleness) and every operator's
        (``on_periodic_emit``: ``assign_timestamps_and_watermarks``' generators, async I/O), so that each operator
        fires its due event-time timers before it forwards the watermark; then every bounded source past its last
        batch ends its input (:meth:`SourceRunner.finish_if_done`). ``index``: the replayed sources' batch (None: a
        Spark batch that read none of them); ``explicit``: a DataFrame source's explicit watermark by transformation id
        (a source that steps Spark batches itself); ``end_later``: the Spark executor's end of input."""
        watermarks = explicit or {}
        for t in self.order:
            node = self.nodes[t.id]
            runner = self.runners.get(t.id)
            if runner is not None:
                runner.periodic_emit(index, watermarks.get(t.id))
            elif node.operator is not None:
                try:
                    node.operator.on_periodic_emit()
                except UserFunctionError as exc:  # e.g. an async I/O request of the batch failed
                    raise in_node(exc, node.t.name, node.uid)  # noqa: B904 (its cause is the user's exception)
        for runner in self.sources:
            runner.finish_if_done(index, end_later)


def run_local(
    sinks: List[Transformation], clock: Clock, progress: Optional[Callable[[BatchProgress], None]], job_name: str
) -> JobExecutionResult:
    """The local executor's entry at the dispatch point (``datastream.executors``): run the sinks' pipeline to
    the end of its sources."""
    return LocalExecutor(sinks, clock, progress=progress).run(job_name)


__all__ = [
    "BatchProgress",
    "SourceRunner",
    "LocalExecutor",
    "run_local",
]
