"""An S3-compatible server (S3Proxy, ``org.gaul:s3proxy``) in its own JVM, for tests.

The server runs from the jar ``python -m pyspark_flinkish.spark.jars`` (``make jars``) fetched into
``<jars>/s3proxy/`` -- never on Spark's classpath -- on a free loopback port, with AWS signatures (V2 and V4) checked
against one access key, its objects in a folder of a temporary directory (jclouds' ``filesystem`` provider) and its
log file there too::

    with S3Proxy() as s3:
        s3.create_bucket("lake")
        conf = s3.hadoop_settings()                  # fs.s3a.endpoint, keys, path-style access, ... for Spark's s3a
        s3.filesystem().get_file_info("lake/x")      # pyarrow's S3 client, no JVM

Spark reaches it through its ``s3a://`` file system, which pyspark does not ship: the ``s3a`` jars of ``make jars``
(``org.apache.hadoop:hadoop-aws`` and the AWS SDK bundle) must be on the session's classpath
(``pyspark_flinkish.spark.jars.s3a_settings()``). ``stop()`` (or leaving the ``with`` block, also on an
exception) shuts the JVM down and removes the temporary directory. Importing this module imports no pyspark.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from ..core.errors import FlinkishError
from .jvm_process import JvmProcess, free_port

__all__ = ["S3Proxy", "S3ProxyError", "s3proxy_classpath"]

ACCESS_KEY = "flinkish"
SECRET_KEY = "flinkish-secret-key"
REGION = "us-east-1"
MAIN_CLASS = "org.gaul.s3proxy.Main"


class S3ProxyError(FlinkishError, RuntimeError):
    """The test S3 server could not be started or reached; the message holds its log's tail."""


def s3proxy_classpath(directory: Optional[Path] = None) -> List[str]:
    """The server's classpath: the jar in ``<jars>/s3proxy/``. Raises :class:`S3ProxyError` with the command to
    fetch it when it is missing."""
    from ..spark import jars

    found = jars.jars("s3proxy", directory)
    if not found:
        base = directory or jars.default_dir()
        msg = (
            f"the S3Proxy jar is not in {base / 's3proxy'}: run `make jars` "
            "(or `python -m pyspark_flinkish.spark.jars`; needs `mvn` and a Maven repository once), "
            "or point PYSPARK_FLINKISH_JARS at a folder that holds it"
        )
        raise S3ProxyError(msg)
    return found


