"""The chain runner: the stateless operators of a pipeline run depth-first on an executor (like the JVM-free
engine), turning what reaches a keyed operator or a sink into rows (:mod:`.rows`).

Order (``ord``) mirrors the JVM-free engine's depth-first order: ``[0, level, ts, sp, n, ...]`` for outputs of
processing-time timers at the batch start, ``[1, <source order>, ...]`` for source records and what they
cause, ``[2, level, ts, sp, n, ...]`` for outputs of event-time timers at the batch's watermark. A watermark a custom
generator emits within the batch (``spark/generators.py``) travels as ``wm`` rows ordered after the record that caused
it and its descendants. A keyed operator in BATCH mode orders its outputs ``[2, level, *key's sort bytes, sp, n]``
(``core/key_order.py``: Flink's order of keys, the same in every state partition; the bytes of one operator's keys
are prefix-free) where it knows its keys' bytes, else ``[2, level, key's position in its partition, sp, n]``.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from ..core.async_operator import AsyncWaitOperator
from ..core.errors import UserFunctionError
from ..core.key_identity import distinct_key, plain_key
from ..core.operators import KeyedOperator, StreamOperator, TimestampsAndWatermarksOperator, call_user, in_node, short
from ..core.records import OutputTag, StreamRecord
from ..core.watermark_alignment import SplitWatermarks
from ..local.graph_runner import PASS_THROUGH, GraphRunner
from .error_transport import reported_steps
from .generators import assigner_row, install_assigner_state, mid_batch_order, route_splits, splits_row
from .keys import NO_KEY, encode_key, state_partition
from .plan import ExecPlan
from .rows import FUTURE_SAMPLES, dumps, loads, metric_row, row_frame, stats_rows
from .source_rows import partition_from_text
from .ticks import TICK_SOURCE


class FixedClock:
    def __init__(self, now: int) -> None:
        self._now = now

    def now(self) -> int:
        return self._now


class ChainRunner(GraphRunner):
    """Runs the stateless operators of a chain depth-first on an executor with the JVM-free engine's dispatch
    (``local/graph_runner.py``), turning what reaches a keyed operator or a sink into output rows: it overrides what
    a sink and a keyed operator do with a record or a watermark (a row), how an operator's emissions are ordered
    (``ord``, :class:`ChainOutput`) and how operators are opened (lazily, per task)."""

    def __init__(
        self,
        plan: ExecPlan,
        watermarks: Dict[int, int],
        now: int,
        partitions: int,
        generators: Optional[Dict[int, bytes]] = None,
    ) -> None:
        super().__init__(plan.nodes)
        self.plan = plan
        self.watermarks = watermarks
        self.now = now
        self.partitions = partitions
        self.rows: List[Dict[str, Any]] = []
        self.sink_counts: Dict[int, int] = {}  # records this task sent to each sink (``count`` rows)
        self.stats: Dict[Tuple[int, Optional[str]], List[int]] = {}
        self._outputs: Dict[int, ChainOutput] = {}  # the output each operator was opened with (never op.output)
        horizon = getattr(plan, "future_horizon_ms", None)
        self.future_after = None if horizon is None else now + horizon
        self.future: Dict[Tuple[int, Optional[str]], List[Any]] = {}  # [count, max ts, [(ts, order), ...]]
        # custom watermark generators (``spark/generators.py``): their state as the driver left it, the sources'
        # per-partition generators run here, and the order of the mid-batch watermark being passed on (if any)
        self.generators = generators or {}
        self.splits: Dict[int, SplitWatermarks] = {}
        self.watermark_order: Optional[List[int]] = None

    def operator(self, index: int) -> StreamOperator:
        """The node's operator, opened on first use with a :class:`ChainOutput` (kept in ``_outputs``: the
        operator's own ``output`` may stand in front of it, a declared output type, ``core/declared_output.py``) on
        a :class:`FixedClock` at the batch's processing time, at the watermark the driver's graph gives it."""
        op = self.operators.get(index)
        if op is None:
            node = self.plan.nodes[index]
            op = node.factory()  # type: ignore[misc]
            self._outputs[index] = ChainOutput(self, index)
            op.open(self._outputs[index], FixedClock(self.now))
            op.current_watermark = self.watermarks.get(index, op.current_watermark)
            if node.custom_generator and isinstance(op, TimestampsAndWatermarksOperator):
                install_assigner_state(op, self.generators.get(index))
            self.operators[index] = op
        return op

    def record_operator(self, index: int, order: Any) -> StreamOperator:
        """The node's operator, its emissions numbered below the input record's ``order``."""
        op = self.operators.get(index)
        if op is None:
            op = self.operator(index)
        out = self._outputs[index]
        out.base, out.n = order, 0
        return op

    def stat(
        self, node: int, part: Optional[str], ts: Optional[int], batch: int = -1, order: Optional[List[int]] = None
    ) -> None:
        entry = self.stats.setdefault((node, part), [-(2**63), 0, batch])
        if ts is not None:
            entry[0] = max(entry[0], ts)
            entry[1] += 1
            if self.future_after is not None and ts > self.future_after:
                future = self.future.setdefault((node, part), [0, ts, []])
                future[0] += 1
                future[1] = max(future[1], ts)
                if len(future[2]) < FUTURE_SAMPLES:
                    future[2].append((ts, order))
        entry[2] = max(entry[2], batch)

    def source_record(self, index: int, part: Optional[str], element: Any, ts: Optional[int], order: List[int]) -> None:
        """A source's element: passed on at ``[1, *order]``, then seen by its partition's custom generator; a
        watermark its ``on_event`` advanced goes on right after the element's descendants, as the local engine's
        ``SourceRunner.emit_batch`` and Flink's source emit it (``spark/generators.py``)."""
        self.forward(index, StreamRecord(element, ts), [1, *order])
        advanced = self.observe(index, part, element, ts)
        if advanced is not None:
            self.forward_watermark(index, advanced, mid_batch_order([1, *order]))

    def observe(self, index: int, part: Optional[str], element: Any, ts: Optional[int]) -> Optional[int]:
        """A source's element for its partition's custom generator (``on_event`` in processing order), as the local
        engine's ``SourceRunner.observe``: the source's new watermark if ``on_event`` advanced it; a no-op for
        built-in generators (the driver runs them on statistics)."""
        node = self.plan.nodes[index]
        if not node.custom_generator:
            return None
        splits = self.splits.get(index)
        if splits is None:
            splits = self.splits[index] = route_splits(node, self.generators.get(index), FixedClock(self.now))
        p = partition_from_text(node.source_partitions, "" if part is None else part)
        if ts is None:
            splits.add_partition(p)
            return None
        return splits.on_event(p, element, ts)

    def generator_rows(self) -> List[Dict[str, Any]]:
        """One ``gen`` row per custom generator this task ran: its new state, for the driver."""
        rows = [splits_row(index, splits) for index, splits in self.splits.items()]
        for index, op in self.operators.items():
            if self.plan.nodes[index].custom_generator and isinstance(op, TimestampsAndWatermarksOperator):
                rows.append(assigner_row(index, op))
        return rows

    def forward_watermark(self, index: int, watermark: int, order: Any = None) -> None:
        """A mid-batch watermark leaves node ``index`` at ``order`` (``spark/generators.py``): stateless operators
        after it process it now, keyed operators get a ``wm`` row in every state partition (their tasks process it
        at ``order``); what an operator passes on while processing it goes on at the same ``order``."""
        saved, self.watermark_order = self.watermark_order, order
        try:
            super().forward_watermark(index, watermark, order)
        finally:
            self.watermark_order = saved

    def input_watermark(self, index: int, channel: int, watermark: int) -> Optional[int]:
        """No valve in a task: a mid-batch watermark only travels where one input decides (what would need a valve
        is refused, ``generators.refuse_unaligned_generators``); an operator takes it if it is past its own (the
        driver's graph's) watermark, and a sink has no use for it."""
        node = self.plan.nodes[index]
        if node.kind == "sink":
            return None
        if node.keyed or node.kind in PASS_THROUGH:
            return watermark
        return watermark if watermark > self.operator(index).current_watermark else None

    def keyed_watermark(self, index: int, watermark: int, order: Any) -> None:
        """A keyed operator's mid-batch watermark: a ``wm`` row at ``order`` in every state partition."""
        for sp in range(self.partitions):
            row = {"kind": "wm", "dest": index, "sp": sp, "key": None, "value": None, "ts": watermark, "ord": order}
            self.rows.append(row)

    def sink_record(self, index: int, record: StreamRecord, order: Any) -> None:
        """A sink's record: an output row (its value as columns where its type is declared, else pickled)."""
        sink_counts = self.sink_counts
        sink_counts[index] = sink_counts.get(index, 0) + 1
        value = record.value
        layout = self.plan.record_columns.get(index)  # a declared type: the record crosses as columns
        cols = None if layout is None else layout.cell(value)
        self.rows.append(
            {
                "kind": "rec",
                "dest": index,
                "sp": -1,
                "key": None,
                "value": dumps(value) if cols is None else None,
                "ts": record.timestamp,
                "ord": order,
                "cols": cols,
            }
        )

    def keyed_record(self, index: int, record: StreamRecord, order: Any, channel: int) -> None:
        """A keyed operator's record: a row for the keyed stage with the key's bytes (or columns) and its state
        partition."""
        node = self.plan.nodes[index]
        if node.two_input:
            self._keyed_two_input_rows(index, record, order, channel)
            return
        key = call_user(node.key_selector, lambda: f"{node.name}: key selector on {short(record.value)}", record.value)  # type: ignore[arg-type]
        layout = self.plan.record_columns.get(index)  # a declared type: the record crosses as columns
        cols = None if layout is None else layout.cell(record.value)
        row = self._keyed_row(index, key, dumps(record.value) if cols is None else None, record, order)
        row["cols"] = cols
        self.rows.append(row)

    def _keyed_row(self, index: int, key: Any, value: Any, record: StreamRecord, order: List[int]) -> Dict[str, Any]:
        """The stage row of a keyed record: its key's state partition, and the key as its bytes or, where the
        ``key_type`` is declared (``record_columns.key_columns``), as columns."""
        dk = distinct_key(key, self.plan.nodes[index].key_type)
        kb = encode_key(dk)
        key_layout = self.plan.key_columns.get(index)
        kcols = None if key_layout is None else key_layout.cell(plain_key(dk))
        return {
            "kind": "rec",
            "dest": index,
            "sp": state_partition(kb, self.partitions),
            "key": kb if kcols is None else None,
            "value": value,
            "ts": record.timestamp,
            "ord": order,
            "kcols": kcols,
        }

    def _keyed_two_input_rows(self, index: int, record: StreamRecord, order: List[int], channel: int) -> None:
        """Rows for a keyed two-input operator: the element with its input (``(channel, element)`` pickled); a
        broadcast input's element goes to every state partition (each is one instance of the operator, and Flink
        gives every instance every broadcast element) with no key (``key`` empty), the other input's by its key: as
        columns where the ``key_type`` is declared (``record_columns.key_columns``), else as its bytes."""
        node = self.plan.nodes[index]
        value = dumps((channel, record.value))
        if channel == node.broadcast_input:
            for sp in range(self.partitions):
                self.rows.append(
                    {"kind": "rec", "dest": index, "sp": sp, "key": NO_KEY, "value": value, "ts": record.timestamp, "ord": order}
                )
            return
        selector = node.key_selectors[channel]  # type: ignore[index]
        key = call_user(selector, lambda: f"{node.name}: key selector {channel + 1} on {short(record.value)}", record.value)  # type: ignore[arg-type]
        self.rows.append(self._keyed_row(index, key, value, record, order))

    def output_rows(self) -> List[Dict[str, Any]]:
        """The task's rows, then one ``count`` row per sink it sent records to (``stat_count``: how many): the
        driver learns each sink's size from these, without reading its records (``spark/sink_frames.py``)."""
        counts = [
            {"kind": "count", "dest": index, "sp": -1, "stat_count": n} for index, n in sorted(self.sink_counts.items())
        ]
        return self.rows + counts

    def finish(self) -> None:
        """The task's input is done: every async operator (``AsyncDataStream``) it ran runs its requests and emits
        their results (in plan order, so that one feeding another finishes first; results ordered after the
        operator's last input), then closes. The task, and so the micro-batch, ends with no request in flight."""
        done: set = set()  # type: ignore[type-arg]
        while True:
            pending = [i for i in sorted(self.operators) if i not in done and isinstance(self.operators[i], AsyncWaitOperator)]
            if not pending:
                return
            index = pending[0]
            done.add(index)
            op = self.operators[index]
            try:
                op.end_input()
            except UserFunctionError as exc:
                node = self.plan.nodes[index]
                raise in_node(exc, node.name, node.uid)  # noqa: B904 (its cause is the user's exception)
            finally:
                op.close()
            self.rows.append(metric_row(index, -1, dict(op.metrics)))  # collected with the sinks' rows


