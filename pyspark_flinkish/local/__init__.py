"""The JVM-free engine: runs a pipeline's plan in-process, deterministically, one micro-batch at a time."""

from __future__ import annotations

from .executor import LocalExecutor

__all__ = ["LocalExecutor"]
