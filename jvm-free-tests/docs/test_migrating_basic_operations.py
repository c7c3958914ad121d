"""docs/migrating-from-pyflink.md's "Flink's own example" section is real: the page's "before" is Flink's own
``basic_operations.py`` as PyFlink 2.3.0 ships it (recorded with its printed output in ``pyflink_basic_operations.json``
by ``benchmarks/pyflink_basic_operations.py``), and with only its imports changed (exactly the import block the page
shows) it prints, on the JVM-free engine, what PyFlink printed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import List

ROOT = Path(__file__).resolve().parents[2]
ORACLE = json.loads(Path(__file__).with_name("pyflink_basic_operations.json").read_text())
# as the benchmark ran it: logging to stderr first, so that the example's basicConfig(stream=sys.stdout) does nothing
WRAPPER = (
    "import logging, runpy, sys; logging.basicConfig(stream=sys.stderr, level=logging.INFO); "
    "runpy.run_path(sys.argv[1], run_name='__main__')"
)


def _blocks() -> List[str]:
    page = (ROOT / "docs" / "migrating-from-pyflink.md").read_text()
    section = page.split("## Flink's own example, unchanged: `basic_operations.py`", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(?:python|text)\n(.*?)```", section, re.S)


def test_the_page_shows_flinks_example_and_what_pyflink_printed() -> None:
    job, printed, _ = _blocks()
    assert ORACLE["pyflink_version"] == "2.3.0"
    source = ORACLE["source"]
    assert source.startswith("#####") and "Licensed to the Apache Software Foundation" in source
    assert job == source[source.index("import json") :]
    assert printed.splitlines() == ORACLE["printed"] and len(ORACLE["printed"]) == 9


def test_flinks_example_prints_the_same_with_only_its_imports_changed(tmp_path: Path) -> None:
    job, _, imports = _blocks()
    pyflink_imports = [line for line in job.splitlines() if line.startswith("from pyflink")]
    assert [line.replace("from pyflink.", "from pyspark_flinkish.") for line in pyflink_imports] == imports.splitlines()
    ours = job.replace("from pyflink.", "from pyspark_flinkish.")
    assert "pyflink" not in ours.replace("pyspark_flinkish", "").replace("PyFlink", "")
    script = tmp_path / "basic_operations.py"
    script.write_text(ours)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", WRAPPER, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ORACLE["printed"]
