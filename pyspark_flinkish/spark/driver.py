"""The foreachBatch executor's driver: the function Spark calls with every micro-batch of the job's query.

Each Spark micro-batch of the job's streaming query is one micro-batch of Flink's execution model
(``docs/execution-model.md``). For batch ``N`` the driver:

1. restores its watermark bookkeeping as of batch ``N-1`` (in memory, or from
   ``<checkpoint>/flinkish/driver`` after a restart, so that a replayed batch starts from the same point;
   ``spark/driver_checkpoint.py``);
2. runs the *route*: source rows go through the stateless operators on the executors, which report
   per-partition statistics (max timestamp, count) for watermark generation;
3. computes every operator's new watermark with the same core classes as the JVM-free engine (per-partition
   generators, idleness, valves, end of input; ``spark/watermark_advance.py``). With one keyed level this happens
   in the keyed tasks, from the route's statistics, and the route, the keyed stage and the collect are one pass
   over the input (the driver then runs the same advance on the same statistics); otherwise the driver collects
   the statistics after the route and advances first;
4. runs keyed operators level by level: ``groupBy(operator, state partition).applyInPandas`` loads the keys of
   each partition that the batch needs from the state as of batch ``N-1`` (``spark/state_store.py``), processes
   its records in Flink's order at the previous watermark, advances to the new one (firing timers) and writes the
   keys that changed; each partition reports its new *manifest* (which state files make up its state);
5. hands every sink its records, then records its own state for batch ``N`` with the manifests
   (``driver/b=<N>.json``): that document is what makes batch ``N``'s state committed.

State never passes through the driver; only watermark statistics and manifests (a few rows per partition) do.
"""
from __future__ import annotations

import collections
import copy
import json
import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Deque, Dict, List, Optional, Tuple

from ..core.clock import ManualClock
from ..datastream.plan import Transformation
from ..datastream.sources import MicroBatchSource
from ..monitoring import log_progress
from . import columnar, storage
from .batch_input import is_small, replay_sources, replay_steps, route_fed_sinks, source_stepper, spread_route_input
from .chain import route_partition, route_records
from .delivery import deliver_frame, deliver_values, is_client_sink
from .driver_checkpoint import DriverCheckpoint
from .driver_metrics import operator_metrics, progress_counters, source_metrics
from .error_transport import interruption_from, package_error_from
from .far_future import FutureRecords
from .fused_ticks import with_ticks, without_ticks
from .generators import generator_states, ordered_route, refuse_unaligned_generators
from .keyed_partition import in_processing_order, keyed_level_function
from .plan import ExecPlan, keep_state_layouts
from .progress_files import write_progress
from .replay import replay_stream
from .rescale import rescale_checkpoint, rescale_interrupted
from .rows import loads
from .savepoint import columnar_keys, restore_savepoint, restored_state
from .sink_frames import SinkFrame, sink_rows
from .source_logs import seed
from .source_rows import DataFrameSource, dataframe_records, dataframe_rows
from .spark_jobs import SparkJobs
from .ticks import TickTimer, needs_ticks, read_due, tick_stream, write_due
from .watermark_advance import Advanced, WatermarkAdvance, advance_watermarks, graph_watermarks, sorted_stats, watermark_template

if TYPE_CHECKING:
    from .environment import SparkStreamExecutionEnvironment

_log = logging.getLogger("pyspark_flinkish.spark")


