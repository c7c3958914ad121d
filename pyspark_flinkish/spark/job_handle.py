"""``SparkJobHandle``: a running pipeline on Spark (the ``StreamingQuery``, failures as package errors, progress).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, ClassVar, Dict, List, Optional, Tuple

from ..core.errors import FlinkishError
from .connect import ClientDelivery
from .driver import ForeachBatchDriver
from .error_transport import package_error_from
from .stateful_progress import stateful_progress

_log = logging.getLogger("pyspark_flinkish.spark")


class _ProgressRouter:
    """One ``StreamingQueryListener`` per Spark Connect session, added once and never removed, that hands each
    query's progress to the handles that asked for it (:meth:`SparkJobHandle.on_progress`).

    Why not a listener per handle, removed at the end as on a classic session: pyspark's Connect client removes
    its last listener while holding the listener bus's lock and then joins the bus's event thread, which may be
    waiting for that same lock to post an event that arrived meanwhile (a query's last progress or its
    termination) — ``removeListener`` then never returns (seen as a hung ``stop()`` in the Connect tests). A
    handle only subscribes and unsubscribes here, under a lock of its own that is never held while calling Spark.
    """

    _sessions: ClassVar[Dict[int, Tuple[Any, _ProgressRouter]]] = {}  # id(session) -> (the session, kept alive; its router)
    _sessions_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscribers: Dict[str, List[Callable[[Any], None]]] = {}

    @classmethod
    def of(cls, spark: Any) -> _ProgressRouter:
        """The session's router, adding its listener to the session the first time."""
        from pyspark.sql.streaming import StreamingQueryListener

        with cls._sessions_lock:
            entry = cls._sessions.get(id(spark))
            if entry is not None and entry[0] is spark:
                return entry[1]
            router = cls()

            class _Listener(StreamingQueryListener):  # type: ignore[misc]
                def onQueryStarted(self, event: Any) -> None:  # noqa: N802 (Spark's names)
                    return None

                def onQueryProgress(self, event: Any) -> None:  # noqa: N802
                    router.post(event.progress)

                def onQueryIdle(self, event: Any) -> None:  # noqa: N802
                    return None

                def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
                    return None

            spark.streams.addListener(_Listener())
            cls._sessions[id(spark)] = (spark, router)
            return router

    def subscribe(self, query_id: str, deliver: Callable[[Any], None]) -> Callable[[], None]:
        """Hand ``query_id``'s progress to ``deliver``; returns the function that ends it."""
        with self._lock:
            self._subscribers.setdefault(query_id, []).append(deliver)

        def unsubscribe() -> None:
            with self._lock:
                subscribers = self._subscribers.get(query_id, [])
                if deliver in subscribers:
                    subscribers.remove(deliver)
                if not subscribers:
                    self._subscribers.pop(query_id, None)

        return unsubscribe

    def post(self, progress: Any) -> None:
        with self._lock:
            delivers = list(self._subscribers.get(str(progress.id), []))
        for deliver in delivers:
            deliver(progress)


