"""The route of part 7's small batch in process, without Spark: a DataFrame source fused with the route against the
unfused form (the source's conversion into the common source rows, their Arrow round trip between Spark's two
``mapInPandas`` tasks, then the route), CPU seconds measured alternately in one process.

Part 7's job (``bench_state_growth.py``: ``from_dataframe`` with ``order_columns=["seq"]`` and a timestamp column,
``key_by`` with a ``LONG`` key type, ``IdleKeys``) on one batch of ``--events`` rows over ``--keys`` keys. The
pipeline's process function may register processing-time timers, so on the wall clock Spark unions the tick source
into its input: before ``spark/fused_ticks.py`` that turned the fused route off. Both forms must give the same
stage rows (checked) before their CPU is reported. Under load, CPU seconds of one process compare; wall time does
not.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_fused_route.py --events 10000 --repeats 7
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List

import bench_state_growth as bsg
import numpy as np
import pandas as pd
import pyarrow as pa

from pyspark_flinkish.common import Types, WatermarkStrategy
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.spark.chain import route_partition, route_records
from pyspark_flinkish.spark.driver import ForeachBatchDriver
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment
from pyspark_flinkish.spark.generators import generator_states
from pyspark_flinkish.spark.source_rows import dataframe_records, dataframe_rows


class _Frames:
    """Stands in for the source's streaming DataFrame: its columns, and ``mapInPandas`` handing back the function."""

    isStreaming = True  # noqa: N815 (Spark's name)

    def __init__(self, columns: List[str]) -> None:
        from pyspark.sql.types import LongType, StructField, StructType

        self.columns = columns
        self.schema = StructType([StructField(c, LongType()) for c in columns])

    def mapInPandas(self, function: Callable[[Any], Any], schema: str) -> Callable[[Any], Any]:  # noqa: N802
        return function


def _driver(checkpoint: str) -> ForeachBatchDriver:
    env = SparkStreamExecutionEnvironment(None, clock=ManualClock(0), state_partitions=2, future_horizon_ms=None)
    stream = env.from_dataframe(
        _Frames(["key", "ts", "mark", "seq"]), WatermarkStrategy.for_monotonous_timestamps(), timestamp_column="ts",
        order_columns=["seq"],
    )
    (
        stream.key_by(lambda r: r["key"], key_type=Types.LONG())
        .process(bsg.IdleKeys(), output_type=Types.TUPLE([Types.LONG(), Types.LONG()]))
        .uid(bsg.UID)
        .add_sink(lambda v: None)
    )
    driver = ForeachBatchDriver(env, env._sinks, checkpoint, None)
    driver._open(0)
    return driver


def _batch(events: int, keys: int) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    seq = np.arange(events, dtype=np.int64)
    return pd.DataFrame(
        {"key": rng.integers(0, keys, events), "ts": bsg.T0 + seq, "mark": np.zeros(events, np.int64), "seq": seq}
    )


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=10_000)
    p.add_argument("--keys", type=int, default=10)
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args(argv)
    driver = _driver(tempfile.mkdtemp(prefix="bench-fused-route-"))
    plan, node = driver.exec_plan, driver.fused
    assert node is not None
    source_t = driver.plan.transformations[node]
    wm, now, parts = driver._wm_now(), 0, driver.partitions
    fanout = [(n, sp) for n in plan.keyed_at(plan.levels[0]) for sp in range(parts)]
    source_index = {plan.nodes[i].uid: i for i in plan.sources}
    generators = generator_states(driver.watermark_graph)
    frame = _batch(args.events, args.keys)

    def fused() -> List[pd.DataFrame]:
        return list(route_records(plan, dataframe_records(source_t)(iter([frame])), wm, now, parts, node, generators, fanout))

    def unfused() -> List[pd.DataFrame]:
        convert = dataframe_rows(source_t, plan.nodes[node].uid)
        rows = [pa.Table.from_pandas(f, preserve_index=False).to_pandas() for f in convert(iter([frame]))]  # Spark between
        return list(route_partition(plan, rows, wm, now, parts, source_index, generators, fanout))

    def records(frames: List[pd.DataFrame]) -> List[Any]:
        out = pd.concat(frames, ignore_index=True)
        out = out[out["kind"] == "rec"]
        return sorted(tuple(map(str, r)) for r in out[["dest", "sp", "ord", "key", "value"]].itertuples(index=False))

    assert records(fused()) == records(unfused()), "the two forms' stage rows differ"
    cpu: Dict[str, List[float]] = {"unfused": [], "fused": []}
    for _ in range(args.repeats):
        for name, form in (("unfused", unfused), ("fused", fused)):
            t = time.process_time()
            form()
            cpu[name].append(time.process_time() - t)
    for name, values in cpu.items():
        print(f"{name}: {statistics.median(values):.3f} CPU-s median [{min(values):.3f}-{max(values):.3f}] "
              f"for {args.events:,} events ({args.repeats} repeats)")
    print(f"fused / unfused: {statistics.median(cpu['fused']) / statistics.median(cpu['unfused']):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
