"""PyFlink's ``pyflink.datastream.connectors``: sources and sinks for external systems: ``connectors.file_system``
(text files as a source, part files as an exactly-once sink, on both engines), ``connectors.kafka`` (a Kafka source
and sink) and ``connectors.delta`` (a Delta Lake sink, Spark; Delta sources are ``env.from_delta``). As PyFlink, the
file connector's names are also here."""

from __future__ import annotations

from .base import DeliveryGuarantee
from .delta import DeltaSink
from .file_system import (
    BucketAssigner,
    FileSink,
    FileSource,
    FileSourceBuilder,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)

__all__ = [
    "BucketAssigner",
    "DeliveryGuarantee",
    "DeltaSink",
    "FileSink",
    "FileSource",
    "FileSourceBuilder",
    "OutputFileConfig",
    "RollingPolicy",
    "StreamFormat",
]
