"""``Configuration`` against real PyFlink 2.3.0 (``pyflink_configuration.json``, made by
``benchmarks/pyflink_configuration.py`` from the cases of ``configuration_cases.py``): the same cases, run with
pyspark_flinkish, give what PyFlink gave.

An error compares by its message: Flink's ``IllegalArgumentException`` is this package's ``InvalidArgumentError``
(a ``ValueError``) whose message starts with Flink's; PyFlink's ``AttributeError`` for a dict given as a configuration
is an ``InvalidTypeError`` (a ``TypeError``) here, naming ``Configuration.from_dict``.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any, Dict

import configuration_cases as cases
import pytest

from pyspark_flinkish.common import Configuration

ORACLE: Dict[str, Any] = json.loads(Path(__file__).with_name("pyflink_configuration.json").read_text())


def assert_same(expected: Dict[str, Any], got: Dict[str, Any], where: str) -> None:
    if "error" not in expected:
        assert got == expected, where
        return
    assert "error" in got, f"{where}: PyFlink raised {expected['error']}; got {got}"
    flink = expected["error"]
    if "IllegalArgumentException: " in flink:
        message = flink.split("IllegalArgumentException: ", 1)[1]
        assert got["error"].startswith(f"InvalidArgumentError: {message}"), (where, got)
    elif flink.startswith("AttributeError") and "_j_configuration" in flink:
        assert got["error"].startswith("InvalidTypeError: ") and "Configuration.from_dict" in got["error"], (where, got)
    else:
        msg = f"{where}: no rule compares PyFlink's {flink!r} with {got!r}"
        raise AssertionError(msg)


ORDER_FREE = {"add_all_to_dict"}
"""Cases whose dict is compared as a dict: PyFlink fills it from a ``java.util.Properties`` (a hash table of another
iteration order than the ``HashMap`` that ``to_dict`` and ``str`` follow)."""


@pytest.fixture(scope="module")
def configuration_outcomes() -> Dict[str, Any]:
    """Every configuration case with this package, in the recorded order (later cases see what earlier ones set)."""
    return {name: cases.outcome(f) for name, f in cases.configuration_cases(Configuration).items()}


@pytest.mark.parametrize("name", sorted(ORACLE["configuration"]))
def test_configuration_behaves_as_pyflinks(name: str, configuration_outcomes: Dict[str, Any]) -> None:
    expected, got = ORACLE["configuration"][name], configuration_outcomes[name]
    if name in ORDER_FREE:
        assert got["type"] == expected["type"] and ast.literal_eval(got["value"]) == ast.literal_eval(expected["value"])
        return
    assert_same(expected, got, name)


def test_every_configuration_case_was_recorded() -> None:
    assert set(cases.configuration_cases(Configuration)) == set(ORACLE["configuration"])
