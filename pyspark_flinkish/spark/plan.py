"""The executable form of a pipeline for Spark: plan nodes, routing and the Python work done on executors.

Nothing here imports pyspark: these functions run inside ``mapInPandas`` / ``applyInPandas`` tasks and are
tested without a JVM. Records travel between Spark stages as rows of :data:`ROW_COLUMNS`:

* ``kind``: ``rec`` (a record for node ``dest``), ``stat`` (watermark statistics), ``hb`` (a heartbeat that
  makes every state partition of a keyed operator run in every batch, so that its timers fire) or ``metric``
  (one per keyed operator ``dest`` and state partition ``sp`` and batch: its metrics as JSON in ``value``,
  see :mod:`pyspark_flinkish.monitoring`);
* ``dest``: the plan node the record goes to (a keyed operator or a sink); ``sp``: the state partition;
* ``key``: the encoded key (keyed destinations); ``value``: the cloudpickled element; ``ts``: its timestamp;
* ``ord``: the record's position in Flink's processing order within the batch (compared as a list);
* ``part``, ``stat_max``, ``stat_count``, ``stat_batch``: statistics for watermark generation.

``future`` rows report far-future records (event time more than ``ExecPlan.future_horizon_ms`` ahead of the
batch's processing time) per (node, ``part``): one with ``stat_count`` (how many) and ``stat_max`` (the latest
such time), and up to :data:`FUTURE_SAMPLES` with one record's ``ts`` and source order in ``ord``.

Order (``ord``) mirrors the JVM-free engine's depth-first order: ``[0, level, ts, sp, n, ...]`` for outputs of
processing-time timers at the batch start, ``[1, <source order>, ...]`` for source records and what they
cause, ``[2, level, ts, sp, n, ...]`` for outputs of event-time timers at the batch's watermark.
"""

from __future__ import annotations

import contextlib
import json
import pickle
import re
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from ..core.batch_window import BatchWindowOperator, batch_eligibility
from ..core.codec import decode_snapshot, decode_value, encode_snapshot, encode_value
from ..core.errors import UnsupportedFeatureError, UserFunctionError
from ..core.operators import KeyedOperator, StreamOperator, call_user, in_node, short
from ..core.records import OutputTag, StreamRecord
from ..datastream.plan import Transformation, node_uid, topological
from ..monitoring import partition_metrics
from . import state_store

ROW_COLUMNS = ["kind", "dest", "sp", "key", "value", "ts", "ord", "part", "stat_max", "stat_count", "stat_batch"]
ROW_DDL = (
    "kind string, dest int, sp int, key binary, value binary, ts long, ord array<long>, part string, "
    "stat_max long, stat_count long, stat_batch long"
)


FUTURE_SAMPLES = 10
"""Far-future records reported with their position, per task, node and source partition (all are counted)."""

_SCALARS = frozenset((int, str, float, bool, bytes, type(None)))


def _plain(value: Any, depth: int = 0) -> bool:
    """Built-in scalars, and tuples/lists/dicts/Rows of them: what plain ``pickle`` handles on any executor."""
    t = type(value)
    if t in _SCALARS:
        return True
    if depth > 2:
        return False
    if t is tuple or t is list or (t.__name__ == "Row" and t.__module__ == "pyspark.sql.types"):
        for v in value:
            if type(v) not in _SCALARS and not _plain(v, depth + 1):
                return False
        return True
    if t is dict:
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in value.items())
    return False


def dumps(value: Any) -> bytes:
    """Pickle an element for the next stage: plain ``pickle`` for built-in data (3x faster), cloudpickle for the
    rest (classes defined in ``__main__`` or a notebook travel by value)."""
    if _plain(value):
        return pickle.dumps(value, protocol=4)
    from pyspark import cloudpickle  # pure-Python module shipped with pyspark; no JVM

    return cloudpickle.dumps(value, protocol=4)  # type: ignore[no-any-return]


def loads(data: bytes) -> Any:
    return pickle.loads(data)


def encode_key(key: Any) -> bytes:
    t = type(key)
    if t is int:  # JSON of an int or str key is the key itself (as encode_value gives it)
        return b"%d" % key
    if t is str:
        return json.dumps(key).encode("utf-8")
    return json.dumps(encode_value(key), separators=(",", ":"), sort_keys=False).encode("utf-8")


