"""``FileSource`` (a monitored directory) to ``FileSink`` on Spark, exactly once across driver crashes:
``file_sink_job.py`` runs as its own driver process while this test adds input files; it is SIGKILLed in the middle
of a micro-batch's commit (after some of its part files were renamed to their final names) and, once restarted,
before a micro-batch's pre-commit (its in-progress files written, not yet recorded), then restarted to the end.

Its committed part files, of the row format (text) and of the bulk format (Parquet, rolled on checkpoints only), must
hold exactly the lines and rows of an uninterrupted run of the same pipeline (the JVM-free engine over the same
files): no part file twice, none lost; no in-progress file left visible or behind. The same holds for the records of
a second monitored directory, of CSV files (``CsvReaderFormat``, parsed by the executors).
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import time
from pathlib import Path
from typing import List, Tuple

import pytest

from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.testing.sigkill import DriverRun

pytestmark = [pytest.mark.spark, pytest.mark.slow]

JOB = Path(__file__).resolve().with_name("file_sink_job.py")
ROOT = JOB.parents[2]
N_FILES = 4
LINES_PER_FILE = 6


CSV_ROWS_PER_FILE = 3


def _input_lines(i: int) -> List[str]:
    return [f"file {i} line {j} {'x' * (j % 3)}" for j in range(LINES_PER_FILE)]


def _csv_text(i: int) -> str:
    """CSV file ``i``: ``id,text`` rows, the text quoted (a separator inside), the last one null-free but empty."""
    rows = [f'{10 * i + j},"file {i}, row ""{j}"""' for j in range(CSV_ROWS_PER_FILE - 1)]
    return "\n".join([*rows, f"{10 * i + CSV_ROWS_PER_FILE - 1},"]) + "\n"


def _csv_records(i: int) -> List[str]:
    """What Flink writes for the rows of CSV file ``i`` (``RowData``'s text)."""
    rows = [f'+I({10 * i + j},file {i}, row "{j}")' for j in range(CSV_ROWS_PER_FILE - 1)]
    return [*rows, f"+I({10 * i + CSV_ROWS_PER_FILE - 1},)"]


def _add_files(directory: Path, log: Path, stop: threading.Event) -> None:
    """Add the input files one by one (written under a hidden name, then renamed: Spark skips hidden names), the
    next one when the job has committed as many micro-batches as files were added (or after 30 s): a file per
    micro-batch, so that each run of the job has new input and the kills fall inside batches."""
    for i in range(N_FILES):
        deadline = time.monotonic() + 30
        while not stop.is_set() and time.monotonic() < deadline:
            committed = log.read_text(errors="replace").count("committed batch_id=") if log.exists() else 0
            if committed >= i:
                break
            time.sleep(0.1)
        if stop.is_set():
            return
        csv_hidden = directory.with_name("csv") / f"_in-{i:02d}.csv"
        csv_hidden.write_text(_csv_text(i))
        os.replace(csv_hidden, directory.with_name("csv") / f"in-{i:02d}.csv")
        hidden = directory / f".in-{i:02d}.txt"
        hidden.write_text("\n".join(_input_lines(i)) + "\n")
        os.replace(hidden, directory / f"in-{i:02d}.txt")


def _run(tmp: Path, log: Path, runs: List[DriverRun], *args: str) -> int:
    """Run the job to its end (or its SIGKILL), then kill what is left of it; returns its exit code."""
    run = DriverRun(JOB, ["--input", str(tmp / "in"), "--output", str(tmp / "out"), "--checkpoint", str(tmp / "chk"),
                          "--expect", str(N_FILES * LINES_PER_FILE), "--csv-input", str(tmp / "csv"),
                          "--expect-csv", str(N_FILES * CSV_ROWS_PER_FILE), *args], log, cwd=ROOT)
    runs.append(run)
    return run.finish(240)


def _uninterrupted(tmp: Path) -> Tuple[List[str], List[Tuple[str, int]], List[str]]:
    sys.path.insert(0, str(JOB.parent))
    from file_sink_job import CSV_FORMAT, build, csv_output, visible_lines, visible_rows

    from pyspark_flinkish.datastream.connectors.file_system import FileSource, StreamFormat

    env = StreamExecutionEnvironment.get_execution_environment()
    text = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp / "in")).build()
    build(env, text, str(tmp / "local"), FileSource.for_record_stream_format(CSV_FORMAT, str(tmp / "csv")).build())
    env.execute()
    local = str(tmp / "local")
    return sorted(visible_lines(local)), sorted(visible_rows(local)), sorted(visible_lines(csv_output(local)))


def test_committed_part_files_equal_an_uninterrupted_runs_across_sigkills(
    tmp_path: Path, driver_runs: List[DriverRun]
) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "csv").mkdir()
    log = tmp_path / "job.log"
    stop = threading.Event()
    adder = threading.Thread(target=_add_files, args=(tmp_path / "in", log, stop), daemon=True)
    adder.start()
    try:
        first = _run(tmp_path, log, driver_runs, "--kill-after-renames", "5")
        second = _run(tmp_path, log, driver_runs, "--kill-before-precommit", "1")
        adder.join(timeout=120)
        last = _run(tmp_path, log, driver_runs)
    finally:
        stop.set()
    text = log.read_text(errors="replace")
    assert first == -9 and "SIGKILL after rename 5" in text, text[-3000:]
    assert second == -9 and "SIGKILL before pre-commit 1" in text, text[-3000:]
    assert last == 0, text[-3000:]

    sys.path.insert(0, str(JOB.parent))
    from file_sink_job import bulk_output, csv_output, visible_lines, visible_rows

    expected, expected_rows, expected_csv = _uninterrupted(tmp_path)
    assert expected_csv == sorted(r for i in range(N_FILES) for r in _csv_records(i))
    got_csv = sorted(visible_lines(csv_output(str(tmp_path / "out"))))
    assert [r for r, n in collections.Counter(got_csv).items() if n > 1] == [], "CSV rows written twice"
    assert got_csv == expected_csv
    assert expected == sorted(line.upper() for i in range(N_FILES) for line in _input_lines(i))
    assert expected_rows == sorted((line.upper(), len(line)) for i in range(N_FILES) for line in _input_lines(i))
    got = sorted(visible_lines(str(tmp_path / "out")))
    duplicated = [line for line, n in collections.Counter(got).items() if n > 1]
    assert duplicated == [], f"lines written twice: {duplicated}"
    assert got == expected
    got_rows = sorted(visible_rows(str(tmp_path / "out")))
    duplicated_rows = [row for row, n in collections.Counter(got_rows).items() if n > 1]
    assert duplicated_rows == [], f"Parquet rows written twice: {duplicated_rows}"
    assert got_rows == expected_rows
    outputs = [tmp_path / "out", Path(bulk_output(str(tmp_path / "out"))), Path(csv_output(str(tmp_path / "out")))]
    for output, suffix in zip(outputs, (".txt", ".parquet", ".txt")):
        names = [p.name for p in output.iterdir()]
        assert [n for n in names if n.startswith(".")] == [], "no in-progress file is left behind"
        assert all(n.startswith("part-") and n.endswith(suffix) for n in names), names
