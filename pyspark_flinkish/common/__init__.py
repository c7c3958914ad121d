"""PyFlink's ``pyflink.common``: time, watermark strategies, type information, ``Row``, ``SimpleStringSchema``, ``Encoder``,
``JobExecutionResult``, ``Configuration``."""

from __future__ import annotations

from ..core.durations import Duration, Time
from ..core.rows import Row, RowKind
from ..core.typeinfo import TypeInformation, Types
from ..core.watermarks import (
    TimestampAssigner,
    Watermark,
    WatermarkGenerator,
    WatermarkOutput,
    WatermarkStrategy,
)
from .configuration import Configuration
from .execution_config import ExecutionConfig
from .job_client import CompletableFuture, JobClient, JobID, JobStatus
from .job_execution_result import JobExecutionResult
from .serialization import Encoder, SimpleStringSchema

__all__ = [
    "CompletableFuture",
    "Configuration",
    "Duration",
    "Encoder",
    "ExecutionConfig",
    "JobClient",
    "JobID",
    "JobStatus",
    "JobExecutionResult",
    "Row",
    "RowKind",
    "SimpleStringSchema",
    "Time",
    "TimestampAssigner",
    "TypeInformation",
    "Types",
    "Watermark",
    "WatermarkGenerator",
    "WatermarkOutput",
    "WatermarkStrategy",
]
