"""PyFlink's ``RuntimeExecutionMode``: how ``execute()`` runs a job (``env.set_runtime_mode``)."""

from __future__ import annotations

from enum import Enum


class RuntimeExecutionMode(Enum):
    """``STREAMING`` (default): continuous processing, watermarks as the data goes. ``BATCH``: Flink's batch
    execution of bounded input (every source must end): nothing is late, each key's input is processed in timestamp
    order, event time jumps to the end, then processing-time timers fire (see docs/execution-model.md).
    ``AUTOMATIC``: ``BATCH`` when every source is bounded, else ``STREAMING``."""

    STREAMING = 0
    BATCH = 1
    AUTOMATIC = 2


__all__ = ["RuntimeExecutionMode"]
