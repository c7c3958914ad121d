"""The README's example is real: the exact snippet runs and prints exactly what the README shows."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _example_blocks() -> tuple[str, str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Example", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    output = re.search(r"```text\n(.*?)```", section, re.S)
    assert code and output, "README's Example section needs a python block and a text block"
    return code.group(1), output.group(1)


def test_readme_snippet_prints_what_the_readme_says() -> None:
    code, expected = _example_blocks()
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
    assert buffer.getvalue() == expected


def test_readme_snippet_is_the_example_file() -> None:
    code, _ = _example_blocks()
    assert code == (ROOT / "examples" / "readme_windowed_job.py").read_text()


def test_readme_snippet_chains_the_pyflink_calls_in_order() -> None:
    code, _ = _example_blocks()
    calls = [".key_by(", ".window(", ".trigger(", ".evictor(", ".allowed_lateness(", ".side_output_late_data(", ".process("]
    chain = code[code.index(".key_by("):]
    positions = [chain.index(c) for c in calls]
    assert positions == sorted(positions)
