"""``pyspark_flinkish.testing.sigkill``: a driver that SIGKILLs itself, the processes it leaves behind, and a watcher
that kills on a new directory entry — with plain Python processes standing in for the driver, its JVM and the JVM's
Python daemon (which makes a session of its own, out of reach of a process-group kill)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pyspark_flinkish.testing.sigkill import TAG_VARIABLE, DriverRun, job_module, tagged_processes

SLEEPER = "import time; time.sleep(120)"


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "job.py"
    path.write_text(textwrap.dedent(body))
    return path


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_driver_that_crashes_leaves_a_daemon_that_the_run_kills(tmp_path: Path) -> None:
    # the driver starts a "JVM", which starts a "Python daemon" in a session of its own, as Spark's JVM does
    jvm_code = (
        "import os, subprocess, sys, time; "
        f"d = subprocess.Popen([sys.executable, '-c', {SLEEPER!r}], start_new_session=True); "
        "open(sys.argv[1] + '.tmp', 'w').write(f'{os.getpid()} {d.pid}'); os.replace(sys.argv[1] + '.tmp', sys.argv[1]); "
        "time.sleep(120)"
    )
    script = _script(tmp_path, f"""
        import os, subprocess, sys, time
        from pyspark_flinkish.testing.sigkill import crash
        subprocess.Popen([sys.executable, "-c", {jvm_code!r}, sys.argv[1]])
        while not os.path.exists(sys.argv[1]):
            time.sleep(0.01)
        crash("after the first write")
        print("not killed", flush=True)
    """)
    pids_file = tmp_path / "pids"
    run = DriverRun(script, [str(pids_file)], tmp_path / "run.log")
    try:
        assert run.finish(60) == -signal.SIGKILL
        jvm, daemon = (int(p) for p in pids_file.read_text().split())
        assert run.lines() == ["SIGKILL after the first write"]
        assert not _alive(jvm)  # the driver's child: killed by crash()
        assert run.leftovers >= 1  # the daemon outlives the crash ...
        assert not _alive(daemon) and tagged_processes(run.tag) == []  # ... until finish() kills it by its tag
        assert run.tag.startswith(f"{TAG_VARIABLE}=")
    finally:
        run.kill_all()


def test_crash_on_new_entry_ignores_dot_files_and_kills_on_the_first_new_name(tmp_path: Path) -> None:
    log = tmp_path / "offsets"
    log.mkdir()
    (log / "0").write_text("")
    script = _script(tmp_path, """
        import os, sys, time
        from pyspark_flinkish.testing.sigkill import crash_on_new_entry
        log = sys.argv[1]
        crash_on_new_entry(lambda: os.listdir(log), "at planning: new entry")
        open(os.path.join(log, ".1.tmp"), "w").close()  # a temporary file: not an entry
        time.sleep(0.5)
        print("still alive", flush=True)
        open(os.path.join(log, "1"), "w").close()
        time.sleep(30)
        print("not killed", flush=True)
    """)
    run = DriverRun(script, [str(log)], tmp_path / "run.log")
    try:
        assert run.finish(60) == -signal.SIGKILL
        assert run.lines() == ["still alive", "SIGKILL at planning: new entry ['1']"]
    finally:
        run.kill_all()


def test_a_driver_that_does_not_end_in_time_is_killed_with_everything_it_started(tmp_path: Path) -> None:
    script = _script(tmp_path, f"""
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", {SLEEPER!r}], start_new_session=True)
        print("started", flush=True)
        time.sleep(120)
    """)
    run = DriverRun(script, [], tmp_path / "run.log", env={"EXTRA": "1"})
    while "started" not in run.lines():
        assert run.proc.poll() is None, run.tail()
        time.sleep(0.02)
    assert len(tagged_processes(run.tag)) == 2
    with pytest.raises(subprocess.TimeoutExpired):
        run.finish(0.5)
    assert tagged_processes(run.tag) == []
    assert run.proc.returncode == -signal.SIGKILL


def test_job_module_imports_the_script_without_running_it(tmp_path: Path) -> None:
    script = _script(tmp_path, """
        import sys
        STREAMS = ["a", "b"]
        if __name__ == "__main__":
            sys.exit(3)
    """)
    module = job_module(script)
    assert module.__name__ == "job" and module.STREAMS == ["a", "b"]
    assert os.path.samefile(module.__file__, script)
    assert sys.modules.get("job") is not module  # not registered: a test's import does not shadow another's
