"""PyFlink's ``pyflink.datastream.connectors``: sinks and sources for external systems (Spark executors)."""

from __future__ import annotations

from .delta import DeltaSink

__all__ = ["DeltaSink"]
