"""A job stopped in the middle of a micro-batch, run as its own Spark driver process by ``test_stop_mid_batch.py``
(the JVM's standard error, where Spark prints an uncaught error of its stream thread, is only readable so).

It reads a directory of JSON lines through a map that sleeps per record, stops the query once the first batch has
run for a few seconds, and prints what the handle says after the stop."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, List


def main(directory: str) -> None:
    from pyspark_flinkish.datastream import StreamExecutionEnvironment
    from pyspark_flinkish.spark import session

    spark = session("stop-mid-batch", master="local[2]", shuffle_partitions=2)
    source = os.path.join(directory, "in")
    os.makedirs(source)
    with open(os.path.join(source, "a.json"), "w") as f:
        f.writelines(json.dumps({"k": "a", "v": i}) + "\n" for i in range(100))

    def slow(r: Any) -> int:
        time.sleep(0.2)  # the batch takes 20 s: the stop interrupts it
        return int(r.v)

    out: List[int] = []
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    env.from_dataframe(spark.readStream.schema("k STRING, v BIGINT").json(source)).map(slow).add_sink(out.append)
    handle = env.execute("stop-mid-batch", checkpoint_location=os.path.join(directory, "ck"))
    deadline = time.time() + 120
    while not spark.sparkContext.statusTracker().getActiveStageIds() and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(3)
    handle.stop()
    print(json.dumps({"delivered": len(out), "active": handle.is_active, "exception": str(handle.query.exception())}))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
