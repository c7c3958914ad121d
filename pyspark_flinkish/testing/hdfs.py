"""A real HDFS (Hadoop's ``MiniDFSCluster``: one NameNode and one DataNode on 127.0.0.1) in its own JVM, for tests.

The cluster runs from the jars ``python -m pyspark_flinkish.spark.jars`` (``make jars``) fetched into
``<jars>/hdfs/`` -- ``org.apache.hadoop:hadoop-client-minicluster`` of the Hadoop version pyspark ships -- with the
package's launcher ``spark/jvm/MiniHdfs.java`` (compiled there by ``javac`` when first needed), never on Spark's
classpath. Its storage and its log file are in a temporary directory (or a given one)::

    with MiniHdfs() as hdfs:
        df.write.parquet(f"{hdfs.uri}/x")                    # Spark: a plain hdfs:// URI, no configuration
        hdfs.client().list_status("/x")                      # the hdfs-native client (PyPI `hdfs-native`), no JVM

``uri`` is ``hdfs://127.0.0.1:<port>``; WebHDFS is on as well (``webhdfs_uri``). Permissions are off and the
replication is 1. ``stop()`` (or leaving the ``with`` block, also on an exception) shuts the JVM down and removes the
temporary directory; the JVM also exits by itself when the process that started it dies (its standard input closes).
Importing this module imports neither pyspark nor hdfs-native.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from ..core.errors import FlinkishError
from .jvm_process import JvmProcess

__all__ = ["MiniHdfs", "MiniHdfsError", "hdfs_classpath"]

CLIENT_CONFIG: Dict[str, str] = {"dfs.client.failover.max.attempts": "1"}
"""hdfs-native settings of :meth:`MiniHdfs.client`: one connection attempt, so that a stopped cluster is an
immediate ``Connection refused`` instead of a hang of more than 40 s."""


class MiniHdfsError(FlinkishError, RuntimeError):
    """The test HDFS could not be started or reached; the message holds its log's tail."""


def hdfs_classpath(directory: Optional[Path] = None) -> List[str]:
    """The test cluster's classpath: the jars in ``<jars>/hdfs/`` and the compiled launcher (compiled now when needed).

    Raises :class:`MiniHdfsError` with the command to fetch the jars when they are missing, and when the fetched jars
    are of another Hadoop version than the one pyspark ships.
    """
    from ..spark import jars

    base = directory or jars.default_dir()
    try:
        wanted = jars.hadoop_version()
    except (RuntimeError, FileNotFoundError) as exc:
        raise MiniHdfsError(str(exc)) from exc
    found = jars.jars("hdfs", directory)
    if not found:
        fetched = jars.fetched_hadoop_version(base)
        if fetched is not None and fetched != wanted:
            msg = (
                f"the HDFS minicluster jars in {base / 'hdfs'} are of Hadoop {fetched}, but pyspark ships Hadoop {wanted} "
                "(the cluster and Spark's client must match): run `make jars` again "
                "(or `python -m pyspark_flinkish.spark.jars`), which fetches the matching version"
            )
        else:
            msg = (
                f"the HDFS minicluster jars are not in {base / 'hdfs'}: run `make jars` "
                "(or `python -m pyspark_flinkish.spark.jars`; needs `mvn` and a Maven repository once), "
                "or point PYSPARK_FLINKISH_JARS at a folder that holds them"
            )
        raise MiniHdfsError(msg)
    try:
        classes = jars.hdfs_launcher(base)
    except (RuntimeError, FileNotFoundError) as exc:
        msg = f"the HDFS test cluster's launcher could not be compiled: {exc}"
        raise MiniHdfsError(msg) from exc
    return [str(classes), *found]


