"""``make test-notebooks``: every notebook here, top to bottom in a fresh kernel (nbmake's ``NotebookRun``, outputs
never written back). A notebook fails on a cell error, and also when it draws no figure: each one ends in a plot of
what it computed, so its executed outputs must hold an ``image/png`` (matplotlib's inline figure).

Run as ``pytest notebooks`` (without ``--nbmake``, whose own collector would run each notebook a second time without
the figure check); ``--nbmake-timeout`` still sets the per-cell limit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, List, Optional

import pytest

__all__ = ["figures", "pytest_collect_file"]


def figures(nb: Any) -> List[int]:
    """Indices of the code cells whose outputs hold a PNG image."""
    return [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and any("image/png" in out.get("data", {}) for out in cell.get("outputs", []))
    ]


class NotebookFailed(Exception):
    pass


class NotebookItem(pytest.Item):
    def runtest(self) -> None:
        from nbmake.nb_run import NotebookRun

        option = self.config.option
        result = NotebookRun(Path(self.path), getattr(option, "nbmake_timeout", 300)).execute()
        if result.error is not None:
            msg = f"cell {result.error.failing_cell_index}: {result.error.summary}\n{result.error.trace}"
            raise NotebookFailed(msg)
        if not figures(result.nb):
            msg = "the notebook ran but drew no figure: no code cell has an image/png output"
            raise NotebookFailed(msg)

    def repr_failure(self, excinfo: Any, style: Optional[Any] = None) -> str:
        if isinstance(excinfo.value, NotebookFailed):
            return f"{self.path.name}: {excinfo.value}"
        return str(super().repr_failure(excinfo, style))

    def reportinfo(self) -> tuple:  # type: ignore[type-arg]
        return self.path, 0, self.path.name


class NotebookFile(pytest.File):
    def collect(self) -> Iterator[NotebookItem]:
        yield NotebookItem.from_parent(self, name=self.path.stem)


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> Optional[NotebookFile]:
    if file_path.suffix == ".ipynb" and not parent.config.getoption("nbmake", default=False):
        return NotebookFile.from_parent(parent, path=file_path)  # type: ignore[no-any-return]
    return None
