"""The test HDFS's pieces that need no JVM: the Hadoop version its jars must have (pyspark's own), how ``make jars``
fetches them, the errors when they are missing or of another version, and the fixture's registration."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any, List

import pytest

from pyspark_flinkish.spark import jars
from pyspark_flinkish.testing import plugin
from pyspark_flinkish.testing.hdfs import MiniHdfs, MiniHdfsError, hdfs_classpath


def _fake_pyspark_jars(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "pyspark-jars"
    folder.mkdir()
    for name in names:
        (folder / name).write_bytes(b"")
    return folder


def test_the_hadoop_version_is_read_from_pysparks_client_api_jar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = jars.hadoop_version()
    assert (jars.pyspark_jars_dir() / f"hadoop-client-api-{real}.jar").exists()
    folder = _fake_pyspark_jars(tmp_path, "hadoop-client-api-3.4.1.jar", "hadoop-client-runtime-3.4.1.jar", "parquet-hadoop-1.15.2.jar")
    monkeypatch.setattr(jars, "pyspark_jars_dir", lambda: folder)
    assert jars.hadoop_version() == "3.4.1"
    assert "org.apache.hadoop:hadoop-client-minicluster:3.4.1" in jars.coordinates("hdfs")


def test_no_or_several_hadoop_versions_in_pyspark_are_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _fake_pyspark_jars(tmp_path, "hadoop-client-api-3.4.1.jar", "hadoop-client-api-3.5.0.jar")
    monkeypatch.setattr(jars, "pyspark_jars_dir", lambda: folder)
    with pytest.raises(RuntimeError, match=r"cannot tell which Hadoop pyspark ships.*found 3\.4\.1, 3\.5\.0"):
        jars.hadoop_version()
    (folder / "hadoop-client-api-3.4.1.jar").unlink()
    (folder / "hadoop-client-api-3.5.0.jar").unlink()
    with pytest.raises(MiniHdfsError, match="found none"):
        hdfs_classpath(tmp_path)


def test_the_spark_and_kafka_markers_are_unchanged(tmp_path: Path) -> None:
    """A checkout's fetched jars stay valid: only the ``hdfs`` marker depends on more than its POM."""
    for kind in ("spark", "kafka"):
        folder = tmp_path / kind
        folder.mkdir()
        (folder / "a-1.jar").write_bytes(b"")
        (folder / ".complete").write_text(hashlib.sha256(jars.POMS[kind].read_bytes()).hexdigest()[:16])
        assert jars.jars(kind, tmp_path) == [str(folder / "a-1.jar")]


def test_fetch_passes_pysparks_hadoop_version_to_maven_and_compiles_the_launcher(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands: List[List[str]] = []

    def run(cmd: List[str], **kwargs: Any) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
        commands.append(cmd)
        if cmd[0].endswith("mvn"):
            out = next(c for c in cmd if c.startswith("-DoutputDirectory=")).split("=", 1)[1]
            (Path(out) / "hadoop-client-api-9.9.9.jar").write_bytes(b"")
        else:  # javac
            classes = Path(cmd[cmd.index("-d") + 1])
            (classes / "MiniHdfs.class").write_bytes(b"")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(jars, "POMS", {"hdfs": jars.POMS["hdfs"]})
    monkeypatch.setattr(jars, "hadoop_version", lambda: "9.9.9")
    monkeypatch.setattr(jars.subprocess, "run", run)
    jars.fetch(tmp_path)
    assert "-Dhadoop.version=9.9.9" in commands[0] and "dependency:copy-dependencies" in commands[0]
    assert commands[1][0].endswith("javac") and commands[1][-1].endswith("MiniHdfs.java")
    assert (tmp_path / "hdfs" / "src" / "MiniHdfs.java").read_bytes() == (jars.POMS["hdfs"].parent / "MiniHdfs.java").read_bytes()
    assert jars.jars("hdfs", tmp_path) == [str(tmp_path / "hdfs" / "hadoop-client-api-9.9.9.jar")]
    jars.fetch(tmp_path)  # idempotent: nothing runs again
    assert len(commands) == 2
    assert hdfs_classpath(tmp_path) == [str(tmp_path / "hdfs" / "classes"), str(tmp_path / "hdfs" / "hadoop-client-api-9.9.9.jar")]

    monkeypatch.setattr(jars, "hadoop_version", lambda: "9.9.10")  # pyspark upgraded since: fetched again
    assert jars.jars("hdfs", tmp_path) == []
    with pytest.raises(MiniHdfsError, match=r"of Hadoop 9\.9\.9, but pyspark ships Hadoop 9\.9\.10.*make jars"):
        hdfs_classpath(tmp_path)
    jars.fetch(tmp_path)
    assert "-Dhadoop.version=9.9.10" in commands[2] and commands[3][0].endswith("javac")


def test_missing_jars_say_how_to_fetch_them(tmp_path: Path) -> None:
    cluster = MiniHdfs(jars_dir=tmp_path)
    with pytest.raises(MiniHdfsError, match="make jars"):
        cluster.start()
    assert cluster.directory is None and not cluster.is_running
    with pytest.raises(MiniHdfsError, match="has not been started"):
        _ = cluster.uri


def test_jars_of_another_hadoop_version_are_a_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "hdfs"
    folder.mkdir()
    (folder / "hadoop-client-api-1.0.0.jar").write_bytes(b"")
    (folder / ".complete").write_text("stale")
    with pytest.raises(MiniHdfsError, match=rf"of Hadoop 1\.0\.0, but pyspark ships Hadoop {jars.hadoop_version()}.*make jars"):
        MiniHdfs(jars_dir=tmp_path).start()


def test_the_plugin_offers_the_fixture_and_the_module_imports_no_pyspark_nor_client() -> None:
    assert "hdfs_cluster" in plugin.__all__
    code = (
        "import sys; import pyspark_flinkish.testing.hdfs, pyspark_flinkish.testing.fixtures; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'hdfs_native')]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
