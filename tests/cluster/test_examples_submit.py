"""The ``spark-submit`` examples in ``examples/``: each has a useful ``--help``; two of them run with
``spark-submit --py-files <the package as a zip>`` (local master, a throwaway interpreter that sees only the
shipped package, as in ``test_spark_submit_standalone.py``) on their generated, bounded input, and their Delta
tables equal the JVM-free engine's results of the same pipeline on the same micro-batches."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Tuple

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SUBMIT_EXAMPLES = [
    "spark_windowed_word_count.py",
    "spark_trades_per_industry.py",
    "spark_sensor_alerts.py",
    "spark_game_sessions.py",
]


def _load(path: Path, name: str = "") -> ModuleType:
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    if name:
        sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


# the wheel, interpreter and environment helpers of the standalone-cluster test
STANDALONE = _load(Path(__file__).with_name("test_spark_submit_standalone.py"), "_flinkish_submit_helpers")


@pytest.mark.parametrize("name", SUBMIT_EXAMPLES)
def test_example_help(name: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, str(EXAMPLES / name), "--help"], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert "--out" in r.stdout and "--checkpoint" in r.stdout
    assert "usage:" in r.stdout and len(r.stdout.splitlines()) > 8


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Tuple[Path, Path]:
    """(the package's wheel renamed .zip, an interpreter without the repository's pyspark_flinkish)."""
    base = tmp_path_factory.mktemp("ship")
    wheel, _ = STANDALONE._build_wheel(base / "wheel")
    archive = base / (wheel.stem + ".zip")  # --py-files imports .zip, never .whl
    shutil.copyfile(wheel, archive)
    return archive, STANDALONE._isolated_python(base / "python")


def _submit(shipped: Tuple[Path, Path], script: Path, args: List[str], tmp: Path) -> str:
    from pyspark_flinkish.spark import jars

    archive, python = shipped
    spark_home = STANDALONE._spark_home()
    env = STANDALONE._clean_env(tmp, spark_home)
    cmd = [
        str(spark_home / "bin" / "spark-submit"),
        "--master", "local[2]",
        "--py-files", str(archive),
        "--jars", ",".join(jars.jars("spark")),
        "--conf", f"spark.pyspark.python={python}",
        "--conf", f"spark.pyspark.driver.python={python}",
        "--conf", "spark.ui.enabled=false",
        "--conf", f"spark.driver.host={STANDALONE.LOOPBACK}",
        "--conf", "spark.databricks.delta.snapshotPartitions=2",  # instead of Delta's 50 (tests/conftest.py)
        str(script), *args,
    ]
    started = time.monotonic()
    r = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=900)
    print(f"{script.name}: exit {r.returncode} after {time.monotonic() - started:.0f} s")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-6000:]
    return r.stdout


def _jvm_free(module: ModuleType, batches: Any, **source_kwargs: Any) -> Dict[str, List[Any]]:
    from pyspark_flinkish.datastream import MicroBatchSource, StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    strategy = module.watermark_strategy().with_timestamp_assigner(lambda e, _: e.ts)
    streams = module.build(env.from_source(MicroBatchSource(batches, **source_kwargs), strategy, "input"))
    out: Dict[str, List[Any]] = {name: [] for name in streams}
    for name, stream in streams.items():
        stream.add_sink(out[name].append)
    env.execute("reference")
    return out


def _rows(values: List[Any], columns: List[str]) -> List[tuple]:  # type: ignore[type-arg]
    return sorted(tuple(v[c] for c in columns) for v in values)


def _delta(spark: Any, path: Path, columns: List[str]) -> List[tuple]:  # type: ignore[type-arg]
    return sorted(tuple(r[c] for c in columns) for r in spark.read.format("delta").load(str(path)).collect())


@pytest.mark.timeout(900)
def test_sensor_alerts_with_spark_submit_equal_the_jvm_free_engine(
    request: pytest.FixtureRequest, shipped: Tuple[Path, Path], tmp_path: Path
) -> None:
    script = EXAMPLES / "spark_sensor_alerts.py"
    stdout = _submit(shipped, script, ["--out", str(tmp_path / "out"), "--checkpoint", str(tmp_path / "ck"),
                                       "--batches", "6", "--sensors", "8", "--seed", "3"], tmp_path)
    assert "done: alerts" in stdout
    example = _load(script)
    expected = _jvm_free(example, example.generate(6, 8, 3))
    spark = request.getfixturevalue("spark")  # only now: no second JVM while spark-submit runs
    alert_cols = ["sensor", "temp_ts", "temperature", "smoke_ts", "smoke"]
    late_cols = ["sensor", "ts", "kind", "value"]
    assert expected["alerts"] and expected["late"]  # the input exercises both outputs
    assert _delta(spark, tmp_path / "out" / "alerts", alert_cols) == _rows(expected["alerts"], alert_cols)
    assert _delta(spark, tmp_path / "out" / "late", late_cols) == _rows(expected["late"], late_cols)


@pytest.mark.timeout(900)
def test_game_sessions_with_spark_submit_equal_the_jvm_free_engine(
    request: pytest.FixtureRequest, shipped: Tuple[Path, Path], tmp_path: Path
) -> None:
    script = EXAMPLES / "spark_game_sessions.py"
    args = ["--players", "12", "--minutes", "10", "--seed", "21", "--batch-seconds", "150"]
    stdout = _submit(shipped, script, ["--out", str(tmp_path / "out"), "--checkpoint", str(tmp_path / "ck"), *args], tmp_path)
    assert "done: sessions" in stdout
    example = _load(script)
    expected = _jvm_free(example, example.generate(12, 10, 21, 150), partitions=list(range(example.PARTITIONS)))
    spark = request.getfixturevalue("spark")
    session_cols = ["player", "start", "end", "events", "score", "watermark"]
    assert expected["sessions"] and expected["late"]
    assert _delta(spark, tmp_path / "out" / "sessions", session_cols) == _rows(expected["sessions"], session_cols)
    late = [(r["player"], r["ts"], r["score"]) for r in expected["late"]]
    assert _delta(spark, tmp_path / "out" / "late", ["player", "ts", "score"]) == sorted(late)
