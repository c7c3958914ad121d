"""Runs a pipeline through the applyInPandasWithState executor's real bodies without a JVM.

``StatefulQueryBuilder.build`` wires Spark around three bodies: ``route`` (``mapInPandas`` over the replay rows:
records plus one carrier row per task with its maximum shifted event time), Spark's watermark
(``withWatermark("__et", delay)``) and ``keyed_function`` (``groupBy("key").applyInPandasWithState`` with
``EventTimeTimeout``); the foreachBatch delivery sorts each batch's rows by ``ord``. This harness calls the same
bodies with pandas frames and PySpark's own (pure-Python) ``GroupState``, and plays Spark's part as Spark does:

* the watermark of micro-batch ``N`` is ``max(event time of the carriers up to N-1) - delay`` (0 at first) and
  never goes back;
* in each batch the function is called once per key with new records, then once per other key whose timeout
  lies strictly below the batch's watermark (``hasTimedOut``); a call's timeout starts unset and holds what the
  call set; ``remove()`` drops the key's state;
* a custom generator's files (``spark/stateful_generators.py``) go to a temporary checkpoint, the batch id is the
  harness's batch counter (Spark gives the tasks its own as a local property);
* a replay file is one micro-batch (``maxFilesPerTrigger=1``; new data is always available, so Spark runs no
  data-less batch in between); after the last file Spark runs data-less batches while the watermark advances.
"""

from __future__ import annotations

import dataclasses
import tempfile
from typing import Any, Callable, Dict, List, Optional, Tuple

import pandas as pd
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout
from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.spark.delivery import deliver_values
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment
from pyspark_flinkish.spark.rows import loads
from pyspark_flinkish.spark.stateful import StatefulQueryBuilder, _for_executors, keyed_function, replay_files, route

__all__ = ["run_apply_in_pandas_with_state"]

STATE_SCHEMA = StructType(
    [StructField("version", IntegerType()), StructField("watermark", LongType()), StructField("payload", BinaryType())]
)


def run_apply_in_pandas_with_state(
    build: Callable[[Any], None], vectorize: bool, replay_routes: bool = False
) -> StatefulQueryBuilder:
    """Build the pipeline on a JVM-free environment with the applyInPandasWithState backend (``build(env)`` adds
    its sinks; an ``UnsupportedFeatureError`` is the executor's up-front refusal) and run it to the end of input.
    ``replay_routes``: every batch's route runs twice, the first attempt's rows dropped (a batch Spark replays after
    a failure: what the first attempt wrote must not change the second's)."""
    env = SparkStreamExecutionEnvironment(
        None, clock=ManualClock(0), state_partitions=1, backend="apply_in_pandas_with_state", vectorize=vectorize
    )
    build(env)
    with tempfile.TemporaryDirectory(prefix="flinkish-harness-") as checkpoint:
        return _run(env, StatefulQueryBuilder(env, sinks=env._sinks, checkpoint=checkpoint), replay_routes)


def _run(env: Any, builder: StatefulQueryBuilder, replay_routes: bool) -> StatefulQueryBuilder:
    plan, info = builder.plan, builder.info
    current = {"batch": 0}
    files = None if builder.files is None else dataclasses.replace(builder.files, batch_of=lambda: current["batch"])
    exec_plan = _for_executors(plan)
    source_t = plan.transformations[info["source"]]
    source_uid = plan.nodes[info["source"]].uid
    now = env.clock.now()
    fn = keyed_function(exec_plan, info["keyed"], info["delay"], now, files) if info["keyed"] is not None else None
    by_dest = dict(zip(builder.targets, env._sinks))
    store: Dict[bytes, Tuple[Tuple[Any, ...], int]] = {}  # key -> (state row, timeout timestamp)
    replays = [_frame(i, rows) for i, rows in enumerate(replay_files(source_t))]
    watermark, used, batch_id = 0, None, 0
    while batch_id < len(replays) or watermark != used:  # then data-less batches while the watermark moves
        rows = replays[batch_id] if batch_id < len(replays) else None
        current["batch"] = batch_id
        used = watermark
        out: List[Dict[str, Any]] = []
        records = None
        if rows is not None:
            if replay_routes:
                list(route(exec_plan, [rows], now, source_uid, files=files))
            routed = pd.concat(list(route(exec_plan, [rows], now, source_uid, files=files)), ignore_index=True)
            carriers, records = routed[routed["__et"].notna()], routed[routed["__et"].isna()]
            if len(carriers):  # Spark's watermark for the next batch
                top = int(max(carriers["__et"]).value // 1_000_000)
                watermark = max(watermark, top - info["delay"])
        if fn is None:
            out.extend(records[["dest", "value", "ts", "ord"]].to_dict("records") if records is not None else [])
        else:
            called = set()
            for key, group in () if records is None else records.groupby("key", sort=False):
                called.add(key)
                out.extend(_call(fn, store, key, [group.reset_index(drop=True)], used, timed_out=False))
            for key, (_, timeout) in list(store.items()):
                if key not in called and timeout != GroupState.NO_TIMESTAMP and timeout < used:
                    out.extend(_call(fn, store, key, [], used, timed_out=True))
        # the executor's foreachBatch delivery: the batch's rows in ``ord`` order
        rows_out = sorted((r for r in out if int(r["dest"]) in by_dest), key=lambda r: [int(x) for x in r["ord"]])
        for dest, t in by_dest.items():
            values = [loads(r["value"]) for r in rows_out if int(r["dest"]) == dest]
            deliver_values(None, t, values, batch_id, {"sink_uid": plan.nodes[dest].uid, "watermark": None})
        batch_id += 1
    return builder


def _call(fn: Any, store: Dict[bytes, Any], key: bytes, frames: List[pd.DataFrame], watermark: int, timed_out: bool) -> List[Dict[str, Any]]:
    """One ``applyInPandasWithState`` call for ``key``, as Spark makes it; updates the store."""
    from pyspark.sql import Row

    stored = store.get(key)
    state = GroupState(
        Row(*stored[0]) if stored is not None else None,
        0,
        watermark,
        GroupStateTimeout.EventTimeTimeout,
        timed_out,
        True,
        stored is not None,
        False,
        False,
        GroupState.NO_TIMESTAMP,  # Spark starts every call with the timeout unset
        b"",
        STATE_SCHEMA,
    )
    rows = [r for frame in fn((key,), iter(frames), state) for r in frame.to_dict("records")]
    if state._removed or not state.exists:
        store.pop(key, None)
    else:
        store[key] = (state.get, state._timeout_timestamp)
    return rows


def _frame(i: int, rows: List[Tuple[Optional[bytes], Optional[int], List[int], bool]]) -> pd.DataFrame:
    """Replay file ``i`` as Spark reads it (``SOURCE_DDL`` columns)."""
    return pd.DataFrame(
        {
            "src": [""] * len(rows),
            "value": [r[0] for r in rows],
            "ts": pd.array([r[1] for r in rows], dtype="Int64"),
            "part": [None] * len(rows),
            "ord": [r[2] for r in rows],
            "batch": [i] * len(rows),
            "marker": [r[3] for r in rows],
        }
    )
