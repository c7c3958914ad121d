"""``SparkJobClient``: ``execute_async`` on Spark -- PyFlink's ``JobClient`` over the running streaming query."""

from __future__ import annotations

import concurrent.futures
import threading
from typing import Any, Optional

from ..common.job_client import CompletableFuture, JobCancelledError, JobClient, JobID, JobStatus
from ..common.job_execution_result import JobExecutionResult
from ..core.errors import InvalidArgumentError
from .job_handle import SparkJobHandle


def query_job_id(handle: SparkJobHandle) -> JobID:
    """The job id of a Spark job: its streaming query's id (a UUID, as 32 hex digits like Flink's)."""
    return JobID(str(handle.query.id).replace("-", ""))


class SparkJobClient(JobClient):
    """The job's ``StreamingQuery`` (:attr:`handle`, a :class:`SparkJobHandle`): its id is the query's id; the
    result future completes when the query terminates (a bounded job ends by itself; ``cancel()`` stops the query)."""

    def __init__(self, handle: SparkJobHandle, job_name: str) -> None:
        self.handle = handle
        self.job_name = job_name
        self._id = query_job_id(handle)
        self._cancelled = False
        self._result: concurrent.futures.Future = concurrent.futures.Future()  # type: ignore[type-arg]
        threading.Thread(target=self._wait, name=f"flinkish-job-{self._id}", daemon=True).start()

    def _wait(self) -> None:
        try:
            self.handle.await_termination()
        except BaseException as exc:
            self._result.set_exception(exc)
            return
        if self._cancelled:
            self._result.set_exception(JobCancelledError(f"job {self.job_name!r} was cancelled"))
            return
        batches = self.handle.batches_run
        self._result.set_result(JobExecutionResult(self.job_name, batches, {}, self._id))

    def get_job_id(self) -> JobID:
        return self._id

    def get_job_status(self) -> CompletableFuture:
        if self.handle.is_active and not self._result.done():
            status = JobStatus.RUNNING
        elif self._cancelled:
            status = JobStatus.CANCELED
        elif self._result.done() and self._result.exception() is not None:
            status = JobStatus.FAILED
        elif self._result.done():
            status = JobStatus.FINISHED
        else:
            status = JobStatus.RUNNING  # the query ended; its result is being collected
        return CompletableFuture.completed(status)

    def cancel(self) -> CompletableFuture:
        """Stop the streaming query (what was committed stays; no end-of-input firing, as Flink's cancel)."""
        if not self._result.done():
            self._cancelled = True
            self.handle.stop()
        done: concurrent.futures.Future = concurrent.futures.Future()  # type: ignore[type-arg]
        self._result.add_done_callback(lambda _: done.set_result(None))
        return CompletableFuture(done)

    def get_job_execution_result(self) -> CompletableFuture:
        return CompletableFuture(self._result)

    def stop_with_savepoint(self, advance_to_end_of_event_time: bool, savepoint_directory: Optional[str] = None) -> Any:
        """Stop the job with a savepoint (:meth:`SparkJobHandle.stop_with_savepoint`); a completed future of its path.
        ``savepoint_directory`` is required (Spark has no default savepoint directory)."""
        if not savepoint_directory:
            msg = "stop_with_savepoint: give the savepoint_directory (Spark has no state.savepoints.dir)"
            raise InvalidArgumentError(msg)
        path = self.handle.stop_with_savepoint(savepoint_directory, advance_to_end_of_event_time)
        return CompletableFuture.completed(path)


__all__ = ["SparkJobClient", "query_job_id"]
