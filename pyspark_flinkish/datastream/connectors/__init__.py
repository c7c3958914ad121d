"""PyFlink's ``pyflink.datastream.connectors``: sources and sinks for external systems on the Spark executors:
``connectors.kafka`` (a Kafka source and sink) and ``connectors.delta`` (a Delta Lake sink; Delta sources are
``env.from_delta``)."""

from __future__ import annotations

from .base import DeliveryGuarantee
from .delta import DeltaSink

__all__ = ["DeliveryGuarantee", "DeltaSink"]
