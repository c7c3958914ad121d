"""docs/getting-started.md's first job runs on the JVM-free engine and prints what its comment says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_first_jvm_free_job_prints_what_the_page_says() -> None:
    page = (ROOT / "docs" / "getting-started.md").read_text()
    section = page.split("## A first job, without a JVM", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code, "the section needs a python block"
    printed = re.search(r"print\(.*\)\s+# (.*)\n", code.group(1))
    assert printed, "the block's print(...) needs a comment with the expected output"
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(compile(code.group(1), "getting-started.md", "exec"), {"__name__": "getting_started"})
    assert buffer.getvalue().strip() == printed.group(1).strip()
