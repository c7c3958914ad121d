"""What one Spark micro-batch of the foreachBatch executor reads, and where its records can go: the sources that
step Spark batches themselves (``from_delta``), the replay sources and the Flink micro-batches a Spark batch holds,
and the sinks the route writes directly. Functions of the plan, used by the driver (``spark/driver.py``)."""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

from ..core.errors import UnsupportedFeatureError
from ..datastream.sources import MicroBatchSource
from .plan import ExecPlan

SPREAD_MIN_BYTES = 1 << 20
"""The estimated size (Spark's statistics of the batch's plan) from which a batch is spread over several tasks: the
fused route's input, ordered by columns, over all state partitions' tasks (a repartition: a shuffle, and with
adaptive execution a Spark job of its own, which a small batch pays for and does not gain from), and the one-pass
path's keyed stage over its groups (below it, the route and every keyed group run in one task: :func:`is_small`).
About 100k rows of a Parquet file."""


def is_small(df: Any) -> bool:
    """Whether Spark estimates the batch ``df`` below :data:`SPREAD_MIN_BYTES` (no Spark job). Where Spark has no
    estimate (a Kafka batch, Spark Connect) it is not small."""
    size = estimated_bytes(df)
    return size is not None and size < SPREAD_MIN_BYTES


def spread_route_input(df: Any, parts: int) -> Any:
    """A fused DataFrame source's batch ``df`` whose order comes from columns (so it may be routed in any partitioning)
    repartitioned over ``parts`` tasks, unless it is small (:func:`is_small`): then routed where it is read."""
    return df if is_small(df) else df.repartition(parts)


def estimated_bytes(df: Any) -> Optional[int]:
    """Spark's estimate of the size of ``df``'s optimized plan in bytes (no Spark job), or None where there is none
    (Spark's default for an unknown size, or a Spark Connect DataFrame, which has no JVM plan here)."""
    try:
        size = int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:
        return None
    return None if size >= 2**63 - 1 else size


def route_fed_sinks(plan: ExecPlan) -> List[int]:
    """The sinks a source reaches without a keyed operator in between: the route's tasks write their records."""
    found: List[int] = []
    seen = set()
    stack = list(plan.sources)
    while stack:
        node = plan.nodes[stack.pop()]
        if node.index in seen or node.keyed:
            continue
        seen.add(node.index)
        if node.kind == "sink":
            found.append(node.index)
        stack.extend([*node.main, *(c for cs in node.side.values() for c in cs)])
    return sorted(found)


def source_stepper(plan: ExecPlan) -> Optional[Callable[..., Any]]:
    """The ``steps(driver, df, batch_id)`` hook of the one source that splits Spark batches itself, if any."""
    steppers = [t for t in plan.transformations if t.kind == "source" and getattr(t.source, "steps", None) is not None]
    if not steppers:
        return None
    if len(steppers) > 1 or any(isinstance(t.source, MicroBatchSource) for t in plan.transformations if t.kind == "source"):
        msg = (
            "a pipeline may read one source with upstream watermarks (from_delta) and no replay source "
            f"(MicroBatchSource) besides it; got {[t.name for t in plan.transformations if t.kind == 'source']}"
        )
        raise UnsupportedFeatureError(msg)
    return steppers[0].source.steps  # type: ignore[no-any-return]


def replay_steps(plan: ExecPlan, df: Any) -> Tuple[List[Any], List[int]]:
    """The Flink micro-batches in this Spark batch: one, unless the batch holds several replay files; and
    the replay batch index of each step (none without replay sources or replay rows)."""
    from pyspark.sql import functions as F

    if not any(isinstance(t.source, MicroBatchSource) for t in plan.transformations if t.kind == "source"):
        return [df], []
    indices = sorted(int(r["batch"]) for r in df.select("batch").distinct().collect() if r["batch"] is not None)
    replay = [i for i in indices if i >= 0]
    if len(replay) <= 1:
        return [df], replay
    first = F.col("batch") == replay[0]
    steps = [df.filter(first | (F.col("batch") < 0))]  # rows of DataFrame sources go with the first
    steps.extend(df.filter(F.col("batch") == i) for i in replay[1:])
    return steps, replay


def replay_sources(plan: ExecPlan) -> List[Tuple[str, MicroBatchSource]]:
    """The replay sources (``from_micro_batches``) by uid."""
    return [
        (plan.nodes[i].uid, t.source)
        for i, t in enumerate(plan.transformations)
        if t.kind == "source" and isinstance(t.source, MicroBatchSource)
    ]


__all__ = [
    "SPREAD_MIN_BYTES",
    "estimated_bytes",
    "is_small",
    "replay_sources",
    "replay_steps",
    "route_fed_sinks",
    "source_stepper",
    "spread_route_input",
]
