"""``Configuration``, ``get_execution_environment(configuration)`` / ``configure(configuration)`` and
``KeyedStream.execute_and_collect`` against real PyFlink 2.3.0 (``pyflink_configuration.json``, made by
``benchmarks/pyflink_configuration.py`` from the cases of ``configuration_cases.py``): the same cases, run with
pyspark_flinkish, give what PyFlink gave, except the differences named in :data:`DIFFERENCES`.

An error compares by its message: Flink's ``IllegalArgumentException`` is this package's ``InvalidArgumentError``
(a ``ValueError``) whose message starts with Flink's; PyFlink's ``AttributeError`` for a dict given as a configuration
is an ``InvalidTypeError`` (a ``TypeError``) here, naming ``Configuration.from_dict``.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any, Dict

import configuration_cases as cases
import pytest

from pyspark_flinkish.common import Configuration, Row, Types
from pyspark_flinkish.core.errors import InvalidArgumentError, InvalidTypeError, UnsupportedFeatureError
from pyspark_flinkish.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyspark_flinkish.datastream.configuration_keys import APPLIED_KEYS

ORACLE: Dict[str, Any] = json.loads(Path(__file__).with_name("pyflink_configuration.json").read_text())

DIFFERENCES = {
    "pipeline.auto-watermark-interval='0'": "Flink turns periodic watermarks off; here they are emitted once per "
    "micro-batch and cannot be: refused, as set_auto_watermark_interval(0) is",
    "KeyedStream.get_type()": "the type of the stream's values here (PyFlink's is its internal Row(key, value))",
}
"""Where this package differs from the recorded PyFlink behaviour on purpose (docs/differences.md)."""

DEFAULT_PARALLELISM = 1
"""This package's default parallelism; PyFlink's local environment takes the machine's number of cores, so the
recorded ``get_parallelism`` of a configuration without ``parallelism.default`` is not compared."""


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


def _env_of(entries: Dict[str, Any], via: str) -> StreamExecutionEnvironment:
    conf = cases.configuration_of(Configuration, entries)
    if via == "configure":
        env = StreamExecutionEnvironment.get_execution_environment()
        env.configure(conf)
        return env
    return StreamExecutionEnvironment.get_execution_environment(conf)


ENV_CASES = [(via, name) for via in ("get_execution_environment", "configure") for name in cases.ENV_SETTINGS]


@pytest.mark.parametrize(("via", "name"), ENV_CASES, ids=[f"{v}:{n}" for v, n in ENV_CASES])
def test_environment_applies_configuration_as_pyflink(via: str, name: str) -> None:
    expected = ORACLE["environment"][via][name]
    made = cases.outcome(lambda: _env_of(cases.ENV_SETTINGS[name], via))
    if name in DIFFERENCES:
        assert made["error"].startswith("UnsupportedFeatureError: ") and "WatermarkStrategy.no_watermarks()" in made["error"]
        with pytest.raises(UnsupportedFeatureError, match=r"WatermarkStrategy\.no_watermarks\(\)"):
            _env_of(cases.ENV_SETTINGS[name], via)
        return
    if "error" in made:
        assert_same(expected, made, f"{via}: {name}")
        return
    env = _env_of(cases.ENV_SETTINGS[name], via)
    assert name not in DIFFERENCES
    got = cases.getters(env)
    if "parallelism.default" not in cases.ENV_SETTINGS[name]:
        for getter in ("get_parallelism", "get_config().get_parallelism"):
            assert got.pop(getter) == {"value": str(DEFAULT_PARALLELISM), "type": "int"}
            expected = {k: v for k, v in expected.items() if k != getter}
    assert got == expected


@pytest.mark.parametrize("via", ["get_execution_environment", "configure"])
@pytest.mark.parametrize("mode", cases.RUNTIME_MODES)
def test_runtime_mode_key_gives_pyflinks_results(via: str, mode: str) -> None:
    name = f"execution.runtime-mode={mode}: rolling reduce"
    got = cases.outcome(lambda: cases.rolling_reduce(_env_of({"execution.runtime-mode": mode}, via), Types))
    assert_same(ORACLE["environment"][via][name], got, name)


def test_environment_calls_around_configuration() -> None:
    recorded = ORACLE["environment"]
    conf = Configuration().set_integer("parallelism.default", 3)
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    conf.set_integer("parallelism.default", 5)  # the environment took a copy
    name = "configuration changed after get_execution_environment: get_parallelism"
    assert cases.outcome(env.get_parallelism) == recorded[name]
    env.set_parallelism(2)
    assert cases.outcome(env.get_parallelism) == recorded["set_parallelism(2) after it: get_parallelism"]
    configured = StreamExecutionEnvironment.get_execution_environment()
    configured.set_parallelism(4)
    configured.configure(Configuration().set_string("no.such.key", "x"))
    name = "configure without parallelism.default keeps set_parallelism(4)"
    assert cases.outcome(configured.get_parallelism) == recorded[name]
    assert_same(
        recorded["set_parallelism(0)"],
        cases.outcome(lambda: StreamExecutionEnvironment.get_execution_environment().set_parallelism(0)),
        "set_parallelism(0)",
    )
    assert cases.outcome(
        lambda: StreamExecutionEnvironment.get_execution_environment().set_parallelism(-1).get_parallelism()
    ) == recorded["set_parallelism(-1): get_parallelism"]
    assert_same(
        recorded["get_execution_environment(dict)"],
        cases.outcome(lambda: StreamExecutionEnvironment.get_execution_environment({"parallelism.default": "3"})),
        "get_execution_environment(dict)",
    )
    assert_same(
        recorded["configure(dict)"],
        cases.outcome(lambda: StreamExecutionEnvironment.get_execution_environment().configure({"a": "3"})),  # type: ignore[arg-type]
        "configure(dict)",
    )


def _local_env() -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    return env


@pytest.mark.parametrize("name", sorted(cases.keyed_collect_cases(_local_env, Types)))
def test_keyed_stream_execute_and_collect_returns_pyflinks_rows(name: str) -> None:
    result = cases.keyed_collect_cases(_local_env, Types)[name]()
    assert cases.collected(result, Row) == ORACLE["keyed_collect"][name]


def test_every_recorded_keyed_collect_case_is_compared() -> None:
    compared = set(cases.keyed_collect_cases(_local_env, Types)) | {"KeyedStream.get_type()"}
    assert compared == set(ORACLE["keyed_collect"])


def test_configuration_keyword_and_spark_session_position() -> None:
    """``configuration=`` as PyFlink's keyword; a Configuration given twice, or in the clock's place (after a
    SparkSession), is refused."""
    conf = Configuration().set_string("execution.runtime-mode", "BATCH")
    env = StreamExecutionEnvironment.get_execution_environment(configuration=conf)
    assert env.get_runtime_mode() is RuntimeExecutionMode.BATCH
    with pytest.raises(InvalidArgumentError, match="once"):
        StreamExecutionEnvironment.get_execution_environment(conf, configuration=conf)
    with pytest.raises(InvalidTypeError, match="configuration="):
        StreamExecutionEnvironment.get_execution_environment(None, conf)  # type: ignore[call-overload]


def test_invalid_value_changes_nothing() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    conf = Configuration().set_integer("parallelism.default", 3).set_string("execution.runtime-mode", "FOO")
    with pytest.raises(InvalidArgumentError, match=r"execution\.runtime-mode"):
        env.configure(conf)
    assert env.get_parallelism() == DEFAULT_PARALLELISM
    assert env.get_runtime_mode() is RuntimeExecutionMode.STREAMING


def test_jar_keys_are_refused_as_add_jars() -> None:
    for key in ("pipeline.jars", "pipeline.classpaths"):
        with pytest.raises(UnsupportedFeatureError, match=r"Flink (jars|classpaths) have no use here"):
            StreamExecutionEnvironment.get_execution_environment(Configuration().set_string(key, "file:///x.jar"))


def test_python_files_key_is_add_python_file(tmp_path: Path) -> None:
    module = tmp_path / "config_key_module_xyz.py"
    module.write_text("VALUE = 7\n")
    StreamExecutionEnvironment.get_execution_environment(Configuration().set_string("python.files", str(module)))
    import config_key_module_xyz  # type: ignore[import-not-found]

    assert config_key_module_xyz.VALUE == 7


@pytest.mark.parametrize(
    ("key", "value", "refusal"),
    [
        ("python.requirements", "requirements.txt#cache", r"set_python_requirements\('requirements\.txt'\)"),
        ("python.archives", "venv.zip#venv", r"add_python_archive\('venv\.zip'\)"),
        ("python.executable", "/no/such/python", r"set_python_executable\('/no/such/python'\)"),
    ],
)
def test_python_keys_are_refused_as_their_environment_methods(key: str, value: str, refusal: str) -> None:
    """On the JVM-free engine: requirements are never installed, an archive has no worker directory, the functions
    run in this interpreter."""
    with pytest.raises(UnsupportedFeatureError, match=refusal):
        StreamExecutionEnvironment.get_execution_environment(Configuration().set_string(key, value))


def test_python_executable_key_accepts_this_interpreter() -> None:
    conf = Configuration().set_string("python.executable", sys.executable)
    assert StreamExecutionEnvironment.get_execution_environment(conf).get_parallelism() == DEFAULT_PARALLELISM


def test_checkpointing_mode_key_survives_enable_checkpointing() -> None:
    """As in Flink, ``enable_checkpointing(interval)`` keeps the mode the configuration set."""
    from pyspark_flinkish.datastream import CheckpointingMode

    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("execution.checkpointing.mode", "AT_LEAST_ONCE")
    )
    env.enable_checkpointing(1000)
    assert env.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE


def test_docs_table_lists_every_applied_key() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "migrating-from-pyflink.md").read_text()
    for key in APPLIED_KEYS:
        assert f"| `{key}` |" in doc, key
