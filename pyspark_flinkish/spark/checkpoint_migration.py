"""Checkpoints of older versions: pickled driver state (``meta.pkl``, ``driver/b=<batch>.pkl``) converted once
to the JSON documents of :mod:`.checkpoint`.
"""

from __future__ import annotations

import logging
import os
import pickle
from typing import Any, Callable, Dict, Tuple

from ..core.clock import Clock
from ..core.operators import TimestampsAndWatermarksOperator
from ..core.watermarks import WatermarksWithIdleness
from ..local.executor import LocalExecutor
from .checkpoint import driver_document, write_atomically, write_meta

_log = logging.getLogger("pyspark_flinkish.spark")

MOVED_CLASSES: Dict[Tuple[str, str], str] = {
    ("pyspark_flinkish.core.watermarks", "SplitWatermarks"): "pyspark_flinkish.core.watermark_alignment",
    ("pyspark_flinkish.core.watermarks", "StatusWatermarkValve"): "pyspark_flinkish.core.watermark_alignment",
    ("pyspark_flinkish.core.watermarks", "_PartialWatermark"): "pyspark_flinkish.core.watermark_alignment",
}
"""Classes the pickles of older versions name under a module they have since left: ``(old module, name)`` to the
module that holds them now."""


class LegacyUnpickler(pickle.Unpickler):
    """Reads an older version's pickle, finding the classes that moved (:data:`MOVED_CLASSES`) where they are now."""

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(MOVED_CLASSES.get((module, name), module), name)


def load_legacy_pickle(path: str) -> Any:
    """The object pickled in ``path`` by an older version."""
    with open(path, "rb") as f:
        return LegacyUnpickler(f).load()


def migrate_pickled_checkpoint(
    checkpoint: str, legacy_meta: str, new_graph: Callable[[], LocalExecutor], clock: Clock
) -> None:
    """Checkpoints of pyspark_flinkish before the JSON driver state kept ``meta.pkl`` and ``driver/b=<batch>.pkl``
    (pickles): read them once, write ``meta.json`` and ``b=<batch>.json``, delete the pickles. ``meta.json`` is
    written last, so an interrupted migration is redone; afterwards no pickle file is ever read."""
    _log.warning("checkpoint %s: converting the pickled driver state of an older version to JSON", checkpoint)
    stored = load_legacy_pickle(legacy_meta)
    stored.pop("format", None)
    stored.setdefault("vectorize", False)  # checkpoints written before batch-wise windows existed
    driver_root = os.path.join(checkpoint, "flinkish", "driver")
    names = sorted(os.listdir(driver_root)) if os.path.isdir(driver_root) else []
    for name in names:
        if name.startswith("b=") and name.endswith(".pkl"):
            graph = new_graph()
            restore_pickled_graph(graph, load_legacy_pickle(os.path.join(driver_root, name)), clock)
            write_atomically(os.path.join(driver_root, name[:-4] + ".json"), driver_document(graph, int(name[2:14])))
            os.remove(os.path.join(driver_root, name))
    write_meta(checkpoint, stored)
    os.remove(legacy_meta)


def restore_pickled_graph(graph: LocalExecutor, state: Dict[str, Any], clock: Clock) -> None:
    """A driver state pickled by an older version (objects, keyed by position or, older still, by transformation
    id) into ``graph``; only used to convert such a checkpoint to JSON once."""
    by_position = state.get("keys") == "position"
    key = {t.id: (i if by_position else t.id) for i, t in enumerate(graph.order)}
    for t in graph.order:
        n = graph.nodes[t.id]
        saved = state["nodes"][key[t.id]]
        n.valve = saved["valve"]
        if n.operator is not None and saved["op"] is not None:
            n.operator.current_watermark = saved["op"]["wm"]
            if isinstance(n.operator, TimestampsAndWatermarksOperator):
                n.operator.generator = saved["op"]["generator"]
                n.operator.wm_output.current = saved["op"]["current"]
                n.operator.wm_output.idle = saved["op"]["idle"]
    for tid, r in graph.runners.items():
        saved = state["runners"][key[tid]]
        r.splits, r.current, r.idle, r.finished = saved["splits"], saved["current"], saved["idle"], saved["finished"]
    # unpickled generators hold a copy of the clock they were pickled with
    for r in graph.runners.values():
        r.splits.clock = clock
        for gen in r.splits.generators.values():
            _rebind_clock(gen, clock)
    for t in graph.order:
        op = graph.nodes[t.id].operator
        if isinstance(op, TimestampsAndWatermarksOperator):
            _rebind_clock(op.generator, clock)


def _rebind_clock(generator: Any, clock: Clock) -> None:
    """Point a (restored) watermark generator's idleness timer at ``clock``."""
    if isinstance(generator, WatermarksWithIdleness):
        generator.timer.clock = clock
        _rebind_clock(generator.generator, clock)


__all__ = [
    "MOVED_CLASSES",
    "LegacyUnpickler",
    "load_legacy_pickle",
    "migrate_pickled_checkpoint",
    "restore_pickled_graph",
]
