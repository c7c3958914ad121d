"""Keyed windows whose watermarks come from a custom punctuated ``WatermarkGenerator``: the scenarios of
``pyflink_punctuated.json`` (real Apache Flink 2.3.0's outputs, written by ``benchmarks/pyflink_punctuated.py`` with
the generator in Java, ``benchmarks/java/MarkerPunctuated.java``), built with pyspark_flinkish for any environment.

``pyflink_punctuated_source.json`` has the same scenarios with the generator at a one-split ``FileSource``
(``--at source``; a scenario's ``generator_at`` says where ``pyspark_flinkish.conformance.pipeline.build`` gives it).
Used by ``test_pyflink_punctuated.py`` (local engine) and ``tests/spark/test_spark_conformance.py`` (Spark). The
generator here is the same rule in Python, through PyFlink's ``WatermarkGenerator`` interface (``on_event`` /
``on_periodic_emit``); the window part is the conformance runner's (``pyspark_flinkish.conformance``), and so is
the comparison (canonically sorted, as multisets).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

from pyspark_flinkish.common import Watermark, WatermarkGenerator, WatermarkStrategy
from pyspark_flinkish.conformance.runner import attach
from pyspark_flinkish.datastream import StreamExecutionEnvironment

ORACLE = Path(__file__).with_name("pyflink_punctuated.json")
SOURCE_ORACLE = Path(__file__).with_name("pyflink_punctuated_source.json")
"""The same scenarios with the generator given at the source (``from_source``), named ``<name>_at_source``."""
LONG_MIN = -(2**63)


def load(at: str = "assigner") -> Dict[str, Any]:
    """The oracle of the generator in ``assign_timestamps_and_watermarks`` (``at="assigner"``) or at the source."""
    return json.loads((SOURCE_ORACLE if at == "source" else ORACLE).read_text())  # type: ignore[no-any-return]


class MarkerPunctuated(WatermarkGenerator):
    """``max timestamp - bound - 1``, emitted only on events whose ``marker`` is true (``every == 0``) or on every
    ``every``-th event; nothing periodically (``MarkerPunctuated.java``)."""

    def __init__(self, bound: int, every: int) -> None:
        self.bound = bound
        self.every = every
        self.max = LONG_MIN + bound + 1
        self.seen = 0

    def on_event(self, event: Any, event_timestamp: int, output: Any) -> None:
        self.max = max(self.max, event_timestamp)
        self.seen += 1
        if (event["marker"] if self.every == 0 else self.seen % self.every == 0):
            output.emit_watermark(Watermark(self.max - self.bound - 1))

    def on_periodic_emit(self, output: Any) -> None:
        return None


def strategy(generator: Dict[str, Any]) -> WatermarkStrategy:
    """The scenario's ``generator`` as a ``for_generator`` strategy (one generator per source partition)."""
    bound = generator["bound"]
    every = generator["every"] if generator["emit_on"] == "every" else 0
    return WatermarkStrategy.for_generator(lambda: MarkerPunctuated(bound, every))


def attach_scenario(env: StreamExecutionEnvironment, scenario: Dict[str, Any]) -> Dict[str, List[Any]]:
    """The scenario's pipeline on ``env``, its main and late outputs sunk into the returned lists (read them with
    ``pyspark_flinkish.conformance.runner.result``)."""
    return attach(env, scenario, generator=strategy(scenario["generator"]))
