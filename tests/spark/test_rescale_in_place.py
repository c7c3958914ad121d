"""Rescaling a checkpoint in place (``spark/rescale.py``): SIGKILLed during the redistribution and restarted.

The kill test runs the file-stream job of ``test_source_savepoints.py`` (whose uninterrupted run is the JVM-free
engine's) and kills its driver (``rescale_kill_job.py``, its own process) at two points inside the redistribution;
the restart after the second kill asks for the checkpoint's old number of state partitions, which only a driver
that knows the rescaling was interrupted gets right (the base's document then names the new layout's files).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Dict, List

import pytest
from test_source_savepoints import BEFORE, FILES, check, file_job, jvm_free, state_partitions_named, write_file

pytestmark = pytest.mark.spark

JOB = Path(__file__).with_name("rescale_kill_job.py")
RUN_TIMEOUT = 300  # seconds for one driver process (its session's start-up included)


def _tagged(tag: bytes) -> List[int]:
    """Live processes whose environment carries ``tag``: the driver, its JVM, the JVM's Python daemon and workers."""
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    if tag in f.read().split(b"\0"):
                        pids.append(int(name))
            except OSError:
                pass
    return pids


def _killed_run(tmp_path: Path, checkpoint: Path, directory: Path, partitions: int, kill_at: str) -> str:
    """Run ``rescale_kill_job.py`` until it SIGKILLs itself, then kill what is left of it; returns its output."""
    tag = f"RESCALE_KILL_RUN={os.getpid()}-{uuid.uuid4().hex}"
    log = tmp_path / f"kill-{kill_at}.log"
    cmd = [sys.executable, "-u", str(JOB), "--checkpoint", str(checkpoint), "--input", str(directory),
           "--partitions", str(partitions), "--kill-at", kill_at]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=str(JOB.parents[2]),
                                env={**os.environ, "RESCALE_KILL_RUN": tag.split("=", 1)[1]})
        try:
            rc = proc.wait(timeout=RUN_TIMEOUT)
        finally:
            deadline = time.monotonic() + 30  # the JVM's Python workers must not outlive the run
            while (pids := _tagged(tag.encode())) and time.monotonic() < deadline:
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                proc.poll()
                time.sleep(0.05)
    text = log.read_text(errors="replace")
    assert rc == -signal.SIGKILL, f"the run was not killed (rc {rc}):\n{text[-3000:]}"
    return text


def _newest_state(checkpoint: Path) -> Dict[str, Any]:
    newest = sorted((checkpoint / "flinkish" / "driver").glob("b=*.json"))[-1]
    return json.loads(newest.read_text())["state"]  # type: ignore[no-any-return]


def _meta(checkpoint: Path) -> Dict[str, Any]:
    return json.loads((checkpoint / "flinkish" / "meta.json").read_text())  # type: ignore[no-any-return]


@pytest.mark.timeout(900)
def test_a_sigkill_during_the_redistribution_leaves_a_checkpoint_that_restarts(spark: Any, tmp_path: Path) -> None:
    directory = tmp_path / "in"
    directory.mkdir()
    for i in range(BEFORE):
        write_file(directory, i)
    checkpoint = tmp_path / "ck"
    ids: List[Any] = []
    sums: List[Any] = []
    handle = file_job(spark, directory, 2, ids, sums).execute("kill-rescale-1", checkpoint_location=str(checkpoint))
    handle.process_all_available()
    handle.stop()
    before = _newest_state(checkpoint)
    state_files = checkpoint / "flinkish" / "state" / "op=sums"
    files_before = {p.name for p in state_files.glob("sp=*/s=*.parquet")}

    # killed after the split wrote some of the 4 new partitions: nothing the driver reads has changed
    log = _killed_run(tmp_path, checkpoint, directory, 4, "written")
    assert "SIGKILL after the split wrote" in log
    assert _meta(checkpoint)["state_partitions"] == 2 and _newest_state(checkpoint) == before
    assert {p.name for p in state_files.glob("sp=*/s=*.parquet")} > files_before  # new files, named by nothing

    # killed once the base's document names the new files, before meta.json
    log = _killed_run(tmp_path, checkpoint, directory, 4, "manifests")
    assert "SIGKILL before meta.json" in log
    assert _meta(checkpoint)["state_partitions"] == 2
    assert 2 in state_partitions_named(checkpoint)  # key "a" (crc32 % 4 == 2): the document has the new layout
    assert (checkpoint / "flinkish" / "rescale" / "pending.json").exists()

    # restarted with the old number: the interrupted rescaling is done again, into 2 partitions
    for i in range(BEFORE, len(FILES)):
        write_file(directory, i)
    handle = file_job(spark, directory, 2, ids, sums).execute("kill-rescale-2", checkpoint_location=str(checkpoint))
    handle.process_all_available()
    handle.stop()
    check(ids, sums, jvm_free(FILES))
    assert _meta(checkpoint)["state_partitions"] == 2 and set(state_partitions_named(checkpoint)) <= {0, 1}
    assert not (checkpoint / "flinkish" / "rescale").exists()

