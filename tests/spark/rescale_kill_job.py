"""The file-stream job of ``test_source_savepoints.py`` restarted on its checkpoint with another number of state
partitions, as its own Spark driver process that ``test_rescale_in_place.py`` SIGKILLs inside the in-place
rescaling (``spark/rescale.py``), before the query starts:

* ``--kill-at written``: as soon as the split wrote a first new state file into the checkpoint (a thread watches
  ``flinkish/state``, on the local disk or HDFS, as ``exactly_once_job.py`` watches Spark's source log), i.e. with some of the new
  partitions written and others not, and no document naming any of them;
* ``--kill-at manifests``: once the base batch's driver document names the new files, when the rescaling is about
  to write ``meta.json`` (the module's ``write_meta`` is replaced by the kill).

A run that is not killed prints ``not killed`` and exits with 3.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, List, Set

from test_source_savepoints import file_job

from pyspark_flinkish.testing.sigkill import crash, crash_on_new_entry


def _state_files(root: str) -> Set[str]:
    """The state files under ``root`` (a path or a URI: ``storage`` lists both)."""
    from pyspark_flinkish.spark import storage

    return {
        storage.join(op, sp, n)
        for op in storage.list_dirs(root)
        for sp in storage.list_dirs(storage.join(root, op))
        for n in storage.list_names(storage.join(root, op, sp))
        if n.startswith("s=") and n.endswith(".parquet")
    }


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--kill-at", choices=["written", "manifests"], required=True)
    args = parser.parse_args(argv)

    from pyspark_flinkish.spark import rescale, session

    spark = session("rescale-kill-job", master="local[2]", shuffle_partitions=2, spark__default__parallelism="2")
    spark.sparkContext.setLogLevel("ERROR")
    print("session ready", flush=True)
    if args.kill_at == "written":
        root = f"{args.checkpoint.rstrip('/')}/flinkish/state"
        crash_on_new_entry(lambda: _state_files(root), "after the split wrote")  # its first new file
    else:

        def write_meta(checkpoint: str, meta: Any) -> None:
            crash(f"before meta.json of {checkpoint} records {meta['state_partitions']} state partitions")

        rescale.write_meta = write_meta  # type: ignore[attr-defined]
    ids: List[Any] = []
    sums: List[Any] = []
    env = file_job(spark, Path(args.input), args.partitions, ids, sums)
    handle = env.execute("rescale-kill", checkpoint_location=args.checkpoint)
    handle.process_all_available()
    handle.stop()
    print("not killed", flush=True)
    spark.stop()
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