def decode_key(data: bytes) -> Any:
    return decode_value(json.loads(data.decode("utf-8")))


def state_partition(key_bytes: bytes, partitions: int) -> int:
    return zlib.crc32(key_bytes) % partitions


_ERROR_BEGIN, _ERROR_END = "<<pyspark_flinkish error>>", "<</pyspark_flinkish error>>"


@contextlib.contextmanager
def reported_to_driver(node: Optional[Node] = None) -> Iterator[None]:
    """Around the body of a Spark task: a :class:`UserFunctionError` leaves it with the plan ``node`` named
    (unless an inner node named itself) and its message between markers, so that the driver can raise it
    again without Spark's and Py4J's stack traces around it (:func:`user_error_from`)."""
    try:
        yield
    except UserFunctionError as exc:
        if _ERROR_BEGIN in str(exc):
            raise
        if node is not None:
            exc = in_node(exc, node.name, node.uid)
        msg = f"{_ERROR_BEGIN}{exc}{_ERROR_END}"
        raise UserFunctionError(msg) from exc


def user_error_from(exc: BaseException) -> Optional[UserFunctionError]:
    """The :class:`UserFunctionError` a Spark task raised, rebuilt on the driver from the text of the Spark /
    Py4J exception that carries it (its cause is ``exc``); None when ``exc`` carries none."""
    seen: List[BaseException] = []
    current: Optional[BaseException] = exc
    while current is not None and current not in seen:
        if isinstance(current, UserFunctionError) and _ERROR_BEGIN not in str(current):
            return current
        match = re.search(re.escape(_ERROR_BEGIN) + "(.*?)" + re.escape(_ERROR_END), str(current), re.S)
        if match:
            error = UserFunctionError(match.group(1))
            names = re.match(r"operator '(.*?)' \(uid '(.*?)'\)", match.group(1))
            if names:
                error.operator, error.uid = names.group(1), names.group(2)
            error.__cause__ = exc
            return error
        seen.append(current)
        current = current.__cause__ or current.__context__
    return None


@dataclass
class Node:
    """One plan node as executors see it (no source data, only what running it needs)."""

    index: int
    kind: str  # source | operator | union | side_output | sink
    uid: str
    factory: Optional[Callable[[], StreamOperator]]
    keyed: bool
    key_selector: Optional[Callable[[Any], Any]]
    main: List[int] = field(default_factory=list)
    side: Dict[OutputTag, List[int]] = field(default_factory=dict)
    level: int = 0  # keyed operators: 1 + the deepest keyed ancestor
    generates_watermarks: bool = False  # assign_timestamps_and_watermarks
    batched: bool = False  # a window run by BatchWindowOperator (core/batch_window.py)
    name: str = ""  # the transformation's name (error messages)


def state_signature(t: Transformation) -> Optional[str]:
    """What shapes a keyed operator's state, so that a restart with an incompatible operator is caught up front:
    for windows the assigner, trigger, evictor, lateness, contents and the aggregate/reduce function's class, else
    the operator and its function's class; then ``" | "``-separated parts known only for some pipelines
    (:func:`signatures_compatible` compares a part only when both sides have it): the declared key type
    (``key_by(..., key_type=...)``), the aggregate's accumulator type and the state the operator declares when
    opened (state descriptors: name, kind, type). A changed function body keeps the signature."""
    if not t.keyed:
        return None
    spec = t.spec
    if spec.get("op") != "window":
        fn = spec.get("function") or spec.get("process_function")
        base = f"{spec.get('op')}:{type(fn).__name__ if fn is not None else '-'}"
    else:
        contents = spec.get("contents")
        fn = getattr(contents, "agg_fn", None) or getattr(contents, "reduce_fn", None)
        parts = [
            repr(spec.get("assigner")),
            repr(spec.get("trigger")),
            repr(spec.get("evictor")),
            f"lateness={spec.get('allowed_lateness')}",
            f"contents={getattr(contents, 'kind', '-')}:{type(fn).__name__ if fn is not None else '-'}",
        ]
        base = "window:" + " ".join(parts)
    extra = {}
    if spec.get("key_type") is not None:
        extra["key"] = repr(spec["key_type"])
    agg = getattr(spec.get("contents"), "agg_fn", None)
    if agg is not None:
        try:
            extra["accumulator"] = type(agg.create_accumulator()).__name__
        except Exception:  # user code: the part stays unknown
            pass
    declared = _declared_state(t)
    if declared is not None:
        extra["state"] = declared
    return base + "".join(f" | {k}={v}" for k, v in extra.items())


