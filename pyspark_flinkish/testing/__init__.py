"""Testing helpers: operator harnesses (no JVM), and — with the Spark integration — fixtures."""

from __future__ import annotations

from .harness import KeyedProcessHarness, OneInputHarness, WindowHarness

__all__ = ["KeyedProcessHarness", "OneInputHarness", "WindowHarness"]
