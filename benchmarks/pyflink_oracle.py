"""What the PyFlink oracle recorders (``benchmarks/pyflink_*.py``) share: they run with PyFlink's own interpreter
(``benchmarks/.venv-pyflink``, which ``run_all.py``'s ``ensure_pyflink`` creates:
``python3 -m venv benchmarks/.venv-pyflink && benchmarks/.venv-pyflink/bin/pip install apache-flink==2.3.0``;
Java 17), build their jobs from a case module of ``jvm-free-tests/datastream`` (which the JVM-free tests build with
pyspark_flinkish's classes), and write what real PyFlink did as a JSON file that those tests compare with.

Imports nothing of PyFlink at module level and nothing of pyspark_flinkish (the PyFlink venv does not have it).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, Iterator, List, Optional

__all__ = ["CASES_DIR", "VENV_PYTHON", "captured_print", "environment", "import_cases", "record", "write_json"]

CASES_DIR = Path(__file__).resolve().parents[1] / "jvm-free-tests" / "datastream"
VENV_PYTHON = "benchmarks/.venv-pyflink/bin/python"


def import_cases(name: str) -> ModuleType:
    """The case module ``jvm-free-tests/datastream/<name>.py`` (its directory put on ``sys.path``)."""
    if str(CASES_DIR) not in sys.path:
        sys.path.insert(0, str(CASES_DIR))
    return importlib.import_module(name)


def environment(cases: Optional[ModuleType] = None, *, parallelism: Optional[int] = None, batch: bool = False) -> Any:
    """A new PyFlink ``StreamExecutionEnvironment`` whose Python workers run this interpreter and can import the case
    module ``cases``; with ``parallelism`` set, in ``RuntimeExecutionMode.BATCH`` if ``batch``."""
    from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    if parallelism is not None:
        env.set_parallelism(parallelism)
    if batch:
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_python_executable(sys.executable)  # the Python workers run in this venv too
    if cases is not None:
        env.add_python_file(str(cases.__file__))  # the workers import the case module
    return env


@contextmanager
def captured_print() -> Iterator[List[str]]:
    """The lines PyFlink's ``print()`` sinks write while the block runs, in the list it yields (filled at its end).

    ``print()`` runs in the Java process, which inherits file descriptor 1 when it starts: descriptor 1 goes to a
    file for the block (the JVM must start inside it), then is restored."""
    lines: List[str] = []
    captured = tempfile.NamedTemporaryFile(prefix="pyflink-print-", suffix=".txt", delete=False)
    saved_stdout = os.dup(1)
    os.dup2(captured.fileno(), 1)
    try:
        yield lines
        sys.stdout.flush()
    finally:
        os.dup2(saved_stdout, 1)
        os.close(saved_stdout)
        captured.close()
        lines.extend(Path(captured.name).read_text().splitlines())
        os.unlink(captured.name)


def write_json(path: str, doc: Any, *, ensure_ascii: bool = True, sort_keys: bool = False) -> None:
    """``doc`` as JSON (indent 1, a final newline) into ``path``."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=ensure_ascii, sort_keys=sort_keys)
        f.write("\n")


def record(out: str, script: str, body: Dict[str, Any], *, ensure_ascii: bool = True, options: str = "") -> None:
    """Write a recorder's JSON file ``out``: PyFlink's version, the command that made it (``script``: the recorder's
    ``__file__``; ``options``: its arguments after ``--out``), then ``body``."""
    import pyflink.version

    doc = {
        "pyflink_version": pyflink.version.__version__,
        "command": f"{VENV_PYTHON} benchmarks/{Path(script).name} --out {out}{options}",
        **body,
    }
    write_json(out, doc, ensure_ascii=ensure_ascii)
