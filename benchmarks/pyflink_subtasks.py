"""Real PyFlink's ``RuntimeContext`` subtask values (``get_index_of_this_subtask``, ``get_number_of_parallel_subtasks``,
``get_max_number_of_parallel_subtasks``) at several parallelisms, as the oracle for pyspark_flinkish.

Runs with PyFlink's own interpreter (``benchmarks/.venv-pyflink``, see ``pyflink_count_windows.py``; Java 17)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_subtasks.py \
        --out jvm-free-tests/datastream/pyflink_subtasks.json

The jobs are those of ``jvm-free-tests/datastream/subtask_cases.py`` (one job per case), built here with PyFlink's
classes; the JSON file holds, per case, the strings the job emitted, sorted.
``jvm-free-tests/datastream/test_pyflink_subtasks.py`` compares; it does not need PyFlink.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List

CASES_DIR = Path(__file__).resolve().parents[1] / "jvm-free-tests" / "datastream"
sys.path.insert(0, str(CASES_DIR))
import subtask_cases as cases  # noqa: E402


def api() -> Any:
    from pyflink.common import Row, Types
    from pyflink.datastream.functions import KeyedProcessFunction, MapFunction, ProcessWindowFunction

    return SimpleNamespace(
        Types=Types, Row=Row, KeyedProcessFunction=KeyedProcessFunction, MapFunction=MapFunction,
        ProcessWindowFunction=ProcessWindowFunction,
    )


def environment() -> Any:
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_python_executable(sys.executable)  # the Python workers run in this venv too
    env.add_python_file(str(CASES_DIR / "subtask_cases.py"))  # the workers import the case module
    return env


def collect(stream: Any) -> List[str]:
    with stream.execute_and_collect() as results:
        return sorted(results)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    import pyflink.version

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
    doc = {
        "pyflink_version": pyflink.version.__version__,
        "command": "benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_subtasks.py --out " + args.out,
        "keyed": keyed,
        "windows": windows,
        "maps": maps,
    }
    with open(args.out, "w") as out:
        json.dump(doc, out, indent=1, ensure_ascii=False)
        out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
