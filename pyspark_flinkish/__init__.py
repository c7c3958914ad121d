"""Apache Flink's DataStream semantics on Apache Spark Structured Streaming."""

__version__ = "0.1.0"
