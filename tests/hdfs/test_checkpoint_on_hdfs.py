"""The package's own job with its checkpoint on a real HDFS (``hdfs_cluster``): keyed state, event-time timers, TTL
state and a batch-wise window, restarted with new input, gives the JVM-free engine's results; every file of the job
is on HDFS (Spark's checkpoint, the driver's documents, the keyed state's files), read back by ``read_state``; a
location without a scheme under ``fs.defaultFS=hdfs://...`` goes to HDFS as Spark's own files do, and leaves no
checkpoint file on the local disk; a custom watermark generator's files on the applyInPandasWithState executor are
on HDFS too."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import Any, List

import pytest

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.conformance import differences
from pyspark_flinkish.conformance.runner import finish_spark_stateful, start_spark_stateful
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.state import StateTtlConfig, ValueStateDescriptor
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows
from pyspark_flinkish.spark import read_state
from pyspark_flinkish.testing.hdfs import MiniHdfs

CASES_DIR = Path(__file__).resolve().parents[2] / "jvm-free-tests" / "datastream"
sys.path.insert(0, str(CASES_DIR))
import punctuated_cases  # noqa: E402

sys.path.remove(str(CASES_DIR))

from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(punctuated_cases)  # Spark's Python workers cannot import it

pytestmark = [pytest.mark.spark, pytest.mark.hdfs]

BATCHES = [
    [("a", 1_000, 1), ("b", 1_500, 2), ("c", 2_000, 3)],
    [("a", 3_500, 4), ("d", 4_000, 5)],
    [("b", 9_000, 6), ("e", 9_500, 7), ("a", 12_000, 8)],  # the restart's input
]
COUNT = ValueStateDescriptor("count", Types.LONG())


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


def _pipeline(env: Any, events: Any, out: List[Any]) -> None:
    keyed = events.key_by(lambda e: e[0])
    keyed.process(CountAndRemind()).uid("remind").add_sink(out.append)
    windows = keyed.window(TumblingEventTimeWindows.of(Duration.of_seconds(5)))
    windows.reduce(lambda x, y: (x[0], max(x[1], y[1]), x[2] + y[2])).uid("sums").add_sink(out.append)


def _expected() -> List[Any]:
    env = StreamExecutionEnvironment.get_execution_environment()
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(500)).with_timestamp_assigner(lambda e, _: e[1])
    out: List[Any] = []
    # one Spark run per input file and no end of input, as the two availableNow runs below
    _pipeline(env, env.from_source(MicroBatchSource([MicroBatch(b) for b in BATCHES], end_of_input=False), strategy, "e"), out)
    env.execute()
    return sorted(map(repr, out))


def _run(spark: Any, source_dir: str, checkpoint: str) -> List[Any]:
    from pyspark.sql import functions as F

    env = StreamExecutionEnvironment.get_execution_environment(spark, state_partitions=2)
    df = spark.readStream.schema("k string, t long, v long").option("maxFilesPerTrigger", 1).parquet(source_dir)
    stream = env.from_dataframe(
        df.select(F.struct("k", "t", "v").alias("e")).selectExpr("e.k as k", "e.t as t", "e.v as v"),
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(500)),
        timestamp_column="t",
    )
    out: List[Any] = []
    _pipeline(env, stream.map(lambda r: (r.k, r.t, r.v)), out)
    handle = env.execute("on-hdfs", checkpoint_location=checkpoint, trigger={"availableNow": True})
    handle.await_termination()
    return out


def _add_file(spark: Any, source_dir: str, i: int) -> None:
    spark.createDataFrame(BATCHES[i], "k string, t long, v long").coalesce(1).write.mode("append").parquet(source_dir)


def test_a_job_checkpointing_to_hdfs_restarts_from_it_with_flinks_results(hdfs_cluster: MiniHdfs, spark) -> None:  # type: ignore[no-untyped-def]
    base = f"{hdfs_cluster.uri}/jobs/{uuid.uuid4().hex[:8]}"
    source, checkpoint = f"{base}/input", f"{base}/ck"
    for i in (0, 1):
        _add_file(spark, source, i)
    got = _run(spark, source, checkpoint)
    _add_file(spark, source, 2)
    got += _run(spark, source, checkpoint)  # a restart: state and watermarks from the checkpoint on HDFS
    assert sorted(map(repr, got)) == _expected()

    client = hdfs_cluster.client()
    root = f"/{base.split('/', 3)[3]}/ck"
    names = {s.path.rsplit("/", 1)[-1] for s in client.list_status(root)}
    assert names == {"spark", "flinkish"}
    flinkish = {s.path.rsplit("/", 1)[-1] for s in client.list_status(f"{root}/flinkish")}
    assert {"meta.json", "driver", "state", "progress"} <= flinkish
    state_files = [s.path for s in client.list_status(f"{root}/flinkish/state/op=remind/sp=00000")]
    assert state_files and all(p.rsplit("/", 1)[-1][:2] in ("s=", "d=") for p in state_files)
    # the keyed state, read back from HDFS: a, b, c, d, e with their counts
    counts = {r["key"]: r["value"] for r in read_state(spark, checkpoint, "remind", COUNT, key_type=Types.STRING()).collect()}
    assert counts == {"a": 3, "b": 2, "c": 1, "d": 1, "e": 1}


def test_a_location_without_a_scheme_goes_to_fs_default_fs(hdfs_cluster: MiniHdfs, spark) -> None:  # type: ignore[no-untyped-def]
    """On YARN/EMR ``fs.defaultFS`` is HDFS: ``/jobs/x/ck`` is qualified with it before anything is written, so
    Spark's offsets and the package's files are in one directory on HDFS, and nothing of the checkpoint is on the
    local disk (the executors' caches are copies in Spark's local directories, not the checkpoint)."""
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    before = hadoop.get("fs.defaultFS")
    path = f"/jobs/{uuid.uuid4().hex[:8]}"
    hadoop.set("fs.defaultFS", hdfs_cluster.uri)
    try:
        _add_file(spark, f"{path}/input", 0)
        got = _run(spark, f"{path}/input", f"{path}/ck")
    finally:
        hadoop.set("fs.defaultFS", before)
    assert got == []  # the first file's watermark (1499) reaches no timer and no window end yet
    counts = read_state(spark, f"{hdfs_cluster.uri}{path}/ck", "remind", COUNT, key_type=Types.STRING()).collect()
    assert {r["key"]: r["value"] for r in counts} == {"a": 1, "b": 1, "c": 1}
    client = hdfs_cluster.client()
    assert {s.path.rsplit("/", 1)[-1] for s in client.list_status(f"{path}/ck")} == {"spark", "flinkish"}
    assert client.list_status(f"{path}/ck/flinkish/driver")
    assert not os.path.exists(path)


def test_a_custom_generator_on_the_apply_in_pandas_with_state_executor_keeps_its_state_on_hdfs(
    hdfs_cluster: MiniHdfs, spark: Any
) -> None:
    """The generator files (``spark/stateful_generators.py``) go through ``spark/storage.py`` to the checkpoint on
    HDFS: a generator counting events across micro-batches (a watermark at every 3rd) gives Flink's outputs."""
    scenario = next(s for s in punctuated_cases.load()["scenarios"] if s["name"] == "every3_sliding")
    base = f"{hdfs_cluster.uri}/jobs/{uuid.uuid4().hex[:8]}"
    handle, out = start_spark_stateful(spark, scenario, f"{base}/ck", punctuated_cases.strategy(scenario["generator"]))
    assert differences(finish_spark_stateful(handle, out), scenario["expected"]) == []
    root = f"/{base.split('/', 3)[3]}/ck/flinkish/generators"
    names = [s.path.rsplit("/", 1)[-1] for s in hdfs_cluster.client().list_status(root)]
    assert names and all(n.endswith(".json") for n in names)