class ChainOutput:
    """Output of one operator inside a :class:`ChainRunner`: numbers emissions below ``base``."""

    def __init__(self, runner: ChainRunner, index: int) -> None:
        self.runner = runner
        self.index = index
        self.base: List[int] = []
        self.n = 0
        node = runner.plan.nodes[index]
        # an ``assign_timestamps_and_watermarks`` whose generator runs on the driver: report the timestamps it
        # assigns (the statistics the driver's generator sees)
        self._stats = node.generates_watermarks and not node.custom_generator
        self._level = node.level

    def _order(self) -> List[int]:
        self.n += 1
        return [*self.base, self.n]

    def collect(self, record: StreamRecord) -> None:
        if self._stats:
            self.runner.stat(self.index, "", record.timestamp)
        self.runner.forward(self.index, record, self._order())

    def collect_side(self, tag: OutputTag, record: StreamRecord) -> None:
        self.runner.forward_side(self.index, tag, record, self._order())

    def emit_watermark(self, watermark: int) -> None:
        """Watermarks are computed by the driver, except those a custom generator in
        ``assign_timestamps_and_watermarks`` emits within the batch: they go on right after the record
        (``spark/generators.py``), and an operator passing one on does so at its order."""
        runner = self.runner
        if runner.watermark_order is not None:
            runner.forward_watermark(self.index, watermark, runner.watermark_order)
        elif runner.plan.nodes[self.index].custom_generator:
            runner.forward_watermark(self.index, watermark, mid_batch_order(self.base))

    def emit_idle(self, idle: bool) -> None:
        return None


