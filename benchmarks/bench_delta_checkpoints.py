"""DeltaSink's writer per micro-batch with Delta's log checkpoint in the background against inside the batch.

Two tables in one Spark session, written alternately batch by batch by ``DeltaBatchWriter`` (the sink's writer, as a
micro-batch's ``deliver`` phase calls it): one with the default (``DeltaSink``'s background checkpoints), one with
``with_background_checkpoints(False)`` (Delta's post-commit checkpoint inside the call, as Delta's own writers do).
``--pause-s`` between batches stands for the rest of a micro-batch (the next batch's route and keyed stage). Prints
each batch's milliseconds per mode (batch ``b`` is version ``b + 1``; ``delta.checkpointInterval`` is 10, so batches
9 and 19 are the checkpointing commits), the checkpoints written and the rows read back. A figure, never a
pass/fail::

    .venv/bin/python benchmarks/bench_delta_checkpoints.py --batches 22
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Dict, List, Optional

from pyspark_flinkish.common import Types
from pyspark_flinkish.datastream.connectors.delta import DeltaSink
from pyspark_flinkish.spark.delta import DeltaBatchWriter
from pyspark_flinkish.spark.session import session
from pyspark_flinkish.spark.sink_frames import SinkFrame

EVENT = Types.ROW_NAMED(["key", "ts", "v"], [Types.LONG(), Types.LONG(), Types.LONG()])


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=22)
    parser.add_argument("--rows", type=int, default=1000, help="rows per batch")
    parser.add_argument("--pause-s", type=float, default=1.0, help="pause after each write (the rest of a batch)")
    args = parser.parse_args(argv)
    spark = session(app_name="bench_delta_checkpoints", master="local[2]", shuffle_partitions=2)
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="bench_delta_checkpoints_")
    writers = {
        mode: DeltaBatchWriter(DeltaSink.for_path(os.path.join(work, mode)).with_background_checkpoints(mode == "background"), EVENT)
        for mode in ("synchronous", "background")
    }
    ms: Dict[str, List[float]] = {mode: [] for mode in writers}
    for b in range(args.batches):
        for mode, writer in writers.items():
            frame = SinkFrame.of_values(spark, [(i, b, i) for i in range(args.rows)], EVENT)
            t = time.perf_counter()
            writer(spark, frame, b, {"checkpoint": os.path.join(work, f"ck-{mode}"), "sink_uid": "out", "watermark": b})
            ms[mode].append((time.perf_counter() - t) * 1000)
            time.sleep(args.pause_s)
    for mode, writer in writers.items():
        t = time.perf_counter()
        writer.flush()
        flushed = (time.perf_counter() - t) * 1000
        log = os.path.join(work, mode, "_delta_log")
        checkpoints = sorted(int(f[:20]) for f in os.listdir(log) if f.endswith(".checkpoint.parquet"))
        rows = spark.read.format("delta").load(os.path.join(work, mode)).count()
        v = ms[mode]
        print(f"{mode}: ms per batch {[round(x) for x in v]}")
        print(f"{mode}: median {statistics.median(v):.0f}, checkpointing batches (9, 19) "
              f"{[round(v[i]) for i in (9, 19) if i < len(v)]}, the batch after each "
              f"{[round(v[i]) for i in (10, 20) if i < len(v)]}, max {max(v):.0f}; flush at the end {flushed:.0f} ms; "
              f"checkpoints {checkpoints}; {rows} rows; {writer.background_commits} background commits")
    print(f"load average {os.getloadavg()[0]:.1f}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
