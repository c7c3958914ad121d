"""The notebooks in notebooks/ as stored: without outputs (so that diffs show code and text only), one per feature
area, and ready for Databricks (a guarded install cell first, the session helper, no local paths).
`make test-notebooks` runs them (and fails a notebook whose executed outputs hold no image: notebooks/conftest.py);
these checks need no kernel."""

from __future__ import annotations

import json
import pathlib
import re
from typing import Any, Dict, List

import pytest

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[2] / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))


def _load(path: pathlib.Path) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _code(nb: Dict[str, Any]) -> List[str]:
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def test_one_notebook_per_feature_area() -> None:
    assert [p.stem[:3] for p in PATHS] == ["01_", "02_", "03_", "04_", "05_", "06_", "07_"]


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_stored_without_outputs(path: pathlib.Path) -> None:
    nb = _load(path)
    dirty = [
        i
        for i, c in enumerate(nb["cells"])
        if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count") is not None)
    ]
    assert not dirty, f"{path.name}: cells {dirty} have outputs; clear them before committing (Jupyter: Clear All Outputs)"
    assert all("execution" not in c.get("metadata", {}) for c in nb["cells"]), f"{path.name}: cell timings stored"
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_ready_for_databricks(path: pathlib.Path) -> None:
    code = _code(_load(path))
    first = code[0]
    assert 'if "DATABRICKS_RUNTIME_VERSION" in os.environ:' in first and 'run_line_magic("pip"' in first, (
        f"{path.name}: the first code cell must install the package on Databricks only"
    )
    assert "--no-deps" in first, f"{path.name}: installing with dependencies would replace Databricks' own pyspark"
    source = "\n".join(code)
    assert not re.search(r"['\"](/tmp|/work|/home|/Users)/", source), f"{path.name}: a local path"
    if "SparkSession" in source or "get_execution_environment(spark" in source:
        assert "session(" in source and "SparkSession.builder" not in source, (
            f"{path.name}: get the SparkSession from pyspark_flinkish.spark.session() (Databricks' own there)"
        )
    if "checkpoint_location" in source:
        assert "scratch_dir(" in source, f"{path.name}: checkpoints go under scratch_dir() (/dbfs/tmp on Databricks)"

