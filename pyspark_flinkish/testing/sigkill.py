"""Kill-testing a Spark job: run its driver as a process of its own, SIGKILL it (or let it SIGKILL itself) at chosen
points, and make sure nothing of a killed run survives into the next one.

Test side: :class:`DriverRun` starts a job script with an environment tag that every process it starts inherits —
the driver, its JVM, the JVM's Python daemon and workers (the daemon makes a process group of its own, so a
process-group kill would miss it) — and :meth:`DriverRun.kill_all` SIGKILLs every tagged process until none is left;
:meth:`DriverRun.finish` waits for the driver and then kills what is left of the run (a killed driver's JVM and
workers exit by themselves a little later and must not touch the checkpoint once the next run starts). The
``driver_runs`` fixture (:mod:`pyspark_flinkish.testing.fixtures`) collects runs and kills them at the end of the
test, pass or fail.

Job side: :func:`crash` SIGKILLs the driver's JVM, then the driver, as if its machine died (the JVM would otherwise
outlive the driver for a moment and might, e.g., still write Spark's offsets log); :func:`crash_on_new_entry` does so
from a watching thread as soon as a listing (Spark's offsets log, a source log, a state directory) gains an entry.

Only for Linux (``/proc``). Importing this module imports neither pyspark nor pytest.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from types import ModuleType
from typing import IO, Callable, Iterable, List, Mapping, Optional, Sequence, Set, Union

__all__ = ["TAG_VARIABLE", "DriverRun", "crash", "crash_on_new_entry", "job_module", "tagged_processes"]

TAG_VARIABLE = "PYSPARK_FLINKISH_KILL_TEST_RUN"
"""The environment variable that tags every process of a :class:`DriverRun`."""


def tagged_processes(tag: str) -> List[int]:
    """The live processes whose environment holds ``tag`` (a ``NAME=value`` entry)."""
    wanted = tag.encode()
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    if wanted in f.read().split(b"\0"):
                        pids.append(int(name))
            except OSError:
                pass
    return pids


def job_module(script: Union[str, Path], name: Optional[str] = None) -> ModuleType:
    """The job script imported as a module (not run): a test reuses its pipeline, e.g. for the JVM-free reference
    run. ``name`` defaults to the file's stem."""
    path = Path(script)
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    if spec is None or spec.loader is None:
        msg = f"cannot import the job script {path}"
        raise ImportError(msg)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class DriverRun:
    """One driver process of a job: ``python -u script *args`` with its output (standard output and error) appended
    to ``log``, started at once. Every process it starts carries the environment tag :attr:`tag`, so that
    :meth:`kill_all` kills all of them.

    Args:
        script: the job's Python file.
        args: its command-line arguments.
        log: the run's log file (appended to).
        cwd: its working directory (default: this process's).
        env: extra environment variables for it.
    """

    def __init__(
        self,
        script: Union[str, Path],
        args: Sequence[str],
        log: Union[str, Path],
        *,
        cwd: Union[str, Path, None] = None,
        env: Optional[Mapping[str, str]] = None,
    ) -> None:
        value = f"{os.getpid()}-{uuid.uuid4().hex}"
        self.tag = f"{TAG_VARIABLE}={value}"
        self.log = Path(log)
        self.started = time.monotonic()
        self.elapsed = 0.0
        self.leftovers = 0
        self._log_file: IO[str] = open(self.log, "a")  # open as long as the run
        self.proc = subprocess.Popen(
            [sys.executable, "-u", str(script), *args],
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            cwd=None if cwd is None else str(cwd),
            env={**os.environ, **(env or {}), TAG_VARIABLE: value},
        )

    def lines(self) -> List[str]:
        """The log's lines so far."""
        return self.log.read_text(errors="replace").splitlines()

    def tail(self, n: int = 40) -> str:
        """The log's last ``n`` lines (for assertion messages)."""
        return "\n".join(self.lines()[-n:])

    def kill_all(self) -> int:
        """SIGKILL every process of this run (by pid) until none is left, for at most 30 s; returns how many were
        killed."""
        killed, deadline = 0, time.monotonic() + 30
        while time.monotonic() < deadline:
            pids = tagged_processes(self.tag)
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
                except ProcessLookupError:
                    pass
            self.proc.poll()  # reap the driver
            time.sleep(0.05)
        return killed

    def finish(self, timeout: float, *, since_start: bool = False) -> int:
        """Wait for the driver for ``timeout`` seconds (counted from the run's start with ``since_start``), then kill
        what is left of the run (:attr:`leftovers`: how many); returns the driver's exit code (``-9`` when it was
        SIGKILLed).

        Raises:
            subprocess.TimeoutExpired: the driver did not end in time (the whole run is killed first).
        """
        if since_start:
            timeout = max(1.0, timeout - (time.monotonic() - self.started))
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_all()
            self.proc.wait()
            self._log_file.close()
            raise
        finally:
            self.elapsed = time.monotonic() - self.started
        self.leftovers = self.kill_all()
        self._log_file.close()
        return rc


def _children(parent: int) -> List[int]:
    children = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == parent:
                children.append(int(name))
    return children


def crash(reason: str, driver: Optional[int] = None, note_to: Optional[str] = None) -> None:
    """SIGKILL the driver's children (its JVM), the driver, then this process (if it is another, e.g. a Python
    worker of the driver's JVM), as if the driver's machine died. Prints ``SIGKILL <reason>`` first.

    Args:
        reason: why, for the log.
        driver: the driver's process id (default: this process).
        note_to: a file the line is also appended to (synced): a Python worker's output reaches the log through the
            JVM, which this kills, so only the file is sure to have it.
    """
    print(f"SIGKILL {reason}", flush=True)
    if note_to:
        with open(note_to, "a") as f:
            f.write(f"SIGKILL {reason}\n")
            f.flush()
            os.fsync(f.fileno())
    me = os.getpid()
    driver = me if driver is None else driver
    for pid in _children(driver):
        if pid != me:
            os.kill(pid, signal.SIGKILL)
    os.kill(driver, signal.SIGKILL)
    os.kill(me, signal.SIGKILL)


def crash_on_new_entry(
    list_names: Callable[[], Iterable[str]],
    reason: str,
    *,
    driver: Optional[int] = None,
    note_to: Optional[str] = None,
    interval: float = 0.0005,
) -> threading.Thread:
    """Start a daemon thread that calls :func:`crash` (``"<reason> [new names]"``, ``driver`` and ``note_to`` as
    there) as soon as ``list_names()`` returns a name it did not return when the thread started; names starting with
    ``.`` (Spark's temporary files and checksums) do not count. E.g. ``lambda: os.listdir(f"{checkpoint}/spark/offsets")``
    kills the driver once Spark planned the next micro-batch."""
    before: Set[str] = set(list_names())

    def watch() -> None:
        while True:
            new = sorted(n for n in list_names() if n not in before and not os.path.basename(n).startswith("."))
            if new:
                crash(f"{reason} {new}", driver, note_to)
            time.sleep(interval)

    thread = threading.Thread(target=watch, name="crash-on-new-entry", daemon=True)
    thread.start()
    return thread
