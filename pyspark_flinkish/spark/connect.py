"""Spark Connect sessions: where a job's pieces run, and how values reach the user's Python.

On a classic session the foreachBatch function of a job (:class:`~.driver.ForeachBatchDriver`) runs in the
user's own Python process. On a Spark Connect session (Databricks serverless and standard access mode,
``SparkSession.builder.remote(...)``) Spark pickles it and runs it in a Python process **of the server**: a sink
that hands values to the user's Python (``add_sink``, ``print``, ``execute_and_collect``) would run there, on a
copy of the user's objects, and the user would see nothing. So on Connect:

* the server-side driver writes each such sink's values of a micro-batch into an *outbox* under the checkpoint
  (``<checkpoint>/flinkish/outbox/run=<run>/b=<batch>.s=<sink>.pkl``, :class:`Outbox`), and the client
  (:class:`ClientDelivery`) hands them to the user's sink functions in its own process, batch by batch and sink
  by sink in the order the classic driver uses: as the job runs (a polling thread), and completely before
  ``process_all_available()``, ``await_termination()`` and ``stop()`` return;
* the progress callback of ``execute(progress=...)`` is called by the client too, after the batch's sinks, with the
  progress document the server-side driver puts in the outbox as a batch's last step (it marks the batch complete);
* sinks that write through Spark (``DeltaSink``, ``foreach_batch``) run on the server, as Spark's foreachBatch does;
* a :class:`~pyspark_flinkish.core.clock.ManualClock` is refused (its time would be set in the client's process
  while the job reads the server's copy).

The package reaches the server's foreachBatch process inside the foreachBatch function (:func:`remote_batch_function`:
Connect's session artifacts do not reach that process) and the executors as a session artifact (:func:`ship_package`,
``spark.addArtifacts(..., pyfile=True)``); a user's module goes to the executors with :func:`ship_module`.
See ``docs/databricks-and-spark-connect.md``.
"""

from __future__ import annotations

import collections
import hashlib
import io
import logging
import os
import pickle
import shutil
import tempfile
import threading
import uuid
import zipfile
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Set

from ..core.clock import ManualClock
from ..core.errors import UnsupportedFeatureError
from ..datastream.plan import Transformation
from . import storage
from .checkpoint import write_atomically
from .error_transport import reported_to_driver
from .rows import dumps

_log = logging.getLogger("pyspark_flinkish.spark")

#: Environment variable: ``0`` turns off shipping the package to a Connect server (:func:`ship_package`).
SHIP_PACKAGE_ENV = "PYSPARK_FLINKISH_SHIP_PACKAGE"