def _declared_state(t: Transformation) -> Optional[str]:
    """The state descriptors a fresh copy of the operator registers when opened (the user's ``open`` included),
    or None when it cannot be opened here (the part of the signature then stays unknown)."""
    from pyspark import cloudpickle  # what executors get: a copy, the user's function objects stay untouched

    try:
        op = pickle.loads(cloudpickle.dumps(t.factory))()  # type: ignore[misc]
        op.open(_NullOutput(), _FixedClock(0))
        descriptors = op.backend.descriptors
        text = ",".join(
            f"{name}:{d.kind}:{d.type_info!r}" + (":ttl" if d._ttl() is not None else "")
            for name, d in sorted(descriptors.items())
        )
        op.close()
    except Exception:  # user code that cannot run on the driver
        return None
    return f"[{text}]"


class _NullOutput:
    def collect(self, record: Any) -> None:
        return None

    def collect_side(self, tag: Any, record: Any) -> None:
        return None

    def emit_watermark(self, watermark: int) -> None:
        return None

    def emit_idle(self, idle: bool) -> None:
        return None


def compare_signatures(stored: Dict[str, str], current: Dict[str, str]) -> Tuple[List[str], Dict[str, str]]:
    """Compare a checkpoint's operator signatures (uid -> :func:`state_signature`) with the pipeline's: returns
    one line per incompatible operator (its uid and what changed) and the signatures to store from now on.

    The first part of a signature must be equal; a ``" | "`` part only when both sides have it (a checkpoint
    written before the part existed, or state that could not be inspected this time); stored parts the pipeline
    cannot tell are kept. Operators the checkpoint has no state for are new and get recorded."""
    problems, merged = [], dict(stored)
    for uid, sig in current.items():
        old = stored.get(uid)
        if old is None:
            merged[uid] = sig
            continue
        old_base, *old_rest = old.split(" | ")
        new_base, *new_rest = sig.split(" | ")
        old_parts = dict(p.split("=", 1) for p in old_rest)
        new_parts = dict(p.split("=", 1) for p in new_rest)
        changes = [] if old_base == new_base else [f"[{old_base}] -> [{new_base}]"]
        changes += [f"{k} {old_parts[k]} -> {new_parts[k]}" for k in old_parts if k in new_parts and old_parts[k] != new_parts[k]]
        if changes:
            problems.append(f"operator {uid!r}: " + "; ".join(changes))
        else:
            merged[uid] = new_base + "".join(f" | {k}={v}" for k, v in {**old_parts, **new_parts}.items())
    return problems, merged


def refuse_per_event_generators(transformations: List[Transformation]) -> None:
    """Refuse a custom ``WatermarkGenerator`` (``WatermarkStrategy.for_generator``) wherever a Spark pipeline has a
    watermark strategy: at a source or in ``assign_timestamps_and_watermarks``. Flink calls its ``on_event`` for
    every element, in order; the Spark executors generate watermarks on the driver from each micro-batch's
    per-partition maximum timestamp, which gives the built-in generators' exact result (they depend on that
    maximum only) but not a custom one's. Raises :class:`UnsupportedFeatureError` naming the alternatives."""
    for t in transformations:
        strategy = t.watermark_strategy if t.kind == "source" else t.spec.get("strategy")
        if strategy is not None and strategy.has_user_generator:
            where = f"source {t.name!r}" if t.kind == "source" else f"assign_timestamps_and_watermarks ({t.name!r})"
            msg = (
                f"{where}: a custom WatermarkGenerator (WatermarkStrategy.for_generator) is not supported on Spark: "
                "Flink calls its on_event for every element, but the Spark executors generate watermarks on the "
                "driver from each micro-batch's maximum timestamp per source partition, so per-event (e.g. "
                "punctuated) logic cannot run as in Flink. Use a built-in strategy "
                "(WatermarkStrategy.for_bounded_out_of_orderness / for_monotonous_timestamps, optionally "
                ".with_idleness), or run the job on the local engine (get_execution_environment() without a "
                "SparkSession)."
            )
            raise UnsupportedFeatureError(msg)


