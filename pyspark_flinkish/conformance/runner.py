"""Runs scenarios on an engine and compares the outputs with Flink's, as multisets."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Dict, List, Optional, Tuple

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


def attach(
    env: StreamExecutionEnvironment, scenario: Dict[str, Any], generate_watermarks: bool = False, generator: Any = None
) -> Dict[str, List[Any]]:
    """Build ``scenario`` on ``env`` (``generate_watermarks``, ``generator``: see ``pipeline.build``) and sink its
    main and late outputs into the returned lists."""
    out: Dict[str, List[Any]] = {"main": [], "late": []}
    main, late = build(env, scenario, generate_watermarks=generate_watermarks, generator=generator)
    main.add_sink(out["main"].append)
    if late is not None:
        late.add_sink(out["late"].append)
    return out


def result(out: Dict[str, List[Any]]) -> Dict[str, List[Dict[str, Any]]]:
    """The collected outputs in the expected-output format, canonically sorted."""
    return canonical({"main": out["main"], "late": [{"key": e["key"], "ts": e["ts"], "value": e["value"]} for e in out["late"]]})


def run_local(scenario: Dict[str, Any]) -> Dict[str, List[Dict[str, Any]]]:
    """Run ``scenario`` on the JVM-free engine; return ``{"main": [...], "late": [...]}`` canonically sorted."""
    env = StreamExecutionEnvironment.get_execution_environment()
    out = attach(env, scenario)
    env.execute(scenario["name"])
    return result(out)


def run_spark_all(
    spark: Any, scenarios: List[Dict[str, Any]], checkpoint: str, generators: Optional[Dict[str, Any]] = None
) -> Dict[str, Dict[str, List[Dict[str, Any]]]]:
    """Run many scenarios as ONE Spark streaming query (foreachBatch executor): every scenario is its own
    pipeline of the same environment, batch ``i`` of every scenario is Spark micro-batch ``i``. ``generators``:
    a ``WatermarkStrategy`` by scenario name, for scenarios whose watermarks that strategy makes (``attach``)."""
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    outputs = {
        scenario["name"]: attach(env, scenario, generator=(generators or {}).get(scenario["name"])) for scenario in scenarios
    }
    handle = env.execute("conformance", checkpoint_location=checkpoint, trigger={"availableNow": True})
    handle.await_termination()
    return {name: result(out) for name, out in outputs.items()}


def start_spark_stateful(
    spark: Any, scenario: Dict[str, Any], checkpoint: str, generator: Any = None
) -> Tuple[Any, Dict[str, List[Any]]]:
    """Start ``scenario`` on the applyInPandasWithState executor (watermarks generated, see ``pipeline.build``, or
    made by ``generator``, a ``WatermarkStrategy`` in ``assign_timestamps_and_watermarks``); returns the running
    handle and the lists its sinks fill."""
    from .pipeline import generated_bound

    env = StreamExecutionEnvironment.get_execution_environment(spark, backend="apply_in_pandas_with_state")
    if generator is not None:
        out = attach(env, scenario, generator=generator)
    else:
        out = attach(env, scenario, generate_watermarks=generated_bound(scenario) is not None)
    handle = env.execute(scenario["name"], checkpoint_location=checkpoint, trigger={"availableNow": True})
    return handle, out


def run_spark_stateful_all(
    spark: Any, scenarios: List[Dict[str, Any]], checkpoint_root: str, generators: Optional[Dict[str, Any]] = None
) -> Tuple[Dict[str, Dict[str, List[Dict[str, Any]]]], Dict[str, str]]:
    """Run every scenario the applyInPandasWithState executor accepts (one query each, all at once); returns
    (outputs by scenario, rejection message by scenario for those it rejected up front). ``generators``: a
    ``WatermarkStrategy`` by scenario name, as :func:`run_spark_all` takes them."""
    import os

    from pyspark_flinkish.core.errors import UnsupportedFeatureError

    running = {}
    rejected: Dict[str, str] = {}
    for scenario in scenarios:
        try:
            checkpoint = os.path.join(checkpoint_root, scenario["name"])
            generator = (generators or {}).get(scenario["name"])
            running[scenario["name"]] = start_spark_stateful(spark, scenario, checkpoint, generator)
        except UnsupportedFeatureError as exc:
            rejected[scenario["name"]] = str(exc)
    return {name: finish_spark_stateful(*r) for name, r in running.items()}, rejected


def finish_spark_stateful(handle: Any, out: Dict[str, List[Any]]) -> Dict[str, List[Dict[str, Any]]]:
    handle.await_termination()
    return result(out)


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


__all__ = [
    "canon",
    "canonical",
    "attach",
    "result",
    "run_local",
    "run_spark_all",
    "start_spark_stateful",
    "run_spark_stateful_all",
    "finish_spark_stateful",
    "differences",
]