class MiniHdfs(JvmProcess):
    """One NameNode and one DataNode (Hadoop's ``MiniDFSCluster``) on 127.0.0.1, in their own JVM.

    Args:
        data_dir: a folder that keeps the cluster's storage (``data_dir/hdfs``) and its log across ``stop()`` and later
            clusters on it (files survive; ports are new at every ``start()`` unless ``port`` is given). Default: a
            temporary directory that ``stop()`` removes.
        jars_dir: folder with the fetched jars (default: ``$PYSPARK_FLINKISH_JARS`` or ``<checkout>/.jars``).
        port: the NameNode's RPC port (default: a free one, chosen by the NameNode itself).
        heap: the JVM's maximum heap (``-Xmx``).
        startup_timeout: seconds to wait for the cluster to take a first file; then the JVM is killed and
            :class:`MiniHdfsError` raised with the log's tail.
        java: the ``java`` executable (default: ``$JAVA_HOME/bin/java``, else ``java`` on ``PATH``).
        config: extra Hadoop settings of the NameNode and DataNode (``hdfs-site.xml`` keys).
        log_level: the level of Hadoop's messages in the log file (SLF4J simple logger: ``trace``, ``debug``,
            ``info``, ``warn``, ``error``).

    Lifecycle: ``start()`` launches the JVM and returns when the NameNode answers and a first file was written and
    deleted (the launcher checks that, then writes a ``READY`` file with its ports); ``stop()`` shuts it down
    (``SIGTERM``, then ``SIGKILL``) and deletes the temporary directory (never a ``data_dir``). The object is a
    context manager.
    """

    LOG_NAME = "minihdfs.log"
    WHAT = "MiniHdfs"

    def __init__(
        self,
        data_dir: Optional[Path] = None,
        jars_dir: Optional[Path] = None,
        port: Optional[int] = None,
        heap: str = "512m",
        startup_timeout: float = 120.0,
        java: Optional[str] = None,
        config: Optional[Dict[str, str]] = None,
        log_level: str = "warn",
    ) -> None:
        super().__init__(data_dir, java)
        self.jars_dir = jars_dir
        self.requested_port = port
        self.heap = heap
        self.startup_timeout = startup_timeout
        self.config = dict(config or {})
        self.log_level = log_level
        self.port: Optional[int] = None
        self.http_port: Optional[int] = None
        self.startup_seconds: Optional[float] = None
        """Wall-clock seconds of the last ``start()``, from launching the JVM to the cluster taking its first file."""
        self._started_at = 0.0

    # ------------------------------------------------------------------ properties
    @property
    def uri(self) -> str:
        """``hdfs://127.0.0.1:<port>``: the NameNode, for Spark paths (``f"{uri}/x"``) or ``fs.defaultFS``."""
        if self.port is None:
            msg = "the cluster has not been started: call start() or use `with MiniHdfs() as hdfs:`"
            raise MiniHdfsError(msg)
        return f"hdfs://127.0.0.1:{self.port}"

    @property
    def webhdfs_uri(self) -> str:
        """``webhdfs://127.0.0.1:<NameNode HTTP port>`` (WebHDFS REST at ``http://127.0.0.1:<port>/webhdfs/v1``)."""
        if self.http_port is None:
            msg = "the cluster has not been started: call start() or use `with MiniHdfs() as hdfs:`"
            raise MiniHdfsError(msg)
        return f"webhdfs://127.0.0.1:{self.http_port}"

    def client(self, **config: str) -> Any:
        """An ``hdfs_native.Client`` of the cluster (PyPI ``hdfs-native``: no JVM), failing fast when it is down;
        ``config`` adds or overrides hdfs-native settings (``.`` in a key is written as ``__``)."""
        try:
            from hdfs_native import Client
        except ImportError as exc:
            msg = "MiniHdfs.client() needs the hdfs-native package: pip install hdfs-native"
            raise MiniHdfsError(msg) from exc
        settings = dict(CLIENT_CONFIG)
        settings.update({key.replace("__", "."): value for key, value in config.items()})
        return Client(self.uri, config=settings)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> MiniHdfs:
        """Launch the JVM and wait until the cluster serves (at most ``startup_timeout`` seconds)."""
        if self.is_running:
            return self
        classpath = os.pathsep.join(hdfs_classpath(self.jars_dir))
        if self.data_dir is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self.directory = self.data_dir
        else:
            self.directory = Path(tempfile.mkdtemp(prefix="flinkish-hdfs-"))
        try:
            self._launch(classpath)
            self._wait_until_serving()
        except BaseException:
            self.stop()
            raise
        return self

    def _command(self, classpath: str) -> List[str]:
        from ..spark.jars import HDFS_LAUNCHER

        assert self.directory is not None
        storage = self.directory / "hdfs"
        # the NameNode's storage: <base>/name-0-1 (Hadoop 3.5), <base>/data/name1 (earlier versions)
        formatted = any(storage.glob("name*/current/VERSION")) or any(storage.glob("data/name*/current/VERSION"))
        cmd = [
            self.java,
            f"-Xmx{self.heap}",
            "-Xms64m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",  # starts faster, uses less CPU: a test cluster carries little load
            "-Djava.awt.headless=true",
            "-Djava.net.preferIPv4Stack=true",
            f"-Dorg.slf4j.simpleLogger.defaultLogLevel={self.log_level}",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
            "-cp",
            classpath,
            HDFS_LAUNCHER,
            "--base",
            str(storage),
            "--ready",
            str(self.directory / "READY"),
            "--port",
            str(self.requested_port or 0),
            "--exit-on-stdin-eof",
        ]
        if formatted and self.data_dir is not None:
            cmd.append("--no-format")  # a data_dir's files survive
        for key, value in self.config.items():
            cmd += ["--conf", f"{key}={value}"]
        return cmd

    def _launch(self, classpath: str) -> None:
        assert self.directory is not None
        (self.directory / "READY").unlink(missing_ok=True)
        self._started_at = time.monotonic()
        # stdin is never written: the JVM exits when it closes (this process died, or stop())
        self._spawn(self._command(classpath), stdin=subprocess.PIPE, cwd=self.directory)

    def _read_ready(self) -> Optional[Dict[str, str]]:
        assert self.directory is not None
        path = self.directory / "READY"
        if not path.exists():
            return None
        pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
        return {key.strip(): value.strip() for key, value in pairs}

    def _wait_until_serving(self) -> None:
        deadline = self._started_at + self.startup_timeout
        while True:
            if not self.is_running:
                code = self._process.returncode if self._process is not None else None
                msg = f"the test HDFS exited during start-up (exit code {code}); its log ends with:\n{self.log_tail()}"
                raise MiniHdfsError(msg)
            ready = self._read_ready()
            if ready is not None:
                self.port, self.http_port = int(ready["rpc.port"]), int(ready["http.port"])
                try:  # the launcher wrote a file through the NameNode; check it answers this process too
                    with socket.create_connection(("127.0.0.1", self.port), timeout=5):
                        pass
                except OSError as exc:
                    msg = (
                        f"the test HDFS reported port {self.port}, which refuses connections ({exc}); "
                        f"its log ends with:\n{self.log_tail()}"
                    )
                    raise MiniHdfsError(msg) from exc
                self.startup_seconds = time.monotonic() - self._started_at
                return
            if time.monotonic() >= deadline:
                pid = self._process.pid if self._process is not None else None
                msg = (
                    f"the test HDFS did not start within {self.startup_timeout:g} s (its JVM, pid {pid}, is killed); "
                    f"its log ends with:\n{self.log_tail()}"
                )
                raise MiniHdfsError(msg)
            time.sleep(0.1)

    def stop(self) -> None:
        """Shut the JVM down (``SIGTERM``, ``SIGKILL`` after 20 s) and remove the temporary directory (idempotent);
        a ``data_dir`` is kept."""
        self._end(graceful=True)
        self._remove_directory()
        self.port = self.http_port = None

    def __repr__(self) -> str:
        state = f"running on {self.uri}" if self.is_running else "stopped"
        return f"MiniHdfs({state})"