class ExecPlan:
    """The pipeline's nodes in topological order, with routing edges."""

    def __init__(self, sinks: List[Transformation], vectorize: bool = True) -> None:
        order = topological(sinks)
        self.transformations = order
        index = {t.id: i for i, t in enumerate(order)}
        self.nodes: List[Node] = []
        for i, t in enumerate(order):
            uid = node_uid(t, i)
            self.nodes.append(
                Node(
                    index=i,
                    kind=t.kind,
                    uid=uid,
                    factory=t.factory,
                    keyed=t.keyed,
                    key_selector=t.spec.get("key_selector"),
                    generates_watermarks=t.spec.get("op") == "timestamps",
                    batched=vectorize and t.spec.get("op") == "window" and batch_eligibility(t.factory()) is None,
                    name=t.name,
                )
            )
        for i, t in enumerate(order):
            for parent in t.inputs:
                p = self.nodes[index[parent.id]]
                if t.kind == "side_output":
                    p.side.setdefault(t.tag, []).append(i)  # type: ignore[arg-type]
                else:
                    p.main.append(i)
        for i, t in enumerate(order):  # levels of keyed operators
            node = self.nodes[i]
            parents = [self.nodes[index[p.id]] for p in t.inputs]
            deepest = max((p.level for p in parents), default=0)
            node.level = deepest + 1 if node.keyed else deepest
        refuse_per_event_generators(order)
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

    def keyed_at(self, level: int) -> List[int]:
        return [n.index for n in self.nodes if n.keyed and n.level == level]

    def parents(self, index: int) -> List[int]:
        return [n.index for n in self.nodes if index in n.main or any(index in v for v in n.side.values())]


def keep_state_layouts(plan: ExecPlan, state_root: str) -> None:
    """A window whose checkpointed state is keyed snapshots (``v=`` files) keeps the general operator though it
    could run batch-wise: a checkpoint's first run fixes its layout (earlier versions of this package ran windows
    whose functions keep state of their own, or override ``clear()``, on the general operator)."""
    for node in plan.nodes:
        if node.batched and state_store.has_snapshots(state_root, node.uid):
            node.batched = False


class _FixedClock:
    def __init__(self, now: int) -> None:
        self._now = now

    def now(self) -> int:
        return self._now


class ChainRunner:
    """Runs the stateless operators of a chain depth-first on an executor (like the JVM-free engine),
    turning what reaches a keyed operator or a sink into output rows."""

    def __init__(self, plan: ExecPlan, watermarks: Dict[int, int], now: int, partitions: int) -> None:
        self.plan = plan
        self.watermarks = watermarks
        self.now = now
        self.partitions = partitions
        self.rows: List[Dict[str, Any]] = []
        self.stats: Dict[Tuple[int, Optional[str]], List[int]] = {}
        self._ops: Dict[int, StreamOperator] = {}
        horizon = getattr(plan, "future_horizon_ms", None)
        self.future_after = None if horizon is None else now + horizon
        self.future: Dict[Tuple[int, Optional[str]], List[Any]] = {}  # [count, max ts, [(ts, order), ...]]

    def _operator(self, index: int) -> StreamOperator:
        op = self._ops.get(index)
        if op is None:
            node = self.plan.nodes[index]
            op = node.factory()  # type: ignore[misc]
            op.open(_ChainOutput(self, index), _FixedClock(self.now))
            op.current_watermark = self.watermarks.get(index, op.current_watermark)
            self._ops[index] = op
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

    def push(self, index: int, record: StreamRecord, order: List[int]) -> None:
        try:
            self._push(index, record, order)
        except UserFunctionError as exc:
            node = self.plan.nodes[index]
            raise in_node(exc, node.name, node.uid)  # noqa: B904 (its cause is the user's exception)

    def _push(self, index: int, record: StreamRecord, order: List[int]) -> None:
        node = self.plan.nodes[index]
        if node.kind == "sink":
            self.rows.append(
                {
                    "kind": "rec",
                    "dest": index,
                    "sp": -1,
                    "key": None,
                    "value": dumps(record.value),
                    "ts": record.timestamp,
                    "ord": order,
                }
            )
            return
        if node.keyed:
            key = call_user(node.key_selector, lambda: f"{node.name}: key selector on {short(record.value)}", record.value)  # type: ignore[arg-type]
            kb = encode_key(key)
            self.rows.append(
                {
                    "kind": "rec",
                    "dest": index,
                    "sp": state_partition(kb, self.partitions),
                    "key": kb,
                    "value": dumps(record.value),
                    "ts": record.timestamp,
                    "ord": order,
                }
            )
            return
        if node.kind in ("union", "side_output"):
            self.forward(index, record, order)
            return
        op = self._operator(index)
        out: _ChainOutput = op.output  # type: ignore[assignment]
        out.base, out.n = order, 0
        op.process_element(record)
        if node.generates_watermarks:
            # the operator's generator runs on the driver: report what it saw (timestamps after assignment)
            for rec in out.assigned:
                self.stat(index, "", rec)
            out.assigned.clear()

    def forward(self, index: int, record: StreamRecord, order: List[int]) -> None:
        for consumer in self.plan.nodes[index].main:
            self.push(consumer, record, order)

    def forward_side(self, index: int, tag: OutputTag, record: StreamRecord, order: List[int]) -> None:
        for consumer in self.plan.nodes[index].side.get(tag, ()):
            self.push(consumer, record, order)


