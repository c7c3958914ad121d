"""``JobExecutionResult``: what a finished job reports (PyFlink's ``pyflink.common.JobExecutionResult``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional

if TYPE_CHECKING:
    from .job_client import JobID


class JobExecutionResult:
    """What ``execute()`` returns: the job name, its id, its net runtime, the number of micro-batches run and
    per-operator metrics.

    As PyFlink's, it has ``get_job_id()`` (on Spark the streaming query's id) and ``get_net_runtime()`` (milliseconds
    the job ran); here a job is one run of the pipeline, and ``batches`` counts its micro-batches.
    """

    def __init__(
        self,
        job_name: str,
        batches: int,
        metrics: Dict[str, Any],
        job_id: Optional[JobID] = None,
        net_runtime: int = 0,
    ) -> None:
        self.job_name = job_name
        self.batches = batches
        self.metrics = metrics
        self.job_id = job_id
        self.net_runtime = net_runtime

    def get_job_execution_result(self) -> JobExecutionResult:
        return self

    def get_job_id(self) -> Optional[JobID]:
        """The job's id (the one its ``JobClient`` reports when it was started with ``execute_async``); ``None`` for a
        run outside an environment (as Flink's "null if executed on a runtime without JobIDs")."""
        return self.job_id

    def get_net_runtime(self) -> int:
        """How long the job ran, in milliseconds (Flink: without pre-flight steps; here from the start of its first
        micro-batch to the end of its last)."""
        return self.net_runtime

    def __repr__(self) -> str:
        return f"JobExecutionResult({self.job_name!r}, batches={self.batches})"


__all__ = ["JobExecutionResult"]
