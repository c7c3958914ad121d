"""Built-in aggregate functions over named fields (``ColumnAggregate(Count(), Sum("amount"), ...)``).

They are ordinary Flink ``AggregateFunction``s (use them with ``WindowedStream.aggregate``) that the Spark
foreachBatch executor can also compute column-wise; see :mod:`pyspark_flinkish.core.aggregates`. Not in PyFlink.
"""

from __future__ import annotations

from ..core.aggregates import AggregatePart, ColumnAggregate, Count, Max, Min, Sum

__all__ = ["AggregatePart", "ColumnAggregate", "Count", "Max", "Min", "Sum"]
