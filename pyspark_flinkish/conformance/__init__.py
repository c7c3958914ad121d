"""The conformance runner: Flink-produced golden scenarios, run through the public API.

``python -m pyspark_flinkish.conformance SCENARIO_DIR --engine local --out OUT_DIR [--expected DIR]``
"""

from __future__ import annotations

from .runner import canonical, differences, run_local
from .scenario import ScenarioError, discover, load, validate

__all__ = ["ScenarioError", "canonical", "differences", "discover", "load", "run_local", "validate"]
