"""Runs Apache Flink's own DataStream examples (``pyflink/examples/datastream``, as PyFlink 2.3.0 ships them) and
records what they print and the lines of the part files they write, as the oracle of
``jvm-free-tests/datastream/test_flink_examples.py`` (and ``tests/spark/test_spark_flink_examples.py``).

Runs with PyFlink's own interpreter (PyFlink 2.3.0 in its own virtualenv; Java 17 on ``PATH``)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_examples.py \
        --out jvm-free-tests/datastream/pyflink_examples.json

Each example runs in a child process (its interpreter's directory on ``PATH``, so that PyFlink's Python workers find
it), with logging configured to stderr before the example's own ``logging.basicConfig(stream=sys.stdout)`` (which
then does nothing): stdout holds only what the job prints. Each example runs on one CPU
(``os.sched_setaffinity``): a local Flink's default parallelism is the machine's cores (``print()`` then prefixes each
line with its subtask, and which subtask prints a key's lines depends on Flink's key-group hashing); on one core it is
1, the package's default parallelism (the windowing examples, ``word_count`` and ``basic_operations`` also set
parallelism 1 themselves).

A run with ``--output <dir>`` records the finished part files' lines (``part_lines``: sorted, a multiset, since
which part file a line is in is Flink's choice) and the files' names relative to ``<dir>`` with the uuid replaced by
``<uuid>`` and a date-time bucket by ``<bucket>``; ``--input`` (``word_count``) reads a file of the example's own
default lines. The examples' sources are recorded with their license headers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List

import pyflink_oracle as oracle

WRAPPER = (
    "import logging, runpy, sys; logging.basicConfig(stream=sys.stderr, level=logging.INFO); "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)

EXAMPLES = [
    "windowing/tumbling_count_window.py",
    "windowing/tumbling_time_window.py",
    "windowing/sliding_time_window.py",
    "windowing/session_with_gap_window.py",
    "windowing/session_with_dynamic_gap_window.py",
    "word_count.py",
    "basic_operations.py",
    "event_time_timer.py",
    "process_json_data.py",
    "state_access.py",
]
WITH_OUTPUT = {e for e in EXAMPLES if e.startswith("windowing/") or e == "word_count.py"}
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
BUCKET = re.compile(r"^\d{4}-\d{2}-\d{2}--\d{2}/")


def word_count_lines(source: str) -> List[str]:
    """The example's own ``word_count_data`` (what ``--input`` reads, one per line)."""
    namespace: Dict[str, Any] = {}
    start = source.index("word_count_data = [")
    end = source.index("]", start) + 1
    exec(source[start:end], namespace)
    return list(namespace["word_count_data"])


def part_files(out: Path) -> Dict[str, Any]:
    """The finished part files under ``out``: their names (uuid and bucket replaced) and their lines, sorted."""
    names, lines = [], []
    for path in sorted(out.rglob("*")):
        if path.is_file():
            rel = path.relative_to(out).as_posix()
            if any(part.startswith(".") for part in rel.split("/")):
                continue  # in-progress files: none are left by a finished job
            names.append(BUCKET.sub("<bucket>/", UUID.sub("<uuid>", rel)))
            lines.extend(path.read_text().splitlines())
    return {"part_files": sorted(names), "part_lines": sorted(lines)}


def run(example: Path, args: List[str]) -> List[str]:
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(example), *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}),  # one CPU: local parallelism 1
    )
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-5000:])
        raise SystemExit(f"{example} {args} failed")
    return done.stdout.splitlines()


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    import pyflink

    root = Path(pyflink.__file__).parent / "examples" / "datastream"
    cases: Dict[str, Any] = {}
    for name in EXAMPLES:
        example = root / name
        source = example.read_text()
        case: Dict[str, Any] = {"source": source, "printed": run(example, [])}
        if name in WITH_OUTPUT:
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "out"
                case["printed_with_output"] = run(example, ["--output", str(out)])
                case["output"] = part_files(out)
            if name == "word_count.py":
                with tempfile.TemporaryDirectory() as tmp:
                    text = Path(tmp) / "input.txt"
                    text.write_text("\n".join(word_count_lines(source)) + "\n")
                    out = Path(tmp) / "out"
                    case["printed_with_input_and_output"] = run(example, ["--input", str(text), "--output", str(out)])
                    case["input_output"] = part_files(out)
        cases[name] = case
        print(name, json.dumps({k: v for k, v in case.items() if k != "source"})[:400], flush=True)
    oracle.record(args.out, __file__, {"cpus": 1, "examples": cases})  # cpus: a local Flink's default parallelism
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
