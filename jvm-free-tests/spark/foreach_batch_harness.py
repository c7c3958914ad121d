"""Runs a pipeline through the foreachBatch executor's real bodies without a JVM.

The Spark driver (``ForeachBatchDriver``) runs each micro-batch as Spark jobs around pure-pandas bodies: the route
(``route_partition``, one call per Spark task), the driver's watermark advance (``_advance_watermarks``; on the
one-pass path, one keyed level, the keyed tasks run it on the route's ``stats`` rows and the driver after them,
``take_statistics``), the keyed levels (``groupBy("dest", "sp").applyInPandas`` of ``run_keyed_partition`` in its iterator form, each group's rows
sorted by ``ord`` and in small chunks, batch-wise windows included) and the
sinks (rows sorted by ``ord``, ``_deliver``). This harness drives the same objects in the same order with pandas
frames in place of Spark DataFrames and a temporary directory as the checkpoint: only the Spark plumbing between
the bodies (``mapInPandas``, ``filter``, ``unionByName``, ``groupBy``, ``collect``) is done here, by pandas.

Each replay batch is one Spark micro-batch, with the rows ``_replay_stream`` writes to its files (the batch's
elements, one marker row per source, and one last file with only markers: end of input). A ``from_dataframe``
source is a :class:`PandasStream` (a schema and one pandas frame per micro-batch); it runs the fused route
(``route_records``) or, when ``columnar.detect`` chooses it, the columnar path (``columnar.run_partition``; Spark's
SQL part, ``prepared``/``statistics``/``split``, done here with pandas and the window's assigner).
"""

from __future__ import annotations

import json
import pickle
import zlib
from typing import Any, Callable, Dict, List, Optional

import pandas as pd
from pyspark import cloudpickle
from pyspark.sql import Row

from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.datastream.sources import MicroBatchSource
from pyspark_flinkish.spark.chain import route_partition, route_records
from pyspark_flinkish.spark.columnar import columnar_function
from pyspark_flinkish.spark.driver import ForeachBatchDriver
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment
from pyspark_flinkish.spark.generators import generator_states, ordered_route
from pyspark_flinkish.spark.keyed_partition import KeyedInput, keyed_level_function, run_keyed_partition
from pyspark_flinkish.spark.record_columns import KEY_PREFIX, RecordColumns
from pyspark_flinkish.spark.replay import replay_rows
from pyspark_flinkish.spark.rows import ROW_COLUMNS
from pyspark_flinkish.spark.source_rows import dataframe_records

__all__ = [
    "GROUP_CHUNK_ROWS",
    "PandasStream",
    "count_key_crossings",
    "group_frames",
    "keyed_task",
    "local_outputs",
    "run_foreach_batch",
]

GROUP_CHUNK_ROWS = 3
"""Rows per frame of a keyed group's iterator here (Spark's: ``spark.sql.execution.arrow.maxRecordsPerBatch``,
10,000): small, so that every scenario's keyed tasks read their input across chunk boundaries."""


def group_frames(frame: pd.DataFrame, chunk: int = GROUP_CHUNK_ROWS) -> List[pd.DataFrame]:
    """One keyed group's rows as ``keyed_partition.in_processing_order`` and ``applyInPandas``' iterator form give
    them to its task: sorted by ``ord`` (rows without one first), in frames of ``chunk`` rows."""

    def position(i: int) -> Any:
        o = frame["ord"].iloc[i]
        missing = o is None or (isinstance(o, float) and o != o)
        return (0, []) if missing else (1, [int(x) for x in o])

    ordered = frame.iloc[sorted(range(len(frame)), key=position)].reset_index(drop=True)
    return [ordered.iloc[k : k + chunk].reset_index(drop=True) for k in range(0, len(ordered), chunk)]


def keyed_task(plan: Any, frame: pd.DataFrame, *args: Any) -> pd.DataFrame:
    """``run_keyed_partition`` over one group's rows (``frame``, in any order) as its Spark task runs it: the rows
    in processing order and in chunks (:func:`group_frames`), its output frames concatenated."""
    return pd.concat(list(run_keyed_partition(plan, KeyedInput(plan, group_frames(frame)), *args)), ignore_index=True)


