"""The job ``test_s3_checkpoint.py`` runs as its own Spark driver process, with Spark's ``s3a://`` file system
(hadoop-aws and the AWS SDK bundle of ``make jars``) on the classpath of that process's JVM only: the test
session's shared Spark session has no hadoop-aws, and a JVM's classpath is fixed when it starts.

``run``: a keyed job (a KeyedProcessFunction counting per key, with TTL state and event-time timers, and an
event-time tumbling window whose sums also go to a Delta table) reads a local Parquet directory, one file per
micro-batch, with its ``checkpoint_location`` on ``s3a://``; two ``availableNow`` runs, the second a restart from
the checkpoint after a third file arrived. The ``fs.s3a.*`` settings are set on the running session
(``spark.conf.set``). Writes the sinks' records of each run as JSON.

``read``: a fresh driver (the ``fs.s3a.*`` settings given to the builder as ``spark.hadoop.fs.s3a.*``) reads the
checkpoint's keyed state back with ``read_state`` and the Delta table, and writes them as JSON.

The test imports this module for :data:`BATCHES`, :func:`pipeline` and :func:`expected` (the JVM-free engine).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.state import StateTtlConfig, ValueStateDescriptor
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

BATCHES = [
    [("a", 1_000, 1), ("b", 1_500, 2), ("c", 2_000, 3)],
    [("a", 3_500, 4), ("d", 4_000, 5)],
    [("b", 9_000, 6), ("e", 9_500, 7), ("a", 12_000, 8)],  # the restart's input
]
ROUNDS = [[0, 1], [2]]  # the files each availableNow run finds new (one micro-batch per file)
COUNT = ValueStateDescriptor("count", Types.LONG())
SUMS = Types.ROW_NAMED(["k", "t", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])


class CountAndRemind(KeyedProcessFunction):  # type: ignore[misc]
    def open(self, ctx: Any) -> None:
        self.count = ctx.get_state(COUNT)
        last = ValueStateDescriptor("last", Types.LONG())
        last.enable_time_to_live(StateTtlConfig.new_builder(Duration.of_hours(1)).build())
        self.last = ctx.get_state(last)

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.count.update((self.count.value() or 0) + 1)
        self.last.update(value[2])
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 3_000)
        return []

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield ("remind", ctx.get_current_key(), timestamp, self.count.value())


def pipeline(env: Any, events: Any, out: List[Any], delta: Optional[str] = None) -> None:
    keyed = events.key_by(lambda e: e[0])
    keyed.process(CountAndRemind()).uid("remind").add_sink(out.append)
    windows = keyed.window(TumblingEventTimeWindows.of(Duration.of_seconds(5)))
    sums = windows.reduce(lambda x, y: (x[0], max(x[1], y[1]), x[2] + y[2])).uid("sums")
    sums.add_sink(out.append)
    if delta is not None:
        from pyspark_flinkish.common import Row
        from pyspark_flinkish.datastream.connectors.delta import DeltaSink

        rows = sums.map(lambda s: Row(k=s[0], t=s[1], v=s[2]), output_type=SUMS).uid("rows")
        rows.sink_to(DeltaSink.for_path(delta)).uid("delta")


def expected() -> List[str]:
    """The records on the JVM-free engine, sorted: the same micro-batches, no end of input (as the two runs)."""
    env = StreamExecutionEnvironment.get_execution_environment()
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(500)).with_timestamp_assigner(lambda e, _: e[1])
    out: List[Any] = []
    pipeline(env, env.from_source(MicroBatchSource([MicroBatch(b) for b in BATCHES], end_of_input=False), strategy, "e"), out)
    env.execute()
    return sorted(map(repr, out))


def _add_file(source: str, i: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    k, t, v = zip(*BATCHES[i])
    table = pa.table({"k": pa.array(k, pa.string()), "t": pa.array(t, pa.int64()), "v": pa.array(v, pa.int64())})
    os.makedirs(source, exist_ok=True)
    pq.write_table(table, os.path.join(source, f"part-{i:05d}.parquet"))


def _session(settings: Dict[str, str], on_builder: bool) -> Any:
    from pyspark_flinkish.spark import jars, session

    conf = {k.replace(".", "__"): v for k, v in jars.s3a_settings().items()}
    if not conf:
        msg = "the s3a jars are not fetched: run `make jars`"
        raise SystemExit(msg)
    if on_builder:
        conf.update({f"spark__hadoop__{k.replace('.', '__')}": v for k, v in settings.items()})
    conf["spark__databricks__delta__snapshotPartitions"] = "2"  # instead of Delta's 50 (tests/conftest.py)
    spark = session("flinkish-s3-test", "local[2]", shuffle_partitions=2, spark__default__parallelism="2", **conf)
    spark.sparkContext.setLogLevel("ERROR")
    if not on_builder:
        for k, v in settings.items():
            spark.conf.set(k, v)
    return spark


def run(spark: Any, source: str, checkpoint: str, delta: Optional[str]) -> List[str]:
    env = StreamExecutionEnvironment.get_execution_environment(spark, state_partitions=2)
    df = spark.readStream.schema("k string, t long, v long").option("maxFilesPerTrigger", 1).parquet(source)
    stream = env.from_dataframe(df, WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(500)), timestamp_column="t")
    out: List[Any] = []
    pipeline(env, stream.map(lambda r: (r.k, r.t, r.v)), out, delta)
    handle = env.execute("on-s3", checkpoint_location=checkpoint, trigger={"availableNow": True})
    handle.await_termination()
    return [repr(x) for x in out]


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["run", "read"])
    p.add_argument("--source")
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--delta")
    p.add_argument("--settings", required=True, help="the fs.s3a.* settings as JSON")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    settings = json.loads(args.settings)
    spark = _session(settings, on_builder=args.mode == "read")
    result: Dict[str, Any] = {}
    try:
        if args.mode == "run":
            result["runs"] = []
            for files in ROUNDS:
                for i in files:
                    _add_file(args.source, i)
                result["runs"].append(run(spark, args.source, args.checkpoint, args.delta))
        else:
            from pyspark_flinkish.spark import read_state

            rows = read_state(spark, args.checkpoint, "remind", COUNT, key_type=Types.STRING()).collect()
            result["counts"] = {r["key"]: r["value"] for r in rows}
            if args.delta:
                table = spark.read.format("delta").load(args.delta)
                result["delta"] = sorted(repr((r["k"], r["t"], r["v"])) for r in table.collect())
    finally:
        spark.stop()
    with open(args.out, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
