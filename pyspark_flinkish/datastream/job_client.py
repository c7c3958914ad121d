"""``LocalJobClient``: ``execute_async`` on the JVM-free engine -- the job runs in a background thread."""

from __future__ import annotations

import concurrent.futures
import threading
from typing import Any

from ..common.job_client import CompletableFuture, JobCancelledError, JobClient, JobID, JobStatus


class LocalJobClient(JobClient):
    """A job of the JVM-free engine running in a thread. ``cancel()`` stops it at the end of the current micro-batch
    (no end-of-input firing, as Flink's cancel); its result then raises :class:`JobCancelledError`."""

    def __init__(self, job_name: str) -> None:
        self.job_name = job_name
        self._id = JobID()
        self._cancel = threading.Event()
        self._result: concurrent.futures.Future = concurrent.futures.Future()  # type: ignore[type-arg]
        self._status = JobStatus.CREATED

    @staticmethod
    def start(env: Any, job_name: str) -> LocalJobClient:
        """Run ``env.execute(job_name)`` in a daemon thread; the sinks are taken (and the environment cleared, as
        Flink's ``executeAsync``) before this returns."""
        client = LocalJobClient(job_name)
        sinks = env._take_sinks()
        cancel = client._cancel

        def check(progress: Any) -> None:
            if cancel.is_set():
                msg = f"job {job_name!r} was cancelled (after micro-batch {progress.batch})"
                raise JobCancelledError(msg)

        def run() -> None:
            client._status = JobStatus.RUNNING
            try:
                result = env._run(job_name, sinks, check, client._id)
            except JobCancelledError as exc:
                client._status = JobStatus.CANCELED
                client._result.set_exception(exc)
            except BaseException as exc:
                client._status = JobStatus.FAILED
                client._result.set_exception(exc)
            else:
                client._status = JobStatus.FINISHED
                client._result.set_result(result)

        client._status = JobStatus.RUNNING
        threading.Thread(target=run, name=f"flinkish-job-{client._id}", daemon=True).start()
        return client

    def get_job_id(self) -> JobID:
        return self._id

    def get_job_status(self) -> CompletableFuture:
        return CompletableFuture.completed(self._status)

    def cancel(self) -> CompletableFuture:
        """Ask the job to stop after its current micro-batch; the future completes (with None) once it stopped."""
        self._cancel.set()
        done: concurrent.futures.Future = concurrent.futures.Future()  # type: ignore[type-arg]
        self._result.add_done_callback(lambda _: done.set_result(None))
        return CompletableFuture(done)

    def get_job_execution_result(self) -> CompletableFuture:
        return CompletableFuture(self._result)


__all__ = ["LocalJobClient"]