class _ChainOutput:
    """Output of one operator inside a :class:`ChainRunner`: numbers emissions below ``base``."""

    def __init__(self, runner: ChainRunner, index: int) -> None:
        self.runner = runner
        self.index = index
        self.base: List[int] = []
        self.n = 0
        self.assigned: List[Optional[int]] = []

    def _order(self) -> List[int]:
        self.n += 1
        return [*self.base, self.n]

    def collect(self, record: StreamRecord) -> None:
        if self.runner.plan.nodes[self.index].generates_watermarks:
            self.assigned.append(record.timestamp)
        self.runner.forward(self.index, record, self._order())

    def collect_side(self, tag: OutputTag, record: StreamRecord) -> None:
        self.runner.forward_side(self.index, tag, record, self._order())

    def emit_watermark(self, watermark: int) -> None:
        return None  # watermarks are computed by the driver

    def emit_idle(self, idle: bool) -> None:
        return None


class _KeyedOutput(_ChainOutput):
    """Output of a keyed operator: orders by phase (element / timer) as described in the module docstring."""

    def __init__(self, runner: ChainRunner, index: int, op: KeyedOperator, sp: int) -> None:
        super().__init__(runner, index)
        self.op = op
        self.sp = sp
        self.phase: Optional[int] = None  # None: element phase (order below the input record's)
        self.emitted = 0  # records the operator emitted (main and side outputs): its numRecordsOut

    def collect(self, record: StreamRecord) -> None:
        self.emitted += 1
        super().collect(record)

    def collect_side(self, tag: OutputTag, record: StreamRecord) -> None:
        self.emitted += 1
        super().collect_side(tag, record)

    def _order(self) -> List[int]:
        self.n += 1
        if self.phase is None:
            return [*self.base, self.n]
        level = self.runner.plan.nodes[self.index].level
        ts = self.op.firing_timer if self.op.firing_timer is not None else 0
        return [self.phase, level, ts, self.sp, self.n]


def route_partition(
    plan: ExecPlan,
    frames: Iterable[Any],
    watermarks: Dict[int, int],
    now: int,
    partitions: int,
    source_index: Dict[str, int],
) -> Iterator[Any]:
    """``mapInPandas`` body for source rows (columns ``src``, ``value``, ``ts``, ``part``, ``ord``, ``batch``,
    ``marker``): runs the stateless chain of each record and yields routed rows and statistics rows."""
    runner = ChainRunner(plan, watermarks, now, partitions)
    with reported_to_driver():
        _route_frames(runner, frames, source_index)
    yield _routed_frame(runner)