class S3Proxy(JvmProcess):
    """An S3-compatible endpoint on ``http://127.0.0.1:<port>`` (S3Proxy over jclouds), in its own JVM.

    Args:
        data_dir: a folder that keeps the objects (``data_dir/blobs``: a bucket is a folder) and the log across
            ``stop()`` and later servers on it. Default: a temporary directory that ``stop()`` removes.
        jars_dir: folder with the fetched jars (default: ``$PYSPARK_FLINKISH_JARS`` or ``<checkout>/.jars``).
        port: the port (default: a free one).
        buckets: buckets to create once the server serves.
        heap: the JVM's maximum heap (``-Xmx``).
        startup_timeout: seconds to wait for the server to answer; then the JVM is killed and
            :class:`S3ProxyError` raised with the log's tail.
        java: the ``java`` executable (default: ``$JAVA_HOME/bin/java``, else ``java`` on ``PATH``).

    Every request must be signed with :attr:`access_key` and :attr:`secret_key` (``s3proxy.authorization=
    aws-v2-or-v4``); addressing is path-style (``http://127.0.0.1:<port>/<bucket>/<key>``).
    """

    LOG_NAME = "s3proxy.log"
    WHAT = "S3Proxy"

    def __init__(
        self,
        data_dir: Optional[Path] = None,
        jars_dir: Optional[Path] = None,
        port: Optional[int] = None,
        buckets: Sequence[str] = (),
        heap: str = "256m",
        startup_timeout: float = 60.0,
        java: Optional[str] = None,
    ) -> None:
        super().__init__(data_dir, java)
        self.jars_dir = jars_dir
        self.requested_port = port
        self.buckets = tuple(buckets)
        self.heap = heap
        self.startup_timeout = startup_timeout
        self.access_key = ACCESS_KEY
        self.secret_key = SECRET_KEY
        self.region = REGION
        self.port: Optional[int] = None
        self.startup_seconds: Optional[float] = None
        """Wall-clock seconds of the last ``start()``, from launching the JVM to the server answering."""

    # ------------------------------------------------------------------ properties
    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>``."""
        if self.port is None:
            msg = "the server has not been started: call start() or use `with S3Proxy() as s3:`"
            raise S3ProxyError(msg)
        return f"http://127.0.0.1:{self.port}"

    @property
    def blob_dir(self) -> Optional[Path]:
        """The folder that holds the objects (a bucket is a folder of it); None before ``start()``."""
        return None if self.directory is None else self.directory / "blobs"

    def hadoop_settings(self) -> Dict[str, str]:
        """Hadoop settings of Spark's ``s3a`` file system for this server (``fs.s3a.*``: set them as
        ``spark.hadoop.fs.s3a.*`` on a builder, or with ``spark.conf.set`` on a session). The package's own S3
        client reads the same settings from the session (``spark/storage.py``)."""
        return {
            "fs.s3a.endpoint": self.endpoint,
            "fs.s3a.endpoint.region": self.region,
            "fs.s3a.access.key": self.access_key,
            "fs.s3a.secret.key": self.secret_key,
            "fs.s3a.path.style.access": "true",
            "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            # fail fast when the server is gone instead of retrying for minutes
            "fs.s3a.attempts.maximum": "2",
            "fs.s3a.retry.limit": "2",
        }

    def filesystem(self, allow_bucket_creation: bool = False) -> Any:
        """A ``pyarrow.fs.S3FileSystem`` of the server (no JVM); paths are ``<bucket>/<key>``."""
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(
            access_key=self.access_key,
            secret_key=self.secret_key,
            region=self.region,
            endpoint_override=self.endpoint.split("://", 1)[1],
            scheme="http",
            force_virtual_addressing=False,
            allow_bucket_creation=allow_bucket_creation,
            connect_timeout=5,
            request_timeout=30,
        )

    def create_bucket(self, name: str) -> str:
        """Create the bucket ``name`` (nothing when it exists); returns ``s3a://<name>``."""
        self.filesystem(allow_bucket_creation=True).create_dir(name)
        return f"s3a://{name}"

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> S3Proxy:
        """Launch the JVM and wait until the server answers (at most ``startup_timeout`` seconds), then create
        :attr:`buckets`."""
        if self.is_running:
            return self
        classpath = s3proxy_classpath(self.jars_dir)
        if self.data_dir is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self.directory = self.data_dir
        else:
            self.directory = Path(tempfile.mkdtemp(prefix="flinkish-s3-"))
        try:
            self.port = self.requested_port or free_port()
            blobs = self.directory / "blobs"
            blobs.mkdir(exist_ok=True)
            props = self.directory / "s3proxy.conf"
            props.write_text(
                "\n".join(
                    [
                        f"s3proxy.endpoint=http://127.0.0.1:{self.port}",
                        "s3proxy.authorization=aws-v2-or-v4",
                        f"s3proxy.identity={self.access_key}",
                        f"s3proxy.credential={self.secret_key}",
                        "jclouds.provider=filesystem",
                        f"jclouds.filesystem.basedir={blobs}",
                        f"jclouds.identity={self.access_key}",
                        f"jclouds.credential={self.secret_key}",
                        "",
                    ]
                )
            )
            started = time.monotonic()
            cmd = [
                self.java,
                f"-Xmx{self.heap}",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Djava.net.preferIPv4Stack=true",
                "-DLOG_LEVEL=warn",  # S3Proxy's logback configuration reads it (and JETTY_LOG_LEVEL)
                "-DJETTY_LOG_LEVEL=warn",
                "-cp",
                os.pathsep.join(classpath),
                MAIN_CLASS,
                "--properties",
                str(props),
            ]
            self._spawn(cmd, stdin=subprocess.DEVNULL, cwd=self.directory)
            self._wait_until_serving(started)
            for bucket in self.buckets:
                self.create_bucket(bucket)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_serving(self, started: float) -> None:
        assert self.port is not None
        deadline = started + self.startup_timeout
        while True:
            if not self.is_running:
                code = self._process.returncode if self._process is not None else None
                msg = f"the test S3 server exited during start-up (exit code {code}); its log ends with:\n{self.log_tail()}"
                raise S3ProxyError(msg)
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                    conn.sendall(b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
                    if conn.recv(12).startswith(b"HTTP/"):  # an answer (403: an unsigned request), i.e. serving
                        self.startup_seconds = time.monotonic() - started
                        return
            except OSError:
                pass
            if time.monotonic() >= deadline:
                pid = self._process.pid if self._process is not None else None
                msg = (
                    f"the test S3 server did not answer on port {self.port} within {self.startup_timeout:g} s (its JVM, "
                    f"pid {pid}, is killed); its log ends with:\n{self.log_tail()}"
                )
                raise S3ProxyError(msg)
            time.sleep(0.1)

    def stop(self) -> None:
        """Shut the JVM down (``SIGTERM``, ``SIGKILL`` after 20 s) and remove the temporary directory (idempotent);
        a ``data_dir`` is kept."""
        self._end(graceful=True)
        self._remove_directory()
        self.port = None

    def __repr__(self) -> str:
        state = f"running on {self.endpoint}" if self.is_running else "stopped"
        return f"S3Proxy({state})"
