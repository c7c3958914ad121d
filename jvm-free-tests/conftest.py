"""Guards for the JVM-free test suite.

Tests under ``jvm-free-tests/`` may use plain-Python PySpark objects (``Row``,
``pyspark.sql.types``, ``GroupState``) but must never start a JVM. On import this conftest
replaces PySpark's Py4J gateway launcher with a function that raises ``RuntimeError``, so any
``SparkContext``/``SparkSession`` creation fails loudly instead of silently starting Java.

With ``PYSPARK_FLINKISH_ASSERT_NO_JAVA=1`` (set by ``make test-jvm-free``) it also checks that
no ``java`` executable is reachable on ``PATH``.

It also provides the ``golden`` fixture: documents this package writes (state codec, checkpoint files) compared
with the checked-in files under ``jvm-free-tests/golden/`` (see :class:`Golden` for regenerating them).

Property tests (Hypothesis) draw new examples on every run, except under ``CI=true``: there the ``ci`` profile
derandomizes them, so that a CI run is reproducible and a failure it finds is one a developer finds again (and a
random example found elsewhere becomes a fixed ``@example``).

Note: this imports ``pyspark`` into the test process; a test proving that a module does not
import pyspark must block it (``sys.modules``) or use a subprocess.
"""

from __future__ import annotations

import difflib
import importlib
import json
import os
import shutil
from pathlib import Path
from typing import Any, NoReturn

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")

GUARD_MESSAGE = (
    "jvm-free-tests must not start a JVM: the Py4J gateway launcher is disabled here; "
    "move tests that need a SparkSession to tests/ and request the `spark` fixture"
)


def _refuse_launch_gateway(*args: object, **kwargs: object) -> NoReturn:
    raise RuntimeError(GUARD_MESSAGE)


def _install_gateway_guard() -> None:
    try:
        java_gateway: Any = importlib.import_module("pyspark.java_gateway")
    except ImportError:
        return
    java_gateway.launch_gateway = _refuse_launch_gateway
    # SparkContext looks the launcher up in its own module namespace (``from ... import``).
    for name in ("pyspark.context", "pyspark.core.context"):
        try:
            module: Any = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "launch_gateway"):
            module.launch_gateway = _refuse_launch_gateway


def _assert_no_java() -> None:
    if os.environ.get("PYSPARK_FLINKISH_ASSERT_NO_JAVA") != "1":
        return
    java = shutil.which("java")
    if java is not None:
        msg = (
            f"PYSPARK_FLINKISH_ASSERT_NO_JAVA=1 but `java` is reachable at {java}; "
            "run the JVM-free suite via `make test-jvm-free` (PATH reduced to .venv/bin, JAVA_HOME unset)"
        )
        raise pytest.UsageError(msg)


_install_gateway_guard()
_assert_no_java()


REGENERATE_ENV = "PYSPARK_FLINKISH_REGENERATE_GOLDEN"
GOLDEN_DIR = Path(__file__).resolve().parent / "golden"


class Golden:
    """``golden(name, actual)``: compare a document this package writes (as JSON data) with the checked-in
    ``jvm-free-tests/golden/<name>.json``; ``golden.load(name)``: the checked-in data, for the other half of such
    a test, decoding it back (an existing checkpoint must stay readable).

    A renamed tag or field, a changed key encoding or file name fails here: the golden files are what older
    checkpoints hold. A deliberate format change bumps the format's version (older state is then refused or
    migrated, never misread) and regenerates the files::

        PYSPARK_FLINKISH_REGENERATE_GOLDEN=1 make test-jvm-free   # rewrites jvm-free-tests/golden/*.json
        git diff jvm-free-tests/golden                             # review, then commit with the change
    """

    def __call__(self, name: str, actual: Any, expand: int = 1) -> Any:
        """``expand``: how many levels of objects and arrays get one member per line in the file (deeper: one
        line each)."""
        path = GOLDEN_DIR / f"{name}.json"
        text = _layout(json.loads(json.dumps(actual)), expand) + "\n"
        if os.environ.get(REGENERATE_ENV) == "1":
            path.write_text(text, encoding="utf-8")
            return json.loads(text)
        how = (
            f"If the change is deliberate, bump the format's version (and read or refuse the old one), regenerate "
            f"with {REGENERATE_ENV}=1 make test-jvm-free, review `git diff jvm-free-tests/golden` and commit it."
        )
        if not path.exists():
            pytest.fail(f"golden file {path} is missing. {how}", pytrace=False)
        stored = json.loads(path.read_text(encoding="utf-8"))
        if stored != json.loads(text):
            diff = "\n".join(
                difflib.unified_diff(
                    _layout(stored, expand).splitlines(), text.splitlines(),
                    f"golden/{name}.json", "written now", lineterm="", n=2,
                )
            )
            pytest.fail(
                f"the {name} format changed: what this version writes differs from {path} "
                f"(what existing checkpoints hold).\n{diff[:6000]}\n{how}",
                pytrace=False,
            )
        return stored

    def load(self, name: str) -> Any:
        """The golden file's data as checked in (for decoding it back, whatever this version writes now)."""
        path = GOLDEN_DIR / f"{name}.json"
        if not path.exists():
            pytest.fail(f"golden file {path} is missing; regenerate with {REGENERATE_ENV}=1 make test-jvm-free", pytrace=False)
        return json.loads(path.read_text(encoding="utf-8"))


