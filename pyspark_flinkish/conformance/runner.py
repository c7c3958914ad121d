"""Runs scenarios on an engine and compares the outputs with Flink's, as multisets."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Dict, List, Tuple

from pyspark_flinkish.datastream import StreamExecutionEnvironment

from .pipeline import build


def canon(record: Any) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def _null_first(v: Any) -> Tuple[int, Any]:
    return (0, 0) if v is None else (1, v)


def canonical(output: Dict[str, List[Dict[str, Any]]]) -> Dict[str, List[Dict[str, Any]]]:
    """Sort ``main`` and ``late`` in the suite's canonical order."""
    main = sorted(
        output["main"],
        key=lambda r: (
            _null_first(r["watermark"]),
            r["key"],
            _null_first(r["window_start"]),
            _null_first(r["window_end"]),
            canon(r["result"]),
        ),
    )
    late = sorted(output["late"], key=lambda r: (r["key"], r["ts"], r["value"]))
    return {"main": main, "late": late}


def run_local(scenario: Dict[str, Any]) -> Dict[str, List[Dict[str, Any]]]:
    """Run ``scenario`` on the JVM-free engine; return ``{"main": [...], "late": [...]}`` canonically sorted."""
    env = StreamExecutionEnvironment.get_execution_environment()
    main_out: List[Dict[str, Any]] = []
    late_out: List[Dict[str, Any]] = []
    main, late = build(env, scenario)
    main.add_sink(main_out.append)
    if late is not None:
        late.add_sink(late_out.append)
    env.execute(scenario["name"])
    return canonical({"main": main_out, "late": [{"key": e["key"], "ts": e["ts"], "value": e["value"]} for e in late_out]})


def run_spark_all(spark: Any, scenarios: List[Dict[str, Any]], checkpoint: str) -> Dict[str, Dict[str, List[Dict[str, Any]]]]:
    """Run many scenarios as ONE Spark streaming query (foreachBatch executor): every scenario is its own
    pipeline of the same environment, batch ``i`` of every scenario is Spark micro-batch ``i``."""
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    outputs: Dict[str, Dict[str, List[Dict[str, Any]]]] = {}
    for scenario in scenarios:
        main_out: List[Dict[str, Any]] = []
        late_out: List[Dict[str, Any]] = []
        main, late = build(env, scenario)
        main.add_sink(main_out.append)
        if late is not None:
            late.add_sink(late_out.append)
        outputs[scenario["name"]] = {"main": main_out, "late": late_out}
    handle = env.execute("conformance", checkpoint_location=checkpoint, trigger={"availableNow": True})
    handle.await_termination()
    return {
        name: canonical(
            {"main": out["main"], "late": [{"key": e["key"], "ts": e["ts"], "value": e["value"]} for e in out["late"]]}
        )
        for name, out in outputs.items()
    }


def differences(actual: Dict[str, List[Any]], expected: Dict[str, List[Any]]) -> List[str]:
    """Human-readable differences between two outputs compared as multisets ([] if equal)."""
    problems = []
    for part in ("main", "late"):
        got, want = Counter(map(canon, actual.get(part, []))), Counter(map(canon, expected.get(part, [])))
        if got != want:
            missing, extra = want - got, got - want
            lines = [f"{part}: {sum(missing.values())} missing, {sum(extra.values())} unexpected"]
            lines += [f"    missing    {r} x{n}" for r, n in sorted(missing.items())[:10]]
            lines += [f"    unexpected {r} x{n}" for r, n in sorted(extra.items())[:10]]
            problems.append("\n".join(lines))
    return problems
