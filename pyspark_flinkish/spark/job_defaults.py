"""What ``execute("name")`` on Spark uses when PyFlink's signature gives nothing more: the checkpoint location and
the trigger."""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional

from ..datastream.plan import Transformation
from ..datastream.runtime_mode import unbounded_sources
from .checkpoint_location import resolve_checkpoint
from .session import default_file_system, local_temp_dir

_log = logging.getLogger("pyspark_flinkish.spark")

CHECKPOINT_ROOT_CONF = "spark.sql.streaming.checkpointLocation"
"""Spark's default checkpoint root: a query named N checkpoints to ``<root>/N``."""


def job_directory_name(job_name: str) -> str:
    """The job name as one path segment (letters, digits, ``-``, ``_``, ``.``; others become ``_``)."""
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in job_name).strip(".")
    return name or "job"


def default_checkpoint_location(spark: Any, job_name: str) -> str:
    """``<spark.sql.streaming.checkpointLocation>/<job name>`` when the session sets that root (a second run of the
    same job name resumes from it, as a Spark query with that root does), else a new temporary directory, logged."""
    root = spark.conf.get(CHECKPOINT_ROOT_CONF, None)
    if root:
        location = resolve_checkpoint(root.rstrip("/") + "/" + job_directory_name(job_name), default_file_system(spark))
        _log.info("job %r: checkpoint location %s (under %s)", job_name, location, CHECKPOINT_ROOT_CONF)
        return location
    location = local_temp_dir("flinkish-" + job_directory_name(job_name)[:40] + "-")
    _log.warning(
        "job %r: no checkpoint_location= and no %s set: checkpointing to the temporary directory %s (a restart will "
        "not resume from it)",
        job_name,
        CHECKPOINT_ROOT_CONF,
        location,
    )
    return location


def default_trigger(sinks: List[Transformation], checkpoint_interval_ms: int) -> Optional[Dict[str, Any]]:
    """``availableNow`` when every source is bounded (the job runs to the end of its input and stops), else the
    checkpoint interval of ``enable_checkpointing`` as the processing-time trigger, else Spark's default (None)."""
    if not unbounded_sources(sinks):
        return {"availableNow": True}
    if checkpoint_interval_ms > 0:
        return {"processingTime": f"{checkpoint_interval_ms} milliseconds"}
    return None


__all__ = ["CHECKPOINT_ROOT_CONF", "default_checkpoint_location", "default_trigger", "job_directory_name"]
