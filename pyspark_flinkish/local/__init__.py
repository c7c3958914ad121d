"""The JVM-free engine: runs a pipeline's plan in-process, deterministically, one micro-batch at a time.

Importing this package registers it as the ``"local"`` executor of ``datastream.executors``.
"""

from __future__ import annotations

from ..datastream.executors import LOCAL, register_executor
from .executor import LocalExecutor, run_local

register_executor(LOCAL, run_local)

__all__ = ["LocalExecutor", "run_local"]