def is_connect(spark: Any) -> bool:
    """True when ``spark`` is a Spark Connect session (``pyspark.sql.connect.session.SparkSession``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def set_log_level(spark: Any, level: str) -> None:
    """``spark.sparkContext.setLogLevel(level)`` on a classic session; nothing on Connect (no ``sparkContext`` in the
    client: the server's log level is the server's configuration)."""
    if not is_connect(spark):
        spark.sparkContext.setLogLevel(level)


def check_connect_job(env: Any) -> None:
    """Refuse, when the job is built, what cannot run on a Connect session as it would on a classic one."""
    if isinstance(env.clock, ManualClock):
        msg = (
            "a ManualClock cannot drive a job on a Spark Connect session: the job's driver runs in a Python process "
            "of the Spark Connect server, with a copy of the clock, so advancing it here would never reach the job. "
            "Use the wall clock (the default), MicroBatch(processing_time=...) of a MicroBatchSource, or a classic "
            "SparkSession (or the JVM-free engine) for tests with a manual clock"
        )
        raise UnsupportedFeatureError(msg)


class Outbox:
    """What the client must see of one run of a job, one file per micro-batch and client sink, under the checkpoint.

    The server-side driver writes each client sink's values (:meth:`write`) and, as the batch's last step, its
    progress document (the driver's progress callback: calling the outbox); the client reads complete batches
    (:meth:`ready`, :meth:`take`, :meth:`progress_of`) and removes what it delivered. Each run of a job (each
    ``execute``) has a directory of its own, so that a replayed batch of a new run is delivered by that run, and a
    batch of an earlier run is never delivered twice.
    """

    PROGRESS = -1  # the "sink index" of a batch's progress document: written last, it marks the batch complete

    def __init__(self, checkpoint: str, run: Optional[str] = None) -> None:
        self.checkpoint = checkpoint
        self.base = storage.join(checkpoint, "flinkish", "outbox")
        self.run = run or uuid.uuid4().hex
        self.root = storage.join(self.base, f"run={self.run}")

    def _path(self, batch_id: int, sink_index: int) -> str:
        return storage.join(self.root, f"b={batch_id:012d}.s={sink_index}.pkl")

    def write(self, batch_id: int, sink_index: int, values: Sequence[Any]) -> None:
        """Server side: the sink's values of the batch (replacing those of a replayed attempt)."""
        write_atomically(self._path(batch_id, sink_index), pickle.dumps([dumps(v) for v in values], protocol=4))

    def __call__(self, progress: Dict[str, Any]) -> None:
        """Server side, the driver's progress callback: the batch's progress document; the batch is complete."""
        write_atomically(self._path(int(progress["batch_id"]), self.PROGRESS), pickle.dumps(dict(progress), protocol=4))

    def ready(self, sink_indices: Sequence[int]) -> List[int]:
        """Client side: the complete batches (every sink's values and the progress document), ascending."""
        seen: Dict[int, Set[int]] = {}
        for name in storage.list_names(self.root):
            if name.startswith("b=") and name.endswith(".pkl"):
                batch, sink = name[2:-4].split(".s=")
                seen.setdefault(int(batch), set()).add(int(sink))
        wanted = {*sink_indices, self.PROGRESS}
        return sorted(b for b, sinks in seen.items() if wanted <= sinks)

    def take(self, batch_id: int, sink_index: int) -> List[Any]:
        """Client side: the sink's values of the batch, unpickled in this process."""
        return [pickle.loads(v) for v in pickle.loads(storage.read_bytes(self._path(batch_id, sink_index)))]

    def progress_of(self, batch_id: int) -> Dict[str, Any]:
        """Client side: the batch's progress document."""
        return pickle.loads(storage.read_bytes(self._path(batch_id, self.PROGRESS)))  # type: ignore[no-any-return]

    def remove(self, batch_id: int, sink_indices: Sequence[int]) -> None:
        for index in (*sink_indices, self.PROGRESS):
            storage.delete(self._path(batch_id, index))

    def earlier_runs(self) -> List[Outbox]:
        """The outboxes earlier runs of the job left under the checkpoint, oldest first."""
        runs = [n for n in storage.list_dirs(self.base) if n.startswith("run=") and n != f"run={self.run}"]
        runs.sort(key=lambda n: storage.modified_ms(storage.join(self.base, n)))
        return [Outbox(self.checkpoint, n[len("run=") :]) for n in runs]

    def remove_run(self) -> None:
        storage.delete_tree(self.root)


class ClientDelivery:
    """Client side of a job on Connect: hands the outbox's values to the user's sinks and the progress documents to
    ``execute(progress=...)``'s callback, in this process, batch by batch in ascending batch id, sink by sink in
    plan order (as the classic driver does), the progress callback after the batch's sinks.

    ``sinks`` maps a sink's index (as the driver writes it) to its transformation; ``deliver(t, values, batch_id)``
    hands one sink its values (:func:`~.delivery.deliver_values` without an outbox). :attr:`history` holds the
    progress documents of the last 100 batches delivered (what ``SparkJobHandle.progress()`` reads on Connect).
    """

    def __init__(
        self,
        outbox: Outbox,
        sinks: Dict[int, Transformation],
        deliver: Callable[[Transformation, List[Any], int], None],
        progress: Optional[Callable[[Any], None]] = None,
        poll_seconds: float = 0.2,
    ) -> None:
        self.outbox = outbox
        self.sinks = sinks
        self.deliver = deliver
        self.progress = progress
        self.poll_seconds = poll_seconds
        self.batches_delivered = 0
        self.history: Deque[Dict[str, Any]] = collections.deque(maxlen=100)
        self.failure: Optional[BaseException] = None  # a client sink's error, raised by the handle
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def drain(self) -> int:
        """Deliver every complete batch; returns how many. A sink's error stops delivery and is raised (and kept in
        :attr:`failure`, raised again by every later call)."""
        delivered = 0
        with self._lock:
            if self.failure is not None:
                raise self.failure
            indices = sorted(self.sinks)
            for batch_id in self.outbox.ready(indices):
                try:
                    for index in indices:
                        self.deliver(self.sinks[index], self.outbox.take(batch_id, index), batch_id)
                except BaseException as exc:
                    self.failure = exc
                    raise
                doc = self.outbox.progress_of(batch_id)
                self.outbox.remove(batch_id, indices)
                self.history.append(doc)
                delivered += 1
                if self.progress is not None:
                    self.progress(doc)
            self.batches_delivered += delivered
        return delivered

    def deliver_earlier_runs(self) -> int:
        """Before the job starts: deliver the complete batches an earlier run of the job left undelivered (its
        client stopped after the server committed them: Spark will not replay them), then remove those runs. A
        batch the server had not committed is replayed by this run (delivered again: at least once, as a sink
        function's delivery is on a classic session after a crash). Returns how many batches were delivered."""
        delivered = 0
        indices = sorted(self.sinks)
        for earlier in self.outbox.earlier_runs():
            for batch_id in earlier.ready(indices):
                for index in indices:
                    self.deliver(self.sinks[index], earlier.take(batch_id, index), batch_id)
                earlier.remove(batch_id, indices)
                delivered += 1
            earlier.remove_run()
        return delivered

    def start(self, is_active: Callable[[], bool], on_failure: Optional[Callable[[], None]] = None) -> None:
        """Deliver from a daemon thread while ``is_active()`` (the query runs), every ``poll_seconds``; when a sink
        fails, call ``on_failure`` (the handle stops the query) and stop (the handle raises the error)."""

        def loop() -> None:
            while not self._stop.wait(self.poll_seconds):
                try:
                    self.drain()
                except BaseException:  # kept in self.failure; the handle raises it
                    _log.exception("delivering a micro-batch to the client's sinks failed")
                    if on_failure is not None:
                        on_failure()
                    return
                if not is_active():
                    return

        self._thread = threading.Thread(target=loop, name="pyspark_flinkish-connect-delivery", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()


class RemoteBatchFunction:
    """The foreachBatch function given to Spark on Connect: the driver, with package errors put between the markers
    of :mod:`.error_transport` so that the client rebuilds them from the text of Spark's ``StreamingQueryException``
    (the exception object itself stays in the server's Python)."""

    def __init__(self, driver: Callable[[Any, int], None]) -> None:
        self.driver = driver

    def __call__(self, df: Any, batch_id: int) -> None:
        with reported_to_driver():
            self.driver(df, batch_id)


def _bootstrap(payload: bytes, package: Optional[bytes], files: Sequence[Any] = ()) -> Callable[[Any, int], None]:
    """A foreachBatch function pickled by value (a closure), so that unpickling it needs no ``pyspark_flinkish``:
    Spark Connect's foreachBatch worker does not see the session's Python artifacts (measured with pyspark 4.2), so
    on its first call it puts the shipped package zip first on ``sys.path``, then unpickles the real function."""
    state: Dict[str, Any] = {}

    def flinkish_foreach_batch(df: Any, batch_id: int) -> None:
        if "function" not in state:
            import os as os_
            import sys as sys_
            import tempfile as tempfile_

            from pyspark import cloudpickle as cloudpickle_

            if package is not None:
                fd, path = tempfile_.mkstemp(prefix="pyspark_flinkish-", suffix=".zip")
                with os_.fdopen(fd, "wb") as f:
                    f.write(package)
                sys_.path.insert(0, path)
            if files:  # add_python_file's files: .py modules in a directory of their own, archives as they are
                directory = tempfile_.mkdtemp(prefix="pyspark_flinkish-pyfiles-")
                for name, data in files:
                    with open(os_.path.join(directory, name), "wb") as f:
                        f.write(data)
                    if not name.endswith(".py"):
                        sys_.path.insert(1, os_.path.join(directory, name))
                sys_.path.insert(1, directory)
            state["function"] = cloudpickle_.loads(payload)
        state["function"](df, batch_id)

    return flinkish_foreach_batch


def remote_batch_function(
    function: Callable[[Any, int], None], spark: Any, python_files: Sequence[str] = ()
) -> Callable[[Any, int], None]:
    """What ``writeStream.foreachBatch`` gets on Connect: ``function`` (the driver) with package errors put between
    markers (:class:`RemoteBatchFunction`), which brings this process's package along (:func:`package_zip`) unless
    ``PYSPARK_FLINKISH_SHIP_PACKAGE=0``, and the ``python_files`` of ``add_python_file``; the package also goes to the
    session's executors (:func:`ship_package`)."""
    from pyspark import cloudpickle

    package = None
    if os.environ.get(SHIP_PACKAGE_ENV, "1") != "0":
        ship_package(spark)
        package = package_zip()
    files = []
    for path in python_files:
        with open(path, "rb") as f:
            files.append((os.path.basename(path), f.read()))
    return _bootstrap(cloudpickle.dumps(RemoteBatchFunction(function), protocol=4), package, files)


def start_query(writer: Any, attempts: int = 3) -> Any:
    """``writer.start()`` on Connect, tried again when the server's new foreachBatch Python process did not connect
    back in time: Spark gives it 10 seconds (fixed), which an overloaded machine can miss (measured); the query has
    not started then, so starting it again is safe. Other errors are raised at once."""
    for _ in range(attempts - 1):
        try:
            return writer.start()
        except Exception as exc:
            if "failed to connect back" not in str(exc):
                raise
            _log.warning("the foreachBatch Python worker did not connect back to the Connect server; starting again")
    return writer.start()


# ---------------------------------------------------------------------------------------- artifacts
_shipped: Dict[str, Set[str]] = {}  # session id -> artifacts added to it by this process
_ship_lock = threading.Lock()


def _session_key(spark: Any) -> str:
    return str(getattr(spark, "session_id", None) or id(spark))


def _add_artifact(spark: Any, name: str, data: bytes) -> bool:
    """Add ``data`` as the Python artifact ``name`` (a zip or a ``.py``) once per session; True if added now."""
    with _ship_lock:
        done = _shipped.setdefault(_session_key(spark), set())
        if name in done:
            return False
        directory = tempfile.mkdtemp(prefix="flinkish-artifact-")
        path = os.path.join(directory, name)
        with open(path, "wb") as f:
            f.write(data)
        try:
            spark.addArtifacts(path, pyfile=True)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        done.add(name)
        return True


def package_zip() -> bytes:
    """The ``pyspark_flinkish`` package (its ``.py`` files and package data) as a zip for ``sys.path``."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # pyspark_flinkish/
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".pyc", ".pyo")):
                    continue
                path = os.path.join(folder, name)
                arcname = os.path.join("pyspark_flinkish", os.path.relpath(path, root))
                info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
                with open(path, "rb") as f:
                    z.writestr(info, f.read())
    return buffer.getvalue()


def ship_package(spark: Any) -> bool:
    """Make this process's ``pyspark_flinkish`` importable by the Python processes of a Connect session's server
    (foreachBatch and UDF workers) through ``spark.addArtifacts(zip, pyfile=True)``; once per session, named by
    the package's content so that a changed package is shipped again. Returns True if shipped now.
    ``PYSPARK_FLINKISH_SHIP_PACKAGE=0`` turns this off (when the server has the same version installed)."""
    if os.environ.get(SHIP_PACKAGE_ENV, "1") == "0":
        return False
    data = package_zip()
    return _add_artifact(spark, f"pyspark_flinkish-{hashlib.sha256(data).hexdigest()[:16]}.zip", data)


def ship_module(spark: Any, module: Any) -> bool:
    """Make a user's module (a module object, a single ``.py`` file) importable by a Connect session's server
    Python processes (``spark.addArtifacts(path, pyfile=True)``); once per session. Returns True if shipped now.
    Functions defined in a notebook or ``__main__`` need no shipping: they are pickled by value."""
    path = getattr(module, "__file__", None) or str(module)
    if not path.endswith(".py"):
        msg = f"ship_module needs a module of one .py file (a package: zip it and use spark.addArtifacts); got {path!r}"
        raise UnsupportedFeatureError(msg)
    with open(path, "rb") as f:
        data = f.read()
    return _add_artifact(spark, os.path.basename(path), data)


__all__ = [
    "SHIP_PACKAGE_ENV",
    "ClientDelivery",
    "Outbox",
    "RemoteBatchFunction",
    "check_connect_job",
    "is_connect",
    "package_zip",
    "remote_batch_function",
    "set_log_level",
    "ship_module",
    "ship_package",
    "start_query",
]
