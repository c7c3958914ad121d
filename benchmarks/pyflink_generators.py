"""What the recorders of custom watermark generators (``pyflink_all_windows.py``, ``pyflink_punctuated.py``) share:
their Java generators (``java/*.java``) compiled against PyFlink's jars into a jar the job loads, and the
count-and-sum aggregate of their aggregate windows.

Runs with PyFlink's own interpreter (``benchmarks/.venv-pyflink``; Java 17 and ``javac`` on ``PATH``). A job using
``CountSum`` ships this module to its Python workers (``ship``): they unpickle the aggregate by reference.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from typing import Any, List

from pyflink.datastream.functions import AggregateFunction

__all__ = ["CountSum", "build_jar", "ship"]

JAVA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java")


def build_jar(source: str, jar_name: str) -> str:
    """``java/<source>`` compiled against PyFlink's jars into the jar ``jar_name`` (in a new temporary directory,
    package ``flinkish``); returns the jar's path for ``env.add_jars``."""
    import pyflink

    lib = os.path.join(os.path.dirname(pyflink.__file__), "lib", "*")
    out = tempfile.mkdtemp(prefix="flinkish-java-")
    subprocess.run(["javac", "-cp", lib, "-d", out, os.path.join(JAVA_DIR, source)], check=True)
    jar = os.path.join(out, jar_name)
    subprocess.run(["jar", "cf", jar, "-C", out, "flinkish"], check=True)
    return jar


def ship(env: Any) -> None:
    """Make this module importable by ``env``'s Python workers (they unpickle ``CountSum`` from it)."""
    env.add_python_file(os.path.abspath(__file__))


class CountSum(AggregateFunction):
    """``[count, sum of field 2]`` of a window's elements."""

    def create_accumulator(self) -> List[int]:
        return [0, 0]

    def add(self, value: Any, accumulator: List[int]) -> List[int]:
        return [accumulator[0] + 1, accumulator[1] + value[2]]

    def get_result(self, accumulator: List[int]) -> List[int]:
        return accumulator

    def merge(self, a: List[int], b: List[int]) -> List[int]:
        return [a[0] + b[0], a[1] + b[1]]