class KeyedOutput(ChainOutput):
    """Output of a keyed operator: orders by phase (element / timer) as described in the module docstring."""

    def __init__(self, runner: ChainRunner, index: int, op: KeyedOperator, sp: int) -> None:
        super().__init__(runner, index)
        self.op = op
        self.sp = sp
        self.phase: Optional[int] = None  # None: element phase (order below the input record's)
        self.emitted = 0  # records the operator emitted (main and side outputs): its numRecordsOut

    def collect(self, record: StreamRecord) -> None:
        self.emitted += 1  # a keyed operator never assigns timestamps (refused after a keyed one, ``spark/plan.py``)
        self.runner.forward(self.index, record, self._order())

    def collect_side(self, tag: OutputTag, record: StreamRecord) -> None:
        self.emitted += 1
        super().collect_side(tag, record)

    def _order(self) -> List[int]:
        n = self.n = self.n + 1
        phase = self.phase
        if phase is None:
            return [*self.base, n]
        op = self.op
        key_order = getattr(op, "key_order", None)
        if key_order is not None:  # BATCH: the key's place in Flink's order, the same in every state partition
            return [phase, self._level, *key_order, self.sp, n]
        ts = op.firing_timer
        return [phase, self._level, 0 if ts is None else ts, self.sp, n]


