"""Runs a pipeline through the foreachBatch executor's real bodies without a JVM.

The Spark driver (``_ForeachBatchDriver``) runs each micro-batch as Spark jobs around pure-pandas bodies: the route
(``route_partition``, one call per Spark task), the driver's watermark advance (``_advance_watermarks``), the keyed
levels (``groupBy("dest", "sp").applyInPandas`` of ``run_keyed_partition``, batch-wise windows included) and the
sinks (rows sorted by ``ord``, ``_deliver``). This harness drives the same objects in the same order with pandas
frames in place of Spark DataFrames and a temporary directory as the checkpoint: only the Spark plumbing between
the bodies (``mapInPandas``, ``filter``, ``unionByName``, ``groupBy``, ``collect``) is done here, by pandas.

Each replay batch is one Spark micro-batch, with the rows ``_replay_stream`` writes to its files (the batch's
elements, one marker row per source, and one last file with only markers: end of input).
"""

from __future__ import annotations

import pickle
from typing import Any, Callable, Dict, List, Optional

import pandas as pd
from pyspark import cloudpickle

from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.datastream.sources import MicroBatchSource
from pyspark_flinkish.spark.environment import (
    SparkStreamExecutionEnvironment,
    _assign_timestamp,
    _ForeachBatchDriver,
    _keyed,
)
from pyspark_flinkish.spark.plan import ROW_COLUMNS, dumps, route_partition

__all__ = ["local_outputs", "run_foreach_batch"]


def run_foreach_batch(
    build: Callable[[Any], None],
    checkpoint: str,
    vectorize: bool,
    partitions: int = 2,
    tasks: int = 2,
    batches: Optional[range] = None,
) -> _ForeachBatchDriver:
    """Build the pipeline on a JVM-free Spark environment (``build(env)`` adds its sinks) and run every micro-batch
    of its replay sources to the end of input (or the Spark batch ids ``batches``: a restart resumes from the
    checkpoint); the sinks get their values as on Spark. ``tasks``: how many Spark tasks the route is split into.
    Returns the driver (its errors: the executor's errors, raised here)."""
    env = SparkStreamExecutionEnvironment(
        None, clock=ManualClock(0), state_partitions=partitions, vectorize=vectorize, future_horizon_ms=None
    )
    build(env)
    driver = _ForeachBatchDriver(env, env._sinks, checkpoint, None)
    plan = driver.plan
    sources = [t for t in plan.transformations if t.kind == "source"]
    assert all(isinstance(t.source, MicroBatchSource) for t in sources), "the harness replays MicroBatchSources"
    n = max(len(t.source.batches) for t in sources)
    for batch_id in range(n + 1) if batches is None else batches:
        version_in = driver._open(batch_id)
        by_sink = _step(driver, _replay_rows(driver, batch_id), batch_id, version_in, tasks)
        for sink_index, rows in by_sink.items():
            rows.sort(key=lambda r: list(r["ord"]))
            driver._deliver(plan.transformations[sink_index], rows, batch_id)
        driver._commit(batch_id)
    return driver


def _replay_rows(driver: _ForeachBatchDriver, i: int) -> pd.DataFrame:
    """Replay file ``i`` as ``_ForeachBatchDriver._replay_stream`` writes it (``SOURCE_DDL`` columns)."""
    plan = driver.plan
    rows: Dict[str, List[Any]] = {c: [] for c in ("src", "value", "ts", "part", "ord", "batch", "marker")}
    for index, t in enumerate(plan.transformations):
        if t.kind != "source":
            continue
        node = plan.nodes[index]
        batches = t.source.batches
        elements = batches[i].elements if i < len(batches) else []
        for j, value in enumerate(elements):
            ts = _assign_timestamp(t, node, value, None)
            part = batches[i].partition_of(j)
            for c, v in zip(rows, (node.uid, dumps(value), ts, repr(part), [i, j], i, False)):
                rows[c].append(v)
        for c, v in zip(rows, (node.uid, None, None, None, [i, -1], i, True)):
            rows[c].append(v)
    return pd.DataFrame(rows)


def _records(frame: pd.DataFrame) -> List[Dict[str, Any]]:
    """``collect()``: the rows as dicts, nulls as None."""
    return [{k: None if v is None or v is pd.NA or v != v else v for k, v in r.items()} for r in frame.to_dict("records")]


def _step(driver: _ForeachBatchDriver, source_rows: pd.DataFrame, batch_id: int, version_in: int, tasks: int) -> Dict[int, List[Any]]:
    """``_ForeachBatchDriver._step`` (general path) and ``_levels_and_sinks`` with pandas for the Spark plumbing."""
    plan, parts = driver.exec_plan, driver.partitions
    plan = pickle.loads(cloudpickle.dumps(plan))  # what the executors get: a copy, as Spark ships it
    now = driver.env.clock.now()
    wm_prev = driver._wm_now()
    source_index = {plan.nodes[i].uid: i for i in plan.sources}
    # the route: one call per Spark task, each over its share of the rows
    shares = [source_rows.iloc[k::tasks].reset_index(drop=True) for k in range(tasks)]
    routed = [r for share in shares for f in route_partition(plan, [share], wm_prev, now, parts, source_index) for r in _records(f)]
    stats = driver._take_future([r for r in routed if r["kind"] in ("stat", "future")], now)
    driver._advance_watermarks(stats)
    wm_new = driver._wm_now()
    outputs = [r for r in routed if r["kind"] == "rec"]
    for level in plan.levels:
        nodes = plan.keyed_at(level)
        groups: Dict[Any, List[Dict[str, Any]]] = {(n, sp): [{"kind": "hb", "dest": n, "sp": sp}] for n in nodes for sp in range(parts)}
        for r in outputs:
            if r["dest"] in nodes:
                groups[(r["dest"], r["sp"])].append(r)
        keyed = _keyed(plan, wm_prev, wm_new, now, parts, driver.state_root, batch_id, version_in)
        for group in groups.values():  # groupBy("dest", "sp").applyInPandas: one frame per group
            frame = pd.DataFrame({c: pd.Series([r.get(c) for r in group], dtype=object) for c in ROW_COLUMNS})
            frame["dest"], frame["sp"] = frame["dest"].astype("int32"), frame["sp"].astype("int32")
            outputs.extend(_records(keyed(frame)))
    by_sink: Dict[int, List[Any]] = {i: [] for i in plan.sinks}
    for r in outputs:
        if r["kind"] == "rec" and r["dest"] in by_sink:
            by_sink[int(r["dest"])].append(r)
    return by_sink


def local_outputs(build: Callable[[Any], None]) -> None:
    """Run the pipeline on the JVM-free engine (``build(env)`` adds its sinks)."""
    from pyspark_flinkish.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment(clock=ManualClock(0))
    build(env)
    env.execute("differential")

