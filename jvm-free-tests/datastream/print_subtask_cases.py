"""What ``print()`` writes at a print sink parallelism above 1, written once for both APIs:
``benchmarks/pyflink_print_subtasks.py`` runs these jobs in real PyFlink 2.3.0 and records the lines they printed
in ``pyflink_print_subtasks.json``; ``test_pyflink_print_subtasks.py`` runs them with pyspark_flinkish and compares.

Flink's ``PrintSinkOutputWriter`` begins a line with the 1-based number of the sink subtask that printed it when the
sink's parallelism is above 1 (``2> ...``; with a sink identifier ``id:2> ...``). Each case is
``(kind, environment parallelism, the sink's set_parallelism or None, typed, sink identifier or None)``:

* ``keyed``: ``key_by(v[0]).reduce(...)`` then ``print()``;
* ``window``: ``key_by(v[0]).count_window(2).reduce(...)`` then ``print()``;
* ``broadcast``: ``broadcast()`` of the source, then ``print()``;
* ``map``: a ``map`` of the source (``from_collection``, one subtask), then ``print()``;
* ``keyed map``: ``key_by(v[0]).reduce(...)``, then a ``map`` and a ``filter`` (forwarded: the same parallelism),
  then ``print()``.

``typed``: the stream has a declared type (``TUPLE(STRING, INT)``, keys ``STRING``), else none (PyFlink then prints
through a map to strings at the environment's parallelism). The printed lines are recorded sorted: the subtasks'
outputs interleave.

This module imports neither library: functions take ``api``, a namespace with ``Types`` from one of them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

ORACLE = Path(__file__).with_name("pyflink_print_subtasks.json")

DATA = [("a", 1), ("b", 2), ("c", 3), ("a", 4), ("d", 5), ("b", 6), ("e", 7), ("f", 8), ("c", 9), ("g", 10)]

# name -> (kind, environment parallelism, sink parallelism or None, typed, sink identifier or None)
CASES: Dict[str, Tuple[str, int, Optional[int], bool, Optional[str]]] = {
    "keyed p2": ("keyed", 2, None, True, None),
    "keyed p3": ("keyed", 3, None, True, None),
    "keyed p3 id": ("keyed", 3, None, True, "id"),
    "keyed untyped p3": ("keyed", 3, None, False, None),
    "keyed p3 sink p3": ("keyed", 3, 3, True, None),
    "keyed p2 sink p1": ("keyed", 2, 1, True, None),
    "keyed p1 sink p3": ("keyed", 1, 3, True, None),
    "keyed p3 sink p2": ("keyed", 3, 2, True, None),
    "window p2": ("window", 2, None, True, None),
    "window p3 id": ("window", 3, None, True, "id"),
    "broadcast p2": ("broadcast", 2, None, True, None),
    "broadcast p3 id": ("broadcast", 3, None, True, "id"),
    "broadcast untyped p2": ("broadcast", 2, None, False, None),
    "broadcast p2 sink p3": ("broadcast", 2, 3, True, None),
    "broadcast untyped p2 sink p3": ("broadcast", 2, 3, False, None),
    "map p2": ("map", 2, None, True, None),
    "map p3": ("map", 3, None, True, None),
    "map p1 sink p2": ("map", 1, 2, True, None),
    "keyed map p3": ("keyed map", 3, None, True, None),
    "keyed map untyped p2 id": ("keyed map", 2, None, False, "id"),
}


def _sum(a: Any, b: Any) -> Any:
    return (a[0], a[1] + b[1])


def _plus_one(v: Any) -> Any:
    return (v[0], v[1] + 1)


def job(api: Any, environment: Callable[..., Any], name: str) -> Any:
    """Build case ``name``'s job (its print sink included) on a new environment; return the environment."""
    kind, parallelism, sink_parallelism, typed, identifier = CASES[name]
    T = api.Types  # noqa: N806
    env = environment(parallelism)
    pair = T.TUPLE([T.STRING(), T.INT()]) if typed else None
    ds = env.from_collection(DATA, type_info=pair) if typed else env.from_collection(DATA)
    key_type = T.STRING() if typed else None
    if kind == "keyed":
        ds = ds.key_by(lambda v: v[0], key_type=key_type).reduce(_sum)
    elif kind == "keyed map":
        ds = ds.key_by(lambda v: v[0], key_type=key_type).reduce(_sum)
        ds = (ds.map(_plus_one, output_type=pair) if typed else ds.map(_plus_one)).filter(lambda v: v[1] > 2)
    elif kind == "window":
        ds = ds.key_by(lambda v: v[0], key_type=key_type).count_window(2).reduce(_sum)
    elif kind == "broadcast":
        ds = ds.broadcast()
    else:
        ds = ds.map(_plus_one, output_type=pair) if typed else ds.map(_plus_one)
    sink = ds.print(identifier) if identifier else ds.print()
    if sink_parallelism is not None:
        sink.set_parallelism(sink_parallelism)
    return env


def recorded() -> Dict[str, List[str]]:
    """The recorded lines per case."""
    return json.loads(ORACLE.read_text(encoding="utf-8"))["cases"]  # type: ignore[no-any-return]
