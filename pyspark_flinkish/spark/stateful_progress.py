"""The progress of an ``apply_in_pandas_with_state`` query, built from Spark's own progress (that executor keeps
no driver of its own; see ``docs/operations.md#metrics``).
"""

from __future__ import annotations

import datetime
from typing import Any, Dict, Optional

from ..monitoring import watermark_lag
from .stateful import flink_watermark


def _epoch_ms(text: Optional[str]) -> Optional[int]:
    """Spark's ISO-8601 UTC time (``2026-01-01T12:00:00.000Z``) as epoch milliseconds."""
    if not text:
        return None
    moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int(round(moment.timestamp() * 1000))


def stateful_progress(
    spark: Dict[str, Any], delay: Optional[int], sink_metrics: Optional[Dict[str, Dict[str, int]]] = None
) -> Dict[str, Any]:
    """The progress of an ``apply_in_pandas_with_state`` batch from Spark's alone: input records (all sources
    together), the watermark Spark used for the batch as Flink's watermark, and the stateful operator's
    ``numKeys`` (Spark's ``numRowsTotal``: keys with state), ``stateSizeBytes`` (``memoryUsedBytes`` of the
    state store) and ``numRecordsOut`` (``numRowsUpdated``: keys whose state was written). Late records and
    fired windows are not counted on this backend. ``watermarkLag`` is measured against the batch's start
    (Spark's ``timestamp``, the ``processing_time`` of the dict). ``sink_metrics``: the batch's counters of sinks
    whose writer reports them, per sink uid (``KafkaSink``), as the foreachBatch executor reports them."""
    watermark = None
    spark_watermark = _epoch_ms((spark.get("eventTime") or {}).get("watermark"))
    if spark_watermark is not None and delay is not None:
        watermark = flink_watermark(spark_watermark, delay)
    processing_time = _epoch_ms(spark.get("timestamp"))
    operators = {}
    for i, op in enumerate(spark.get("stateOperators") or []):
        operators[f"stateful-{i}"] = {
            "name": op.get("operatorName", "applyInPandasWithState"),
            "keyed": True,
            "currentOutputWatermark": watermark,
            "watermarkLag": watermark_lag(processing_time, watermark),
            "numKeys": op.get("numRowsTotal"),
            "stateSizeBytes": op.get("memoryUsedBytes"),
            "numRecordsOut": op.get("numRowsUpdated"),
        }
    duration = (spark.get("durationMs") or {}).get("triggerExecution")
    return {
        "batch_id": spark.get("batchId"),
        "processing_time": processing_time,
        "backend": "apply_in_pandas_with_state",
        "input_records": spark.get("numInputRows"),
        "operators": operators,
        "durations_ms": {"total": duration} if duration is not None else {},
        "sink_metrics": dict(sink_metrics or {}),
        "spark": spark,
    }


__all__ = [
    "stateful_progress",
]
