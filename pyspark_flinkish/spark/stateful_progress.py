"""The progress of an ``apply_in_pandas_with_state`` query, built from Spark's own progress (that executor keeps
no driver of its own; see ``docs/operations.md#metrics``).
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from .stateful import flink_watermark


def stateful_progress(spark: Dict[str, Any], delay: Optional[int]) -> Dict[str, Any]:
    """The progress of an ``apply_in_pandas_with_state`` batch from Spark's alone: input records (all sources
    together), the watermark Spark used for the batch as Flink's watermark, and the stateful operator's
    ``numKeys`` (Spark's ``numRowsTotal``: keys with state), ``stateSizeBytes`` (``memoryUsedBytes`` of the
    state store) and ``numRecordsOut`` (``numRowsUpdated``: keys whose state was written). Late records and
    fired windows are not counted on this backend."""
    watermark = None
    text = (spark.get("eventTime") or {}).get("watermark")
    if text and delay is not None:
        import datetime

        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        watermark = flink_watermark(int(round(moment.timestamp() * 1000)), delay)
    operators = {}
    for i, op in enumerate(spark.get("stateOperators") or []):
        operators[f"stateful-{i}"] = {
            "name": op.get("operatorName", "applyInPandasWithState"),
            "keyed": True,
            "currentOutputWatermark": watermark,
            "numKeys": op.get("numRowsTotal"),
            "stateSizeBytes": op.get("memoryUsedBytes"),
            "numRecordsOut": op.get("numRowsUpdated"),
        }
    duration = (spark.get("durationMs") or {}).get("triggerExecution")
    return {
        "batch_id": spark.get("batchId"),
        "backend": "apply_in_pandas_with_state",
        "input_records": spark.get("numInputRows"),
        "operators": operators,
        "durations_ms": {"total": duration} if duration is not None else {},
        "spark": spark,
    }


__all__ = [
    "stateful_progress",
]
