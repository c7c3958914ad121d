"""Stopping a query in the middle of a micro-batch stops it cleanly (``spark/error_transport.py``
``BatchInterruptedError``).

Spark tells a stop from a failure of the Python batch function by a regular expression over the Python error's
whole text; Java runs it recursively, one level per character, and Py4J's long traceback of the interrupted job
overflowed the stream thread's stack: ``Exception in thread "stream execution thread ..."
java.lang.StackOverflowError`` on standard error (seen in CI when a test stopped its query mid-batch)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

JOB = Path(__file__).with_name("stop_mid_batch_job.py")


def test_a_query_stopped_mid_batch_stops_without_an_uncaught_error_in_the_stream_thread(tmp_path: Path) -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, str(JOB), str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=str(JOB.parents[2]), env=env, check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5_000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"delivered": 0, "active": False, "exception": "None"}, output[-5_000:]
    assert "StackOverflowError" not in output
    assert "Exception in thread" not in output, output[-5_000:]
