"""What each parallel instance of real PyFlink gets of a broadcast element (a decoded copy: pickle's, or the declared
type's coder's), as the oracle for pyspark_flinkish.

Runs with PyFlink's own interpreter (``benchmarks/.venv-pyflink``, see ``pyflink_oracle.py``; Java 17)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_broadcast_copies.py \
        --out jvm-free-tests/datastream/pyflink_broadcast_copies.json

The jobs are those of ``jvm-free-tests/datastream/broadcast_copy_cases.py``; the JSON file holds, per case, the
strings the job emitted, sorted (Flink does not order the instances' outputs).
``jvm-free-tests/datastream/test_pyflink_broadcast_copies.py`` compares; it does not need PyFlink.
"""

from __future__ import annotations

import argparse
import sys
from types import SimpleNamespace
from typing import Dict, List

import pyflink_oracle as oracle

cases = oracle.import_cases("broadcast_copy_cases")


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    from pyflink.common import Types
    from pyflink.datastream.functions import BroadcastProcessFunction
    from pyflink.datastream.state import MapStateDescriptor

    api = SimpleNamespace(Types=Types, MapStateDescriptor=MapStateDescriptor, BroadcastProcessFunction=BroadcastProcessFunction)
    recorded: Dict[str, List[str]] = {}
    for name in cases.CASES:
        stream = cases.job(api, lambda: oracle.environment(cases, parallelism=2), name)
        with stream.execute_and_collect() as results:
            recorded[name] = sorted(results)
        print(f"{name}: {recorded[name]}", file=sys.stderr, flush=True)
    oracle.record(args.out, __file__, {"cases": recorded}, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