def run_foreach_batch(
    build: Callable[[Any], None],
    checkpoint: str,
    vectorize: bool,
    partitions: int = 2,
    tasks: int = 2,
    batches: Optional[range] = None,
    prepare: Optional[Callable[[ForeachBatchDriver], ForeachBatchDriver]] = None,
    columnar_records: bool = True,
) -> ForeachBatchDriver:
    """Build the pipeline on a JVM-free Spark environment (``build(env)`` adds its sinks) and run every micro-batch
    of its replay sources to the end of input (or the Spark batch ids ``batches``: a restart resumes from the
    checkpoint); the sinks get their values as on Spark. ``tasks``: how many Spark tasks the route is split into.
    ``prepare(driver)`` returns the driver that runs the batches (e.g. a pickled copy, as a Spark Connect server
    runs it); ``columnar_records``: the environment's setting. Returns the driver (its errors: the executor's errors,
    raised here)."""
    env = SparkStreamExecutionEnvironment(
        None, clock=ManualClock(0), state_partitions=partitions, vectorize=vectorize, future_horizon_ms=None,
        columnar_records=columnar_records,
    )
    build(env)
    driver = ForeachBatchDriver(env, env._sinks, checkpoint, None)
    if prepare is not None:
        driver = prepare(driver)
    plan = driver.plan
    sources = [t for t in plan.transformations if t.kind == "source"]
    frames = [t.source.df for t in sources if isinstance(getattr(t.source, "df", None), PandasStream)]
    assert len(frames) <= 1 and (not frames or len(sources) == 1), "one DataFrame source and nothing else"
    if frames:  # one DataFrame source: its micro-batches as they are
        n = len(frames[0].batches) - 1
    else:
        assert all(isinstance(t.source, MicroBatchSource) for t in sources), "the harness replays MicroBatchSources"
        n = max(len(t.source.batches) for t in sources)
    for batch_id in range(n + 1) if batches is None else batches:
        driver._open(batch_id)
        if driver.columnar is not None:
            by_sink = _step_columnar(driver, frames[0].batches[batch_id], batch_id)
        elif frames:
            by_sink = _step(driver, frames[0].batches[batch_id], batch_id, tasks)
        else:
            driver.enter_replay_batch(batch_id)  # as ``ForeachBatchDriver._run`` does before each replayed batch
            by_sink = _step(driver, _replay_rows(driver, batch_id), batch_id, tasks)
        for sink_index, rows in by_sink.items():
            rows.sort(key=lambda r: list(r["ord"]))
            driver._deliver(plan.transformations[sink_index], rows, batch_id)
        driver._commit(batch_id)
        if driver.progress is not None:  # ``ForeachBatchDriver._run``'s last step (its document: the batch id here)
            driver.progress({"batch_id": batch_id})
    return driver


def _replay_rows(driver: ForeachBatchDriver, i: int) -> pd.DataFrame:
    """Replay file ``i`` as ``replay_stream`` writes it (``SOURCE_DDL`` columns)."""
    sources = [t for t in driver.plan.transformations if t.kind == "source"]
    return pd.DataFrame(replay_rows(driver.plan, sources, i))


def _records(frame: pd.DataFrame) -> List[Dict[str, Any]]:
    """``collect()``: the rows as dicts, nulls as None (a record's own columns are never null: a NaN there is one)."""
    return [
        {k: None if v is None or v is pd.NA or (k in ROW_COLUMNS and v != v) else v for k, v in r.items()}
        for r in frame.to_dict("records")
    ]