def route_partition(
    plan: ExecPlan,
    frames: Iterable[Any],
    watermarks: Dict[int, int],
    now: int,
    partitions: int,
    source_index: Dict[str, int],
    generators: Optional[Dict[int, bytes]] = None,
    fanout: Optional[List[Tuple[int, int]]] = None,
) -> Iterator[Any]:
    """``mapInPandas`` body for source rows (columns ``src``, ``value``, ``ts``, ``part``, ``ord``, ``batch``,
    ``marker``): runs the stateless chain of each record and yields routed rows and statistics rows
    (``generators``: the custom watermark generators' state, ``spark/generators.py``; ``fanout``: the keyed groups
    that get the statistics, on the one-pass path)."""
    runner = ChainRunner(plan, watermarks, now, partitions, generators)

    def steps() -> Iterator[bool]:
        yield from _route_frames(runner, frames, source_index)
        runner.finish()

    for _ in reported_steps(steps()):
        yield _records_frame(runner)
    yield _routed_frame(runner, fanout)


ROUTE_CHUNK_ROWS = 10_000
"""A route task hands its record rows on whenever it holds this many (Spark's default Arrow batch), not all at its
end: its Python worker's memory stays bounded by the chunk, not by the task's input (issue 25: a 1M-event batch had
two such workers at 1.1 GB each, the whole task's rows held as dicts and turned into one frame)."""


