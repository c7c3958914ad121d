"""Command line: run every scenario of a directory and (optionally) compare with expected outputs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

from .runner import differences, run_local
from .scenario import ScenarioError, discover, load


def _run_on_spark(scenarios: List[Dict[str, Any]], backend: Optional[str], rejected: Dict[str, str]) -> Dict[str, Any]:
    """On a local SparkSession: the foreachBatch executor runs all scenarios as one streaming query; the
    applyInPandasWithState executor runs one query per scenario it accepts and rejects the rest up front."""
    import tempfile

    from pyspark_flinkish.spark import session

    from .runner import run_spark_all, run_spark_stateful_all

    spark = session("flinkish-conformance", shuffle_partitions=2)
    from pyspark_flinkish.spark.connect import set_log_level
    set_log_level(spark, "ERROR")
    with tempfile.TemporaryDirectory(prefix="flinkish-conformance-") as checkpoint:
        if backend == "apply_in_pandas_with_state":
            results, rejections = run_spark_stateful_all(spark, scenarios, checkpoint)
            rejected.update(rejections)
            return results
        return run_spark_all(spark, scenarios, checkpoint)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pyspark_flinkish.conformance",
        description="Run Flink conformance scenarios through the public API and write NAME.actual.json files.",
    )
    parser.add_argument("scenario_dir", type=Path, help="directory of NAME.json scenario files")
    parser.add_argument("--engine", choices=["local", "spark"], default="local", help="execution engine (default: local)")
    parser.add_argument("--backend", choices=["foreach_batch", "apply_in_pandas_with_state"], default=None, help="Spark executor")
    parser.add_argument("--out", type=Path, required=True, help="directory for NAME.actual.json files")
    parser.add_argument("--expected", type=Path, default=None, help="directory of NAME.expected.json files to compare with")
    parser.add_argument("-k", dest="pattern", default=None, help="only scenarios whose name contains this")
    args = parser.parse_args(argv)

    if args.engine == "local" and args.backend is not None:
        print("error: --backend applies to --engine spark only", file=sys.stderr)
        return 2

    if not args.scenario_dir.is_dir():
        print(f"error: {args.scenario_dir} is not a directory", file=sys.stderr)
        return 2
    paths = [p for p in discover(args.scenario_dir) if args.pattern is None or args.pattern in p.stem]
    if not paths:
        print(f"error: no scenario files in {args.scenario_dir}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    passed = failed = 0
    scenarios = {}
    for path in paths:
        try:
            scenarios[path] = load(path)
        except ScenarioError as exc:
            print(f"ERROR {path.stem}: invalid scenario: {exc}")
            failed += 1
    skipped = 0
    rejected: Dict[str, str] = {}
    spark_results = _run_on_spark(list(scenarios.values()), args.backend, rejected) if args.engine == "spark" else {}
    for scenario in scenarios.values():
        if scenario["name"] in rejected:
            skipped += 1
            print(f"SKIP {scenario['name']}: {rejected[scenario['name']]}")
            continue
        actual = spark_results[scenario["name"]] if args.engine == "spark" else run_local(scenario)
        (args.out / f"{scenario['name']}.actual.json").write_text(json.dumps(actual, indent=1) + "\n")
        if args.expected is None:
            print(f"RAN  {scenario['name']}: {len(actual['main'])} main, {len(actual['late'])} late")
            continue
        expected_path = args.expected / f"{scenario['name']}.expected.json"
        if not expected_path.exists():
            print(f"FAIL {scenario['name']}: no expected file {expected_path}")
            failed += 1
            continue
        problems = differences(actual, json.loads(expected_path.read_text()))
        if problems:
            failed += 1
            print(f"FAIL {scenario['name']}")
            for p in problems:
                print("  " + p)
        else:
            passed += 1
            print(f"PASS {scenario['name']}")
    if args.expected is not None:
        print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = [
    "main",
]
