"""PyFlink's ``JobClient`` (what ``execute_async`` returns), ``JobID``, ``JobStatus`` and ``CompletableFuture``.

A :class:`JobClient` here watches one run of a pipeline: on the JVM-free engine a background thread
(:mod:`~pyspark_flinkish.datastream.job_client`), on Spark the streaming query (``spark/job_client.py``). Its future
results are :class:`CompletableFuture` objects, as in PyFlink (``result()``, ``done()``, ``exception()``).
"""

from __future__ import annotations

import concurrent.futures
import uuid
from abc import ABC, abstractmethod
from enum import Enum
from typing import Any, Optional

from ..core.errors import FlinkishError
from .job_execution_result import JobExecutionResult


class JobCancelledError(FlinkishError, RuntimeError):
    """The result of a job that ``JobClient.cancel()`` stopped."""


class JobStatus(Enum):
    """The states of a job (PyFlink's ``JobStatus``); a run here reaches ``RUNNING``, then ``FINISHED``,
    ``FAILED`` or ``CANCELED``."""

    CREATED = 0
    RUNNING = 1
    FAILING = 2
    FAILED = 3
    CANCELLING = 4
    CANCELED = 5
    FINISHED = 6
    RESTARTING = 7
    SUSPENDED = 8
    RECONCILING = 9

    def is_globally_terminal_state(self) -> bool:
        return self in (JobStatus.FAILED, JobStatus.CANCELED, JobStatus.FINISHED)

    def is_terminal_state(self) -> bool:
        return self.is_globally_terminal_state() or self is JobStatus.SUSPENDED


class JobID:
    """A job's id: 16 random bytes on the JVM-free engine, the ``StreamingQuery.id`` on Spark."""

    def __init__(self, hex_string: Optional[str] = None) -> None:
        self._hex = hex_string if hex_string is not None else uuid.uuid4().hex

    def to_hex_string(self) -> str:
        return self._hex

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobID) and other._hex == self._hex

    def __hash__(self) -> int:
        return hash(self._hex)

    def __str__(self) -> str:
        return self._hex

    def __repr__(self) -> str:
        return f"JobID({self._hex!r})"


class CompletableFuture:
    """PyFlink's ``CompletableFuture``: ``result()`` waits for the value (raising the job's error),
    ``done()``, ``exception()``, ``cancel()`` (of this future only, not of the job: use ``JobClient.cancel``)."""

    def __init__(self, future: concurrent.futures.Future) -> None:  # type: ignore[type-arg]
        self._future = future

    @staticmethod
    def completed(value: Any) -> CompletableFuture:
        future: concurrent.futures.Future = concurrent.futures.Future()  # type: ignore[type-arg]
        future.set_result(value)
        return CompletableFuture(future)

    def cancel(self) -> bool:
        return self._future.cancel()

    def cancelled(self) -> bool:
        return self._future.cancelled()

    def done(self) -> bool:
        return self._future.done()

    def result(self, timeout: Optional[float] = None) -> Any:
        return self._future.result(timeout)

    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        return self._future.exception(timeout)

    def __str__(self) -> str:
        return f"CompletableFuture(done={self.done()})"


class JobClient(ABC):
    """A running job (PyFlink's ``JobClient``): its id and status, cancelling it and waiting for its result."""

    @abstractmethod
    def get_job_id(self) -> JobID: ...

    @abstractmethod
    def get_job_status(self) -> CompletableFuture:
        """A completed future holding the :class:`JobStatus` now."""

    @abstractmethod
    def cancel(self) -> CompletableFuture:
        """Stop the job (Flink's cancel: no final firing at end of input); the future completes when it stopped."""

    @abstractmethod
    def get_job_execution_result(self) -> CompletableFuture:
        """A future of the :class:`JobExecutionResult`, completed when the job ends (raising its error if it
        failed, ``JobCancelledError`` if it was cancelled)."""

    def stop_with_savepoint(self, advance_to_end_of_event_time: bool, savepoint_directory: Optional[str] = None) -> Any:
        """Stop the job with a savepoint in ``savepoint_directory``; a future of the savepoint's path. Offered by jobs
        on Spark (``SparkJobClient``); a job of the JVM-free engine keeps no state after it ends."""
        msg = (
            "stop_with_savepoint: the JVM-free engine keeps no state after a job ends; savepoints are taken of jobs on "
            "Spark (execute_async on a SparkStreamExecutionEnvironment)"
        )
        raise NotImplementedError(msg)

    def trigger_savepoint(self, savepoint_directory: Optional[str] = None) -> Any:
        """A savepoint of the running job. Not offered: take one when stopping, with :meth:`stop_with_savepoint`."""
        msg = (
            "trigger_savepoint: a savepoint of a running job is not offered (its files are pruned as it runs); "
            "use stop_with_savepoint(False, directory), then execute(..., from_savepoint=path) to go on"
        )
        raise NotImplementedError(msg)


__all__ = ["CompletableFuture", "JobCancelledError", "JobClient", "JobExecutionResult", "JobID", "JobStatus"]