def _records_frame(runner: ChainRunner) -> Any:
    """The record rows ``runner`` holds now, as a frame (taken from it): no ``metric`` or ``count`` row is among
    them before :meth:`ChainRunner.finish` (those come with :func:`_routed_frame`)."""
    rows, runner.rows = runner.rows, []
    return row_frame(rows, runner.plan.typed_columns())


def _route_frames(runner: ChainRunner, frames: Iterable[Any], source_index: Dict[str, int]) -> Iterator[bool]:
    """Route the source rows of ``frames``; yields whenever :data:`ROUTE_CHUNK_ROWS` rows are waiting."""
    import pandas as pd

    for pdf in frames:
        for src, value, ts, part, order, batch, marker in zip(
            pdf["src"], pdf["value"], pdf["ts"], pdf["part"], pdf["ord"], pdf["batch"], pdf["marker"]
        ):
            if src == TICK_SOURCE:
                continue  # a processing-time tick (``spark/ticks.py``): it only makes the batch run
            node = source_index[src]
            ts_val = None if ts is None or pd.isna(ts) else int(ts)
            batch_val = -1 if batch is None or pd.isna(batch) else int(batch)
            part_val = None if part is None else str(part)
            if marker:
                runner.stat(node, None, None, batch_val)
                continue
            source_order = [int(x) for x in order]
            runner.stat(node, "" if part_val is None else part_val, ts_val, batch_val, source_order)
            runner.source_record(node, part_val, loads(value), ts_val, source_order)
            if len(runner.rows) >= ROUTE_CHUNK_ROWS:
                yield True


def route_records(
    plan: ExecPlan,
    records: Iterable[Tuple[Any, Optional[int], Optional[str], List[int]]],
    watermarks: Dict[int, int],
    now: int,
    partitions: int,
    node: int,
    generators: Optional[Dict[int, bytes]] = None,
    fanout: Optional[List[Tuple[int, int]]] = None,
) -> Iterator[Any]:
    """``mapInPandas`` body fusing a DataFrame source's conversion with the route: ``records`` are the source's
    ``(element, timestamp, partition, order)``; no element is pickled between the two."""
    runner = ChainRunner(plan, watermarks, now, partitions, generators)

    def chunks() -> Iterator[bool]:
        for element, ts, part, order in records:
            runner.stat(node, "" if part is None else part, ts, -1, order)
            runner.source_record(node, part, element, ts, order)
            if len(runner.rows) >= ROUTE_CHUNK_ROWS:
                yield True
        runner.finish()

    # the source's own conversion (timestamp assigner) runs in ``records``: reported as the source node's
    for _ in reported_steps(chunks(), plan.nodes[node]):
        yield _records_frame(runner)
    yield _routed_frame(runner, fanout)


def _routed_frame(runner: ChainRunner, fanout: Optional[List[Tuple[int, int]]] = None) -> Any:
    """The task's output rows and its statistics: as rows of their own, or (``fanout``, the one-pass path) packed
    into one ``stats`` row per keyed group (``rows.stats_rows``), with the task's ``metric`` and ``count`` rows."""
    stats = runner.generator_rows() + [
        {"kind": "stat", "dest": node, "sp": -1, "part": part, "stat_max": mx, "stat_count": n, "stat_batch": b}
        for (node, part), (mx, n, b) in runner.stats.items()
    ]
    for (node, part), (count, latest, samples) in runner.future.items():
        stats.append({"kind": "future", "dest": node, "sp": -1, "part": part, "stat_max": latest, "stat_count": count})
        stats.extend(
            {"kind": "future", "dest": node, "sp": -1, "part": part, "ts": ts, "ord": order} for ts, order in samples
        )
    if fanout is not None:  # the task's metric and count rows reach the driver with the statistics
        rows = runner.output_rows()
        coordination = [r for r in rows if r["kind"] in ("metric", "count")]
        records = [r for r in rows if r["kind"] not in ("metric", "count")]
        return row_frame(records + stats_rows(coordination + stats, fanout), runner.plan.typed_columns())
    return row_frame(runner.output_rows() + stats, runner.plan.typed_columns())


__all__ = [
    "FixedClock",
    "ChainRunner",
    "ChainOutput",
    "KeyedOutput",
    "ROUTE_CHUNK_ROWS",
    "route_partition",
    "route_records",
]
