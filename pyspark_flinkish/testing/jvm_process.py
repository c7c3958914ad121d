"""A test service that runs in a JVM of its own (the Kafka broker of :mod:`.kafka`, the test HDFS of :mod:`.hdfs`,
the S3 server of :mod:`.s3`): its working directory (temporary, or a kept ``data_dir``), its log file, how its process
is launched and ended, and a free port for it. A subclass builds the command line, starts the service and waits until
it serves (``start()``)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any, Callable, List, Optional

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _end_with_parent() -> Optional[Callable[[], None]]:
    """On Linux, a ``preexec_fn`` that makes the child receive ``SIGTERM`` when its parent dies (``prctl``'s parent-
    death signal): a run killed by a signal runs no ``stop()``, and its service must not stay behind (parent 1)
    holding ports, memory and CPU. The signal follows the *thread* that spawned the child, so only a child spawned
    from the main thread (which lives as long as the process) gets it. None elsewhere."""
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() == 1:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def default_java() -> str:
    """``$JAVA_HOME/bin/java``, else ``java`` on ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    return os.path.join(home, "bin", "java") if home else "java"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that no one listens on now (the operating system's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class JvmProcess:
    """The process side of a JVM test service. ``LOG_NAME``: its log file in :attr:`directory`; ``WHAT``: how
    messages name it."""

    LOG_NAME = "jvm.log"
    WHAT = "JVM"

    def __init__(self, data_dir: Optional[Path], java: Optional[str]) -> None:
        self.data_dir = None if data_dir is None else Path(data_dir).resolve()
        self.java = java or default_java()
        self.directory: Optional[Path] = None
        self._process: Optional[subprocess.Popen] = None  # type: ignore[type-arg]
        self._log_handle: Optional[IO[bytes]] = None

    @property
    def log_file(self) -> Optional[Path]:
        """The service's log (stdout and stderr of its JVM); None before ``start()``."""
        return None if self.directory is None else self.directory / self.LOG_NAME

    @property
    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_tail(self, lines: int = 60) -> str:
        """The last ``lines`` lines of the service's log (for error messages)."""
        path = self.log_file
        if path is None or not path.exists():
            return f"(no {self.WHAT} log)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def _spawn(self, cmd: List[str], stdin: Any, cwd: Optional[Path] = None) -> None:
        """Launch ``cmd`` (in ``cwd``), its output appended to the log file."""
        assert self.log_file is not None
        self._log_handle = open(self.log_file, "ab")
        self._process = subprocess.Popen(
            cmd,
            stdout=self._log_handle,
            stderr=subprocess.STDOUT,
            stdin=stdin,
            cwd=cwd,
            start_new_session=True,  # a Ctrl-C of the test run does not reach it first; stop() ends it
            preexec_fn=_end_with_parent(),  # a run killed by a signal (no stop()) does not leave it running
        )

    def _end(self, graceful: bool) -> None:
        """End the JVM (``SIGTERM`` and 20 s, else ``SIGKILL`` and 10 s; then ``SIGKILL``) and close its log."""
        process, self._process = self._process, None
        if process is not None:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM if graceful else signal.SIGKILL)
                try:
                    process.wait(timeout=20 if graceful else 10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)
            if process.stdin is not None:
                process.stdin.close()
        if self._log_handle is not None:
            self._log_handle.close()
            self._log_handle = None

    def _remove_directory(self) -> None:
        """Delete the temporary directory (never a ``data_dir``)."""
        if self.directory is not None and self.directory != self.data_dir:
            shutil.rmtree(self.directory, ignore_errors=True)
        self.directory = None

    def start(self) -> Any:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["JvmProcess", "default_java", "free_port"]
