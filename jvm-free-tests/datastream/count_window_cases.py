"""The count-window pipelines of ``pyflink_count_windows.json`` (real PyFlink 2.3.0's outputs, written by
``benchmarks/pyflink_count_windows.py``), built with pyspark_flinkish for any environment.

Used by ``test_pyflink_count_windows.py`` (local engine) and ``tests/spark/test_spark_count_windows.py``
(foreachBatch executor). PyFlink's ``count_window(size, slide)`` is its ``CountSlidingWindowAssigner``; ours follows
Java Flink, so :func:`build` runs a ``count_window`` case with PyFlink's assigner unless ``java_rule`` is set.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

from pyspark_flinkish.common import Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource
from pyspark_flinkish.datastream.functions import ProcessWindowFunction
from pyspark_flinkish.datastream.window import CountSlidingWindowAssigner, CountTumblingWindowAssigner

ORACLE = Path(__file__).with_name("pyflink_count_windows.json")


def load() -> Dict[str, Any]:
    return json.loads(ORACLE.read_text())  # type: ignore[no-any-return]


class Elements(ProcessWindowFunction):  # type: ignore[type-arg]
    def process(self, key, context, elements):  # type: ignore[no-untyped-def]
        window = context.window()
        yield [key, getattr(window, "id", None), [e[1] for e in elements]]


class Reduced(ProcessWindowFunction):  # type: ignore[type-arg]
    def process(self, key, context, elements):  # type: ignore[no-untyped-def]
        for e in elements:
            yield [key, context.window().id, e[1]]


def add(a: Any, b: Any) -> Any:
    return (a[0], a[1] + b[1])


def build(
    env: Any,
    case: Dict[str, Any],
    elements: List[Any],
    batches: int = 1,
    java_rule: bool = False,
    strategy: Any = None,
) -> Any:
    """``case``'s pipeline over ``elements`` (``[key, value]`` pairs; the element's position is appended as a third
    field) on ``env``; ``batches`` > 1 splits the input into that many micro-batches (so keyed state, the assigners'
    counters included, crosses batch boundaries), read with ``strategy`` (default: no watermarks)."""
    rows = [(k, v, i) for i, (k, v) in enumerate(elements)]
    if batches == 1 and strategy is None:
        source = env.from_collection(rows, type_info=Types.TUPLE([Types.STRING(), Types.INT(), Types.INT()]))
    else:
        step = -(-len(rows) // batches)
        mb = [MicroBatch(rows[i : i + step]) for i in range(0, len(rows), step)]
        strategy = strategy if strategy is not None else WatermarkStrategy.no_watermarks()
        source = env.from_source(MicroBatchSource(mb), strategy, "count-window-input")
    keyed = source.key_by(lambda e: e[0], key_type=Types.STRING())
    size, slide = case["size"], case.get("slide", 0)
    if case["window"] == "count_window" and java_rule:
        windowed = keyed.count_window(size, slide)
    elif case["window"] == "tumbling" or (case["window"] == "count_window" and slide == 0):
        windowed = keyed.window(CountTumblingWindowAssigner.of(size))
    else:
        windowed = keyed.window(CountSlidingWindowAssigner.of(size, slide))
    if case["function"] == "process":
        return windowed.process(Elements())
    if case["function"] == "reduce":
        # typed as the oracle's (benchmarks/pyflink_count_windows.py): without it the reduce is typed as its input
        pair = Types.TUPLE([Types.STRING(), Types.INT()])
        return windowed.reduce(add, output_type=pair).map(lambda e: [e[0], e[1]])
    return windowed.reduce(add, window_function=Reduced())
