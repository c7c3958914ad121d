"""Key selectors that only read fields are recognised; everything else is left to per-element calls."""

from __future__ import annotations

from typing import Any

import pytest

from pyspark_flinkish.core.fields import field_selector
from pyspark_flinkish.datastream.functions import KeySelector


class ByUser(KeySelector):
    def get_key(self, value: Any) -> Any:
        return value.user


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (lambda r: r.user, (("user",), False)),
        (lambda r: r["user"], (("user",), False)),
        (lambda r: r[0], ((0,), False)),
        (lambda r: (r.user, r["region"]), (("user", "region"), True)),
        (ByUser().get_key, (("user",), False)),
    ],
)
def test_field_selectors(selector: Any, expected: Any) -> None:
    assert field_selector(selector) == expected


@pytest.mark.parametrize(
    "selector",
    [
        lambda r: r.user.lower(),
        lambda r: r.user + 1,
        lambda r: str(r.user),
        lambda r: f"{r.user}",
        lambda r: r.user % 4,
        lambda r: hash(r.user),
        lambda r: r.user if r.flag else r.other,
        lambda r: r.user[0],
        lambda r: r.get("user"),
        lambda r: 1,
        lambda r: (),
        lambda r: [r.user],
        lambda r: r,
        lambda r: (r.user, 1),
        lambda r: len(r),
        lambda r: r.__class__,
    ],
)
def test_other_selectors_are_not_field_selectors(selector: Any) -> None:
    assert field_selector(selector) is None
