"""Runtime modes (``set_runtime_mode``): which sources are bounded, and what BATCH execution changes."""

from __future__ import annotations

from typing import List

from .plan import Transformation, topological


def unbounded_sources(sinks: List[Transformation]) -> List[str]:
    """The names of the sources of the sinks' pipeline that never end: a source is bounded when it has
    ``end_of_input`` (``from_collection``, a ``MicroBatchSource`` with ``end_of_input=True``,
    ``from_delta(bounded=True)``); Kafka and streaming DataFrames are not."""
    return [t.name for t in topological(sinks) if t.kind == "source" and not getattr(t.source, "end_of_input", False)]


__all__ = ["unbounded_sources"]
