"""The Spark jobs each micro-batch of a job runs, by phase (the progress document's ``spark_jobs``).

Spark runs every job of a streaming query's micro-batch, those started inside ``foreachBatch`` included, in the job
group of the query's run (``spark.jobGroup.id``, a local property of the thread that calls the batch function).
:class:`SparkJobs` reads that group's job ids from Spark's status tracker at each phase boundary, so a batch's
progress names the jobs each phase started (e.g. the one job that routes, runs the keyed stage and collects the
coordination rows, then one per sink write). On a Spark Connect session the batch function has no
``SparkContext``: the phases are not reported (None).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set


class SparkJobs:
    """Job ids of the current micro-batch by phase; :meth:`start` per batch, :meth:`mark` after each phase."""

    def __init__(self, spark: Any) -> None:
        self._context: Any = None
        try:
            self._context = spark.sparkContext  # classic sessions only (Connect raises)
        except Exception:
            self._context = None
        self._group: Optional[str] = None
        self._seen: Set[int] = set()
        self.by_phase: Optional[Dict[str, List[int]]] = None

    def _ids(self) -> Set[int]:
        if self._context is None or self._group is None:
            return set()
        try:
            return {int(i) for i in self._context.statusTracker().getJobIdsForGroup(self._group)}
        except Exception:  # a stopped context: report nothing rather than fail the batch
            return set()

    def start(self) -> None:
        """A micro-batch begins: find the query's job group (of this run) and the jobs it already ran."""
        self.by_phase = None
        if self._context is None:
            return
        try:
            self._group = self._context.getLocalProperty("spark.jobGroup.id")
        except Exception:
            self._group = None
        if self._group is None:
            return
        self._seen = self._ids()
        self.by_phase = {}

    def mark(self, phase: str) -> None:
        """The jobs started since the last mark belong to ``phase``."""
        if self.by_phase is None:
            return
        ids = self._ids()
        new = sorted(ids - self._seen)
        self._seen |= ids
        if new:
            self.by_phase.setdefault(phase, []).extend(new)

    def report(self) -> Optional[Dict[str, Any]]:
        """``{"count": n, "phases": {phase: [job id, ...]}}`` of the batch, or None where Spark does not tell."""
        if self.by_phase is None:
            return None
        return {"count": sum(len(v) for v in self.by_phase.values()), "phases": dict(self.by_phase)}


__all__ = ["SparkJobs"]
