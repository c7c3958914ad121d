"""A function's parallel subtask as its ``RuntimeContext`` reports it, written once for both APIs:
``benchmarks/pyflink_subtasks.py`` runs these jobs in real PyFlink 2.3.0 and records their outputs in
``pyflink_subtasks.json``; ``test_pyflink_subtasks.py`` runs them with pyspark_flinkish and compares.

* ``keyed`` cases: ``key_by(lambda v: v[0], key_type)`` (a ``Row`` key for ``ROW``) ``.process(...)`` at a
  parallelism (the environment's, or the operator's ``set_parallelism``) and max parallelism (Flink's default, or the
  environment's ``set_max_parallelism``): every element is shown as ``"<repr(key)> <index> <n> <max>"``:
  ``get_index_of_this_subtask()`` (the subtask that owns the key's key group: Flink's ``KeyGroupRangeAssignment``),
  ``get_number_of_parallel_subtasks()`` and ``get_max_number_of_parallel_subtasks()`` of the context given to
  ``open()``, called while the element is processed. The outputs are sorted (the subtasks' outputs interleave).
* ``map`` cases: a ``MapFunction`` at a parallelism whose ``open()`` reads ``get_number_of_parallel_subtasks()``
  (which subtask gets which element depends on Flink's round robin, so its index is not recorded).

* ``window`` cases: the same from a keyed ``ProcessWindowFunction`` (``count_window(1)``).

This module imports neither library: functions take ``api``, a namespace with ``Types``, ``Row``,
``KeyedProcessFunction``, ``ProcessWindowFunction`` and ``MapFunction`` from one of them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

ORACLE = Path(__file__).with_name("pyflink_subtasks.json")

STRINGS = ["a", "b", "ab", "", "é", "\U0001f600", "hello world", "x" * 40, "Zebra", "key-7", "key-8", "key-9"]
INTS = [0, 1, -1, 7, 128, -129, 2**31 - 1, -(2**31), 1000, 65536, 42, 3]
LONGS = [0, 1, -1, 2**40, -(2**40), 2**63 - 1, -(2**63), 3_000_000_000]
DOUBLES = [0.0, 1.0, -2.5, 1e300, 0.1, float("inf")]
PAIRS = [("a", 1), ("a", -1), ("b", 0), ("", 5), ("ab", 1), ("é", 2)]
ROWS = [(1, "a"), (-1, "a"), (1, None), (128, "b"), (0, "")]
UNTYPED = ["a", "b", "ab", "", 0, 1, -1, 128, 2**40, 2.5, None, ("a", 1), (), b"x", True]

# name -> (key type name or None, keys, environment parallelism, operator parallelism or None, max parallelism or None)
KEYED: Dict[str, Tuple[Optional[str], List[Any], int, Optional[int], Optional[int]]] = {
    "STRING p3": ("STRING", STRINGS, 3, None, None),
    "INT p3": ("INT", INTS, 3, None, None),
    "LONG p3": ("LONG", LONGS, 3, None, None),
    "DOUBLE p3": ("DOUBLE", DOUBLES, 3, None, None),
    "BOOLEAN p2": ("BOOLEAN", [True, False], 2, None, None),
    "TUPLE(STRING, INT) p3": ("TUPLE", PAIRS, 3, None, None),
    "ROW(INT, STRING) p3": ("ROW", ROWS, 3, None, None),
    "untyped p3": (None, UNTYPED, 3, None, None),
    "STRING p2, operator p5": ("STRING", STRINGS, 2, 5, None),
    "INT p4, max parallelism 10": ("INT", INTS, 4, None, 10),
    "untyped p2, operator p3, max parallelism 7": (None, UNTYPED, 2, 3, 7),
    "INT p1": ("INT", INTS, 1, None, None),
}
WINDOWS = {"count window STRING p3": ("STRING", STRINGS, 3)}
"""name -> (key type name, keys, environment parallelism): ``count_window(1).process(ProcessWindowFunction)``
showing each window's key as the keyed cases do, from the window function's ``open()`` context."""
MAPS: Dict[str, Tuple[int, Optional[int]]] = {"map p3": (3, None), "map p1, operator p2": (1, 2)}
"""name -> (environment parallelism, the map's parallelism or None)."""


def key_type(api: Any, name: Optional[str]) -> Any:
    T = api.Types  # noqa: N806
    if name is None:
        return None
    if name == "TUPLE":
        return T.TUPLE([T.STRING(), T.INT()])
    if name == "ROW":
        return T.ROW([T.INT(), T.STRING()])
    return getattr(T, name)()


def keyed_job(api: Any, make_env: Callable[[], Any], name: str) -> Any:
    """The case's stream of strings (unsorted) on a new environment ``make_env()``."""
    type_name, keys, parallelism, operator_parallelism, max_parallelism = KEYED[name]
    env = make_env()
    env.set_parallelism(parallelism)
    if max_parallelism is not None:
        env.set_max_parallelism(max_parallelism)

    class Show(api.KeyedProcessFunction):  # type: ignore[name-defined,misc]
        def open(self, runtime_context: Any) -> None:
            self.context = runtime_context

        def process_element(self, value: Any, ctx: Any) -> Any:
            c = self.context
            yield (
                f"{value[0]!r} {c.get_index_of_this_subtask()} {c.get_number_of_parallel_subtasks()} "
                f"{c.get_max_number_of_parallel_subtasks()}"
            )

    ds = env.from_collection([(k, i) for i, k in enumerate(keys)])
    kt = key_type(api, type_name)
    if type_name == "ROW":
        Row = api.Row  # noqa: N806
        keyed = ds.key_by(lambda v: Row(*v[0]), kt)
    elif kt is not None:
        keyed = ds.key_by(lambda v: v[0], kt)
    else:
        keyed = ds.key_by(lambda v: v[0])
    out = keyed.process(Show(), api.Types.STRING())
    if operator_parallelism is not None:
        out.set_parallelism(operator_parallelism)
    return out


def window_job(api: Any, make_env: Callable[[], Any], name: str) -> Any:
    type_name, keys, parallelism = WINDOWS[name]
    env = make_env()
    env.set_parallelism(parallelism)

    class Show(api.ProcessWindowFunction):  # type: ignore[name-defined,misc]
        def open(self, runtime_context: Any) -> None:
            self.context = runtime_context

        def process(self, key: Any, context: Any, elements: Any) -> Any:
            c = self.context
            yield f"{key!r} {c.get_index_of_this_subtask()} {c.get_number_of_parallel_subtasks()}"

    ds = env.from_collection([(k, i) for i, k in enumerate(keys)])
    return ds.key_by(lambda v: v[0], key_type(api, type_name)).count_window(1).process(Show(), api.Types.STRING())


def map_job(api: Any, make_env: Callable[[], Any], name: str) -> Any:
    parallelism, operator_parallelism = MAPS[name]
    env = make_env()
    env.set_parallelism(parallelism)

    class Count(api.MapFunction):  # type: ignore[name-defined,misc]
        def open(self, runtime_context: Any) -> None:
            self.n = runtime_context.get_number_of_parallel_subtasks()

        def map(self, value: Any) -> Any:
            return f"{value} {self.n}"

    out = env.from_collection(list(range(6))).map(Count(), api.Types.STRING())
    if operator_parallelism is not None:
        out.set_parallelism(operator_parallelism)
    return out


def load() -> Dict[str, Any]:
    return json.loads(ORACLE.read_text())  # type: ignore[no-any-return]
