"""Apache Flink's windowing examples (vendored in ``examples/flink_datastream/``: PyFlink 2.3.0's sources with only
their imports changed) on Spark: each runs as a Spark streaming query (its bounded input with ``availableNow``) whose
``FileSink`` is written by the executors, and the finished part files hold the lines PyFlink wrote
(``jvm-free-tests/datastream/pyflink_examples.json``, recorded by ``benchmarks/pyflink_examples.py``).

The examples call ``StreamExecutionEnvironment.get_execution_environment()``; here that returns the Spark environment
of the test session (the only change, made from outside the example)."""

from __future__ import annotations

import json
import re
import runpy
import sys
from pathlib import Path
from typing import Any

import pytest

from pyspark_flinkish.datastream import StreamExecutionEnvironment

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
VENDORED = ROOT / "examples" / "flink_datastream"
ORACLE = json.loads((ROOT / "jvm-free-tests" / "datastream" / "pyflink_examples.json").read_text())["examples"]
sys.path.insert(0, str(ROOT / "benchmarks"))
from pyflink_examples import part_files  # noqa: E402 (the recorder's own normalisation)

WINDOWING = sorted(n for n in ORACLE if n.startswith("windowing/"))


@pytest.mark.parametrize("name", WINDOWING)
def test_flinks_windowing_example_writes_on_spark_the_part_files_pyflink_wrote(
    name: str, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    get = StreamExecutionEnvironment.get_execution_environment
    monkeypatch.setattr(
        StreamExecutionEnvironment, "get_execution_environment", staticmethod(lambda *a, **k: get(spark))
    )
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", [str(VENDORED / name), "--output", str(out)])
    runpy.run_path(str(VENDORED / name), run_name="__main__")
    assert capsys.readouterr().out.splitlines() == ORACLE[name]["printed_with_output"]
    written = part_files(out)
    assert written["part_lines"] == ORACLE[name]["output"]["part_lines"]
    # Flink's one part file; here one per micro-batch with records (a bounded job's data and its end of input)
    assert {re.sub(r"-\d+\.ext$", "-<n>.ext", f) for f in written["part_files"]} == {"<bucket>/prefix-<uuid>-<n>.ext"}
    assert list(out.rglob(".*")) == [], "no in-progress file is left"


def test_flinks_word_count_reads_a_file_source_and_writes_a_file_sink_on_spark(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``word_count.py --input --output``: a bounded ``FileSource`` and a ``FileSink``, in BATCH mode."""
    from pyflink_examples import word_count_lines

    case = ORACLE["word_count.py"]
    get = StreamExecutionEnvironment.get_execution_environment
    monkeypatch.setattr(
        StreamExecutionEnvironment, "get_execution_environment", staticmethod(lambda *a, **k: get(spark))
    )
    text = tmp_path / "input.txt"
    text.write_text("\n".join(word_count_lines(case["source"])) + "\n")
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", [str(VENDORED / "word_count.py"), "--input", str(text), "--output", str(out)])
    runpy.run_path(str(VENDORED / "word_count.py"), run_name="__main__")
    assert part_files(out)["part_lines"] == case["input_output"]["part_lines"]
    assert list(out.rglob(".*")) == []
