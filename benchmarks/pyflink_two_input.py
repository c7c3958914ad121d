"""Real PyFlink's two-input operators (connect + co-functions, broadcast state), as the oracle for pyspark_flinkish's.

Runs with PyFlink's own interpreter (PyFlink 2.3.0 in its own virtualenv; Java 17)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_two_input.py \
        --out jvm-free-tests/datastream/pyflink_two_input.json

The jobs are in ``jvm-free-tests/datastream/two_input_jobs.py``, written once against PyFlink's API; this script
hands them PyFlink's modules, ``test_pyflink_two_input.py`` (local engine) and ``tests/spark/test_spark_two_input.py``
(foreachBatch executor) hand them pyspark_flinkish's. Each source is ``from_collection`` with
``assign_timestamps_and_watermarks`` (monotonous timestamps, or no watermarks for the slow input of
``watermark_is_min_of_inputs``); parallelism 1, except the cases of ``two_input_jobs.PARALLELISM``. Flink does not
order a two-input operator's inputs, so the JSON file holds each job's outputs sorted (a multiset); the jobs are
designed so that this multiset is deterministic.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, List

import pyflink_oracle as oracle
from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag
from pyflink.datastream import functions as pyflink_functions
from pyflink.datastream import state as pyflink_state

two_input_jobs = oracle.import_cases("two_input_jobs")


class At(TimestampAssigner):
    def __init__(self, index: int) -> None:
        self.index = index

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value[self.index])


STR, LONG, INT = Types.STRING(), Types.LONG(), Types.INT()
ROW_TYPES = {
    "orders": [STR, LONG, INT], "payments": [STR, LONG], "fast": [STR, LONG], "slow": [STR, LONG],
    "rules": [LONG, STR, INT], "events": [STR, LONG, STR, INT],
}


def source(env: Any, name: str, rows: List[Any], time_index: int, watermarks: bool) -> Any:
    strategy = WatermarkStrategy.for_monotonous_timestamps() if watermarks else WatermarkStrategy.no_watermarks()
    stream = env.from_collection(rows, type_info=Types.TUPLE(ROW_TYPES[name])).name(name)
    return stream.assign_timestamps_and_watermarks(strategy.with_timestamp_assigner(At(time_index)))


API = two_input_jobs.Api(
    types=Types, functions=pyflink_functions, state=pyflink_state, output_tag=OutputTag, source=source
)


def run_case(case: str) -> List[Any]:
    env = oracle.environment(parallelism=two_input_jobs.PARALLELISM.get(case, 1))
    out = two_input_jobs.build(env, API, case)
    with out.execute_and_collect() as results:
        return two_input_jobs.decode(list(results))


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--runs", type=int, default=1, help="run each job this often; all runs must agree")
    args = parser.parse_args(argv)
    import pyflink.version

    cases = []
    for case in two_input_jobs.CASES:
        outputs = [run_case(case) for _ in range(args.runs)]
        if any(o != outputs[0] for o in outputs):
            msg = f"{case}: PyFlink's outputs differ between runs: {outputs}"
            raise SystemExit(msg)
        print(f"{case}: {outputs[0]}", flush=True)
        cases.append({"name": case, "output": outputs[0]})
    doc = {
        "pyflink_version": pyflink.version.__version__,
        "command": "benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_two_input.py --out " + args.out,
        "parallelism": {c: two_input_jobs.PARALLELISM.get(c, 1) for c in two_input_jobs.CASES},
        "runs": args.runs,
        "inputs": two_input_jobs.INPUTS,
        "cases": cases,
    }
    oracle.write_json(args.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