class SparkJobHandle:
    """A running pipeline: the Spark ``StreamingQuery`` plus what the driver knows of watermarks and metrics.

    On a Spark Connect session (``client`` given, see :mod:`.connect`) the driver runs in the server's Python: this
    handle's ``driver`` is the client's copy, which never runs; the client sinks' values and the progress come through
    the checkpoint's outbox, delivered by a thread while the query runs and completely before
    :meth:`process_all_available`, :meth:`await_termination` and :meth:`stop` return.
    """

    def __init__(
        self,
        query: Any,
        driver: Optional[ForeachBatchDriver],
        stateful_delay: Optional[int] = None,
        spark: Any = None,
        client: Optional[ClientDelivery] = None,
        stateful_sink_metrics: Optional[Dict[Any, Dict[str, Dict[str, int]]]] = None,
    ) -> None:
        self.query = query
        self.driver = driver
        self.client = client
        self._stateful_delay = stateful_delay  # applyInPandasWithState: Spark's watermark delay (ms)
        self._stateful_sinks = stateful_sink_metrics if stateful_sink_metrics is not None else {}  # and its sinks'
        self._spark: Any = spark if spark is not None else (driver.spark if driver is not None else None)
        self._listeners: List[Any] = []
        if client is not None:
            client.start(lambda: bool(query.isActive), on_failure=self._stop_query)

    def _stop_query(self) -> None:
        """A client sink failed on Connect: the job stops, as it does when a sink fails on a classic session."""
        try:
            self.query.stop()
        except Exception:
            _log.exception("could not stop the query after a client sink failed")

    def _drain(self) -> None:
        """Connect: hand the client sinks every complete batch (raises a client sink's error, stopping the job)."""
        if self.client is None:
            return
        try:
            self.client.drain()
        except BaseException:
            self._stop_query()
            raise

    @property
    def batches_run(self) -> int:
        """Micro-batches this run completed (on Connect: delivered to the client)."""
        if self.client is not None:
            return self.client.batches_delivered
        return self.driver.batches_run if self.driver is not None else len(self.query.recentProgress or [])

    def await_termination(self, timeout: Optional[float] = None) -> Optional[bool]:
        """Wait for the query; a failed query raises the package error that stopped it (e.g. a
        :class:`UserFunctionError` naming operator, key, window and the original traceback), else Spark's."""
        try:
            result = self.query.awaitTermination(timeout) if timeout is not None else self.query.awaitTermination()
        except Exception as exc:
            self._drain()  # the batches before the failure were delivered on a classic session too
            self._remove_listeners()
            self._raise_failure(exc)
            raise
        self._drain()
        if not self.query.isActive:
            if self.client is not None:
                self.client.stop()
            self._remove_listeners()
            self._flush_sink_writers()
        if self.driver is not None:
            self.driver.raise_if_failed()
        return result  # type: ignore[no-any-return]

    def process_all_available(self) -> None:
        try:
            self.query.processAllAvailable()
        except Exception as exc:
            self._drain()
            self._raise_failure(exc)
            raise
        self._drain()
        if self.driver is not None:
            self.driver.raise_if_failed()

    def _raise_failure(self, exc: BaseException) -> None:
        failure = self.driver.failure if self.driver is not None else None
        if isinstance(failure, FlinkishError):
            raise failure
        error = package_error_from(exc)
        if error is not None:
            raise error from exc

    def stop(self) -> None:
        self.query.stop()
        if self.driver is not None:  # a tick due later is armed again from ticks.json when the job restarts
            self.driver.tick_timer.cancel()
        if self.client is not None:
            self.client.stop()
        self._drain()
        self._remove_listeners()
        self._flush_sink_writers()

    def _flush_sink_writers(self) -> None:
        """Wait for the sinks' work left after their last batch (``DeltaSink``'s log checkpoint written in the
        background, :meth:`.delta.DeltaBatchWriter.flush`)."""
        for t in self.driver.plan.transformations if self.driver is not None else ():
            flush = getattr(getattr(t.spec, "writer", None), "flush", None)
            if callable(flush):
                flush()

    def stop_with_savepoint(self, savepoint_directory: str, advance_to_end_of_event_time: bool = False) -> str:
        """Flink's stop-with-savepoint: stop the query, then write a savepoint of its last committed micro-batch (keyed
        state, timers and source positions) in a new directory under ``savepoint_directory`` (any location a
        checkpoint may have); returns the savepoint's path, for ``execute(..., from_savepoint=path)``.

        Without draining, as Flink's default: open windows and pending timers stay in the savepoint.
        ``advance_to_end_of_event_time=True`` (``--drain``, which fires every event-time timer first) is refused.
        File streams and Delta tables keep their Spark log entries in the savepoint (``spark/source_logs.py``); a
        job reading a source whose position cannot be carried (Auto Loader, a rate or socket stream) is refused
        before it is stopped. See ``docs/operations.md``, *Savepoints*.
        """
        from .checkpoint_location import resolve_checkpoint
        from .savepoint import check_sources, take_savepoint
        from .session import default_file_system

        if advance_to_end_of_event_time:
            msg = (
                "stop_with_savepoint(advance_to_end_of_event_time=True) (Flink's --drain) is not offered: stop without "
                "draining, which keeps open windows and timers in the savepoint; a bounded input fires everything at its end"
            )
            raise NotImplementedError(msg)
        driver = self.driver
        if driver is None:
            msg = (
                "stop_with_savepoint: savepoints are taken of jobs on the foreachBatch executor (the default backend); "
                "apply_in_pandas_with_state keeps its state in Spark's state store, restored only from its checkpoint"
            )
            raise NotImplementedError(msg)
        check_sources(driver.plan)  # refused before the job stops
        directory = resolve_checkpoint(savepoint_directory, default_file_system(driver.spark))
        self.stop()
        driver.raise_if_failed()
        columnar = driver.columnar is not None
        return take_savepoint(driver.spark, driver.checkpoint, driver.plan, directory, str(self.query.id), columnar)

    @property
    def last_progress(self) -> Any:
        return self.query.lastProgress

    @property
    def is_active(self) -> bool:
        return bool(self.query.isActive)

    def watermarks(self) -> Dict[str, int]:
        """Each operator's current watermark after the last completed micro-batch (foreachBatch executor)."""
        if self.client is not None and self.driver is not None:
            history = self._history()
            return dict(history[-1].get("watermarks", {})) if history else {}
        return self.driver.operator_watermarks() if self.driver is not None else {}

    def _history(self) -> List[Dict[str, Any]]:
        """The package's progress of the recent batches: the driver's, or on Connect what the client received."""
        if self.client is not None:
            return list(self.client.history)
        return list(self.driver.history) if self.driver is not None else []

    def progress(self, batch_id: Optional[int] = None) -> Optional[Dict[str, Any]]:
        """The combined progress of the last micro-batch (or of ``batch_id``, if still among the recent ones): this
        package's metrics (``docs/operations.md#metrics``) plus, under ``"spark"``, Spark's
        ``StreamingQueryProgress`` of the same batch id as a dict (None until Spark reported it: Spark reports a
        batch after the foreachBatch function returned). None before the first batch."""
        history = self.recent_progress()
        if batch_id is None:
            return history[-1] if history else None
        return next((p for p in history if p.get("batch_id") == batch_id), None)

    def on_progress(self, callback: Callable[[Dict[str, Any]], None]) -> None:
        """Call ``callback`` with the combined progress (see :meth:`progress`, ``"spark"`` always set) of every
        micro-batch, from a ``StreamingQueryListener`` on the session: Spark's ``onQueryProgress`` of this query.
        Batches Spark reported before this call are delivered at once; each batch once. The listener is removed
        by :meth:`stop` and when :meth:`await_termination` sees the query ended (on Spark Connect the session keeps
        one listener for all its queries, and this query's subscription to it ends), after delivering what Spark's
        asynchronous listener bus had not yet (so every batch of ``query.recentProgress`` is delivered by then). A
        failing callback is logged, never raised into Spark's listener bus."""
        from pyspark.sql.streaming import StreamingQueryListener

        handle, query_id, lock, seen = self, str(self.query.id), threading.Lock(), set()

        def deliver(spark_progress: Any) -> None:
            batch_id = spark_progress.get("batchId")
            with lock:  # held during the callback: one batch at a time
                if batch_id in seen:
                    return
                seen.add(batch_id)
                try:
                    callback(handle._combined(spark_progress))
                except Exception:
                    _log.exception("on_progress callback failed for batch %s", batch_id)

        class _Listener(StreamingQueryListener):  # type: ignore[misc]
            def onQueryStarted(self, event: Any) -> None:  # noqa: N802 (Spark's names)
                return None

            def onQueryProgress(self, event: Any) -> None:  # noqa: N802
                if str(event.progress.id) == query_id:
                    deliver(event.progress)

            def onQueryIdle(self, event: Any) -> None:  # noqa: N802
                return None

            def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
                return None

        if self.client is not None:  # Spark Connect: the session's one listener (see _ProgressRouter)
            self._listeners.append((_ProgressRouter.of(self._spark).subscribe(query_id, deliver), deliver))
        else:
            listener = _Listener()
            self._spark.streams.addListener(listener)
            self._listeners.append((lambda: self._spark.streams.removeListener(listener), deliver))
        for spark_progress in self.query.recentProgress or []:
            deliver(spark_progress)

    def _combined(self, spark_progress: Any) -> Dict[str, Any]:
        """This package's progress of Spark's batch, with Spark's under ``"spark"``."""
        if self.driver is None:
            return self._stateful(spark_progress)
        batch_id = spark_progress.get("batchId")
        if self.client is not None and not any(p["batch_id"] == batch_id for p in self.client.history):
            self.client.drain()  # Spark reports a batch after the server-side driver finished it: it is in the outbox
        ours = next((p for p in reversed(self._history()) if p["batch_id"] == batch_id), {"batch_id": batch_id})
        return {**ours, "spark": spark_progress}

    def _stateful(self, spark_progress: Any) -> Dict[str, Any]:
        """An ``apply_in_pandas_with_state`` batch's progress, with its sinks' counters."""
        sinks = self._stateful_sinks.get(spark_progress.get("batchId"))
        return stateful_progress(spark_progress, self._stateful_delay, sinks)

    def _remove_listeners(self) -> None:
        while self._listeners:
            remove, deliver = self._listeners.pop()
            remove()
            for spark_progress in self.query.recentProgress or []:
                deliver(spark_progress)

    def recent_progress(self) -> List[Dict[str, Any]]:
        """The combined progress (see :meth:`progress`) of the recent micro-batches, oldest first: the driver keeps
        the last 100 (they are also in ``<checkpoint>/flinkish/progress``); Spark keeps
        ``spark.sql.streaming.numRecentProgressUpdates`` (100) of its own. With ``apply_in_pandas_with_state`` it
        is built from Spark's progress alone (input records, watermark, Spark's state operator metrics)."""
        spark = {p.get("batchId"): p for p in (self.query.recentProgress or [])}
        if self.driver is None:
            return [self._stateful(p) for p in spark.values()]
        return [{**p, "spark": spark.get(p["batch_id"])} for p in self._history()]


RECENT_BATCHES = 100
"""How many recent batches' progress a handle keeps (as Spark's ``spark.sql.streaming.numRecentProgressUpdates``)."""

__all__ = [
    "RECENT_BATCHES",
    "SparkJobHandle",
]