class ForeachBatchDriver(DriverCheckpoint):
    """The ``foreachBatch`` function: one call per Spark micro-batch (its state between batches:
    :class:`~.driver_checkpoint.DriverCheckpoint`)."""

    def __init__(
        self,
        env: SparkStreamExecutionEnvironment,
        sinks: List[Transformation],
        checkpoint: str,
        progress: Optional[Callable[[Any], None]],
        from_savepoint: Optional[str] = None,
        allow_non_restored_state: bool = False,
    ) -> None:
        self.env = env
        self.spark = env.spark
        self.checkpoint = checkpoint
        self.sinks = sinks
        if from_savepoint is not None:  # a new checkpoint starts from the savepoint (spark/savepoint.py)
            restore_savepoint(
                self.spark, from_savepoint, checkpoint, sinks, env.state_partitions, allow_non_restored_state
            )
        self.restored = restored_state(checkpoint)  # what a checkpoint restored from a savepoint starts from
        meta = self._meta()
        self.plan = ExecPlan(sinks, vectorize=bool(meta["vectorize"]))
        if int(meta["state_partitions"]) != env.state_partitions or rescale_interrupted(checkpoint):  # as Flink's restore
            window = columnar_keys(self.plan, bool(meta["vectorize"]))  # placed by Spark's hash of its key columns
            meta = rescale_checkpoint(self.spark, checkpoint, meta, env.state_partitions, window)
            self.restored = restored_state(checkpoint)  # rescaled too, when no batch was committed after the restore
        self.partitions = int(meta["state_partitions"])
        refuse_unaligned_generators(self.plan)
        self._check_operators(meta)
        self.state_root = storage.join(checkpoint, "flinkish", "state")
        self.driver_root = storage.join(checkpoint, "flinkish", "driver")
        # the operators' state manifests as of the last committed batch (then as of the batch's last step), and
        # those of the batches kept before it (their files are kept too)
        self.op_state: Dict[str, Dict[str, Any]] = {}
        self.kept_states: Deque[Dict[str, Dict[str, Any]]] = collections.deque(maxlen=3)
        self._swept = False
        # each replay source's last micro-batch (a savepoint records where the source goes on)
        self.positions: Dict[str, Any] = {}
        self.committed_positions: Dict[str, Any] = {}  # as of the last committed batch
        keep_state_layouts(self.plan, self._stored_layouts())
        self.progress = progress
        self.failure: Optional[BaseException] = None
        self.batches_run = 0
        self.durations: Dict[str, float] = {}  # milliseconds per phase of the last batch (progress, profiling)
        self.input_counts: Dict[str, Dict[str, int]] = {}  # progress: records per source and partition, last batch
        self._heartbeats: Any = None  # the columnar path's heartbeat rows, built once per query
        self._keyed_heartbeats: Dict[int, Any] = {}  # the general path's, per keyed level (``_level_heartbeats``)
        self.metric_rows: List[Tuple[int, int, Dict[str, Any]]] = []  # (step, operator, metrics) of the batch
        self.history: Deque[Dict[str, Any]] = collections.deque(maxlen=100)  # progress of the recent batches
        self.watermark_graph = self._new_graph()
        self.last_batch: Optional[int] = None
        self.columnar = columnar.detect(self.plan, self.plan.transformations) if meta["vectorize"] else None
        if env.columnar_records:  # declared types cross stages as columns (``spark/record_columns.py``)
            self.plan.carry_columns()
        self.exec_plan = copy.copy(self.plan)  # what the executors get: no source data, no DataFrames
        self.exec_plan.transformations = []
        self.exec_plan.future_horizon_ms = env.future_horizon_ms
        self.exec_plan.storage_options = storage.current_options()
        self.future: Optional[FutureRecords] = None  # far-future records of the current batch
        # hook: a source that maps its own commits to steps with explicit watermarks (``from_delta``)
        self.stepper = source_stepper(self.plan)
        self.ticks = False  # processing-time ticks in the input (``spark/ticks.py``), set by ``input_stream``
        self.tick_timer = TickTimer(storage.join(checkpoint, "flinkish"))  # writes the due ticks (``spark/ticks.py``)
        self.fused = self._fused_source()
        # with ticks, the fused source's batches hold the tick rows too, marked by this column (``spark/fused_ticks.py``)
        self.tick_column: Optional[str] = None
        self.step_watermarks: Dict[int, Optional[int]] = {}
        self.outbox: Any = None  # Spark Connect: where client sinks' values go (``spark/connect.py``)
        # the sinks whose records the driver collects (add_sink, print, execute_and_collect); the others' stay on
        # the executors and reach their writers as DataFrames (``spark/sink_frames.py``)
        self.client_sinks = [i for i in self.plan.sinks if is_client_sink(self.plan.transformations[i])]
        self.frame_sinks = [i for i in self.plan.sinks if i not in self.client_sinks]  # read the stages' outputs again
        self.sink_counts: Dict[int, int] = {}  # records per sink in the batch (from the tasks' count rows)
        self.collected_rows = 0  # rows the driver collected in the batch (coordination and driver-side sinks)
        self.spark_jobs: Optional[SparkJobs] = None  # the Spark jobs of each batch, by phase (progress)
        # the one-pass path (one keyed level): the watermark graph without data that the keyed tasks advance
        # themselves (``spark/watermark_advance.py``); built on first use, None where the path does not apply
        self._template: Optional[bytes] = None
        self._one_pass = self.columnar is None and self.stepper is None and len(self.plan.levels) == 1
        self.route_fed = route_fed_sinks(self.plan)  # the sinks the route's output can hold records of

    # -- set-up
    def _fused_source(self) -> Optional[int]:
        """The plan index of the one DataFrame source whose conversion runs inside the route (no pickling in
        between), when the pipeline has exactly one source and it is a plain DataFrame source (with processing-time
        ticks too: they join its own rows, ``spark/fused_ticks.py``)."""
        if self.columnar is not None or self.stepper is not None or len(self.plan.sources) != 1:
            return None
        index = self.plan.sources[0]
        return index if isinstance(self.plan.transformations[index].source, DataFrameSource) else None

    def input_stream(self, trigger: Optional[Dict[str, Any]] = None) -> Any:
        """One streaming DataFrame with the rows of every source (``SOURCE_DDL`` columns), or the source
        DataFrame itself: a fused source's, or the columnar path's (event-time windows only). With processing-time
        timers on the wall clock in a continuing query (``trigger``), processing-time ticks are unioned in
        (``spark/ticks.py``): into a fused source's own rows, marked (``spark/fused_ticks.py``), else as common
        source rows."""
        if self.columnar is not None:
            return self.plan.transformations[self.columnar.source].source.df
        self.ticks = needs_ticks(self.plan.transformations, isinstance(self.env.clock, ManualClock), trigger)
        self.tick_column = None
        if self.fused is not None:
            source = self.plan.transformations[self.fused].source.df
            if not self.ticks:
                return source
            # the tick rows join the source's own rows, marked; each batch splits them off before the route (``_step``)
            stream, self.tick_column = with_ticks(source, tick_stream(self.spark, self.tick_timer))
            return stream
        frames = []
        replay = [t for t in self.plan.transformations if t.kind == "source" and isinstance(t.source, MicroBatchSource)]
        if replay:
            first = 0
            if self.restored is not None:  # the micro-batches after the savepoint's
                first = max((p["next_batch"] for p in self.restored["positions"].values() if p["kind"] == "replay"), default=0)
            frames.append(replay_stream(self.spark, self.plan, self.checkpoint, replay, first))
        for t in self.plan.transformations:
            if t.kind == "source" and isinstance(t.source, DataFrameSource):
                frames.append(dataframe_rows(t, self.plan.nodes[self.plan.transformations.index(t)].uid))
        if self.ticks:
            frames.append(tick_stream(self.spark, self.tick_timer))
        stream = frames[0]
        for f in frames[1:]:
            stream = stream.unionByName(f)
        return stream

    def seed_spark_checkpoint(self, stream: Any) -> None:
        """Before the query of a checkpoint restored from a savepoint first starts: the savepoint's positions of file
        streams and Delta tables become Spark's committed batch 0 (``spark/source_logs.py``)."""
        if self.restored is not None and int(self.restored.get("first_batch", 0)) == 1:
            seed(self.spark, stream, self.plan, self.columnar is not None, self.checkpoint, self.restored)

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
            error = package_error_from(exc)  # a user function raised on an executor: its clear message, not Py4J's
            self.failure = exc if error is None else error
            if error is not None and error is not exc:
                raise error from exc
            stopped = interruption_from(exc) if error is None else None
            if stopped is not None:  # the query is stopping: a short error that Spark's check reads at once
                raise stopped from None
            raise

    def _wm_now(self) -> Dict[int, int]:
        return graph_watermarks(self.watermark_graph)

    def _phase(self, name: str) -> Any:
        """Add the time spent in a ``with`` block to ``self.durations[name]`` (ms)."""
        driver = self

        class _Timer:
            def __enter__(self) -> None:
                self.t = time.perf_counter()

            def __exit__(self, *exc: Any) -> None:
                driver.durations[name] = driver.durations.get(name, 0.0) + (time.perf_counter() - self.t) * 1000
                if driver.spark_jobs is not None:
                    driver.spark_jobs.mark(name)

        return _Timer()

    def _planned(self, since: float) -> None:
        """Add the time since ``since`` (``time.perf_counter()``) to the phase ``plan``: the driver building the
        batch's Spark plans (no Spark job)."""
        self.durations["plan"] = self.durations.get("plan", 0.0) + (time.perf_counter() - since) * 1000

    def _run(self, df: Any, batch_id: int) -> None:
        self.durations = {}
        self.input_counts = {}
        self.metric_rows = []
        self.sink_counts = {}
        self.collected_rows = 0
        self.future = None
        if self.spark_jobs is None:  # made here, not when the job is built: a Connect server gets the driver pickled
            self.spark_jobs = SparkJobs(df.sparkSession)
        self.spark_jobs.start()
        start = time.perf_counter()
        if self.ticks:
            self.tick_timer.cancel()  # the batch fires what is due; its commit arms the next tick
        with self._phase("open"):
            self._open(batch_id)
        with self._phase("replay index"):
            steps, replay_indices = replay_steps(self.plan, df)
        explicit: List[Dict[int, Optional[int]]] = [{} for _ in steps]
        if self.stepper is not None:
            steps, explicit = self.stepper(self, df, batch_id)
        by_sink: Dict[int, List[Any]] = {i: [] for i in self.client_sinks}
        materialized: List[Any] = []
        step_outputs: List[List[Any]] = []  # per step: the DataFrames whose rows hold the sinks' records
        batch_index: Optional[int] = None
        for n, (step_df, step_watermarks) in enumerate(zip(steps, explicit)):
            self.step_watermarks = step_watermarks  # explicit source watermarks after this step (hook)
            if n < len(replay_indices):
                self.enter_replay_batch(replay_indices[n])
            # one Flink micro-batch: its rows, then its watermark (a Spark batch holds several replay batches
            # only after a crash between Spark's source log and offset log; each still gets its own watermark)
            step_rows, step_frames, outputs, batch_index = self._step(step_df, batch_id)  # later steps go on from its state
            if batch_index is not None:
                for uid, source in replay_sources(self.plan):
                    if batch_index < len(source.batches):  # (not the end-of-input file after the last)
                        self.positions[uid] = {"replay_batch": batch_index}
            materialized.extend(step_frames)
            step_outputs.append(outputs)
            with self._phase("sort"):
                for sink_index, rows in step_rows.items():
                    rows.sort(key=lambda r: list(r["ord"]))
                    by_sink[sink_index].extend(rows)
        with self._phase("deliver"):
            for sink_index in self.plan.sinks:  # one delivery per Spark batch id: sinks stay idempotent
                t = self.plan.transformations[sink_index]
                if sink_index in by_sink:
                    self._deliver(t, by_sink[sink_index], batch_id)
                else:
                    self._deliver_frame(t, self._frame(sink_index, step_outputs), batch_id)
                    self.spark_jobs.mark(f"sink {self.plan.nodes[sink_index].uid}")  # its writes' jobs
        with self._phase("commit"):
            for m in materialized:
                m.unpersist()
            self._commit(batch_id)
            if self.ticks:
                flinkish = storage.join(self.checkpoint, "flinkish")
                # a batch whose keyed stages did not run (no step) leaves the pending timers as they were
                due = self._next_processing_timer() if self.metric_rows else read_due(flinkish)[1]
                write_due(flinkish, batch_id, due)
                self.tick_timer.arm(batch_id, due)
        self.batches_run += 1
        if self.future is not None:
            self.future.log()
        self.durations["total"] = (time.perf_counter() - start) * 1000
        now = self.env.clock.now()  # what each operator's watermarkLag is measured against
        progress = {
            "batch_id": batch_id,
            "processing_time": now,
            "replay_batch": batch_index,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z",
            "watermarks": self.operator_watermarks(),
            "durations_ms": {k: round(v, 1) for k, v in self.durations.items()},
            "spark_jobs": self.spark_jobs.report(),
            **progress_counters(self, self.sink_counts),
        }
        progress["sources"] = source_metrics(progress)
        progress["operators"] = operator_metrics(self, now)
        self.history.append(progress)
        try:  # publishing must never fail the batch (a full disk, a logging handler's error)
            log_progress(progress)
            write_progress(self.checkpoint, progress)
        except Exception as exc:
            _log.warning("batch %d: could not publish its progress: %r", batch_id, exc)
        if self.progress is not None:
            self.progress(progress)

    def _next_processing_timer(self) -> Optional[int]:
        """The earliest processing-time timer pending in any keyed state partition after the batch's last step
        (every partition reports after every step)."""
        last = max((step for step, _, _ in self.metric_rows), default=None)
        due = [m.get("nextProcessingTimer") for step, _, m in self.metric_rows if step == last]
        return min((d for d in due if d is not None), default=None)

    def enter_replay_batch(self, index: int) -> None:
        """Before replay batch ``index`` runs: its ``MicroBatch.processing_time`` sets the clock, by the local
        engine's own rule (``LocalExecutor.set_clock``)."""
        self.watermark_graph.set_clock(index)

    def _step_columnar(self, df: Any, batch_id: int) -> tuple:  # type: ignore[type-arg]
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
            args = (cw, plan, wm_prev[cw.window], wm_new[cw.window], now, parts, self.state_root, batch_id, self.manifests())
            cogrouped = partials.groupBy("__sp").cogroup(others.groupBy("__sp"))
            # persisted: the collect computes it (state written once), the sinks' frames and later levels read it
            keyed = cogrouped.applyInPandas(columnar.columnar_function(*args), plan.row_ddl()).persist()
        if plan.levels[1:]:
            with self._phase("keyed level 1"):
                keyed.count()  # materialise before later levels read it
        return self._levels_and_sinks([keyed], [keyed], plan.levels[1:], wm_prev, wm_new, now, batch_id) + (
            batch_index,
        )

    def _step(self, df: Any, batch_id: int) -> tuple:  # type: ignore[type-arg]
        """Route, advance watermarks and run the keyed levels for one Flink micro-batch; returns the sink
        rows by sink, the persisted frames to release, and the replay batch index."""
        if self.columnar is not None:
            return self._step_columnar(df, batch_id)
        from pyspark.sql import functions as F

        planning = time.perf_counter()
        plan, parts = self.exec_plan, self.partitions
        now = self.env.clock.now()
        wm_prev = self._wm_now()
        source_index = {plan.nodes[i].uid: i for i in plan.sources}
        # custom watermark generators run in the route, in one task in processing order (``spark/generators.py``)
        generators = generator_states(self.watermark_graph)
        ordered = ordered_route(plan)
        advance = self.advance_of_batch(now)
        fanout = None if advance is None else [(n, sp) for n in plan.keyed_at(plan.levels[0]) for sp in range(parts)]

        # the route's output is kept for what reads it again: the sinks it feeds (the one-pass path's keyed stage
        # reads it once, through its shuffle; the driver-only path collects its statistics first)
        keep = advance is None or bool(self.route_fed)
        # a small batch on the one-pass path runs in one task: the route, then its keyed groups one after the other
        # and the collect, in one Spark stage (``in_processing_order``: no shuffle, so one Spark job); judged on the
        # rows the route reads (a fused source's, without the tick rows its batch drops first)
        one_task = False
        if self.fused is not None:
            source_t, node = self.plan.transformations[self.fused], self.fused
            records = dataframe_records(source_t)
            if self.tick_column is not None:  # the source's rows only: a tick only made the batch run
                df = without_ticks(df, self.tick_column)
            one_task = advance is not None and is_small(df)
            order_columns = list(source_t.source.order_columns)
            if ordered:
                df = df.coalesce(1)
                if order_columns:
                    df = df.sortWithinPartitions(*order_columns)
            elif one_task:
                df = df.coalesce(1)
            elif order_columns:  # order comes from columns: a large batch's route is spread over all cores
                df = spread_route_input(df, parts)
            routed = df.mapInPandas(
                lambda frames: route_records(plan, records(frames), wm_prev, now, parts, node, generators, fanout),
                plan.row_ddl(),
            )
        else:
            one_task = advance is not None and is_small(df)
            if ordered:  # one task; a batch's rows source by source (as the local engine emits them), each in order
                uids = F.array(*[F.lit(plan.nodes[i].uid) for i in plan.sources])
                df = df.coalesce(1).sortWithinPartitions(F.array_position(uids, F.col("src")), "ord")
            elif one_task:
                df = df.coalesce(1)
            routed = df.mapInPandas(
                lambda frames: route_partition(plan, frames, wm_prev, now, parts, source_index, generators, fanout),
                plan.row_ddl(),
            )
        if keep:
            routed = routed.persist()
        self._planned(planning)
        if advance is not None:  # one pass: the keyed tasks advance the watermarks from the route's ``stats`` rows
            outputs = [routed.filter(F.col("kind").isin("rec", "metric", "count", "wm", "stats"))]
            return self._levels_and_sinks(
                outputs, [routed] if keep else [], plan.levels, wm_prev, wm_prev, now, batch_id, advance, one_task
            )
        with self._phase("route"):
            stats = self._take_future(routed.filter(F.col("kind").isin("stat", "future", "gen")).collect(), now)
        with self._phase("watermarks"):
            batch_index = self._advance_watermarks(stats)
        wm_new = self._wm_now()

        # metric: async I/O operators; count: records per sink (sinks fed by the route: the stateless pipeline's, the
        # dead letters); wm: a custom generator's mid-batch watermarks for the keyed operators
        outputs = [routed.filter(F.col("kind").isin("rec", "metric", "count", "wm"))]
        return self._levels_and_sinks(outputs, [routed], plan.levels, wm_prev, wm_new, now, batch_id) + (
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
        advance: Optional[WatermarkAdvance] = None,
        one_task: bool = False,
    ) -> tuple:  # type: ignore[type-arg]
        """Run the keyed ``levels`` on what the earlier stages output, then collect the sink rows. With ``advance``
        (the one-pass path: one level), its tasks advance the watermarks themselves and the driver runs the same
        advance on the statistics collected with the metric rows (``spark/watermark_advance.py``); the tuple then
        ends with the replay batch index seen. ``one_task``: a small batch, whose route, keyed groups and collect
        run in one task (``in_processing_order``)."""
        from pyspark.sql import functions as F

        plan, parts = self.exec_plan, self.partitions
        for level in levels:
            planning = time.perf_counter()
            nodes = plan.keyed_at(level)
            pending = outputs[0]
            for o in outputs[1:]:
                pending = pending.unionByName(o)
            pending = pending.filter(F.col("dest").isin(nodes))
            heartbeats = self._level_heartbeats(level, nodes, outputs[0].schema)
            reporter = (nodes[0], 0) if advance is not None else None  # the group that passes the statistics on
            function = keyed_level_function(
                plan, wm_prev, wm_new, now, parts, self.state_root, batch_id, self.manifests(), advance, reporter
            )
            arranged = in_processing_order(pending.unionByName(heartbeats), one_task)  # each group's rows in order
            keyed = arranged.groupBy("dest", "sp").applyInPandas(function, plan.row_ddl())
            # persisted where it is read again (its state is written once): by a later level, or by the sinks whose
            # records stay on the executors (``_frame``). The last level of a batch whose sinks are all driver-side
            # is read once, by the collect below: persisting it would only add a Spark job (adaptive execution
            # materialises a cached plan in a job of its own before the collect's)
            if level != levels[-1] or self.frame_sinks:
                keyed = keyed.persist()
                materialized.append(keyed)
            self._planned(planning)
            if level != levels[-1]:  # a later level reads it; the last one is computed by the collect below
                with self._phase(f"keyed level {level}"):
                    keyed.count()
            outputs.append(keyed)

        by_sink: Dict[int, List[Any]] = {i: [] for i in self.client_sinks}
        step = len({s for s, _, _ in self.metric_rows})
        blobs: List[bytes] = []
        with self._phase("collect" if advance is None else "route, keyed stage, collect"):
            # one Spark job: the keyed metric rows, the sinks' record counts and the rows of the sinks that hand
            # records to Python on the driver (add_sink, print, execute_and_collect); every other sink's records
            # stay on the executors (``_frames``). On the one-pass path it runs the route too, and brings the
            # statistics the reporting keyed group passed on (the route's own ``stats`` rows stay there)
            wanted = F.col("kind").isin("metric", "count")
            if self.client_sinks:
                wanted = wanted | ((F.col("kind") == "rec") & F.col("dest").isin(self.client_sinks))
            selected = [o.filter(wanted).select("kind", "dest", "value", "ord", "stat_count") for o in outputs]
            if advance is not None:  # the route's coordination rows come with the statistics; its records only for
                # the driver-side sinks it feeds (nothing else reads the route's output again)
                keyed = outputs[-1].filter(wanted | (F.col("kind") == "stats"))
                selected = [keyed.select("kind", "dest", "value", "ord", "stat_count")]
                client = [i for i in self.client_sinks if i in self.route_fed]
                if client:
                    routed_records = (F.col("kind") == "rec") & F.col("dest").isin(client)
                    selected.append(outputs[0].filter(routed_records).select("kind", "dest", "value", "ord", "stat_count"))
            rows = selected[0]
            for o in selected[1:]:
                rows = rows.unionByName(o)
            collected = rows.collect()
            self.collected_rows += len(collected)
            for r in collected:
                if r["kind"] == "metric":
                    self.metric_rows.append((step, int(r["dest"]), json.loads(r["value"])))
                elif r["kind"] == "count":
                    self.sink_counts[int(r["dest"])] = self.sink_counts.get(int(r["dest"]), 0) + int(r["stat_count"])
                elif r["kind"] == "stats":
                    blobs.append(bytes(r["value"]))
                else:
                    by_sink[int(r["dest"])].append(r)
        self._record_manifests([m for m in self.metric_rows if m[0] == step])
        if advance is None:
            return by_sink, materialized, outputs
        with self._phase("watermarks"):
            batch_index = self.take_statistics(blobs, step, now, advance)
        return by_sink, materialized, outputs, batch_index

    def _level_heartbeats(self, level: int, nodes: List[int], schema: Any) -> Any:
        """One row per keyed group (operator ``nodes`` x state partition) of ``level``, so that every group runs in
        every batch (its watermark and timers advance with no record); the same DataFrame every batch, built on
        first use (its columns' casts are a round trip to Spark each)."""
        from pyspark.sql import functions as F

        if level in self._keyed_heartbeats:
            return self._keyed_heartbeats[level]
        heartbeats = self.spark.createDataFrame(
            [("hb", n, sp) for n in nodes for sp in range(self.partitions)], "kind string, dest int, sp int"
        )
        columns = [F.col("kind"), F.col("dest"), F.col("sp")]
        for c in ("key", "value", "ts", "ord", "part", "stat_max", "stat_count", "stat_batch"):
            columns.append(F.lit(None).cast(schema[c].dataType).alias(c))
        for layout in self.exec_plan.typed_columns():  # never null (``spark/record_columns.py``)
            for c, empty in zip(layout.columns, layout.placeholders):
                columns.append(F.lit(empty).cast(schema[c].dataType).alias(c))
        self._keyed_heartbeats[level] = heartbeats.select(*columns)
        return self._keyed_heartbeats[level]

    def take_statistics(self, blobs: List[bytes], step: int, now: int, advance: WatermarkAdvance) -> Optional[int]:
        """The one-pass path's statistics, as the reporting keyed group passed them on (``stats`` rows' values): the
        route tasks' metric and count rows are recorded, and the driver runs the advance every keyed task ran on
        them, so that its watermark graph is the one they computed. Returns the replay batch index seen."""
        stats = sorted_stats(blobs)
        for r in stats:  # the route tasks' metric (async I/O) and count rows
            if r["kind"] == "metric":
                self.metric_rows.append((step, int(r["dest"]), json.loads(r["value"])))
            elif r["kind"] == "count":
                self.sink_counts[int(r["dest"])] = self.sink_counts.get(int(r["dest"]), 0) + int(r["stat_count"])
        self._take_future(stats, now)
        result = advance.run(stats)
        self._restore_graph(result.state)
        self._count_input(result.seen)
        return result.seen.batch_index

    def _take_future(self, rows: List[Any], now: int) -> List[Any]:
        """Record the ``future`` rows (far-future records, see ``spark/rows.py``); returns the other rows."""
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
        """Advance the driver's watermark graph on the batch's statistics (``spark/watermark_advance.py``); returns
        the replay batch index seen (if any)."""
        step_watermarks = self.step_watermarks
        seen = advance_watermarks(self.watermark_graph, stats, step_watermarks)
        self._count_input(seen)
        return seen.batch_index

    def _count_input(self, seen: Advanced) -> None:
        """Add an advance's records per source and partition to the batch's progress counters."""
        for name, parts in seen.input_counts.items():
            counts = self.input_counts.setdefault(name, {})
            for part, n in parts.items():
                counts[part] = counts.get(part, 0) + n

    def advance_of_batch(self, now: int) -> Optional[WatermarkAdvance]:
        """The one-pass path's watermark advance of this batch (the graph as of now, at processing time ``now``),
        or None where the batch takes the driver's own advance between route and keyed stage: more than one
        keyed level (a later level needs the earlier's output first), none, a source that steps Spark batches itself
        (``from_delta``), the columnar path, or a source the graph cannot ship without its data."""
        if not self._one_pass:
            return None
        if self._template is None:
            self._template = watermark_template(self.watermark_graph)
            if self._template is None:
                self._one_pass = False
                return None
        return WatermarkAdvance(self._template, self._graph_state(), now)

    def _context(self, t: Transformation) -> Dict[str, Any]:
        return {
            "checkpoint": self.checkpoint,
            "sink_uid": self.plan.nodes[self.plan.transformations.index(t)].uid,
            "watermark": self.watermark_graph.nodes[t.id].valve.last_output,  # the sink's input, after the batch
            "sink_index": self.plan.transformations.index(t),
            "outbox": self.outbox,
        }

    def _deliver(self, t: Transformation, rows: List[Any], batch_id: int) -> None:
        """Hand a driver-side sink (``add_sink``, ``print``, ``execute_and_collect``) its values, in Flink's order."""
        deliver_values(self.spark, t, [loads(r["value"]) for r in rows], batch_id, self._context(t))

    def _frame(self, sink_index: int, step_outputs: List[List[Any]]) -> SinkFrame:
        """Sink ``sink_index``'s records of the batch (every step's), left on the executors."""
        from pyspark.sql import functions as F

        if self.columnar is None and sink_index not in self.route_fed:  # not in the route's output (``outputs[0]``)
            step_outputs = [outputs[1:] for outputs in step_outputs]
        layout = self.exec_plan.record_columns.get(sink_index)  # its records that crossed as columns
        frames = [
            sink_rows(outputs, sink_index, F.lit(n).cast("long"), layout) for n, outputs in enumerate(step_outputs)
        ]
        rows = frames[0]
        for f in frames[1:]:
            rows = rows.unionByName(f)
        t = self.plan.transformations[sink_index]
        return SinkFrame(rows, t.inputs[0].output_type, self.sink_counts.get(sink_index, 0), layout=layout)

    def _deliver_frame(self, t: Transformation, frame: SinkFrame, batch_id: int) -> None:
        """Hand a sink that writes through Spark (``DeltaSink``, dead letters, ``foreach_batch``) its records as a
        DataFrame: written by the executors."""
        deliver_frame(self.spark, t, frame, batch_id, self._context(t))


__all__ = ["ForeachBatchDriver"]