def _step(driver: ForeachBatchDriver, source_rows: pd.DataFrame, batch_id: int, tasks: int) -> Dict[int, List[Any]]:
    """``ForeachBatchDriver._step`` (general path) and ``_levels_and_sinks`` with pandas for the Spark plumbing."""
    plan, parts = driver.exec_plan, driver.partitions
    plan = pickle.loads(cloudpickle.dumps(plan))  # what the executors get: a copy, as Spark ships it
    now = driver.env.clock.now()
    wm_prev = driver._wm_now()
    source_index = {plan.nodes[i].uid: i for i in plan.sources}
    generators = pickle.loads(cloudpickle.dumps(generator_states(driver.watermark_graph)))  # shipped to the route
    advance = driver.advance_of_batch(now)  # the one-pass path's advance, shipped to the keyed tasks
    advance = None if advance is None else pickle.loads(cloudpickle.dumps(advance))
    fanout = None if advance is None else [(n, sp) for n in plan.keyed_at(plan.levels[0]) for sp in range(parts)]
    if ordered_route(plan):  # custom watermark generators: one task, rows sorted by their order (coalesce + sort)
        tasks = 1
        if driver.fused is None:
            uids = [plan.nodes[i].uid for i in plan.sources]
            position = [uids.index(u) if u in uids else -1 for u in source_rows["src"]]
            by_order = sorted(range(len(source_rows)), key=lambda i: (position[i], list(source_rows["ord"][i])))
            source_rows = source_rows.iloc[by_order]
            source_rows = source_rows.reset_index(drop=True)
    # the route: one call per Spark task, each over its share of the rows
    shares = [source_rows.iloc[k::tasks].reset_index(drop=True) for k in range(tasks)]
    if driver.fused is not None:  # a DataFrame source: its rows become elements inside the route
        records = dataframe_records(driver.plan.transformations[driver.fused])
        shares = [source_rows]  # one task: the order is the row's position in its task
        routed = [
            r
            for f in route_records(plan, records(iter(shares)), wm_prev, now, parts, driver.fused, generators, fanout)
            for r in _records(f)
        ]
    else:
        routed = [
            r
            for share in shares
            for f in route_partition(plan, [share], wm_prev, now, parts, source_index, generators, fanout)
            for r in _records(f)
        ]
    if advance is not None:  # one pass: the route's statistics go to every keyed group with its records
        assert not [r for r in routed if r["kind"] in ("stat", "future", "gen", "metric", "count")]
        keyed_input = [r for r in routed if r["kind"] in ("rec", "wm", "stats")]
        return _levels_and_sinks(driver, plan, keyed_input, plan.levels, wm_prev, wm_prev, now, batch_id, advance)
    stats = driver._take_future([r for r in routed if r["kind"] in ("stat", "future", "gen")], now)
    driver._advance_watermarks(stats)
    wm_new = driver._wm_now()
    keyed_input = [r for r in routed if r["kind"] in ("rec", "wm")]
    return _levels_and_sinks(driver, plan, keyed_input, plan.levels, wm_prev, wm_new, now, batch_id)


def _levels_and_sinks(
    driver: ForeachBatchDriver,
    plan: Any,
    outputs: List[Dict[str, Any]],
    levels: List[int],
    wm_prev: Dict[int, int],
    wm_new: Dict[int, int],
    now: int,
    batch_id: int,
    advance: Any = None,
) -> Dict[int, List[Any]]:
    """``ForeachBatchDriver._levels_and_sinks``: the keyed levels on what the earlier stages output, then the
    sinks' rows (with ``advance``: the one-pass path, whose reporting group passes the statistics on)."""
    parts = driver.partitions
    blobs: List[bytes] = []
    for level in levels:
        nodes = plan.keyed_at(level)
        groups: Dict[Any, List[Dict[str, Any]]] = {(n, sp): [{"kind": "hb", "dest": n, "sp": sp}] for n in nodes for sp in range(parts)}
        for r in outputs:
            if r["dest"] in nodes and r["kind"] in ("rec", "wm", "stats"):
                groups[(r["dest"], r["sp"])].append(r)
        reporter = (nodes[0], 0) if advance is not None else None
        keyed = keyed_level_function(
            plan, wm_prev, wm_new, now, parts, driver.state_root, batch_id, driver.manifests(), advance, reporter
        )
        for group in groups.values():  # groupBy("dest", "sp").applyInPandas: an iterator of frames per group
            columns = ROW_COLUMNS + [c for layout in plan.typed_columns() for c in layout.columns]
            frame = pd.DataFrame({c: pd.Series([r.get(c) for r in group], dtype=object) for c in columns})
            frame["dest"], frame["sp"] = frame["dest"].astype("int32"), frame["sp"].astype("int32")
            out = [r for f in keyed(iter(group_frames(frame))) for r in _records(f)]
            outputs.extend(out)
            passed = [bytes(r["value"]) for r in out if r["kind"] == "stats"]  # what the reporting group passes on
            assert not passed or (int(frame["dest"][0]), int(frame["sp"][0])) == reporter
            blobs.extend(passed)
    if advance is not None:  # ``collect``, then the driver runs the advance every keyed task ran
        driver.take_statistics(blobs, 0, now, advance)
    # the keyed partitions' metric rows carry their new manifests (``ForeachBatchDriver._levels_and_sinks``)
    driver._record_manifests([(0, int(r["dest"]), json.loads(r["value"])) for r in outputs if r["kind"] == "metric"])
    by_sink: Dict[int, List[Any]] = {i: [] for i in plan.sinks}
    for r in outputs:
        if r["kind"] == "rec" and r["dest"] in by_sink:
            by_sink[int(r["dest"])].append(r)
    return by_sink


