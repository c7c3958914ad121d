"""The pytest plugin (``pyspark_flinkish.testing.plugin``) as a user's test suite meets it: it loads without
pyspark or a JVM, its harness fixtures drive a user's window function, and docs/testing.md's worked example
passes as a user's test file."""

from __future__ import annotations

import configparser
import re
from importlib import metadata
from pathlib import Path

import pytest

from pyspark_flinkish.testing import assert_stream_output_equal

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = "pyspark_flinkish.testing.plugin"

NO_PYSPARK = """
import sys

def test_no_pyspark_was_imported():
    assert not [m for m in sys.modules if m == "pyspark" or m.startswith(("pyspark.", "py4j"))]
"""

# chispa's row comparer (assert_stream_output_equal) imports pyspark.sql, plain Python: no JVM may start
NO_JVM = """

def test_no_jvm_was_started():
    import sys
    if "pyspark" in sys.modules:
        from pyspark import SparkContext
        assert SparkContext._active_spark_context is None
"""


@pytest.fixture
def isolated(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester whose runs load only the plugins they name (not whatever else the venv installed)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return pytester


def test_the_entry_point_names_the_plugin_module() -> None:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    entries = [line.strip() for line in config["options.entry_points"]["pytest11"].strip().splitlines()]
    assert entries == [f"pyspark_flinkish = {PLUGIN}"]


def test_the_installed_entry_point_loads_the_plugin(pytester: pytest.Pytester) -> None:
    points = [ep for ep in metadata.entry_points(group="pytest11") if ep.name == "pyspark_flinkish"]
    if not points:
        pytest.skip("the installed metadata predates the pytest11 entry point: reinstall (make setup)")
    assert points[0].value == PLUGIN
    pytester.makepyfile("def test_env(jvm_free_env):\n    assert type(jvm_free_env).__name__ == \"StreamExecutionEnvironment\"\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_the_plugin_loads_without_pyspark_and_offers_its_fixtures(isolated: pytest.Pytester) -> None:
    isolated.makepyfile(NO_PYSPARK)
    result = isolated.runpytest_subprocess("-p", PLUGIN, "--fixtures", "-p", "no:cacheprovider")
    for name in ("window_harness", "keyed_process_harness", "jvm_free_env", "flinkish_spark",
                 "flinkish_spark_options", "kafka_broker", "kafka_topic"):
        result.stdout.fnmatch_lines([f"{name}*"])
    result = isolated.runpytest_subprocess("-p", PLUGIN, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_the_harness_fixture_drives_a_user_window_function_without_java(isolated: pytest.Pytester) -> None:
    isolated.makepyfile(
        NO_PYSPARK
        + '''
import os
import shutil

from pyspark_flinkish.datastream import OutputTag
from pyspark_flinkish.datastream.functions import ProcessWindowFunction
from pyspark_flinkish.datastream.window import CountEvictor, SlidingEventTimeWindows


class Total(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield key, context.window().start, sum(v for _, v in elements)

    def close(self):
        CLOSED.append(True)


CLOSED = []


def test_sliding_windows_with_an_evictor_and_late_data(window_harness):
    late = OutputTag("late")
    h = window_harness.process(SlidingEventTimeWindows.of(10, 5), Total(), lambda v: v[0],
                               evictor=CountEvictor.of(1), late_data_tag=late)
    h.process_element(("a", 1), timestamp=6)
    h.process_element(("a", 2), timestamp=7)
    h.process_watermark(9)
    assert h.extract_output_values() == [("a", 0, 2)]
    h.process_element(("a", 4), timestamp=3)
    assert h.extract_side_output_values(late) == [("a", 4)]
    h.end_input()
    assert h.extract_output_values() == [("a", 0, 2), ("a", 5, 2)]
    assert h.watermarks()[-1] == 2**63 - 1


def test_harnesses_are_closed_at_teardown():
    assert CLOSED == [True]


def test_no_java_here():
    if os.environ.get("PYSPARK_FLINKISH_ASSERT_NO_JAVA") == "1":
        assert shutil.which("java") is None
'''
    )
    result = isolated.runpytest_subprocess("-p", PLUGIN, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)


def test_the_docs_worked_example_passes(isolated: pytest.Pytester) -> None:
    page = (ROOT / "docs" / "testing.md").read_text()
    blocks = re.findall(r"```python\n# (test_\w+\.py)\n(.*?)```", page, re.S)
    assert [name for name, _ in blocks] == ["test_top_scores.py"]
    for name, code in blocks:
        (isolated.path / name).write_text(code + NO_JVM)
    result = isolated.runpytest_subprocess("-p", PLUGIN, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6)


def test_assert_stream_output_equal_shows_a_diff_without_a_session() -> None:
    assert_stream_output_equal([("a", 1), ("b", 2)], [("b", 2), ("a", 1)])
    assert_stream_output_equal([3, 1], [1, 3])
    assert_stream_output_equal([("a", 1)], [("a", 1)], ignore_order=False)
    from chispa import DataFramesNotEqualError

    with pytest.raises(DataFramesNotEqualError, match="_2=2"):
        assert_stream_output_equal([("a", 1)], [("a", 2)])
    with pytest.raises(DataFramesNotEqualError):
        assert_stream_output_equal([("a", 1), ("b", 2)], [("b", 2), ("a", 1)], ignore_order=False)


def test_assert_stream_output_equal_compares_pyflink_rows_by_field() -> None:
    from chispa import DataFramesNotEqualError

    from pyspark_flinkish.common import Row

    assert_stream_output_equal([Row(k="a", n=1), Row(k="b", n=2)], [Row(k="b", n=2), Row(k="a", n=1)])
    assert_stream_output_equal([Row("a", 1)], [("a", 1)])
    with pytest.raises(DataFramesNotEqualError, match="n=2"):
        assert_stream_output_equal([Row(k="a", n=1)], [Row(k="a", n=2)])
