"""The demo (``make demo``): mobile-game sessions with tunnels, on Flink's semantics — live on Kafka, Spark and
Delta (:mod:`.live`), or on the JVM-free engine (:mod:`.local`, ``--local``)."""
from __future__ import annotations

__all__: list[str] = []
