"""The PyFlink job of docs/migrating-from-pyflink.md's "Connected streams and broadcast state" section is real: with
only its imports changed (exactly the import block the page shows) it prints what the page says PyFlink printed."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import List

ROOT = Path(__file__).resolve().parents[2]


def _blocks() -> List[str]:
    page = (ROOT / "docs" / "migrating-from-pyflink.md").read_text()
    section = page.split("## Connected streams and broadcast state", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(?:python|text)\n(.*?)```", section, re.S)


def test_the_pyflink_job_runs_with_only_its_imports_changed() -> None:
    job, expected, imports = _blocks()
    pyflink_imports = [line for line in job.splitlines() if line.startswith("from pyflink")]
    assert [line.replace("from pyflink.", "from pyspark_flinkish.") for line in pyflink_imports] == imports.splitlines()
    ours = job.replace("from pyflink.", "from pyspark_flinkish.")
    assert "pyflink" not in ours.replace("pyspark_flinkish", "")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(compile(ours, "migrating-from-pyflink.md", "exec"), {"__name__": "migrating_example"})
    assert buffer.getvalue() == expected
