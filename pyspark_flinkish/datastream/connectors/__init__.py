"""PyFlink's ``pyflink.datastream.connectors``: ``connectors.kafka`` (a Kafka source on Spark)."""

from __future__ import annotations
