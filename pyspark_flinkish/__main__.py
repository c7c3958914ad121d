"""``python -m pyspark_flinkish <command>``: ``progress`` prints a pipeline's per-micro-batch progress lines
(see :func:`pyspark_flinkish.spark.progress_files.main`)."""

from __future__ import annotations

import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print("usage: python -m pyspark_flinkish progress <checkpoint or log file> [--follow] [--last N] [--json]")
        print("       (python -m pyspark_flinkish progress --help for details; the demo: python -m pyspark_flinkish.demo)")
        return 0 if args else 2
    if args[0] == "progress":
        from .spark.progress_files import main as progress

        return progress(args[1:])
    print(f"unknown command {args[0]!r}; commands: progress", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())


__all__ = [
    "main",
]
