"""Records what PyFlink 2.3.0's ``FileSink`` with ``Encoder.simple_string_encoder()`` writes for a ``Types.ROW_NAMED``
stream (Java's ``Row.toString()``, unlike ``print()``, which PyFlink formats in Python) and for a stream without a
declared type (each pickled record's Java identity, ``[B@...``), as the oracle of
``jvm-free-tests/connectors/test_file_system.py``.

Runs with PyFlink's own interpreter (Java 17 on ``PATH``)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_file_sink.py --out jvm-free-tests/connectors/pyflink_file_sink.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List

import pyflink_oracle as oracle

JOBS = {
    "row": """
from pyflink.common import Types, Row
ds = env.from_collection([Row("hi", 1, None), Row("x", 2, 1.5)],
                         type_info=Types.ROW_NAMED(["a", "b", "c"], [Types.STRING(), Types.INT(), Types.DOUBLE()]))
ds.print()
""",
    "untyped": """
ds = env.from_collection(["a", "b"]).map(lambda x: x + "!")
""",
}
PRELUDE = """
import sys
from pyflink.common import Encoder
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import BucketAssigner, FileSink
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
"""
SINK = """
ds.sink_to(FileSink.for_row_format(sys.argv[1], Encoder.simple_string_encoder())
           .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
env.execute()
"""


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    import pyflink.version

    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    cases: Dict[str, Any] = {}
    for name, job in JOBS.items():
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "job.py"
            script.write_text(PRELUDE + job + SINK)
            out = Path(tmp) / "out"
            done = subprocess.run([sys.executable, str(script), str(out)], env=env, capture_output=True, text=True, check=True)
            lines = [line for p in sorted(out.rglob("*")) if p.is_file() and not p.name.startswith(".")
                     for line in p.read_text().splitlines()]
            cases[name] = {"job": job.strip(), "printed": done.stdout.splitlines(), "part_lines": lines}
    doc = {"pyflink_version": pyflink.version.__version__, "cases": cases}
    oracle.write_json(args.out, doc)
    print(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
