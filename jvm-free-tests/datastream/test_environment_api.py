"""PyFlink's environment API on the JVM-free engine: ``get_config``, max parallelism, checkpointing, Python
dependencies, jars, ``get_execution_plan``, ``execute_async`` and its ``JobClient``."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any, List

import pytest

from pyspark_flinkish.common import CompletableFuture, ExecutionConfig, JobClient, JobExecutionResult, JobStatus
from pyspark_flinkish.common.job_client import JobCancelledError
from pyspark_flinkish.core.errors import (
    InvalidArgumentError,
    InvalidTypeError,
    UnsupportedFeatureError,
    UserFunctionError,
)
from pyspark_flinkish.datastream import CheckpointingMode, MicroBatch, StreamExecutionEnvironment
from pyspark_flinkish.datastream.window import GlobalWindows


def test_get_config_is_shared_with_the_environment() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    config = env.get_config()
    assert isinstance(config, ExecutionConfig) and env.get_config() is config
    assert config.get_auto_watermark_interval() == 200
    assert config.set_auto_watermark_interval(1000) is config and config.get_auto_watermark_interval() == 1000
    with pytest.raises(UnsupportedFeatureError, match="no_watermarks"):
        config.set_auto_watermark_interval(0)
    config.set_parallelism(4)
    assert env.get_parallelism() == 4
    env.set_max_parallelism(256)
    assert config.get_max_parallelism() == 256


def test_max_parallelism_follows_flinks_bounds() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    assert env.get_max_parallelism() == -1
    assert env.set_max_parallelism(32768) is env and env.get_max_parallelism() == 32768
    for bad in (0, 32769, "8"):
        with pytest.raises(InvalidArgumentError, match="max parallelism"):
            env.set_max_parallelism(bad)  # type: ignore[arg-type]


def test_enable_checkpointing_records_interval_and_mode() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    assert env.get_checkpoint_interval() == -1
    env.enable_checkpointing(5000)
    assert env.get_checkpoint_interval() == 5000 and env.get_checkpointing_mode() is CheckpointingMode.EXACTLY_ONCE
    env.enable_checkpointing(1000, CheckpointingMode.AT_LEAST_ONCE)
    assert env.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    with pytest.raises(InvalidArgumentError, match="10 ms"):
        env.enable_checkpointing(5)
    with pytest.raises(InvalidTypeError, match="CheckpointingMode"):
        env.enable_checkpointing(1000, "exactly_once")  # type: ignore[arg-type]


def test_add_python_file_makes_a_module_and_a_package_importable(tmp_path: Path) -> None:
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "flinkish_dep_mod.py").write_text("VALUE = 41\n")
    (tmp_path / "flinkish_dep_pkg").mkdir()
    (tmp_path / "flinkish_dep_pkg" / "__init__.py").write_text("VALUE = 1\n")
    env = StreamExecutionEnvironment.get_execution_environment()
    saved = list(sys.path)
    try:
        env.add_python_file(str(tmp_path / "mods" / "flinkish_dep_mod.py"))
        env.add_python_file(str(tmp_path / "flinkish_dep_pkg"))

        def plus(x: int) -> int:
            import flinkish_dep_mod
            import flinkish_dep_pkg

            return x + flinkish_dep_mod.VALUE + flinkish_dep_pkg.VALUE

        with env.from_collection([0, 1]).map(plus).execute_and_collect() as got:
            assert list(got) == [42, 43]
    finally:
        sys.path[:] = saved
        sys.modules.pop("flinkish_dep_mod", None)
        sys.modules.pop("flinkish_dep_pkg", None)
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        env.add_python_file(str(tmp_path / "missing.py"))


def test_what_the_jvm_free_engine_cannot_do_is_refused_naming_the_alternative() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(UnsupportedFeatureError, match=r"SparkContext\.addArchive"):
        env.add_python_archive("venv.zip", "venv")
    with pytest.raises(UnsupportedFeatureError, match="pip install"):
        env.set_python_requirements("requirements.txt")
    with pytest.raises(UnsupportedFeatureError, match=r"spark\.jars"):
        env.add_jars("file:///flink-connector-kafka.jar")
    with pytest.raises(UnsupportedFeatureError, match="extraClassPath"):
        env.add_classpaths("file:///x.jar")
    with pytest.raises(UnsupportedFeatureError, match="PYSPARK_PYTHON"):
        env.set_python_executable("/usr/bin/python2")
    env.set_python_executable(sys.executable)  # this interpreter: accepted


def test_execution_plan_is_flinks_json_shape() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2]).map(lambda x: x).window_all(GlobalWindows.create()).reduce(lambda a, b: a + b).print()
    plan = json.loads(env.get_execution_plan())
    types = [n["type"] for n in plan["nodes"]]
    assert types == ["Source: Collection", "Map", "AllWindow(reduce)", "Sink: Sink"]
    assert [n["pact"] for n in plan["nodes"]] == ["Data Source", "Operator", "Operator", "Data Sink"]
    by_type = {n["type"]: n for n in plan["nodes"]}
    assert by_type["AllWindow(reduce)"]["predecessors"] == [
        {"id": by_type["Map"]["id"], "ship_strategy": "HASH", "side": "second"}
    ]
    assert by_type["Map"]["predecessors"][0]["ship_strategy"] == "FORWARD"
    assert "predecessors" not in by_type["Source: Collection"]


def test_execute_async_returns_a_job_client_with_the_result() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    out: List[Any] = []
    env.from_collection([1, 2, 3]).map(lambda x: x * 10).add_sink(out.append)
    client = env.execute_async("async job")
    assert isinstance(client, JobClient)
    result = client.get_job_execution_result().result(timeout=30)
    assert isinstance(result, JobExecutionResult) and result.job_name == "async job"
    assert out == [10, 20, 30]
    assert client.get_job_status().result() is JobStatus.FINISHED
    assert client.get_job_status().result().is_globally_terminal_state()
    assert len(client.get_job_id().to_hex_string()) == 32


def test_cancel_stops_the_job_after_the_current_micro_batch() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    started, release = threading.Event(), threading.Event()
    seen: List[int] = []

    def slow(x: int) -> int:
        started.set()
        release.wait(10)
        return x

    env.from_micro_batches([MicroBatch([i]) for i in range(100)]).map(slow).add_sink(seen.append)
    client = env.execute_async("cancelled job")
    assert started.wait(10)
    assert client.get_job_status().result() is JobStatus.RUNNING
    stopped = client.cancel()
    release.set()
    assert stopped.result(timeout=30) is None
    with pytest.raises(JobCancelledError, match="cancelled"):
        client.get_job_execution_result().result()
    assert client.get_job_status().result() is JobStatus.CANCELED
    assert 1 <= len(seen) < 100


def test_failed_async_job_reports_its_error() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 0]).map(lambda x: 1 // x).add_sink(lambda v: None)
    client = env.execute_async("failing")
    future = client.get_job_execution_result()
    assert isinstance(future, CompletableFuture)
    with pytest.raises(UserFunctionError, match="ZeroDivisionError"):
        future.result(timeout=30)
    assert client.get_job_status().result() is JobStatus.FAILED