def _route_frames(runner: ChainRunner, frames: Iterable[Any], source_index: Dict[str, int]) -> None:
    import pandas as pd

    for pdf in frames:
        for src, value, ts, part, order, batch, marker in zip(
            pdf["src"], pdf["value"], pdf["ts"], pdf["part"], pdf["ord"], pdf["batch"], pdf["marker"]
        ):
            node = source_index[src]
            ts_val = None if ts is None or pd.isna(ts) else int(ts)
            batch_val = -1 if batch is None or pd.isna(batch) else int(batch)
            part_val = None if part is None else str(part)
            if marker:
                runner.stat(node, None, None, batch_val)
                continue
            source_order = [int(x) for x in order]
            runner.stat(node, "" if part_val is None else part_val, ts_val, batch_val, source_order)
            runner.forward(node, StreamRecord(loads(value), ts_val), [1, *source_order])


def route_records(
    plan: ExecPlan,
    records: Iterable[Tuple[Any, Optional[int], Optional[str], List[int]]],
    watermarks: Dict[int, int],
    now: int,
    partitions: int,
    node: int,
) -> Iterator[Any]:
    """``mapInPandas`` body fusing a DataFrame source's conversion with the route: ``records`` are the source's
    ``(element, timestamp, partition, order)``; no element is pickled between the two."""
    runner = ChainRunner(plan, watermarks, now, partitions)
    with reported_to_driver(plan.nodes[node]):  # the source's own conversion (timestamp assigner) runs in ``records``
        for element, ts, part, order in records:
            runner.stat(node, "" if part is None else part, ts, -1, order)
            runner.forward(node, StreamRecord(element, ts), [1, *order])
    yield _routed_frame(runner)


def _routed_frame(runner: ChainRunner) -> Any:
    rows = runner.rows + [
        {"kind": "stat", "dest": node, "sp": -1, "part": part, "stat_max": mx, "stat_count": n, "stat_batch": b}
        for (node, part), (mx, n, b) in runner.stats.items()
    ]
    for (node, part), (count, latest, samples) in runner.future.items():
        rows.append({"kind": "future", "dest": node, "sp": -1, "part": part, "stat_max": latest, "stat_count": count})
        rows.extend(
            {"kind": "future", "dest": node, "sp": -1, "part": part, "ts": ts, "ord": order} for ts, order in samples
        )
    return _frame(rows)


def _frame(rows: List[Dict[str, Any]]) -> Any:
    import pandas as pd

    columns = {}
    for col in ROW_COLUMNS:
        values = [r.get(col) for r in rows]
        if col in ("dest", "sp"):
            columns[col] = pd.Series(values, dtype="int32")
        elif col in ("ts", "stat_max", "stat_count", "stat_batch"):
            columns[col] = pd.Series(values, dtype="Int64")
        else:
            columns[col] = pd.Series(values, dtype=object)
    return pd.DataFrame(columns, columns=ROW_COLUMNS)


def run_keyed_partition(
    plan: ExecPlan,
    pdf: Any,
    watermarks_prev: Dict[int, int],
    watermarks_new: Dict[int, int],
    now: int,
    partitions: int,
    state_root: str,
    batch_id: int,
    prev_version: int,
) -> Any:
    """``applyInPandas`` body for one (keyed operator, state partition): restore, process, fire, snapshot; the
    output ends with the partition's ``metric`` row. Its Spark task runs it inside :func:`reported_to_driver`."""
    started = time.perf_counter()
    index = int(pdf["dest"].iloc[0])
    sp = int(pdf["sp"].iloc[0])
    node = plan.nodes[index]
    runner = ChainRunner(plan, watermarks_prev, now, partitions)
    op: KeyedOperator = node.factory()  # type: ignore[assignment,misc]
    out = _KeyedOutput(runner, index, op, sp)
    op.open(out, _FixedClock(now))
    if node.batched:
        wm_prev, wm_new = watermarks_prev[index], watermarks_new[index]
        metrics = _run_batched(op, out, pdf, wm_prev, wm_new, state_root, node.uid, sp, batch_id, prev_version)
        return _frame([*runner.rows, metric_row(index, sp, metrics)])
    for key_bytes, snapshot in state_store.read(state_root, node.uid, sp, prev_version):
        op.restore_key(decode_key(key_bytes), decode_snapshot(snapshot))
    op.restore_watermark(watermarks_prev[index])

    records = [
        ([int(x) for x in o], v, None if t is None or t != t else int(t))
        for kind, o, v, t in zip(pdf["kind"], pdf["ord"], pdf["value"], pdf["ts"])
        if kind == "rec"
    ]
    records.sort(key=lambda r: r[0])
    early = [r for r in records if r[0][0] == 0]
    late = [r for r in records if r[0][0] != 0]

    def process(batch: List[Tuple[List[int], bytes, Optional[int]]]) -> None:
        for order, value, ts in batch:
            out.base, out.n, out.phase = order, 0, None
            op.process_element(StreamRecord(loads(value), ts))

    process(early)
    out.phase = 0
    op.advance_processing_time(now)
    process(late)
    out.phase = 2
    if watermarks_new[index] > watermarks_prev[index]:
        op.process_watermark(watermarks_new[index])
    op.close()

    rows = []
    for key in op.active_keys():
        snap = op.snapshot_key(key)
        if snap is not None:
            rows.append((encode_key(key), encode_snapshot(snap)))
    rows.sort()
    path = state_store.write(state_root, node.uid, sp, batch_id, rows)
    windows = op.open_windows() if hasattr(op, "open_windows") else None
    metrics = partition_metrics(op, len(records), out.emitted, path, started, windows, len(rows))
    return _frame([*runner.rows, metric_row(index, sp, metrics)])


