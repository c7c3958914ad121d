"""Real PyFlink (Apache Flink 2.3.0) on partitioning calls and operator settings, as the oracle for pyspark_flinkish.

Records what ``jvm-free-tests/datastream/test_pyflink_partitioning.py`` compares with (no Flink needed there):

* ``results``: what small jobs with ``shuffle``, ``rebalance``, ``rescale``, ``forward`` and ``partition_custom``
  (a callable and a ``Partitioner`` with a ``KeySelector``) before a map print at parallelism 2 (values sorted,
  and which subtask printed each): partitioning chooses the instance, never the result;
* ``keyed_stream_refusals``: the exceptions PyFlink raises for partitioning calls and operator settings on a
  ``KeyedStream``;
* ``setting_errors``: what Flink says to an invalid ``set_uid_hash`` / ``set_buffer_timeout`` argument;
* ``partition_out_of_range``: whether a job whose partitioner returns a partition outside ``[0, n)`` fails.

Run with the PyFlink virtualenv (Java 17 on PATH):
``benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_partitioning.py --out jvm-free-tests/datastream/pyflink_partitioning.json``
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, List

import pyflink_oracle as oracle


def environment(parallelism: int = 2) -> Any:
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    env.set_python_executable(sys.executable)
    return env


def jobs() -> Dict[str, Callable[[Any], Any]]:
    """name -> the pipeline after ``from_collection`` (shared with the test, which builds the same)."""
    from pyflink.common import Types
    from pyflink.datastream.functions import KeySelector, Partitioner

    class Modulo(Partitioner):
        def partition(self, key: Any, num_partitions: int) -> int:
            return key % num_partitions

    class Second(KeySelector):
        def get_key(self, value: Any) -> Any:
            return value[1]

    row = Types.TUPLE([Types.STRING(), Types.INT()])
    return {
        "shuffle": lambda ds: ds.shuffle().map(lambda v: (v[0], v[1] * 10), output_type=row),
        "rebalance": lambda ds: ds.rebalance().map(lambda v: (v[0], v[1] * 10), output_type=row),
        "rescale": lambda ds: ds.rescale().map(lambda v: (v[0], v[1] * 10), output_type=row),
        "forward": lambda ds: ds.map(lambda v: v, output_type=row).forward().map(lambda v: (v[0], v[1] * 10), output_type=row),
        "partition_custom": lambda ds: ds.partition_custom(lambda k, n: k % n, lambda v: v[1]).map(
            lambda v: (v[0], v[1] * 10), output_type=row
        ),
        "partition_custom_objects": lambda ds: ds.partition_custom(Modulo(), Second()).key_by(lambda v: v[0]).sum(1),
    }


INPUT = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5), ("a", 6)]


def results() -> Dict[str, Any]:
    """Every job's printed output in one ``env.execute`` (``execute_and_collect`` skips the Python configuration
    that gives ``partition_custom`` its number of partitions: PyFlink 2.3 then fails with "The partition number
    should be a positive value, got -1"). At parallelism 2 ``print(name)`` writes ``name:<subtask>> value``:
    the values (sorted) and, per value, the subtask that printed it."""
    from pyflink.common import Types

    captured = tempfile.NamedTemporaryFile(prefix="pyflink-print-", suffix=".txt", delete=False)
    saved_stdout = os.dup(1)
    os.dup2(captured.fileno(), 1)
    try:
        env = environment()
        for name, build in jobs().items():
            ds = env.from_collection(INPUT, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
            build(ds).print(name)
        env.execute("partitioning")
        sys.stdout.flush()
    finally:
        os.dup2(saved_stdout, 1)
    printed: Dict[str, List[List[str]]] = {name: [] for name in jobs()}
    for line in Path(captured.name).read_text().splitlines():
        prefix, sep, rest = line.partition("> ")
        name, _, subtask = prefix.partition(":")
        if sep and name in printed:
            printed[name].append([rest, subtask])
    os.unlink(captured.name)
    return {name: {"values": sorted(v for v, _ in rows), "subtasks": sorted(rows)} for name, rows in printed.items()}


def _outcome(f: Callable[[], Any]) -> str:
    try:
        f()
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    return "(accepted)"


def keyed_stream_refusals() -> Dict[str, str]:
    from pyflink.common import Types

    keyed = environment().from_collection(INPUT, type_info=Types.TUPLE([Types.STRING(), Types.INT()])).key_by(lambda v: v[0])
    calls: Dict[str, Callable[[], Any]] = {
        "shuffle": lambda: keyed.shuffle(),
        "rebalance": lambda: keyed.rebalance(),
        "rescale": lambda: keyed.rescale(),
        "forward": lambda: keyed.forward(),
        "partition_custom": lambda: keyed.partition_custom(lambda k, n: 0, lambda v: v[0]),
        "set_uid_hash": lambda: keyed.set_uid_hash("0" * 32),
        "force_non_parallel": lambda: keyed.force_non_parallel(),
        "set_buffer_timeout": lambda: keyed.set_buffer_timeout(5),
        "start_new_chain": lambda: keyed.start_new_chain(),
        "disable_chaining": lambda: keyed.disable_chaining(),
        "slot_sharing_group": lambda: keyed.slot_sharing_group("group"),
        "set_max_parallelism": lambda: keyed.set_max_parallelism(4),
    }
    return {name: _outcome(f) for name, f in calls.items()}


def setting_errors() -> Dict[str, str]:
    """Flink's Java exception for invalid arguments (its class and message, from the Py4J error)."""
    from pyflink.common import Types

    mapped = environment().from_collection([1], type_info=Types.INT()).map(lambda v: v, output_type=Types.INT())
    out = {}
    for name, f in {
        "set_uid_hash('h')": lambda: mapped.set_uid_hash("h"),
        "set_uid_hash(32 hex)": lambda: mapped.set_uid_hash("0123456789abcdef0123456789ABCDEF"),
        "set_buffer_timeout(-2)": lambda: mapped.set_buffer_timeout(-2),
        "set_buffer_timeout(-1)": lambda: mapped.set_buffer_timeout(-1),
    }.items():
        try:
            f()
            out[name] = "(accepted)"
        except Exception as exc:
            java = [ln.strip() for ln in str(exc).splitlines() if "Exception:" in ln]
            out[name] = java[0] if java else str(exc).splitlines()[0]
    return out


def partition_out_of_range() -> str:
    from pyflink.common import Types

    env = environment()
    env.from_collection([1, 2], type_info=Types.INT()).partition_custom(lambda k, n: n + 5, lambda v: v).print("out")
    try:
        env.execute("out of range")
    except Exception as exc:
        causes = [ln.strip() for ln in str(exc).splitlines() if "Exception:" in ln or "Error:" in ln]
        return "job failed: " + " | ".join(causes[-3:])[:800]
    return "(accepted)"


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    data = {
        "input": [list(v) for v in INPUT],
        "results": results(),
        "keyed_stream_refusals": keyed_stream_refusals(),
        "setting_errors": setting_errors(),
        "partition_out_of_range": partition_out_of_range(),
    }
    oracle.write_json(args.out, data, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
