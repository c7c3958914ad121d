"""The package's own job with its checkpoint on ``s3a://``, against a real S3-compatible server (S3Proxy, the
``s3_server`` fixture) reached by Spark's ``s3a`` file system (hadoop-aws of pyspark's Hadoop version and the AWS SDK
bundle, from ``make jars``) and by the package's S3 client (pyarrow).

A keyed job with state, TTL state, event-time timers and an event-time tumbling window (whose sums also go to a
Delta table on ``s3a://``) runs as its own Spark driver (``s3_job.py``: hadoop-aws on the classpath of that JVM
only), for two ``availableNow`` runs, the second a restart from the checkpoint; its records equal the JVM-free
engine's on the same micro-batches; its ``fs.s3a.*`` settings are set on the running session (``spark.conf.set``).
Every file of the checkpoint is in the bucket -- Spark's offsets, commits and source log, the package's driver
documents, progress and keyed state -- and none on the local disk. A second, fresh driver, the settings given to its
builder (``spark.hadoop.fs.s3a.*``), reads the keyed state back with ``read_state`` and the Delta table with Spark."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Dict, List

import pytest

from pyspark_flinkish.testing.s3 import S3Proxy

pytestmark = [pytest.mark.spark, pytest.mark.s3, pytest.mark.slow]

JOB = Path(__file__).resolve().with_name("s3_job.py")


def _job_module() -> Any:
    spec = importlib.util.spec_from_file_location("s3_job", JOB)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _driver(mode: str, cwd: Path, out: Path, **args: str) -> Dict[str, Any]:
    """Run ``s3_job.py <mode>`` as its own Spark driver in ``cwd``; its result, or a failure with its output."""
    from pyspark_flinkish.spark import jars

    if not jars.jars("s3a"):
        pytest.fail("Spark's s3a jars (hadoop-aws, the AWS SDK bundle) are not fetched: run `make jars`", pytrace=False)
    cmd = [sys.executable, "-u", str(JOB), mode, "--out", str(out)]
    for name, value in args.items():
        cmd += [f"--{name}", value]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-80:])
        pytest.fail(f"s3_job.py {mode} failed (exit code {proc.returncode}):\n{tail}", pytrace=False)
    return json.loads(out.read_text())


def _listing(s3: S3Proxy, root: str) -> List[str]:
    """The files under ``<bucket>/<key prefix>``, relative to it, through pyarrow's S3 client (no JVM)."""
    import pyarrow.fs as pafs

    infos = s3.filesystem().get_file_info(pafs.FileSelector(root, recursive=True))
    return sorted(i.path[len(root) + 1 :] for i in infos if i.type == pafs.FileType.File)


def test_a_job_checkpointing_to_s3a_restarts_from_it_with_flinks_results(s3_server: S3Proxy, tmp_path: Path) -> None:
    job = _job_module()
    bucket = f"flinkish-{uuid.uuid4().hex[:8]}"
    s3_server.create_bucket(bucket)
    checkpoint, lake = f"s3a://{bucket}/jobs/counts/ck", f"s3a://{bucket}/lake/sums"
    settings = json.dumps(s3_server.hadoop_settings())
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    started = time.monotonic()
    ran = _driver("run", cwd, tmp_path / "run.json", source=str(tmp_path / "input"), checkpoint=checkpoint,
                  delta=lake, settings=settings)
    run_seconds = time.monotonic() - started

    # the two runs (the second restarted from the checkpoint on S3) give the JVM-free engine's records
    assert ran["runs"][0] == []  # the first run's watermark (3499) reaches no timer and no window end
    assert sorted(r for run in ran["runs"] for r in run) == job.expected()

    # every file of the checkpoint is in the bucket: Spark's and the package's
    files = _listing(s3_server, f"{bucket}/jobs/counts/ck")
    assert {f.split("/", 1)[0] for f in files} == {"spark", "flinkish"}
    spark_files = {f for f in files if f.startswith("spark/")}
    assert {"spark/offsets/0", "spark/offsets/1", "spark/offsets/2", "spark/commits/0", "spark/commits/1",
            "spark/commits/2", "spark/metadata"} <= spark_files
    assert {"flinkish/meta.json", "flinkish/driver/b=000000000002.json", "flinkish/progress/b=000000000002.json"} <= set(files)
    state = [f.rsplit("/", 1)[-1] for f in files if f.startswith("flinkish/state/op=remind/sp=")]
    assert state and all(name[:2] in ("s=", "d=") and name.endswith(".parquet") for name in state)
    assert not [f for f in files if f.endswith(".tmp")]  # on S3 a whole-object PUT replaces a file, no rename
    # and none on the local disk: the driver's working directory holds no file (Spark's empty spark-warehouse at
    # most), the test's folder only the input and the results
    assert [p for p in cwd.rglob("*") if p.is_file()] == []
    assert {p.name for p in tmp_path.iterdir()} == {"cwd", "input", "run.json"}

    # the Delta table of the window sums is on S3 too
    lake_files = _listing(s3_server, f"{bucket}/lake/sums")
    assert "_delta_log/00000000000000000000.json" in lake_files
    assert any(f.endswith(".parquet") for f in lake_files)

    # a fresh driver reads the keyed state and the table back from S3
    read = _driver("read", cwd, tmp_path / "read.json", checkpoint=checkpoint, delta=lake, settings=settings)
    assert read["counts"] == {"a": 3, "b": 2, "c": 1, "d": 1, "e": 1}
    sums = sorted(r for r in job.expected() if not r.startswith("('remind'"))
    assert read["delta"] == sums
    print(f"s3a job: two runs {run_seconds:.1f} s, read back {time.monotonic() - started - run_seconds:.1f} s")
