"""``spark/rows.py``: the stage rows' frame and the pickling of elements, as pandas and pickle would make them."""

from __future__ import annotations

import pickle

import pandas as pd
import pytest

from pyspark_flinkish.spark.rows import ROW_COLUMNS, dumps, loads, row_frame


def _rows(ts: list) -> list:
    return [{"kind": "rec", "dest": 1, "sp": -1, "value": b"x", "ts": t, "ord": [1, i]} for i, t in enumerate(ts)]


@pytest.mark.parametrize(
    "ts",
    [[5, None, -(2**63), 2**63 - 1], [None, None], [], [True, 3]],
    ids=["ints-and-none", "all-none", "empty", "bool-goes-to-pandas"],
)
def test_long_columns_as_pandas_makes_them(ts: list) -> None:
    frame = row_frame(_rows(ts))
    assert list(frame.columns) == ROW_COLUMNS
    for col in ("ts", "stat_max", "stat_count", "stat_batch"):
        values = [r.get(col) for r in _rows(ts)]
        pd.testing.assert_series_equal(frame[col], pd.Series(values, dtype="Int64"), check_names=False)


def test_long_column_out_of_range_is_refused() -> None:
    with pytest.raises((OverflowError, TypeError)):
        row_frame(_rows([2**63]))


@pytest.mark.parametrize(
    "value",
    [(1, "a", 2.5, None, b"b", True), (), (1, (2, 3)), ("k", [1, 2]), {"a": (1,)}, 7],
    ids=["scalars", "empty", "nested-tuple", "nested-list", "dict", "scalar"],
)
def test_dumps_plain_values_with_pickle(value: object) -> None:
    assert dumps(value) == pickle.dumps(value, protocol=4)
    assert loads(dumps(value)) == value
