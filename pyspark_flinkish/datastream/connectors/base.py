"""PyFlink's ``pyflink.datastream.connectors.base``: what connectors share (:class:`DeliveryGuarantee`)."""

from __future__ import annotations

from enum import Enum

__all__ = ["DeliveryGuarantee"]


class DeliveryGuarantee(Enum):
    """What a sink promises about its records after failures and restarts (PyFlink's ``DeliveryGuarantee``).

    * ``EXACTLY_ONCE``: every record is visible to readers exactly once (Kafka: with ``isolation.level=
      read_committed``); records are written in transactions committed with the (micro-)batch.
    * ``AT_LEAST_ONCE``: no record is lost; a batch replayed after a failure may write some records again.
    * ``NONE``: no promise. Flink may lose or duplicate records; this package's sinks behave as
      ``AT_LEAST_ONCE`` (they flush every batch before it commits, so nothing is lost).
    """

    EXACTLY_ONCE = "exactly-once"
    AT_LEAST_ONCE = "at-least-once"
    NONE = "none"
