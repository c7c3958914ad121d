"""The foreachBatch driver's metrics of one micro-batch (``docs/operations.md#metrics``): read-only views of what
the batch saw and delivered, computed from the driver (:class:`~pyspark_flinkish.spark.driver.ForeachBatchDriver`,
passed as ``driver``) after the batch.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from ..datastream.plan import AsyncWaitSpec
from ..monitoring import OPERATOR_COUNTERS, async_metrics, merge_partitions, watermark_lag
from .dead_letters import dead_letter_counts


def source_metrics(progress: Dict[str, Any]) -> Dict[str, Dict[str, Dict[str, Any]]]:
    """Per source and source partition: ``currentWatermark`` (None while idle) and ``numRecordsIn``."""
    out: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for name, parts in progress["source_watermarks"].items():
        counts = progress["input_records"].get(name, {})
        out[name] = {
            p: {"currentWatermark": parts.get(p), "numRecordsIn": counts.get(p, 0)} for p in {**counts, **parts}
        }
    return out

def operator_metrics(driver: Any, processing_time: Optional[int] = None) -> Dict[str, Dict[str, Any]]:
    """Per operator (by uid): its name, input and output watermark after the batch, its ``watermarkLag``
    (``processing_time`` minus its output watermark; None without a processing time), and for keyed operators
    the merged metric rows of their state partitions (counters over all steps of the batch, gauges of the
    last step), for async I/O operators their tasks' counters (``monitoring.ASYNC_METRICS``)."""
    g = driver.watermark_graph
    out: Dict[str, Dict[str, Any]] = {}
    for i, t in enumerate(driver.plan.transformations):
        node = g.nodes.get(t.id)
        if node is None or node.operator is None:
            continue
        entry: Dict[str, Any] = {
            "name": t.name,
            "keyed": bool(t.keyed),
            "currentInputWatermark": node.valve.last_output,
            "currentOutputWatermark": node.operator.current_watermark,
            "watermarkLag": watermark_lag(processing_time, node.operator.current_watermark),
        }
        if t.keyed:
            rows = [(step, m) for step, dest, m in driver.metric_rows if dest == i]
            last = max((step for step, _ in rows), default=0)
            counters = merge_partitions([m for _, m in rows])
            gauges = merge_partitions([m for step, m in rows if step == last])
            entry.update({k: (counters[k] if k in OPERATOR_COUNTERS else gauges[k]) for k in counters})
            if driver.columnar is not None and i == driver.columnar.window:  # Spark pre-aggregated its input
                source = driver.plan.transformations[driver.columnar.source].name
                entry["numRecordsIn"] = sum(driver.input_counts.get(source, {}).values())
        if isinstance(t.spec, AsyncWaitSpec):  # its tasks' counters (one metric row per task that ran it)
            entry.update(async_metrics(m for _, dest, m in driver.metric_rows if dest == i))
        out[driver.plan.nodes[i].uid] = entry
    return out

def sink_metrics(driver: Any) -> Dict[str, Dict[str, int]]:
    """Per sink uid, the batch's counters of sinks whose writer reports them (``KafkaSink``: records, bytes,
    transactions committed, skipped and aborted)."""
    out: Dict[str, Dict[str, int]] = {}
    for i in driver.plan.sinks:
        metrics = getattr(getattr(driver.plan.transformations[i].spec, "writer", None), "metrics", None)
        if callable(metrics):
            out[driver.plan.nodes[i].uid] = metrics()
    return out


def progress_counters(driver: Any, sink_counts: Dict[int, int]) -> Dict[str, Any]:
    """``input_records`` (this batch, per source and partition), ``source_watermarks`` (per source and
    partition, None while idle), ``sink_records`` (records delivered to each sink this batch, by sink uid, counted
    by the tasks that produced them), ``dead_letters`` (malformed records written to dead-letter tables, per
    source), ``future_records`` (records more than ``future_horizon_ms`` ahead of processing time, per source and
    partition), ``sink_metrics`` (:func:`sink_metrics`) and ``driver_rows_collected`` (rows the driver collected in
    the batch: the coordination rows and the records of driver-side sinks only, ``docs/architecture.md``)."""
    g = driver.watermark_graph
    return {
        "input_records": {name: dict(parts) for name, parts in driver.input_counts.items()},
        "source_watermarks": {
            t.name: {str(p): wm for p, wm in g.runners[t.id].splits.partition_watermarks().items()}
            for t in g.order
            if t.id in g.runners
        },
        "sink_records": {driver.plan.nodes[i].uid: sink_counts.get(i, 0) for i in driver.plan.sinks},
        "sink_metrics": sink_metrics(driver),
        "dead_letters": dead_letter_counts(driver.plan.transformations, sink_counts),
        "future_records": {} if driver.future is None else {k: dict(v) for k, v in driver.future.counts.items()},
        "driver_rows_collected": driver.collected_rows,
    }


__all__ = ["source_metrics", "operator_metrics", "progress_counters", "sink_metrics"]
