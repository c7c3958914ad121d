"""A driver process for ``test_delta.py``: writes batches with ``DeltaSink``'s writer and SIGKILLs itself in the middle
of a log checkpoint written in the background.

``python delta_checkpoint_crash_job.py PATH CHECKPOINT`` creates the table at ``PATH`` with
``delta.checkpointInterval = 2``, writes batches 0 and 1 (versions 1 and 2; version 2's commit writes the log
checkpoint on the writer's background thread) and, as soon as a checkpoint file of version 2 (its temporary file
or the file itself) appears in ``_delta_log``, from a watching thread,, SIGKILLs its JVM and itself (``testing.sigkill.crash``).
"""

from __future__ import annotations

import os
import sys
import threading
import time

from pyspark_flinkish.common import Types
from pyspark_flinkish.datastream.connectors.delta import DeltaSink
from pyspark_flinkish.spark.delta import DeltaBatchWriter
from pyspark_flinkish.spark.session import session
from pyspark_flinkish.spark.sink_frames import SinkFrame
from pyspark_flinkish.testing.sigkill import crash

EVENT = Types.ROW_NAMED(["key", "ts", "v"], [Types.STRING(), Types.LONG(), Types.LONG()])


def main(path: str, checkpoint: str) -> None:
    # the log checkpoint's state reconstruction in 1 task instead of Delta's 50 (tests/conftest.py)
    spark = session("delta_checkpoint_crash", master="local[1]", shuffle_partitions=1,
                    spark__databricks__delta__snapshotPartitions="1")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (key STRING, ts BIGINT, v BIGINT) USING delta "
        "TBLPROPERTIES ('delta.checkpointInterval' = '2', 'delta.enableChangeDataFeed' = 'true')"
    )
    log = os.path.join(path, "_delta_log")

    def watch() -> None:  # the temporary file (hidden, renamed when complete) is the first sign of the checkpoint
        while True:
            found = [n for n in os.listdir(log) if "00000000000000000002.checkpoint" in n]
            if found:
                crash(f"during the checkpoint of version 2: {found}")
            time.sleep(0.0005)

    threading.Thread(target=watch, daemon=True).start()
    writer = DeltaBatchWriter(DeltaSink.for_path(path), EVENT)
    context = {"checkpoint": checkpoint, "sink_uid": "out", "watermark": 0}
    for batch_id in (0, 1):
        writer(spark, SinkFrame.of_values(spark, [(f"k{batch_id}", batch_id, batch_id)], EVENT), batch_id, context)
        print(f"committed batch_id={batch_id}", flush=True)
    time.sleep(120)  # the watcher kills the process while the background thread writes the checkpoint
    print("not killed", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
