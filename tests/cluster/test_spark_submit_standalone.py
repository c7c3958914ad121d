"""``spark-submit`` against a local Spark standalone cluster (a master and two workers started from the
installed pyspark distribution), with pyspark_flinkish shipped as a wheel through ``--py-files``.

The wheel is built from a copy of the repository's sources and shipped under a ``.zip`` name: PySpark adds only
``.py``/``.zip``/``.egg``/``.jar`` entries of ``--py-files`` to the executors' ``sys.path``
(``SparkContext.PACKAGE_EXTENSIONS``); a ``.whl`` is fetched but never importable there.

The venv holds pyspark_flinkish as an *editable* install (its finder maps the package to the repository),
so its interpreter would import the repository's code whatever ``PYTHONPATH`` says. The driver and the
executors therefore run a throwaway interpreter that sees the venv's third-party packages (pyspark, pandas,
pyarrow) but not pyspark_flinkish: the only pyspark_flinkish they can import is the shipped wheel, and the job
records which file its tasks imported.

Results must equal the JVM-free engine's for the same input; the workers' executor logs must show tasks. The job's
checkpoint is on a real HDFS (``hdfs_cluster``) and each worker has local directories of its own, so the workers
share nothing of the checkpoint: each state partition starts a copy of its state on some executor
(``stateCacheRebuilds`` in the progress the driver keeps there), and one whose task moves to the other executor
runs on its files on HDFS there (``stateServedFromFiles``).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.hdfs]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "spark_windowed_word_count.py"
LOOPBACK = "127.0.0.1"
N_FILES = 4
WINDOW_SECONDS = 5
OUT_OF_ORDERNESS_MS = 1000


# ----------------------------------------------------------------------------- helpers
def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def _tail(path: Path, lines: int = 60) -> str:
    if not path.exists():
        return f"<{path} does not exist>"
    text = path.read_text(errors="replace").splitlines()
    return f"--- last {lines} lines of {path} ---\n" + "\n".join(text[-lines:])


def _spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    home = Path(_find_spark_home())
    assert (home / "bin" / "spark-class").exists() and (home / "bin" / "spark-submit").exists(), home
    assert (home / "jars").is_dir(), f"{home} has no jars/ directory"
    return home


def _descendants(pid: int) -> List[int]:
    """Every live descendant of ``pid`` (from /proc), children first."""
    children: Dict[int, List[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out: List[int] = []
    todo = list(children.get(pid, []))
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _stop(proc: subprocess.Popen) -> None:  # type: ignore[type-arg]
    """Stop a process started in its own session: its group (SIGTERM, then SIGKILL) and any descendant that
    left the group (pyspark's daemon makes its own process group)."""
    tree = _descendants(proc.pid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            continue
    for pid in tree + _descendants(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _clean_env(tmp: Path, spark_home: Path) -> Dict[str, str]:
    """A minimal environment for Spark's processes: no PYTHONPATH, no PYSPARK_* from the test run, loopback only."""
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "LC_ALL", "JAVA_HOME", "USER", "TMPDIR") if k in os.environ}
    conf = tmp / "spark-conf"  # empty: no spark-defaults.conf or spark-env.sh from anywhere else
    conf.mkdir(exist_ok=True)
    env.update(
        SPARK_HOME=str(spark_home),
        SPARK_CONF_DIR=str(conf),
        SPARK_LOCAL_IP=LOOPBACK,
        SPARK_LOCAL_DIRS=str(tmp / "spark-local"),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    return env


# ----------------------------------------------------------------------------- the wheel
def _copy_sources(dest: Path) -> Path:
    """The files a wheel is built from, copied so that building leaves nothing (build/, egg-info) in the repo."""
    src = dest / "src"
    src.mkdir(parents=True)
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "pyspark_flinkish", src / "pyspark_flinkish", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return src


def _write_wheel(src: Path, out: Path) -> Path:
    """Offline fallback: a PEP 427 pure-Python wheel of the package's files (no build backend needed)."""
    version = next(
        line.split("=", 1)[1].strip().strip("\"'")
        for line in (src / "pyspark_flinkish" / "__init__.py").read_text().splitlines()
        if line.startswith("__version__")
    )
    dist_info = f"pyspark_flinkish-{version}.dist-info"
    wheel = out / f"pyspark_flinkish-{version}-py3-none-any.whl"
    files: List[Tuple[str, bytes]] = [
        (p.relative_to(src).as_posix(), p.read_bytes())
        for p in sorted((src / "pyspark_flinkish").rglob("*"))
        if p.is_file() and (p.suffix == ".py" or p.name == "py.typed")
    ]
    files += [
        (f"{dist_info}/METADATA", f"Metadata-Version: 2.1\nName: pyspark_flinkish\nVersion: {version}\n".encode()),
        (
            f"{dist_info}/WHEEL",
            b"Wheel-Version: 1.0\nGenerator: test_spark_submit_standalone\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        ),
        (f"{dist_info}/top_level.txt", b"pyspark_flinkish\n"),
    ]
    record = []
    for name, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            z.writestr(name, data)
        z.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
    return wheel


def _build_wheel(dest: Path) -> Tuple[Path, str]:
    """Build the package's wheel: pip without build isolation (offline; needs setuptools with bdist_wheel,
    i.e. ``wheel`` installed or setuptools >= 70.1), else pip's isolated build (fetches setuptools and wheel
    from the index), else a wheel written by hand."""
    src = _copy_sources(dest)
    out = dest / "dist"
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-w", str(out)]
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    attempts = [
        ("pip wheel --no-build-isolation", [*pip, "--no-build-isolation", str(src)]),
        ("pip wheel (isolated build)", [*pip, "--retries", "1", "--timeout", "20", str(src)]),
    ]
    notes = []
    for label, cmd in attempts:
        try:
            r = subprocess.run(cmd, cwd=dest, env=env, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            notes.append(f"{label}: timed out")
            continue
        wheels = sorted(out.glob("pyspark_flinkish-*.whl"))
        if r.returncode == 0 and wheels:
            return wheels[0], label
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        notes.append(f"{label}: exit {r.returncode} ({last})")
    return _write_wheel(src, out), "hand-written wheel after: " + "; ".join(notes)


# ----------------------------------------------------------------------------- an interpreter without the repo
def _isolated_python(dest: Path) -> Path:
    """A venv whose ``.pth`` adds the test venv's site-packages as a plain directory: pyspark, pandas and
    pyarrow import, but the editable install's finder (a ``.pth`` in that directory) is never run."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True, timeout=120)
    python = dest / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(site) / "_test_venv_site_packages.pth").write_text("\n".join(sorted(ours)) + "\n")
    probe = subprocess.run(
        [
            str(python),
            "-c",
            "import pyspark, pandas, pyarrow\ntry:\n import pyspark_flinkish\nexcept ImportError:\n print('absent')",
        ],
        cwd=dest,
        env={"PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "absent", "the isolated interpreter must not see pyspark_flinkish"
    return python


# ----------------------------------------------------------------------------- the cluster
@dataclass
class Cluster:
    url: str
    master_log: Path
    worker_dirs: List[Path]
    worker_logs: List[Path]
    env: Dict[str, str]
    spark_home: Path
    procs: List[subprocess.Popen] = field(default_factory=list)  # type: ignore[type-arg]

    def logs(self) -> str:
        return "\n".join(_tail(p, 30) for p in [self.master_log, *self.worker_logs])


def _spawn(cmd: List[str], log: Path, env: Dict[str, str], cwd: Path) -> subprocess.Popen:  # type: ignore[type-arg]
    with open(log, "wb") as f:
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True)


@pytest.fixture
def standalone_cluster(tmp_path: Path) -> Iterator[Cluster]:
    spark_home = _spark_home()
    base = tmp_path / "cluster"
    base.mkdir()
    env = _clean_env(base, spark_home)
    spark_class = str(spark_home / "bin" / "spark-class")
    port = _free_port()
    cluster = Cluster(f"spark://{LOOPBACK}:{port}", base / "master.log", [], [], env, spark_home)
    try:
        master_env = {**env, "SPARK_LOG_DIR": str(base / "master-logs")}
        cluster.procs.append(
            _spawn(
                [
                    spark_class,
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    LOOPBACK,
                    "--port",
                    str(port),
                    "--webui-port",
                    str(_free_port()),
                ],
                cluster.master_log,
                master_env,
                base,
            )
        )
        for i in range(2):
            work = base / f"worker{i}" / "work"
            work.mkdir(parents=True)
            worker_env = {**env, "SPARK_WORKER_DIR": str(work), "SPARK_LOCAL_DIRS": str(base / f"worker{i}" / "local")}
            log = base / f"worker{i}.log"
            cluster.worker_dirs.append(work)
            cluster.worker_logs.append(log)
            cluster.procs.append(
                _spawn(
                    [
                        spark_class,
                        "org.apache.spark.deploy.worker.Worker",
                        cluster.url,
                        "--host",
                        LOOPBACK,
                        "--port",
                        str(_free_port()),
                        "--webui-port",
                        str(_free_port()),
                        "--cores",
                        "1",
                        "--memory",
                        "2g",
                        "--work-dir",
                        str(work),
                    ],
                    log,
                    worker_env,
                    base / f"worker{i}",
                )
            )
        deadline = time.monotonic() + 180
        while True:
            registered = cluster.master_log.read_text(errors="replace").count("Registering worker")
            if registered >= 2:
                break
            dead = [name for name, p in zip(["master", "worker0", "worker1"], cluster.procs) if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                pytest.fail(
                    f"standalone cluster did not start ({registered}/2 workers registered; exited: {dead})\n" + cluster.logs()
                )
            time.sleep(0.5)
        yield cluster
    finally:
        for proc in reversed(cluster.procs):
            _stop(proc)


# ----------------------------------------------------------------------------- input and reference
def _write_input(directory: Path) -> List[List[str]]:
    """``N_FILES`` files of ``"<epoch_ms> <words>"`` lines, in event-time order with jitter inside the
    watermark's out-of-orderness (nothing late); the last line holds only a timestamp past every window, so
    the last windows fire too. Modification times order the files (one per micro-batch)."""
    rng = random.Random(20260)
    vocabulary = ["flink", "spark", "window", "watermark", "state", "timer", "Event", "time!", "key", "batch"]
    directory.mkdir()
    files: List[List[str]] = []
    t = 1_700_000_000_000
    for i in range(N_FILES):
        lines = []
        for _ in range(25):
            t += rng.randint(100, 700)
            ts = t - rng.randint(0, OUT_OF_ORDERNESS_MS // 2)
            lines.append(f"{ts} " + " ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 5))))
        if i == N_FILES - 1:
            lines.append(str(t + 60_000))
        files.append(lines)
        path = directory / f"lines-{i:03d}.txt"
        path.write_text("\n".join(lines) + "\n")
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    return files


def _load_example():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("spark_windowed_word_count", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _jvm_free_counts(files: List[List[str]]) -> List[tuple]:  # type: ignore[type-arg]
    """The same pipeline on the JVM-free engine: one micro-batch per file of ``Row(value=line)`` (what
    ``spark.readStream.text`` gives), no end of input (a file source has none)."""
    from pyspark.sql import Row  # a plain Python class: no JVM

    from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, StreamExecutionEnvironment

    example = _load_example()
    env = StreamExecutionEnvironment.get_execution_environment()
    source = MicroBatchSource([MicroBatch([Row(value=line) for line in lines]) for lines in files], end_of_input=False)
    lines = env.from_source(source, example.watermark_strategy(OUT_OF_ORDERNESS_MS), "lines")
    out: List[tuple] = []  # type: ignore[type-arg]
    example.windowed_word_counts(lines, WINDOW_SECONDS).add_sink(lambda v: out.append(tuple(v)))
    env.execute("reference")
    return out


def _read_parquet(directory: Path) -> List[dict]:  # type: ignore[type-arg]
    import pyarrow.dataset as ds

    return ds.dataset(str(directory), format="parquet", partitioning="hive").to_table().to_pylist()  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- the test
def test_example_help() -> None:
    r = subprocess.run([sys.executable, str(EXAMPLE), "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "--checkpoint" in r.stdout and "--input" in r.stdout and "--out" in r.stdout


@pytest.mark.timeout(900)
def test_spark_submit_on_standalone_cluster_with_the_wheel(standalone_cluster: Cluster, hdfs_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = standalone_cluster
    wheel, how = _build_wheel(tmp_path / "wheel")
    print(f"\nwheel: {wheel.name} ({how})")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    for module in (
        "pyspark_flinkish/__init__.py",
        "pyspark_flinkish/spark/environment.py",
        "pyspark_flinkish/spark/plan.py",
        "pyspark_flinkish/spark/driver.py",
        "pyspark_flinkish/spark/chain.py",
        "pyspark_flinkish/core/window_operator.py",
        "pyspark_flinkish/local/executor.py",
    ):
        assert module in names, f"{module} missing from {wheel.name}"
    assert not any(n.startswith(("tests/", "jvm-free-tests/", "examples/")) for n in names)

    # PySpark puts only .py/.zip/.egg/.jar entries of --py-files on the executors' sys.path
    # (SparkContext.PACKAGE_EXTENSIONS); a .whl is fetched but not importable. A pure-Python wheel is a zip
    # with the package at its root: ship the same bytes as .zip.
    shipped = tmp_path / "ship" / (wheel.stem + ".zip")
    shipped.parent.mkdir()
    shutil.copyfile(wheel, shipped)

    python = _isolated_python(tmp_path / "python")
    files = _write_input(tmp_path / "input")
    out, workers_out = tmp_path / "out", tmp_path / "workers"
    checkpoint = f"{hdfs_cluster.uri}/standalone/{tmp_path.name}/checkpoint"  # no worker's disk
    run_dir = tmp_path / "submit"  # the driver's working directory: not the repository
    run_dir.mkdir()
    cmd = [
        str(cluster.spark_home / "bin" / "spark-submit"),
        "--master",
        cluster.url,
        "--deploy-mode",
        "client",
        "--py-files",
        str(shipped),
        "--conf",
        f"spark.pyspark.python={python}",
        "--conf",
        f"spark.pyspark.driver.python={python}",
        "--conf",
        f"spark.driver.host={LOOPBACK}",
        "--conf",
        f"spark.driver.bindAddress={LOOPBACK}",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.executor.cores=1",
        "--conf",
        "spark.executor.memory=1g",
        "--conf",
        "spark.cores.max=2",
        # both executors (one per worker) before the first job, so that both get tasks
        "--conf",
        "spark.scheduler.minRegisteredResourcesRatio=1.0",
        "--conf",
        "spark.scheduler.maxRegisteredResourcesWaitingTime=180s",
        str(EXAMPLE),
        "--input",
        str(tmp_path / "input"),
        "--out",
        str(out),
        "--out-format",
        "parquet",
        "--checkpoint",
        str(checkpoint),
        "--workers-out",
        str(workers_out),
        "--window-seconds",
        str(WINDOW_SECONDS),
        "--max-out-of-orderness-ms",
        str(OUT_OF_ORDERNESS_MS),
        "--shuffle-partitions",
        "4",
    ]
    driver_log = tmp_path / "driver.log"
    started = time.monotonic()
    with open(driver_log, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=run_dir, env=cluster.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=660)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            _stop(proc)
    print(f"spark-submit: exit {rc} after {time.monotonic() - started:.0f} s")
    assert rc == 0, f"spark-submit exited {rc}\n{_tail(driver_log, 120)}\n{cluster.logs()}"
    driver_text = driver_log.read_text(errors="replace")

    # the driver imported pyspark_flinkish from the wheel (spark-submit puts --py-files on its PYTHONPATH)
    driver_line = next(line for line in driver_text.splitlines() if line.startswith("driver: pyspark_flinkish"))
    assert shipped.name in driver_line and str(ROOT / "pyspark_flinkish") not in driver_line, driver_line
    assert f"done: {N_FILES} micro-batches" in driver_text, _tail(driver_log, 80)

    # results equal the JVM-free engine's
    rows = _read_parquet(out)
    got = sorted((r["word"], r["window_start"], r["window_end"], r["count"]) for r in rows)
    expected = sorted(_jvm_free_counts(files))
    assert len({(w, s) for w, s, _, _ in expected}) == len(expected) and len({s for _, s, _, _ in expected}) >= 6
    total_words = sum(len(line.split()) - 1 for lines in files for line in lines)
    assert sum(c for *_, c in expected) == total_words  # nothing was late, every window fired
    assert got == expected
    assert {r["batch_id"] for r in rows} <= set(range(N_FILES))

    # the tasks that computed the results ran the wheel's pyspark_flinkish on the isolated interpreter
    where = _read_parquet(workers_out)
    assert where, "no task reported where it ran"
    for r in where:
        assert r["python"] == str(python), r
        assert shipped.name in r["module"] and not r["module"].startswith(str(ROOT)), r
    assert all(r["pid"] != proc.pid for r in where)

    # executors ran on both workers, under the workers' work dirs, and ran tasks
    app_ids: set = set()  # type: ignore[type-arg]
    for work, worker_log in zip(cluster.worker_dirs, cluster.worker_logs):
        stderrs = sorted(work.glob("app-*/*/stderr"))
        assert stderrs, f"no executor of the application on {work}\n{_tail(worker_log)}"
        app_ids.update(p.parent.parent.name for p in stderrs)
        text = "\n".join(p.read_text(errors="replace") for p in stderrs)
        assert "Running task" in text and "Finished task" in text, _tail(stderrs[0], 80)
        assert any(work.glob(f"app-*/*/{shipped.name}")), f"{shipped.name} was not fetched to {work}"
    assert len(app_ids) == 1, app_ids
    print(f"executor python workers: {sorted({(r['host'], r['pid']) for r in where})}")

    # every file of the checkpoint is on HDFS; the executors kept their copies of the state in their own local dirs
    from pyspark_flinkish.spark.progress_files import read_progress

    progress = read_progress(checkpoint)
    assert [p["batch_id"] for p in progress] == list(range(N_FILES)), progress
    window = [o for p in progress for o in p["operators"].values() if o.get("numKeysLoaded") is not None]
    rebuilds = sum(o["stateCacheRebuilds"] for o in window)
    assert rebuilds >= 4  # each of the 4 state partitions started a copy on some executor
    on_files = sum(o["stateServedFromFiles"] for o in window)
    print(f"over {N_FILES} batches: {rebuilds} cache rebuilds, {on_files} partitions run on the files (4 partitions, "
          "2 executors)")
