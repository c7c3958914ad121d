"""``JobExecutionResult``: what a finished job reports (PyFlink's ``pyflink.common.JobExecutionResult``)."""

from __future__ import annotations


class JobExecutionResult:
    """What ``execute()`` returns: the job name, the number of micro-batches run, per-operator metrics.

    PyFlink's holds the job id and net runtime of a job on a cluster; here a job is one run of the pipeline, and
    ``batches`` counts its micro-batches.
    """

    def __init__(self, job_name: str, batches: int, metrics: dict) -> None:  # type: ignore[type-arg]
        self.job_name = job_name
        self.batches = batches
        self.metrics = metrics

    def get_job_execution_result(self) -> JobExecutionResult:
        return self

    def __repr__(self) -> str:
        return f"JobExecutionResult({self.job_name!r}, batches={self.batches})"


__all__ = ["JobExecutionResult"]
