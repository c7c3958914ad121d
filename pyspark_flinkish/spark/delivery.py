"""Sinks on Spark: how a sink gets its records of one micro-batch.

Two kinds of sink, two paths:

* a sink that writes through Spark (``DeltaSink`` and other batch writers, the dead-letter tables, ``foreach_batch``)
  gets a :class:`~.sink_frames.SinkFrame`: its records stay on the executors and are written by them
  (:func:`deliver_frame`);
* PyFlink's driver-side sinks (``add_sink(callable)``, ``print``, ``execute_and_collect``), which hand each value to
  Python code, get the values on the driver, in Flink's order (:func:`deliver_values`): only they bring records to
  the driver (:func:`is_client_sink`).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..core.errors import UserFunctionError
from ..core.operators import call_user, in_node, short
from ..datastream.plan import BatchWriterSinkSpec, ForeachBatchSpec, Transformation
from .sink_frames import SinkFrame


def is_client_sink(t: Transformation) -> bool:
    """True for a sink that hands values to the user's Python (``add_sink``, ``print``, ``execute_and_collect``):
    its records are collected on the driver; False for one that writes through Spark (``foreach_batch``,
    ``DeltaSink`` and other batch writers), whose records stay on the executors."""
    return t.kind == "sink" and not isinstance(t.spec, (BatchWriterSinkSpec, ForeachBatchSpec))


def deliver_values(
    spark: Any, t: Transformation, values: List[Any], batch_id: int, context: Optional[Dict[str, Any]] = None
) -> None:
    """Hand a driver-side sink (:func:`is_client_sink`) its values of one micro-batch, one call per value.

    On a Spark Connect session this runs in the server's Python: the ``context``'s ``outbox`` (:class:`.connect.Outbox`)
    then takes the values (``sink_index`` names the sink), and the client delivers them in its own process."""
    outbox = (context or {}).get("outbox")
    if outbox is not None:
        outbox.write(batch_id, int((context or {})["sink_index"]), values)
        return
    uid = (context or {}).get("sink_uid") or t.uid or t.name
    try:
        for v in values:
            call_user(t.sink, lambda v=v: f"{t.name}: sink function on {short(v)}", v)
    except UserFunctionError as exc:
        raise in_node(exc, t.name, uid)  # noqa: B904 (its cause is the user's exception)


def deliver_frame(
    spark: Any, t: Transformation, frame: SinkFrame, batch_id: int, context: Optional[Dict[str, Any]] = None
) -> None:
    """Hand a sink that writes through Spark its records of one micro-batch as a :class:`~.sink_frames.SinkFrame`:
    a ``batch_writer`` (such as :class:`~pyspark_flinkish.datastream.connectors.delta.DeltaSink`'s) gets the frame
    and the ``context`` (checkpoint, sink uid, the sink's input watermark after the batch); ``foreach_batch`` gets
    the typed DataFrame sorted in Flink's order (a sort in Spark: ``collect()`` returns the records in the order a
    sink function would get them)."""
    if isinstance(t.spec, BatchWriterSinkSpec):
        t.spec.writer(spark, frame, batch_id, context or {})
        return
    uid = (context or {}).get("sink_uid") or t.uid or t.name
    try:
        df = frame.ordered()  # in Flink's order
        call_user(t.spec.function, lambda: f"{t.name}: foreach_batch function (batch {batch_id})", df, batch_id)  # type: ignore[union-attr]
    except UserFunctionError as exc:
        raise in_node(exc, t.name, uid)  # noqa: B904 (its cause is the user's exception)


__all__ = [
    "deliver_frame",
    "deliver_values",
    "is_client_sink",
]