def _step_columnar(driver: ForeachBatchDriver, frame: pd.DataFrame, batch_id: int) -> Dict[int, List[Any]]:
    """``ForeachBatchDriver._step_columnar``: Spark's part (``columnar.prepared``, ``statistics`` and ``split``:
    event time, keys, order, state partition, which rows are on time and their partial accumulators) is done here
    with pandas and the window's own assigner; the executors' part is ``columnar.run_partition``, called as its
    ``cogroup(...).applyInPandas`` task does. (``tests/spark/test_spark_columnar.py`` runs Spark's part.)"""
    cw, parts = driver.columnar, driver.partitions
    plan = pickle.loads(cloudpickle.dumps(driver.exec_plan))
    now = driver.env.clock.now()
    wm_prev = driver._wm_now()
    rows = frame.to_dict("records")
    times = [None if r[cw.timestamp_column] is None or pd.isna(r[cw.timestamp_column]) else int(r[cw.timestamp_column]) for r in rows]
    stamped = [t for t in times if t is not None]
    stats = [{"kind": "stat", "dest": cw.source, "part": "", "stat_max": max(stamped, default=None), "stat_count": len(stamped), "stat_batch": -1}]
    driver._advance_watermarks(driver._take_future(stats if rows else [], now))
    wm_new = driver._wm_now()
    op = plan.nodes[cw.window].factory()
    fn = op.contents.agg_fn
    partials: Dict[Any, Any] = {}
    others: List[Dict[str, Any]] = []
    for i, (r, t) in enumerate(zip(rows, times)):
        key = tuple(r[c] for c in cw.key_columns) if cw.key_is_tuple else r[cw.key_columns[0]]
        sp = zlib.crc32(repr(key).encode()) % parts
        windows = [] if t is None else op.assigner.assign_windows(None, t, None)
        if windows and all(w.max_timestamp() > wm_prev[cw.window] for w in windows):
            for w in windows:
                slot = (sp, key, w.start)
                partials[slot] = fn.add(Row(**r), partials.get(slot, fn.create_accumulator()))
        else:
            others.append({**r, "__ts": t, "__ord": [0, i], "__part": None, "__sp": sp})
    keys = [f"__k{i}" for i in range(len(cw.key_columns))]
    accs = [f"__a{i}" for i in range(len(cw.parts))]
    partial_rows = [
        {"__sp": sp, **dict(zip(keys, key if cw.key_is_tuple else (key,))), "__start": start, **dict(zip(accs, acc)), "__hb": False}
        for (sp, key, start), acc in partials.items()
    ]
    keyed = columnar_function(cw, plan, wm_prev[cw.window], wm_new[cw.window], now, parts, driver.state_root, batch_id, driver.manifests())
    columns = ["__sp", *keys, "__start", *accs, "__hb"]
    other_columns = [*cw.columns, "__ts", "__ord", "__part", "__sp"]
    outputs: List[Dict[str, Any]] = []
    for sp in range(parts):  # cogroup on __sp, every partition with its heartbeat row
        mine = [r for r in partial_rows if r["__sp"] == sp] + [{"__sp": sp, "__hb": True}]
        left = pd.DataFrame({c: pd.Series([r.get(c) for r in mine], dtype=object) for c in columns})
        left["__sp"] = left["__sp"].astype("int32")
        right = pd.DataFrame([r for r in others if r["__sp"] == sp], columns=other_columns)
        outputs.extend(_records(keyed(left, right)))
    return _levels_and_sinks(driver, plan, outputs, plan.levels[1:], wm_prev, wm_new, now, batch_id)


class PandasStream:
    """Stands in for a streaming DataFrame given to ``from_dataframe``: its schema and its micro-batches."""

    isStreaming = True  # noqa: N815 (Spark's name) as a ``readStream`` DataFrame (from_dataframe refuses static ones)

    def __init__(self, schema: Any, batches: List[pd.DataFrame]) -> None:
        self.schema = schema
        self.columns = [f.name for f in schema.fields]
        self.batches = batches


def local_outputs(build: Callable[[Any], None]) -> None:
    """Run the pipeline on the JVM-free engine (``build(env)`` adds its sinks)."""
    from pyspark_flinkish.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment(clock=ManualClock(0))
    build(env)
    env.execute("differential")


def count_key_crossings(monkeypatch: Any) -> List[bool]:
    """A list that gets, for every key the route hands to a keyed stage from now on, whether it crossed as columns
    (``RecordColumns.cell`` of the key layout gave columns) or as its bytes."""
    crossed: List[bool] = []
    cell = RecordColumns.cell

    def counting(self: RecordColumns, value: Any) -> Any:
        cols = cell(self, value)
        if self.prefix == KEY_PREFIX:
            crossed.append(cols is not None)
        return cols

    monkeypatch.setattr(RecordColumns, "cell", counting)
    return crossed
