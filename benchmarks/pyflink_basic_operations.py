"""Runs Apache Flink's own example ``pyflink/examples/datastream/basic_operations.py`` (as PyFlink 2.3.0 ships it) and
records what it prints, as the oracle for ``docs/migrating-from-pyflink.md``'s before/after (checked by
``jvm-free-tests/docs/test_migrating_basic_operations.py``).

Runs with PyFlink's own interpreter (PyFlink 2.3.0 in its own virtualenv; Java 17)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_basic_operations.py \
        --out jvm-free-tests/docs/pyflink_basic_operations.json

The example runs in a child process of this interpreter (its directory on ``PATH``, so that PyFlink's Python workers
find it), with logging configured to stderr before the example's own ``logging.basicConfig(stream=sys.stdout)`` (which
then does nothing): stdout holds only what the job prints. The example's source is recorded too.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import List

import pyflink_oracle as oracle

WRAPPER = (
    "import logging, runpy, sys; logging.basicConfig(stream=sys.stderr, level=logging.INFO); "
    "runpy.run_path(sys.argv[1], run_name='__main__')"
)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    import pyflink
    import pyflink.version

    example = Path(pyflink.__file__).parent / "examples" / "datastream" / "basic_operations.py"
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    done = subprocess.run([sys.executable, "-c", WRAPPER, str(example)], env=env, capture_output=True, text=True, check=True)
    printed = done.stdout.splitlines()
    print("\n".join(printed))
    doc = {
        "pyflink_version": pyflink.version.__version__,
        "command": "benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_basic_operations.py --out " + args.out,
        "example": "pyflink/examples/datastream/basic_operations.py",
        "source": example.read_text(),
        "printed": printed,
    }
    oracle.write_json(args.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
