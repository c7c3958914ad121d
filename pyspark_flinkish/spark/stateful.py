"""The applyInPandasWithState executor: a pipeline as a Spark stateful operator returning a streaming DataFrame.

``StreamExecutionEnvironment.get_execution_environment(spark, backend="apply_in_pandas_with_state")`` builds
the same pipeline as a plain streaming DataFrame (``DataStream.to_dataframe()``) that can be written to any
sink, on any Spark cluster (Databricks included). The keyed operator is the core's (one snapshot per key
in Spark's ``GroupState``); what Spark cannot express is rejected when the DataFrame is built, with an error
naming the foreachBatch executor (the default), which runs every pipeline.

How Flink's watermark maps onto Spark's
---------------------------------------
Spark's watermark in micro-batch ``N`` is ``max(event time up to batch N-1) - delay``. With
``delay = bound + 1`` that equals Flink's bounded-out-of-orderness watermark ``max_ts - bound - 1`` for one
generator — the value in force while batch ``N``'s elements are processed, as in Flink. Records reach the
stateful function with a *null* event-time column (Spark never drops them as late); one *carrier* row per
input task carries the task's maximum timestamp and is filtered out after the watermark node. Flink's
lateness rules (per window, allowed lateness, late side output) therefore run in the core, unchanged.
Event times are shifted by ``2^40`` ms inside Spark so that Spark's initial watermark (0) is unambiguous
(Flink's ``LONG_MIN``); a key's next event-time timer ``t`` becomes the timeout ``t + shift - 1`` because
Spark fires a timeout when the watermark is *strictly greater*. A bounded replay source ends with a carrier
far in the future (Flink's end-of-input watermark ``LONG_MAX``) and one more micro-batch to fire it.

Supported: one source with ``for_bounded_out_of_orderness`` / ``for_monotonous_timestamps`` (no per-partition
watermarks — neither ``partition_column`` nor a ``MicroBatchSource`` with several partitions —, no idleness, no
explicit watermarks), stateless operators, one keyed operator (window with any
assigner/trigger/evictor/lateness/late side output, or a ``KeyedProcessFunction`` with event-time timers),
stateless operators after it; or, instead of the source's strategy, one custom ``WatermarkGenerator`` in
``assign_timestamps_and_watermarks`` (``spark/stateful_generators.py``: the route in one task, the generator's state
in the checkpoint, its watermarks carried to the keyed tasks). Not supported (error up front): processing-time
windows and triggers, a second keyed operator, ``union`` of sources, a custom generator at the source or with
``to_dataframe()``, ``no_watermarks`` without such a generator; event times must lie between about 1935 and 2220.
A ``KeyedProcessFunction`` registering a processing-time timer can only be found while the query runs: it fails
the query with an :class:`UnsupportedFeatureError` naming the operator, this executor and the foreachBatch executor
(``SparkJobHandle`` raises it as itself).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import tempfile
import uuid
from typing import Any, Dict, List, Optional, Tuple

from ..core.assigners import (
    DynamicProcessingTimeSessionWindows,
    ProcessingTimeSessionWindows,
    SlidingProcessingTimeWindows,
    TumblingProcessingTimeWindows,
)
from ..core.codec import decode_snapshot, encode_snapshot
from ..core.errors import InvalidPipelineError, StateError, UnsupportedFeatureError
from ..core.javamath import LONG_MAX, LONG_MIN
from ..core.records import StreamRecord
from ..core.triggers import ContinuousProcessingTimeTrigger, ProcessingTimeoutTrigger, ProcessingTimeTrigger, PurgingTrigger
from ..datastream.join import IntervalJoinSpec
from ..datastream.plan import AsyncWaitSpec, TimestampsSpec, Transformation, WindowSpec
from ..datastream.sources import MicroBatchSource
from . import storage
from .chain import ChainRunner, FixedClock, KeyedOutput
from .checkpoint import meta_path, read_meta, write_meta
from .error_transport import reported_to_driver
from .keys import decode_key
from .plan import ExecPlan, Node, refuse_per_event_generators
from .rows import dumps, loads
from .signatures import before_key_identity, check_operators, plan_signatures
from .sink_frames import STEP_COLUMN, SinkFrame
from .stateful_generators import (
    END_ORDER,
    GENERATORS_DIR,
    PERIODIC_ORDER,
    GeneratorBatch,
    GeneratorFiles,
    Step,
    bounded_steps,
    carrier_time,
    generated_steps,
    last_watermark,
)

SHIFT = 2**40
"""Event times are shifted by this many ms inside Spark (Spark's watermark starts at 0, Flink's at LONG_MIN)."""
END_OF_INPUT = 9_000_000_000_000
"""Shifted event time of the end-of-input carrier (below pandas' nanosecond limit of the year 2262)."""
GENERATOR_DELAY = 1
"""``withWatermark``'s delay when a custom generator makes the watermarks: its carrier adds it back
(``stateful_generators.carrier_time``)."""

PREVIOUS_BATCH_END = 0
"""Order phase (``ord``'s first entry, see ``spark/plan.py``) of what a key's due event-time timers emit when its
call starts: Flink fired them at the previous batch's end, before this batch's records (phase 1) are processed.
This executor has no processing-time timers, whose phase it is on the foreachBatch executor."""
STATE_DDL = "version int, watermark long, payload binary"
STATE_VERSION = 1
"""``payload`` is the key's keyed snapshot (``core/codec.py``)."""
WINDOWS_STATE_VERSION = 2
"""``payload`` is the key's window table of a batch-wise window (``core/batch_window.py``): JSON
``[[window start, encoded contents], ...]``, and ``[null, "<keyed snapshot>"]`` when the window function keeps
state of its own (``window_state()`` / ``global_state()`` / runtime-context state)."""
ROUTED_DDL = "kind string, dest int, key binary, value binary, ts long, ord array<long>, __et timestamp"
OUTPUT_DDL = "dest int, value binary, ts long, ord array<long>"
BACKEND = "apply_in_pandas_with_state"
HINT = "use the foreachBatch executor (get_execution_environment(spark), the default), which runs every pipeline"


def _reject(what: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(f"the {BACKEND} executor cannot express {what}; {HINT}")


def validate(plan: ExecPlan, target: int) -> Dict[str, Any]:
    """Check the plan against what this backend supports; returns the source, keyed node, delay and the
    ``assign_timestamps_and_watermarks`` with a custom generator that makes the watermarks (``generator``, or None:
    the source's bounded out-of-orderness, ``spark/stateful_generators.py``)."""
    ancestors = _ancestors(plan, target)
    for i in ancestors:
        if plan.nodes[i].two_input:
            raise _reject(
                f"the two-input operator {plan.nodes[i].name!r} (connect / broadcast state: one applyInPandasWithState "
                "has one input and one key, and no state shared by all keys)"
            )
    sources = [i for i in ancestors if plan.nodes[i].kind == "source"]
    if len(sources) != 1:
        raise _reject(f"{len(sources)} sources (Spark combines input watermarks by max-delay, Flink by min)")
    keyed = [i for i in ancestors if plan.nodes[i].keyed]
    if len(keyed) > 1:
        raise _reject("a second keyed operator after the first (Spark allows one applyInPandasWithState per query)")
    source_t = plan.transformations[sources[0]]
    strategy = source_t.watermark_strategy
    if isinstance(source_t.source, MicroBatchSource) and source_t.source.explicit_watermarks:
        raise _reject("explicit per-batch watermarks (Spark derives its watermark from event times)")
    if strategy.idleness_ms is not None:
        raise _reject("idleness (with_idleness): Spark's watermark has no idle inputs")
    generator = _generator_assigner(plan, ancestors)
    bound = strategy.bound_ms if generator is None else GENERATOR_DELAY - 1  # the generator's rides on the carrier
    if bound is None:
        raise _reject(
            f"the watermark strategy {strategy!r} (only bounded out-of-orderness or monotonous timestamps: Spark derives "
            "its watermark as max event time - delay, so no_watermarks and custom generators have no equivalent)"
        )
    if getattr(source_t.source, "partition_column", None):
        raise _reject("per-partition watermarks (partition_column): Spark's watermark is global")
    if isinstance(source_t.source, MicroBatchSource):
        source = source_t.source
        parts = set(source.partitions) | {b.partition_of(j) for b in source.batches for j in range(len(b.elements))}
        if len(parts) > 1:
            raise _reject(f"per-partition watermarks (a MicroBatchSource with partitions {sorted(map(repr, parts))}): "
                          "Spark's watermark is global")
    for i in ancestors:
        t = plan.transformations[i]
        if isinstance(t.spec, AsyncWaitSpec):
            raise _reject(
                "async I/O (AsyncDataStream): it has no step where a partition's requests run concurrently (up to "
                "the capacity) and all complete before Spark commits the micro-batch"
            )
        if isinstance(t.spec, IntervalJoinSpec):
            raise _reject(
                "an interval join (Flink's two-input watermark and its per-element cleanup timers are not mapped onto "
                "Spark's watermark and one timeout per key)"
            )
        if isinstance(t.spec, WindowSpec):
            assigner, trigger = t.spec.assigner, t.spec.trigger
            if isinstance(
                assigner,
                (
                    TumblingProcessingTimeWindows,
                    SlidingProcessingTimeWindows,
                    ProcessingTimeSessionWindows,
                    DynamicProcessingTimeSessionWindows,
                ),
            ):
                raise _reject(f"processing-time windows ({assigner!r}): one query has one timeout kind")
            nested = trigger
            while isinstance(nested, PurgingTrigger):
                nested = nested.nested_trigger
            if isinstance(nested, (ProcessingTimeTrigger, ContinuousProcessingTimeTrigger, ProcessingTimeoutTrigger)):
                raise _reject(f"processing-time triggers ({trigger!r})")
    return {"source": sources[0], "keyed": keyed[0] if keyed else None, "delay": bound + 1, "generator": generator}


def _generator_assigner(plan: ExecPlan, ancestors: List[int]) -> Optional[int]:
    """The one ``assign_timestamps_and_watermarks`` with a custom ``WatermarkGenerator`` among ``ancestors`` (None
    without one); refuses one with a built-in strategy (give it to the source) and several."""
    assigners = [i for i in ancestors if isinstance(plan.transformations[i].spec, TimestampsSpec)]
    for i in assigners:
        if not plan.transformations[i].spec.strategy.has_user_generator:
            raise _reject(
                "assign_timestamps_and_watermarks with a built-in WatermarkStrategy (give the WatermarkStrategy to the "
                "source; a custom WatermarkGenerator (for_generator) in assign_timestamps_and_watermarks is supported)"
            )
    if len(assigners) > 1:
        names = ", ".join(repr(plan.nodes[i].name) for i in assigners)
        raise _reject(f"several assign_timestamps_and_watermarks ({names}): one custom generator makes the watermark")
    return assigners[0] if assigners else None


def _ancestors(plan: ExecPlan, index: int) -> List[int]:
    seen: List[int] = []
    stack = [index]
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.append(i)
        stack.extend(plan.parents(i))
    return sorted(seen)


def flink_watermark(spark_watermark_ms: int, delay: int) -> int:
    """Spark's (shifted) watermark as Flink's watermark."""
    if spark_watermark_ms <= 0:
        return LONG_MIN
    if spark_watermark_ms >= END_OF_INPUT - delay:
        return LONG_MAX
    return spark_watermark_ms - SHIFT


def spark_timeout(flink_time: int, spark_watermark_ms: int, delay: int) -> int:
    """The timeout that fires when Flink's watermark reaches ``flink_time`` (Spark fires on ``>``)."""
    shifted = flink_time + SHIFT - 1 if flink_time < END_OF_INPUT - delay - SHIFT else END_OF_INPUT - delay - 1
    return max(shifted, spark_watermark_ms, 1)


def route(
    plan: ExecPlan, frames: Any, now: int, source_uid: str, records: Any = None, files: Optional[GeneratorFiles] = None
) -> Any:
    """``mapInPandas`` over source rows: run the stateless chain; emit records and one carrier per task.
    With ``records`` (a DataFrame source's row-to-element function), ``frames`` are the source's own rows and
    their elements go to the chain without being pickled in between. With ``files`` (a custom generator in
    ``assign_timestamps_and_watermarks``, ``spark/stateful_generators.py``) the task is the batch's only one: it
    runs the generator in processing order from the previous batch's state, keeps what it did in the batch's
    generator file, and its carrier holds the generator's batch-end watermark."""
    import pandas as pd

    source = next(n.index for n in plan.nodes if n.uid == source_uid)
    if files is None:
        runner = ChainRunner(plan, {}, now, 1)
        with reported_to_driver(plan.nodes[source]):
            top = _route_rows(runner, source, frames, records)
    else:
        runner, top = _route_generated(plan, source, frames, records, now, files)
    rows = [
        {"kind": "rec", "dest": r["dest"], "key": r["key"], "value": r["value"], "ts": r["ts"], "ord": r["ord"], "__et": None}
        for r in runner.rows
        if r["kind"] == "rec"
    ]
    if top is not None:
        rows.append(
            {
                "kind": "carrier",
                "dest": -1,
                "key": None,
                "value": None,
                "ts": None,
                "ord": None,
                "__et": pd.Timestamp(top, unit="ms"),
            }
        )
    df = pd.DataFrame(rows, columns=["kind", "dest", "key", "value", "ts", "ord", "__et"])
    df["dest"] = df["dest"].astype("int32")
    df["ts"] = df["ts"].astype("Int64")
    df["__et"] = pd.to_datetime(df["__et"])
    yield df


def _route_rows(runner: ChainRunner, source: int, frames: Any, records: Any) -> Optional[int]:
    """The chain of every source row; returns the largest shifted event time seen (or the end-of-input one)."""
    import pandas as pd

    top: Optional[int] = None
    if records is not None:
        for element, ts_val, _, order in records(frames):
            if ts_val is not None:
                top = ts_val + SHIFT if top is None else max(top, ts_val + SHIFT)
            runner.forward(source, StreamRecord(element, ts_val), [1, *order])
    else:
        for pdf in frames:
            for value, ts, order, marker in zip(pdf["value"], pdf["ts"], pdf["ord"], pdf["marker"]):
                ts_val = None if ts is None or pd.isna(ts) else int(ts)
                if marker:
                    if ts_val is not None:  # the end-of-input carrier (already in Spark's shifted time)
                        top = END_OF_INPUT
                    continue
                if ts_val is not None:
                    top = ts_val + SHIFT if top is None else max(top, ts_val + SHIFT)
                runner.forward(source, StreamRecord(loads(value), ts_val), [1, *[int(x) for x in order]])
    return top


def _route_generated(
    plan: ExecPlan, source: int, frames: Any, records: Any, now: int, files: GeneratorFiles
) -> Tuple[ChainRunner, Optional[int]]:
    """The route of a batch whose watermarks a custom generator makes: the source's elements sorted by their order,
    through the chain with the generator as the previous batch left it; then its periodic emission and, at the end of
    input, ``LONG_MAX`` (the local engine's batch end, ``LocalExecutor.periodic_emission``). Returns the runner
    (its ``wm`` rows: the watermarks that reached the keyed operator, each at its order) and the carrier's time."""
    storage.configure(plan.storage_options)
    batch = files.batch_of()
    previous, earlier = files.previous(batch)
    runner = ChainRunner(plan, {}, now, 1, dict(earlier.states))
    assigners = [n.index for n in plan.nodes if n.custom_generator and n.generates_watermarks]
    ended = False
    with reported_to_driver(plan.nodes[source]):
        for order, element, ts, end in _ordered_elements(frames, records):
            if end:
                ended = True
            elif element is not _EMPTY:
                runner.forward(source, StreamRecord(element, ts), [1, *order])
        runner.watermark_order = PERIODIC_ORDER
        for index in assigners:
            runner.operator(index).on_periodic_emit()  # type: ignore[attr-defined]
        runner.watermark_order = None
        if ended:
            runner.forward_watermark(source, LONG_MAX, END_ORDER)
    keyed = [n.index for n in plan.nodes if n.keyed]
    marks = [([int(x) for x in r["ord"]], int(r["ts"])) for r in runner.rows if r["kind"] == "wm" and r["dest"] in keyed[:1]]
    states = {**earlier.states, **{int(r["dest"]): bytes(r["value"]) for r in runner.generator_rows()}}
    end = max([earlier.end, *(w for _, w in marks)])
    kept = files.write(batch, GeneratorBatch(states, marks, end), previous)
    return runner, carrier_time(kept.end, SHIFT, GENERATOR_DELAY, END_OF_INPUT)


_EMPTY = object()
"""An empty batch's marker row (no element)."""


def _ordered_elements(frames: Any, records: Any) -> List[Tuple[List[int], Any, Optional[int], bool]]:
    """The batch's ``(order, element, timestamp, end of input)`` sorted by order: replay rows (``records`` None;
    a marker row is an empty batch, or with a timestamp the end of input) or a DataFrame source's records."""
    import pandas as pd

    items: List[Tuple[List[int], Any, Optional[int], bool]] = []
    if records is not None:
        items = [(list(order), element, ts, False) for element, ts, _, order in records(frames)]
    else:
        for pdf in frames:
            for value, ts, order, marker in zip(pdf["value"], pdf["ts"], pdf["ord"], pdf["marker"]):
                ts_val = None if ts is None or pd.isna(ts) else int(ts)
                element = _EMPTY if marker else loads(value)
                items.append(([int(x) for x in order], element, ts_val, bool(marker) and ts_val is not None))
    items.sort(key=lambda item: item[0])
    return items


def keyed_function(plan: ExecPlan, keyed_index: int, delay: int, now: int, files: Optional[GeneratorFiles] = None) -> Any:
    """The ``applyInPandasWithState`` function: restore the key's snapshot, fire due timers, process the
    key's records in order, snapshot, and set the timeout to the next event-time timer. With ``files`` (a custom
    generator, ``spark/stateful_generators.py``) the watermarks are the generator's, walked among the records."""

    node = plan.nodes[keyed_index]
    if node.batched:
        return _batched_keyed_function(plan, keyed_index, delay, now, files)
    steps_of = _steps_function(plan, delay, files)

    def fn(key: Any, frames: Any, state: Any) -> Any:

        runner = ChainRunner(plan, {}, now, 1)
        op: Any = node.factory()  # type: ignore[misc]
        out = KeyedOutput(runner, keyed_index, op, 0)
        op.open(out, FixedClock(now))
        key_value = op.backend.state_key(decode_key(key[0]))  # as the operator's state and timers hold it
        previous = LONG_MIN
        if state.exists:
            version, previous, payload = state.get
            if version != STATE_VERSION:
                msg = f"state of key {key_value!r} has version {version}; this pyspark_flinkish reads {STATE_VERSION}"
                raise InvalidPipelineError(msg)
            op.restore_key(key_value, decode_snapshot(payload))
        op.restore_watermark(previous)
        spark_wm = state.getCurrentWatermarkMs()
        steps = steps_of(previous, spark_wm, _key_records(frames))
        for step in steps:
            _place(out, step)
            if step.watermark is not None:
                op.process_watermark(step.watermark)  # fires the key's due timers (its outputs ordered at the step)
            else:
                op.process_element(StreamRecord(step.value, step.ts))
        op.close()
        if op.timers.processing_timers.for_key(key_value):  # known only now: a function registers them as it runs
            raise _reject(
                f"processing-time timers (registered by {node.name!r}, uid {node.uid!r}, for key {key_value!r}; found "
                "while the query runs, since no pipeline's code says up front whether it registers them)"
            )
        snapshot = op.snapshot_key(key_value)
        if snapshot is None:
            state.remove()
        else:
            state.update((STATE_VERSION, last_watermark(previous, steps), encode_snapshot(snapshot)))
            timers = op.timers.event_timers.for_key(key_value)
            if timers:
                state.setTimeoutTimestamp(spark_timeout(timers[0][0], spark_wm, delay))
        yield from _output(runner.rows)

    return _reported(fn, plan.nodes[keyed_index])


def _steps_function(plan: ExecPlan, delay: int, files: Optional[GeneratorFiles]) -> Any:
    """``steps(seen, spark_wm, records)``: a key's call as steps (``spark/stateful_generators.py``): Spark's
    watermark then the records, or, with a custom generator (``files``), its watermarks walked among the records
    (the batch's generator files read once per task)."""
    if files is None:
        return lambda seen, spark_wm, records: list(bounded_steps(seen, flink_watermark(spark_wm, delay), records))
    cache: Dict[int, Tuple[GeneratorBatch, Optional[GeneratorBatch]]] = {}

    def steps(seen: int, spark_wm: int, records: Any) -> List[Step]:
        batch = files.batch_of()
        if batch not in cache:
            storage.configure(plan.storage_options)
            cache.clear()
            cache[batch] = (files.previous(batch)[1], files.read(batch))
        earlier, current = cache[batch]
        return list(generated_steps(seen, earlier, current, records))

    return steps


def _place(out: KeyedOutput, step: Step) -> None:
    """Number what ``step`` emits: below its order, or (a watermark of the previous batch, no order) in the phase
    of the previous batch's end."""
    if step.order is None:
        out.base, out.n, out.phase = [], 0, PREVIOUS_BATCH_END
    else:
        out.base, out.n, out.phase = step.order, 0, None


def _reported(fn: Any, node: Node) -> Any:
    """``fn`` (an ``applyInPandasWithState`` function) with its user errors reported to the driver."""

    def reported(key: Any, frames: Any, state: Any) -> Any:
        with reported_to_driver(node):
            yield from fn(key, frames, state)

    return reported


def _key_records(frames: Any) -> List[Tuple[List[int], Any, Optional[int]]]:
    """A key's records of this batch, ``(order, element, timestamp)`` in processing order."""
    import pandas as pd

    records = [
        ([int(x) for x in o], v, None if t is None or pd.isna(t) else int(t))
        for pdf in frames
        for o, v, t in zip(pdf["ord"], pdf["value"], pdf["ts"])
    ]
    records.sort(key=lambda r: r[0])
    return [(o, loads(v), t) for o, v, t in records]


def _output(rows: List[Dict[str, Any]]) -> Any:
    """One key's output rows as a frame (numpy columns: several times cheaper than pandas Series per call)."""
    import numpy as np
    import pandas as pd

    if rows:
        ts = [r["ts"] for r in rows]
        yield pd.DataFrame(
            {
                "dest": np.array([r["dest"] for r in rows], dtype="int32"),
                "value": [r["value"] for r in rows],
                "ts": pd.Series(ts, dtype="Int64") if None in ts else np.array(ts, dtype="int64"),
                "ord": [r["ord"] for r in rows],
            },
            copy=False,
        )


def _batched_keyed_function(
    plan: ExecPlan, keyed_index: int, delay: int, now: int, files: Optional[GeneratorFiles] = None
) -> Any:
    """:func:`keyed_function` for a window that :class:`BatchWindowOperator` runs: the key's state is its window
    table, and one opened operator serves every key of a task."""
    import json

    from ..core.batch_window import BatchWindowOperator
    from ..core.codec import decode_value, encode_value

    task: Dict[str, Any] = {}
    steps_of = _steps_function(plan, delay, files)

    def fn(key: Any, frames: Any, state: Any) -> Any:

        if not task:
            runner = ChainRunner(plan, {}, now, 1)
            op: Any = plan.nodes[keyed_index].factory()  # type: ignore[misc]
            out = KeyedOutput(runner, keyed_index, op, 0)
            op.open(out, FixedClock(now))
            task.update(runner=runner, out=out, batch=BatchWindowOperator(op))
        runner, out, batch = task["runner"], task["out"], task["batch"]
        runner.rows = []
        key_value = decode_key(key[0])
        previous, entries, keyed = LONG_MIN, [], []
        if state.exists:
            version, previous, payload = state.get
            if version != WINDOWS_STATE_VERSION:
                msg = (
                    f"state of key {key_value!r} has version {version}, not the window table ({WINDOWS_STATE_VERSION}) "
                    "this pipeline keeps: was the checkpoint written by a different version of the pipeline?"
                )
                raise InvalidPipelineError(msg)
            for start, acc in json.loads(payload):
                if start is None:
                    keyed.append((key_value, decode_snapshot(acc.encode("utf-8"))))
                else:
                    entries.append((key_value, start, decode_value(acc)))
        batch.restore(entries, previous, keyed)
        spark_wm = state.getCurrentWatermarkMs()
        steps = steps_of(previous, spark_wm, _key_records(frames))
        for step in steps:
            _place(out, step)
            if step.watermark is not None:
                batch.advance_watermark(step.watermark)  # fires the key's due windows
            else:
                batch.process_element(key_value, step.value, step.ts)
        windows = batch.snapshot()
        own = [[None, encode_snapshot(snap).decode("utf-8")] for _, snap in batch.snapshot_keyed([key_value])]
        batch.op.evict_key(key_value)  # the operator serves the task's other keys next
        if not windows and not own:
            state.remove()
        else:
            watermark = last_watermark(previous, steps)
            payload = json.dumps(own + [[s, encode_value(a)] for _, s, a in windows], separators=(",", ":")).encode()
            state.update((WINDOWS_STATE_VERSION, watermark, payload))
            due = [t for _, s, _ in windows for t in batch.timer_times(s) if watermark < t < LONG_MAX]
            if due:
                state.setTimeoutTimestamp(spark_timeout(min(due), spark_wm, delay))
        yield from _output(runner.rows)

    return _reported(fn, plan.nodes[keyed_index])


class StatefulQueryBuilder:
    """Builds the streaming DataFrame of one stream of a pipeline for this backend."""

    def __init__(
        self,
        env: Any,
        stream_t: Optional[Transformation] = None,
        sinks: Optional[List[Transformation]] = None,
        checkpoint: Optional[str] = None,
    ) -> None:
        """``checkpoint``: the job's checkpoint location (``execute``), where a custom generator keeps its state
        (``spark/stateful_generators.py``); ``to_dataframe()`` has none."""
        self.env = env
        self.spark = env.spark
        if sinks is None:
            assert stream_t is not None
            sinks = [Transformation("sink", "DataFrame", [stream_t], sink=lambda v: None)]
        self.sinks = sinks
        self.plan = ExecPlan(sinks, vectorize=env.vectorize)
        refuse_per_event_generators(self.plan.transformations)
        ids = [t.id for t in self.plan.transformations]
        self.targets = [ids.index(t.id) for t in sinks]
        infos = [validate(self.plan, target) for target in self.targets]
        if len({(i["source"], i["keyed"]) for i in infos}) != 1:
            raise _reject("sinks fed by different sources or keyed operators in one job (give each its own job)")
        self.info = infos[0]
        self.output_type = sinks[0].inputs[0].output_type
        self.files: Optional[GeneratorFiles] = None  # a custom generator's state files
        generator = self.info["generator"]
        if generator is not None:
            if checkpoint is None:
                msg = (
                    f"assign_timestamps_and_watermarks ({self.plan.nodes[generator].name!r}): a custom WatermarkGenerator "
                    f"on the {BACKEND} executor keeps its state next to the job's checkpoint, which to_dataframe() does not "
                    "know: run the pipeline with execute(checkpoint_location=...) on this executor, or on the foreachBatch "
                    "executor (get_execution_environment(spark), the default)"
                )
                raise UnsupportedFeatureError(msg)
            self.files = GeneratorFiles(storage.join(checkpoint, "flinkish", GENERATORS_DIR))
            self.plan.storage_options = storage.current_options()  # the executors' clients for the files

    def build(self, raw: bool = False) -> Any:
        """The stream as a streaming DataFrame (``raw``: the internal columns, values still pickled)."""
        from pyspark.sql import functions as F
        from pyspark.sql.streaming.state import GroupStateTimeout

        plan, info = self.plan, self.info
        exec_plan = _for_executors(plan)
        source_t = plan.transformations[info["source"]]
        source_uid = plan.nodes[info["source"]].uid
        now = self.env.clock.now()
        if isinstance(source_t.source, MicroBatchSource):
            rows, records = self._replay(source_t, source_uid), None
        else:
            from .source_rows import dataframe_records

            rows, records = source_t.source.df, dataframe_records(source_t)
        files = self.files
        if files is not None:  # the generator sees the batch in order, in one task (``spark/stateful_generators.py``)
            rows = rows.coalesce(1)
        routed = rows.mapInPandas(lambda frames: route(exec_plan, frames, now, source_uid, records, files), ROUTED_DDL)
        watermarked = routed.withWatermark("__et", f"{info['delay']} milliseconds")
        # records are the rows without event time (carriers have it); a filter that does not reference the
        # event-time column would be pushed below the watermark node and hide the carriers from it
        records = watermarked.filter(F.col("__et").isNull())
        keyed = info["keyed"]
        if keyed is None:
            out = records.select("dest", "value", "ts", "ord")
        else:
            out = records.groupBy("key").applyInPandasWithState(
                keyed_function(exec_plan, keyed, info["delay"], now, files),
                OUTPUT_DDL,
                STATE_DDL,
                "append",
                GroupStateTimeout.EventTimeTimeout,
            )
        out = out.filter(F.col("dest").isin(self.targets))
        return out if raw else _decode(out, self.output_type)

    def _replay(self, t: Transformation, uid: str) -> Any:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from .source_rows import SOURCE_DDL

        files = replay_files(t)
        data = [[r for r in f if not r[3]] for f in files[: len(t.source.batches)]]
        # the directory is named after its contents, so that a restarted query finds the same source files
        digest = hashlib.sha256(
            pickle.dumps([[(r[1], r[2]) for r in f] for f in data]) + b"".join(r[0] for f in data for r in f)
        ).hexdigest()[:24]
        directory = os.path.join(tempfile.gettempdir(), f"flinkish-replay-{digest}")
        if os.path.isdir(directory):
            _check_private(directory)  # its files are unpickled: never read one another user could have written
            return self.spark.readStream.schema(SOURCE_DDL).option("maxFilesPerTrigger", 1).parquet(directory)
        tmp_dir = f"{directory}.{uuid.uuid4().hex}.tmp"
        os.makedirs(tmp_dir, mode=0o700)
        for i, rows in enumerate(files):
            table = pa.table(
                {
                    "src": pa.array([uid] * len(rows), pa.string()),
                    "value": pa.array([r[0] for r in rows], pa.binary()),
                    "ts": pa.array([r[1] for r in rows], pa.int64()),
                    "part": pa.array([None] * len(rows), pa.string()),
                    "ord": pa.array([r[2] for r in rows], pa.list_(pa.int64())),
                    "batch": pa.array([i] * len(rows), pa.int64()),
                    "marker": pa.array([r[3] for r in rows], pa.bool_()),
                }
            )
            path = os.path.join(tmp_dir, f"batch-{i:09d}.parquet")
            pq.write_table(table, path)
            os.utime(path, (1_000_000 + i, 1_000_000 + i))
        try:
            os.rename(tmp_dir, directory)
        except OSError:  # written concurrently by another query of the same source: use that one
            shutil.rmtree(tmp_dir, ignore_errors=True)
        return self.spark.readStream.schema(SOURCE_DDL).option("maxFilesPerTrigger", 1).parquet(directory)


def check_checkpoint(checkpoint: str, plan: ExecPlan) -> None:
    """Refuse to start on ``checkpoint`` what its state cannot be restored into, as the foreachBatch executor does
    (``spark/signatures.py``, the same check): a keyed operator changed incompatibly under its uid, keys of a
    declared ``FLOAT``/``DOUBLE`` type in state written before keys were held as Flink tells them apart, or keys of
    a ``ROW`` (or ``BIG_DEC``, ...) type written before their bytes were those of the key as Flink holds it. The
    signatures are kept in ``<checkpoint>/flinkish/meta.json`` (with ``backend``); a checkpoint this executor wrote
    before it kept them (Spark's commit log, no such document) stands for the same operators' state written before
    Flink's key identity (:func:`~.signatures.before_key_identity`). A checkpoint of the other executor is refused."""
    current = plan_signatures((node.uid, plan.transformations[node.index]) for node in plan.nodes)
    exists = storage.exists(meta_path(checkpoint))
    meta = read_meta(checkpoint) if exists else {"backend": BACKEND}
    if meta.get("backend") != BACKEND:
        msg = (
            f"checkpoint {checkpoint} was written by the foreachBatch executor (the default backend); "
            f"backend={BACKEND!r} keeps its state in Spark's state store and cannot restore it: run the job with the "
            "default backend, or start from a new checkpoint location"
        )
        raise StateError(msg)
    stored = meta.get("operators")
    if stored is None and storage.list_names(storage.join(checkpoint, "spark", "commits")):
        stored = before_key_identity(current)  # state written before this executor kept signatures
    merged = check_operators(checkpoint, stored, current)
    if not exists or merged != stored:
        write_meta(checkpoint, {**meta, "operators": merged})


def replay_files(t: Transformation) -> List[List[Tuple[Optional[bytes], Optional[int], List[int], bool]]]:
    """The rows ``(pickled element, timestamp, order, marker)`` of each replay file of the replay source ``t``: one
    file per batch (an empty batch has one marker row), then, for a bounded source, the end-of-input carrier and
    one more file whose batch fires the timeouts the end of input made due."""
    if getattr(t.source, "executors_read", False):
        msg = (
            f"{t.name}: a bounded FileSource, a static DataFrame and from_delta(path, bounded=True) are read by the "
            "executors of the default foreachBatch executor (their records never reach the driver); "
            "backend='apply_in_pandas_with_state' replays its sources from the driver: use the default executor "
            "(get_execution_environment(spark))"
        )
        raise UnsupportedFeatureError(msg)
    batches = t.source.batches
    files: List[List[Tuple[Optional[bytes], Optional[int], List[int], bool]]] = [
        [(dumps(v), t.watermark_strategy.extract_timestamp(v, None), [i, j], False) for j, v in enumerate(b.elements)]
        for i, b in enumerate(batches)
    ]
    if t.source.end_of_input:
        files.append([(None, END_OF_INPUT, [len(batches), 0], True)])
        files.append([(None, None, [len(batches) + 1, 0], True)])
    return [rows or [(None, None, [i, 0], True)] for i, rows in enumerate(files)]


def _check_private(directory: str) -> None:
    """Refuse a replay directory (pickled elements) that is not this user's alone."""
    info = os.stat(directory)
    if hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o022):
        msg = (
            f"{directory} holds pickled source elements but is owned by another user or writable by others: "
            "refusing to read it (remove it, or set TMPDIR to a directory of your own)"
        )
        raise StateError(msg)


def _for_executors(plan: ExecPlan) -> ExecPlan:
    import copy

    exec_plan = copy.copy(plan)
    exec_plan.transformations = []
    return exec_plan


def _decode(out: Any, output_type: Any) -> Any:
    """Typed columns from the output_type (decoded on the executors as the foreachBatch sinks' frames are), else
    ``value`` (pickled) and ``timestamp``."""
    if output_type is None:
        return out.selectExpr("value", "ts AS timestamp")
    from pyspark.sql import functions as F

    rows = out.select("value", "ord").withColumn(STEP_COLUMN, F.lit(0).cast("long"))
    return SinkFrame(rows, output_type, None).typed()  # a stream: its size is not known


__all__ = [
    "SHIFT",
    "END_OF_INPUT",
    "GENERATOR_DELAY",
    "STATE_DDL",
    "STATE_VERSION",
    "WINDOWS_STATE_VERSION",
    "ROUTED_DDL",
    "OUTPUT_DDL",
    "BACKEND",
    "HINT",
    "validate",
    "flink_watermark",
    "spark_timeout",
    "route",
    "keyed_function",
    "StatefulQueryBuilder",
    "check_checkpoint",
]
