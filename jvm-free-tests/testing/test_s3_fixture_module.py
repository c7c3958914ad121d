"""The test S3 server's pieces that need no JVM: how ``make jars`` fetches S3Proxy and Spark's s3a (hadoop-aws of
pyspark's Hadoop version), the classpath setting of a session that uses them, the error when they are missing, the
settings of Spark's s3a for the server, and the fixture's registration."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, List

import pytest

from pyspark_flinkish.spark import jars
from pyspark_flinkish.testing import plugin
from pyspark_flinkish.testing.s3 import S3Proxy, S3ProxyError


def test_hadoop_aws_is_of_the_hadoop_version_pyspark_ships() -> None:
    assert f"org.apache.hadoop:hadoop-aws:{jars.hadoop_version()}" in jars.coordinates("s3a")
    assert [c.rsplit(":", 1)[0] for c in jars.coordinates("s3proxy")] == ["org.gaul:s3proxy"]


def test_fetch_passes_the_hadoop_version_and_keeps_no_jar_pyspark_ships(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    commands: List[List[str]] = []

    def run(cmd: List[str], **kwargs: Any) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
        commands.append(cmd)
        out = Path(next(c for c in cmd if c.startswith("-DoutputDirectory=")).split("=", 1)[1])
        for name in ("hadoop-aws-9.9.9.jar", "bundle-2.0.0.jar", "hadoop-client-api-9.9.9.jar"):
            (out / name).write_bytes(b"")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(jars, "POMS", {"s3a": jars.POMS["s3a"]})
    monkeypatch.setattr(jars, "hadoop_version", lambda: "9.9.9")
    monkeypatch.setattr(jars, "_pyspark_artifacts", lambda: {"hadoop-client-api"})
    monkeypatch.setattr(jars.subprocess, "run", run)
    monkeypatch.setattr(jars, "hdfs_launcher", lambda base: base)
    assert jars.s3a_settings(tmp_path) == {}
    jars.fetch(tmp_path)
    assert "-Dhadoop.version=9.9.9" in commands[0]
    found = [str(tmp_path / "s3a" / n) for n in ("bundle-2.0.0.jar", "hadoop-aws-9.9.9.jar")]
    assert jars.jars("s3a", tmp_path) == found
    assert jars.s3a_settings(tmp_path) == {"spark.driver.extraClassPath": ":".join(found)}
    monkeypatch.setattr(jars, "hadoop_version", lambda: "9.9.10")  # pyspark upgraded since: fetched again
    assert jars.jars("s3a", tmp_path) == []


def test_a_missing_jar_says_how_to_fetch_it_and_the_settings_name_the_server(tmp_path: Path) -> None:
    server = S3Proxy(jars_dir=tmp_path)
    with pytest.raises(S3ProxyError, match="make jars"):
        server.start()
    assert server.directory is None and not server.is_running
    with pytest.raises(S3ProxyError, match="has not been started"):
        _ = server.endpoint
    server.port = 9  # as start() sets it
    settings = server.hadoop_settings()
    assert settings["fs.s3a.endpoint"] == "http://127.0.0.1:9"
    assert settings["fs.s3a.path.style.access"] == "true" and settings["fs.s3a.connection.ssl.enabled"] == "false"
    assert (settings["fs.s3a.access.key"], settings["fs.s3a.secret.key"]) == (server.access_key, server.secret_key)


def test_the_plugin_offers_the_fixture_and_the_module_imports_no_pyspark() -> None:
    assert "s3_server" in plugin.__all__
    code = (
        "import sys; import pyspark_flinkish.testing.s3; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
