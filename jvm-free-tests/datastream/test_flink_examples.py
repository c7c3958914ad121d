"""Apache Flink's own DataStream examples (as PyFlink 2.3.0 ships them in ``pyflink/examples/datastream``) run on the
JVM-free engine with only their imports changed, and print and write what PyFlink printed and wrote.

The oracle ``pyflink_examples.json`` was recorded with PyFlink 2.3.0 by ``benchmarks/pyflink_examples.py``: each
example's source, its stdout, and with ``--output`` the finished part files (names with the uuid and the date-time
bucket replaced; lines as a sorted multiset). The vendored copies in ``examples/flink_datastream/`` are those sources
with ``from pyflink.`` replaced by ``from pyspark_flinkish.``, and nothing else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENDORED = ROOT / "examples" / "flink_datastream"
ORACLE = json.loads(Path(__file__).with_name("pyflink_examples.json").read_text())
EXAMPLES: Dict[str, Any] = ORACLE["examples"]
# as the recorder ran them: logging to stderr first, so that an example's basicConfig(stream=sys.stdout) does nothing
WRAPPER = (
    "import logging, runpy, sys; logging.basicConfig(stream=sys.stderr, level=logging.INFO); "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)
sys.path.insert(0, str(ROOT / "benchmarks"))
from pyflink_examples import part_files, word_count_lines  # noqa: E402 (the recorder's own normalisation)


def rewrite(source: str) -> str:
    """The only change: PyFlink's modules become this package's."""
    return "".join(
        line.replace("from pyflink.", "from pyspark_flinkish.", 1) if line.startswith("from pyflink.") else line
        for line in source.splitlines(keepends=True)
    )


def run(name: str, *args: str) -> List[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(VENDORED / name), *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def test_the_oracle_is_pyflink_2_3_0_and_covers_the_ten_examples() -> None:
    assert ORACLE["pyflink_version"] == "2.3.0"
    assert sorted(EXAMPLES) == sorted(
        [f"windowing/{n}.py" for n in ("tumbling_count_window", "tumbling_time_window", "sliding_time_window",
                                       "session_with_gap_window", "session_with_dynamic_gap_window")]
        + ["word_count.py", "basic_operations.py", "event_time_timer.py", "process_json_data.py", "state_access.py"]
    )
    vendored = sorted(p.relative_to(VENDORED).as_posix() for p in VENDORED.rglob("*.py"))
    assert vendored == sorted(EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_vendored_example_is_flinks_with_only_its_imports_changed(name: str) -> None:
    source = EXAMPLES[name]["source"]
    assert source.startswith("#####") and "Licensed to the Apache Software Foundation" in source
    ours = (VENDORED / name).read_text()
    assert ours == rewrite(source)
    assert ours != source
    changed = [(a, b) for a, b in zip(source.splitlines(), ours.splitlines()) if a != b]
    assert all(a.startswith("from pyflink.") and b.startswith("from pyspark_flinkish.") for a, b in changed)
    assert "import pyflink" not in ours and "from pyflink" not in ours


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_example_prints_what_pyflink_printed(name: str) -> None:
    """In the order PyFlink printed: word_count runs in BATCH mode, where Flink processes the keys in the order of
    their serialized bytes (its untyped words pickled: the shortest pickle first, core/key_order.py), as here."""
    assert run(name) == EXAMPLES[name]["printed"]


@pytest.mark.parametrize("name", sorted(n for n in EXAMPLES if "output" in EXAMPLES[n]))
def test_the_example_writes_the_part_files_pyflink_wrote(name: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run(name, "--output", str(out)) == EXAMPLES[name]["printed_with_output"]
    assert part_files(out) == EXAMPLES[name]["output"]
    hidden = [p for p in out.rglob(".*")]
    assert hidden == [], f"in-progress files left: {hidden}"


def test_word_count_reads_a_file_source_and_writes_what_pyflink_wrote(tmp_path: Path) -> None:
    case = EXAMPLES["word_count.py"]
    text = tmp_path / "input.txt"
    text.write_text("\n".join(word_count_lines(case["source"])) + "\n")
    out = tmp_path / "out"
    assert run("word_count.py", "--input", str(text), "--output", str(out)) == case["printed_with_input_and_output"]
    assert part_files(out) == case["input_output"]
