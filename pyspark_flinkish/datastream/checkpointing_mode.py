"""PyFlink's ``CheckpointingMode`` (``env.enable_checkpointing(interval, mode)``)."""

from __future__ import annotations

from enum import Enum


class CheckpointingMode(Enum):
    """The guarantee of checkpoints. This package's results are always exactly-once (keyed state, watermarks and
    sink commits are checkpointed together), which also meets ``AT_LEAST_ONCE``: both are accepted."""

    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1


__all__ = ["CheckpointingMode"]
