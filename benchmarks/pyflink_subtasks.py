"""Real PyFlink's ``RuntimeContext`` subtask values (``get_index_of_this_subtask``, ``get_number_of_parallel_subtasks``,
``get_max_number_of_parallel_subtasks``) at several parallelisms, as the oracle for pyspark_flinkish.

Runs with PyFlink's own interpreter (``benchmarks/.venv-pyflink``, see ``pyflink_oracle.py``; Java 17)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_subtasks.py \
        --out jvm-free-tests/datastream/pyflink_subtasks.json

The jobs are those of ``jvm-free-tests/datastream/subtask_cases.py`` (one job per case), built here with PyFlink's
classes; the JSON file holds, per case, the strings the job emitted, sorted.
``jvm-free-tests/datastream/test_pyflink_subtasks.py`` compares; it does not need PyFlink.
"""

from __future__ import annotations

import argparse
import sys
from types import SimpleNamespace
from typing import Any, Dict, List

import pyflink_oracle as oracle

cases = oracle.import_cases("subtask_cases")


def api() -> Any:
    from pyflink.common import Row, Types
    from pyflink.datastream.functions import KeyedProcessFunction, MapFunction, ProcessWindowFunction

    return SimpleNamespace(
        Types=Types, Row=Row, KeyedProcessFunction=KeyedProcessFunction, MapFunction=MapFunction,
        ProcessWindowFunction=ProcessWindowFunction,
    )


def environment() -> Any:
    return oracle.environment(cases)


def collect(stream: Any) -> List[str]:
    with stream.execute_and_collect() as results:
        return sorted(results)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    a = api()
    keyed: Dict[str, List[str]] = {}
    for name in cases.KEYED:
        keyed[name] = collect(cases.keyed_job(a, environment, name))
        print(f"{name}: {keyed[name]}", file=sys.stderr, flush=True)
    windows: Dict[str, List[str]] = {}
    for name in cases.WINDOWS:
        windows[name] = collect(cases.window_job(a, environment, name))
        print(f"{name}: {windows[name]}", file=sys.stderr, flush=True)
    maps: Dict[str, List[str]] = {}
    for name in cases.MAPS:
        maps[name] = collect(cases.map_job(a, environment, name))
        print(f"{name}: {maps[name]}", file=sys.stderr, flush=True)
    oracle.record(args.out, __file__, {"keyed": keyed, "windows": windows, "maps": maps}, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
