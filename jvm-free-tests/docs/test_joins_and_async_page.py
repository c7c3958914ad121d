"""docs/joins-and-async.md: every python block is a complete job that runs on the JVM-free engine and prints what
the ``text`` block right after it shows."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import List, Tuple

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "joins-and-async.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def _examples() -> List[Tuple[str, str, str]]:
    """(section heading, code, expected output) for every python block of the page."""
    text = PAGE.read_text()
    blocks = [(m.start(), m.group(1), m.group(2)) for m in BLOCK.finditer(text)]
    examples = []
    for i, (at, lang, body) in enumerate(blocks):
        if lang != "python":
            continue
        assert i + 1 < len(blocks) and blocks[i + 1][1] == "text", (
            f"the python block at offset {at} needs a text block with its output right after it"
        )
        heading = re.findall(r"^## (.+)$", text[:at], re.M)[-1]
        examples.append((heading, body, blocks[i + 1][2]))
    return examples


EXAMPLES = _examples()


def test_the_page_has_an_example_per_concept() -> None:
    assert [h for h, _, _ in EXAMPLES] == ["Window join", "Co-group", "Interval join", "Async I/O"]


@pytest.mark.parametrize(("heading", "code", "expected"), EXAMPLES, ids=[h for h, _, _ in EXAMPLES])
def test_example_prints_what_the_page_shows(heading: str, code: str, expected: str) -> None:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(compile(code, f"joins-and-async.md ({heading})", "exec"), {"__name__": "joins_and_async_page"})
    assert buffer.getvalue().strip() == expected.strip()
