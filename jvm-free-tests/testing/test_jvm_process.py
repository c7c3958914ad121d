"""The process side of the JVM test services (``testing/jvm_process.py``): a service outlives no test run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

_PARENT = """
import sys, time
from pathlib import Path
from pyspark_flinkish.testing.jvm_process import JvmProcess

service = JvmProcess(None, None)
service.directory = Path(sys.argv[1])
service._spawn([sys.executable, "-c", "import time; time.sleep(600)"], stdin=None)  # no PATH lookup
print(service._process.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ", 1)[1].startswith("Z"))  # a zombie has ended


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_a_service_ends_when_the_process_that_started_it_is_killed(tmp_path: Path, how: signal.Signals) -> None:
    """A benchmark or test run killed by a signal runs no cleanup: its broker, HDFS or S3 JVM must not stay behind
    (parent 1) holding ports, memory and CPU."""
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, str(tmp_path)], stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2]
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)
        parent.send_signal(how)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child)
    finally:
        parent.kill()
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
