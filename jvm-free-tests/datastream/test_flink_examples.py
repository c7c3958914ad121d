"""Apache Flink's own DataStream examples (as PyFlink 2.3.0 ships them in ``pyflink/examples/datastream``) run on the
JVM-free engine with only their imports changed, and print and write what PyFlink printed and wrote.

The oracle ``pyflink_examples.json`` was recorded with PyFlink 2.3.0 by ``benchmarks/pyflink_examples.py``: each
example's source, its stdout, and with ``--output`` the finished part files (names with the uuid and the date-time
bucket replaced; lines as a sorted multiset). The vendored copies in ``examples/flink_datastream/`` are those sources
with ``from pyflink.`` replaced by ``from pyspark_flinkish.``, and nothing else.

Each run is a process of its own, as ``python example.py`` would be, but forked (``RUNNER``) from one interpreter per
test worker that has already imported the package: the import, most of a run's time, is paid once per module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENDORED = ROOT / "examples" / "flink_datastream"
ORACLE = json.loads(Path(__file__).with_name("pyflink_examples.json").read_text())
EXAMPLES: Dict[str, Any] = ORACLE["examples"]
# As the recorder ran them: logging to stderr first, so that an example's basicConfig(stream=sys.stdout) does nothing.
# Then one line of JSON per run on stdin ({"argv": [...], "stdout": file, "stderr": file}): a forked child runs the
# example as __main__ (its stdin /dev/null, stdout and stderr into the files, killed by SIGALRM after 120 s) and ends
# as `python example.py` would (an exception: its traceback and exit code 1; atexit handlers run); the runner writes
# the child's exit code as a line on stdout.
RUNNER = """
import json, logging, os, runpy, signal, sys
logging.basicConfig(stream=sys.stderr, level=logging.INFO)
import pyspark_flinkish.datastream
for line in sys.stdin:
    job = json.loads(line)
    pid = os.fork()
    if pid == 0:
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, job["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                (2, job["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
            os.dup2(os.open(path, flags, 0o644), fd)
        signal.alarm(120)
        sys.argv = job["argv"]
        runpy.run_path(sys.argv[0], run_name="__main__")
        sys.exit(0)
    sys.stdout.write(json.dumps(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])) + "\\n")
    sys.stdout.flush()
"""
sys.path.insert(0, str(ROOT / "benchmarks"))
from pyflink_examples import part_files, word_count_lines  # noqa: E402 (the recorder's own normalisation)


def rewrite(source: str) -> str:
    """The only change: PyFlink's modules become this package's."""
    return "".join(
        line.replace("from pyflink.", "from pyspark_flinkish.", 1) if line.startswith("from pyflink.") else line
        for line in source.splitlines(keepends=True)
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., List[str]]]:
    """``run(name, *args)``: the example's printed lines, from a process of its own (``RUNNER``)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    runner = subprocess.Popen([sys.executable, "-c", RUNNER], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    logs = tmp_path_factory.mktemp("example-runs")

    def run_one(name: str, *args: str) -> List[str]:
        out, err = logs / "stdout", logs / "stderr"
        job = {"argv": [str(VENDORED / name), *args], "stdout": str(out), "stderr": str(err)}
        assert runner.stdin is not None and runner.stdout is not None
        runner.stdin.write(json.dumps(job) + "\n")
        runner.stdin.flush()
        reply = runner.stdout.readline()
        assert reply, f"the example runner ended (exit code {runner.poll()})"
        assert json.loads(reply) == 0, err.read_text()[-3000:]
        return out.read_text().splitlines()

    yield run_one
    assert runner.stdin is not None and runner.stdout is not None
    runner.stdin.close()
    assert runner.wait(timeout=60) == 0
    runner.stdout.close()


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
def test_the_example_prints_what_pyflink_printed(run: Callable[..., List[str]], name: str) -> None:
    """In the order PyFlink printed: word_count runs in BATCH mode, where Flink processes the keys in the order of
    their serialized bytes (its untyped words pickled: the shortest pickle first, core/key_order.py), as here."""
    assert run(name) == EXAMPLES[name]["printed"]


@pytest.mark.parametrize("name", sorted(n for n in EXAMPLES if "output" in EXAMPLES[n]))
def test_the_example_writes_the_part_files_pyflink_wrote(run: Callable[..., List[str]], name: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run(name, "--output", str(out)) == EXAMPLES[name]["printed_with_output"]
    assert part_files(out) == EXAMPLES[name]["output"]
    hidden = [p for p in out.rglob(".*")]
    assert hidden == [], f"in-progress files left: {hidden}"


def test_word_count_reads_a_file_source_and_writes_what_pyflink_wrote(run: Callable[..., List[str]], tmp_path: Path) -> None:
    case = EXAMPLES["word_count.py"]
    text = tmp_path / "input.txt"
    text.write_text("\n".join(word_count_lines(case["source"])) + "\n")
    out = tmp_path / "out"
    assert run("word_count.py", "--input", str(text), "--output", str(out)) == case["printed_with_input_and_output"]
    assert part_files(out) == case["input_output"]
