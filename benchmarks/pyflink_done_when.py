"""Real PyFlink runs issue 14's "done when" job (Row, connect + KeyedCoProcessFunction, keyed broadcast state,
window_all, KeyedStream.sum in one job), as the oracle for pyspark_flinkish's.

Runs with PyFlink's own interpreter (PyFlink 2.3.0 in its own virtualenv; Java 17)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_done_when.py --out jvm-free-tests/datastream/pyflink_done_when.json

The job is in ``jvm-free-tests/datastream/pyflink_done_when_job.py``, written once against PyFlink's API; this script
hands it PyFlink's modules, ``test_pyflink_done_when.py`` (local engine) and ``tests/spark/test_spark_two_input.py``
(foreachBatch executor) hand it pyspark_flinkish's. Each source is ``from_collection`` with
``assign_timestamps_and_watermarks`` (monotonous timestamps); parallelism 1. The JSON file holds the outputs sorted
(a multiset: the interleaving of the union of the job's three outputs is not defined).
"""

from __future__ import annotations

import argparse
import sys
from types import SimpleNamespace
from typing import Any, List

import pyflink_oracle as oracle
from pyflink.common import Row, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import functions as pyflink_functions
from pyflink.datastream import state as pyflink_state
from pyflink.datastream import window as pyflink_window

job = oracle.import_cases("pyflink_done_when_job")


class At(TimestampAssigner):
    def __init__(self, index: int) -> None:
        self.index = index

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value[self.index])


ROW_TYPES = {
    "orders": [Types.STRING(), Types.LONG(), Types.INT()],
    "payments": [Types.STRING(), Types.LONG()],
    "rules": [Types.LONG(), Types.STRING(), Types.INT()],
}


def source(env: Any, name: str, rows: List[Any], time_index: int) -> Any:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(At(time_index))
    stream = env.from_collection(rows, type_info=Types.TUPLE(ROW_TYPES[name])).name(name)
    return stream.assign_timestamps_and_watermarks(strategy)


API = SimpleNamespace(
    Types=Types, Row=Row, Time=Time, functions=pyflink_functions, state=pyflink_state, window=pyflink_window, source=source
)


def run() -> List[Any]:
    out = job.build(oracle.environment(parallelism=1), API)
    with out.execute_and_collect() as results:
        return job.decode(list(results))


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--runs", type=int, default=1, help="run the job this often; all runs must agree")
    args = parser.parse_args(argv)
    import pyflink.version

    outputs = [run() for _ in range(args.runs)]
    if any(o != outputs[0] for o in outputs):
        msg = f"PyFlink's outputs differ between runs: {outputs}"
        raise SystemExit(msg)
    for o in outputs[0]:
        print(o, flush=True)
    doc = {
        "pyflink_version": pyflink.version.__version__,
        "command": "benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_done_when.py --out " + args.out
        + (f" --runs {args.runs}" if args.runs != 1 else ""),
        "parallelism": 1,
        "runs": args.runs,
        "inputs": job.INPUTS,
        "output": outputs[0],
    }
    oracle.write_json(args.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
