"""``python -m pyspark_flinkish.demo``: the live demo on Kafka, Spark and Delta (:mod:`.live`, ``make demo``);
``python -m pyspark_flinkish.demo --local ...``: the JVM-free demo (:mod:`.local`)."""

from __future__ import annotations

import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--local" in args:
        args.remove("--local")
        from .local import main as local_main

        return local_main(args)
    from .live import main as live_main

    return live_main(args)


if __name__ == "__main__":
    sys.exit(main())


__all__ = [
    "main",
]