def metric_row(index: int, sp: int, metrics: Dict[str, Any]) -> Dict[str, Any]:
    """The ``metric`` row of one keyed operator and state partition (collected with the sinks' rows)."""
    return {"kind": "metric", "dest": index, "sp": sp, "value": json.dumps(metrics).encode()}


def _run_batched(
    op: Any,
    out: _KeyedOutput,
    pdf: Any,
    wm_prev: int,
    wm_new: int,
    state_root: str,
    uid: str,
    sp: int,
    batch_id: int,
    prev_version: int,
) -> Dict[str, Any]:
    """The keyed stage of a window that :class:`BatchWindowOperator` runs: one accumulator per (key, window)
    in a ``windows`` state file instead of keyed snapshots. Returns the partition's metrics."""
    started = time.perf_counter()
    batch = restore_window_table(op, state_root, uid, sp, prev_version, wm_prev)
    records = sorted(
        (
            ([int(x) for x in o], k, v, None if t is None or t != t else int(t))
            for kind, o, k, v, t in zip(pdf["kind"], pdf["ord"], pdf["key"], pdf["value"], pdf["ts"])
            if kind == "rec"
        ),
        key=lambda r: r[0],
    )
    keys: Dict[bytes, Any] = {}
    for order, kb, value, ts in records:
        out.base, out.n, out.phase = order, 0, None
        key = keys.get(kb)
        if key is None:
            key = keys[kb] = decode_key(kb)
        batch.process_element(key, loads(value), ts)
    out.phase = 2
    batch.advance_watermark(wm_new)
    op.close()
    path = save_window_table(batch, state_root, uid, sp, batch_id)
    return partition_metrics(
        op, len(records), out.emitted, path, started, batch.open_windows(), batch.num_keys()
    )


def restore_window_table(
    op: Any, state_root: str, uid: str, sp: int, version: int, watermark: int
) -> BatchWindowOperator:
    """A :class:`BatchWindowOperator` around the opened ``op`` with one state partition's window table and keyed
    state at ``version`` (see ``state_store.read_windows``) and the operator's watermark."""
    batch = BatchWindowOperator(op)
    table, keyed = [], []
    for k, s, a in state_store.read_windows(state_root, uid, sp, version):
        if s is None:  # the keyed state the window and user functions keep themselves
            keyed.append((decode_key(k), decode_snapshot(a)))
        else:
            table.append((decode_key(k), s, decode_value(json.loads(a))))
    batch.restore(table, watermark, keyed)
    return batch


def save_window_table(batch: BatchWindowOperator, state_root: str, uid: str, sp: int, version: int) -> str:
    """Write the partition's window table and keyed state as ``version``, rows sorted (a replayed batch writes the
    same file); returns the file's path."""
    rows = sorted(
        (encode_key(k), s, json.dumps(encode_value(a), separators=(",", ":")).encode()) for k, s, a in batch.snapshot()
    )
    keyed = sorted((encode_key(k), encode_snapshot(snap)) for k, snap in batch.snapshot_keyed())
    return state_store.write_windows(state_root, uid, sp, version, [(k, None, snap) for k, snap in keyed] + rows)
