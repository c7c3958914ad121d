"""Sinks on Spark: how a sink gets its values of one micro-batch (on the driver, in Flink's order).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..core.errors import UserFunctionError
from ..core.operators import call_user, in_node, short
from ..datastream.plan import BatchWriterSinkSpec, ForeachBatchSpec, Transformation


def deliver_values(
    spark: Any, t: Transformation, values: List[Any], batch_id: int, context: Optional[Dict[str, Any]] = None
) -> None:
    """Hand a sink its values of one micro-batch: a typed DataFrame for ``foreach_batch``, the values and the
    ``context`` (checkpoint, sink uid, the sink's input watermark after the batch) for a ``batch_writer`` such as
    :class:`~pyspark_flinkish.datastream.connectors.delta.DeltaSink`, else one call per value.

    On a Spark Connect session this runs in the server's Python: the ``context``'s ``outbox`` (:class:`.connect.Outbox`)
    then takes the values of a sink that hands them to the user's Python (``sink_index`` names it), and the client
    delivers them in its own process."""
    outbox = (context or {}).get("outbox")
    if outbox is not None and not isinstance(t.spec, (BatchWriterSinkSpec, ForeachBatchSpec)):
        outbox.write(batch_id, int((context or {})["sink_index"]), values)
        return
    if isinstance(t.spec, BatchWriterSinkSpec):
        t.spec.writer(spark, values, batch_id, context or {})
        return
    uid = (context or {}).get("sink_uid") or t.uid or t.name
    try:
        if isinstance(t.spec, ForeachBatchSpec):
            from .types import to_rows, to_spark_type

            output_type = t.inputs[0].output_type
            df = spark.createDataFrame(to_rows(values, output_type), to_spark_type(output_type))
            call_user(t.spec.function, lambda: f"{t.name}: foreach_batch function (batch {batch_id})", df, batch_id)
        else:
            for v in values:
                call_user(t.sink, lambda v=v: f"{t.name}: sink function on {short(v)}", v)
    except UserFunctionError as exc:
        raise in_node(exc, t.name, uid)  # noqa: B904 (its cause is the user's exception)


__all__ = [
    "deliver_values",
]
