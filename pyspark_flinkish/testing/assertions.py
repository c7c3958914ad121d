"""Assertions on a stream's output, built on chispa's row and DataFrame comparers.

Importing this module imports neither pyspark nor chispa: both are imported when an assertion runs, and
comparing plain lists (what ``execute_and_collect()`` returns on the JVM-free engine) never starts a JVM.
"""

from __future__ import annotations

from typing import Any, Iterable, List

__all__ = ["assert_df_equality", "assert_stream_output_equal"]


def _is_dataframe(value: Any) -> bool:
    return hasattr(value, "collect") and hasattr(value, "schema")


def _as_rows(values: Iterable[Any]) -> List[Any]:
    """Each value as a ``pyspark.sql.Row`` with field names (chispa's diff table shows ``field=value``):
    a Row stays as it is, a PyFlink ``Row`` keeps its names (its kind is not compared), a tuple or positional
    PyFlink ``Row`` becomes ``Row(_1=..., _2=...)``, anything else ``Row(value=...)``."""
    from pyspark.sql import Row

    from ..core.rows import Row as FlinkRow

    rows = []
    for value in values:
        if isinstance(value, FlinkRow):
            names = getattr(value, "_fields", None) or [f"_{i + 1}" for i in range(len(value))]
            rows.append(Row(**dict(zip(names, value))))
        elif isinstance(value, Row) and hasattr(value, "__fields__"):
            rows.append(value)
        elif isinstance(value, tuple) and not isinstance(value, Row):
            rows.append(Row(**{f"_{i + 1}": v for i, v in enumerate(value)}))
        else:
            rows.append(Row(value=value))
    return rows


def assert_stream_output_equal(
    actual: Any,
    expected: Any,
    *,
    ignore_order: bool = True,
    ignore_nullable: bool = True,
    ignore_column_order: bool = False,
) -> None:
    """Assert that a stream's output equals ``expected``, with chispa's side-by-side diff when it does not.

    Args:
        actual: a DataFrame (e.g. ``stream.to_dataframe()`` written to a memory sink and read back, or what a
            ``foreach_batch`` function got) or a list of elements (``execute_and_collect()``, a harness's
            ``extract_output_values()``).
        expected: a DataFrame or a list: ``Row``s, tuples or plain values.
        ignore_order: compare as multisets (the default: results of different keys have no defined order,
            as in Flink). ``False`` also checks the order.
        ignore_nullable: when both are DataFrames, ignore the schemas' nullability (Spark infers it
            differently for literals and for computed columns).
        ignore_column_order: when both are DataFrames, match columns by name.

    Raises:
        chispa.DataFramesNotEqualError: the rows differ (or, for two DataFrames, chispa's
            ``SchemasNotEqualError`` when the schemas do).

    Two DataFrames are compared by :func:`chispa.assert_df_equality`; otherwise both sides are turned into
    lists of ``Row``s (a DataFrame is collected) and compared by ``chispa.assert_basic_rows_equality``, which
    needs no SparkSession.

    Example:
        >>> assert_stream_output_equal([("ann", 2), ("bob", 1)], [("bob", 1), ("ann", 2)])
    """
    if _is_dataframe(actual) and _is_dataframe(expected):
        from chispa import assert_df_equality as _assert_df_equality

        _assert_df_equality(
            actual,
            expected,
            ignore_nullable=ignore_nullable,
            ignore_row_order=ignore_order,
            ignore_column_order=ignore_column_order,
        )
        return
    from chispa import assert_basic_rows_equality

    actual_rows = _as_rows(actual.collect() if _is_dataframe(actual) else actual)
    expected_rows = _as_rows(expected.collect() if _is_dataframe(expected) else expected)
    if ignore_order:
        actual_rows.sort(key=repr)
        expected_rows.sort(key=repr)
    assert_basic_rows_equality(actual_rows, expected_rows)


def assert_df_equality(df1: Any, df2: Any, **kwargs: Any) -> None:
    """chispa's :func:`chispa.assert_df_equality`, re-exported (imported when called, not when this module is)."""
    from chispa import assert_df_equality as _assert_df_equality

    _assert_df_equality(df1, df2, **kwargs)