def _layout(data: Any, expand: int, indent: str = "") -> str:
    """JSON with the outer ``expand`` levels of objects and arrays one member per line, the rest compact: a diff shows
    which value changed without a file of thousands of lines."""
    if expand <= 0 or not isinstance(data, (dict, list)) or not data:
        return json.dumps(data, ensure_ascii=False, separators=(", ", ": "))
    inner = indent + " "
    if isinstance(data, list):
        return "[\n" + ",\n".join(inner + _layout(v, expand - 1, inner) for v in data) + "\n" + indent + "]"
    members = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {_layout(v, expand - 1, inner)}" for k, v in data.items()]
    return "{\n" + ",\n".join(members) + "\n" + indent + "}"


@pytest.fixture
def golden() -> Golden:
    """Compare a written document with its golden file (see :class:`Golden`)."""
    return Golden()


# The longest tests (seconds of one run of `make test-jvm-free --durations=60` on the loaded 2-core machine), collected
# first in this order: pytest-xdist's `load` scheduling deals the first quarter of the collection round-robin to the
# workers, so these start at once, one after the other on both workers, instead of one of them making the tail.
# A function's id (without parameters) or a whole module's path; keep it current from `--durations`.
LONGEST_FIRST = (
    "jvm-free-tests/spark/test_spark_differential.py::test_local_engine_and_foreach_batch_bodies_agree",  # 17.7
    "jvm-free-tests/spark/test_record_columns.py::test_columns_give_what_pickle_gives",  # 12.2
    "jvm-free-tests/spark/test_state_store.py::test_deltas_stay_few_snapshots_are_amortised_and_the_files_always_make_up_the_state",  # 10.2
    "jvm-free-tests/spark/test_spark_differential.py::test_the_generator_covers_every_feature",  # 9.8
    "jvm-free-tests/spark/test_state_columns.py::test_the_columnar_decoding_gives_the_per_value_codecs_columns",  # 9.2
    "jvm-free-tests/testing/test_plugin.py::test_the_plugin_loads_without_pyspark_and_offers_its_fixtures",  # 7.6
    "jvm-free-tests/core/test_core_batch_window.py::test_batched_equals_window_operator",  # 6.9
    "jvm-free-tests/spark/test_spark_differential.py::test_dataframe_source_columnar_and_fused_paths_agree",  # 5.9
    "jvm-free-tests/demo/test_demo.py::test_demo_is_deterministic",  # 5.6
    "jvm-free-tests/conformance/test_conformance.py::test_cli_runs_all_scenarios_and_reports",  # 4.1
    "jvm-free-tests/core/test_core_isolation.py::test_core_and_local_engine_import_with_pyspark_and_py4j_blocked",  # 3.5
    "jvm-free-tests/testing/test_plugin.py::test_the_harness_fixture_drives_a_user_window_function_without_java",  # 3.4
    "jvm-free-tests/demo/test_demo.py::test_demo_command_line",  # 3.3
    "jvm-free-tests/conformance/test_conformance.py::test_cli_fails_on_a_wrong_expectation_and_a_new_unknown_scenario",  # 3.1
)


def pytest_collection_modifyitems(items: list[Any]) -> None:
    """Collect the :data:`LONGEST_FIRST` tests first, in that order (a stable sort: the others keep their order)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}

    def position(item: Any) -> int:
        function = item.nodeid.split("[", 1)[0]
        return rank.get(function, rank.get(function.split("::", 1)[0], len(rank)))

    items.sort(key=position)
