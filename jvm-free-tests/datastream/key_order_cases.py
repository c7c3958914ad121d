"""The order of keys in BATCH execution, written once for both APIs: ``benchmarks/pyflink_key_order.py`` runs these
jobs in real PyFlink 2.3.0 and records their outputs in ``pyflink_key_order.json``; ``test_pyflink_key_order.py``
runs them with pyspark_flinkish (local engine and the foreachBatch executor's bodies) and compares.

In ``RuntimeExecutionMode.BATCH`` Flink sorts a keyed operator's input by the key's serialized bytes (its key
serializer's, ``SortingDataInput``) and processes one key at a time, so a rolling ``reduce`` emits each key's final
value in that order. Each case is a list of keys of one type whose byte order differs from their natural and
first-seen order (strings of different lengths, a string of 127 and one of 130 characters, whose length takes two
bytes, characters above U+007F and above U+FFFF, negative numbers, numbers whose low bytes are at least 0x80, ...),
each key twice (``(key, 1)`` and ``(key, 10)``), shuffled with a fixed seed; the job is
``key_by(lambda v: v[0], key_type)`` (a ``Row`` key for the ``ROW`` case) ``.reduce(sum of v[1])``, each result
shown as the string ``"<repr(key)> <sum>"``. ``key_type`` None: PyFlink pickles the key (``PICKLED_BYTE_ARRAY``).

This module imports neither library: functions take ``api``, a namespace with ``Types`` and ``Row`` from one of them.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

ORACLE = Path(__file__).with_name("pyflink_key_order.json")
SEED = 28

STRINGS = ["b", "a", "ab", "B", "", "é", "z", "zz", "Zebra", "ä", "中", "\U0001f600", "x" * 130, "y" * 127, "aa", "É",
           "a b", "ß"]
INTS = [0, 1, -1, 127, 128, 255, 256, -128, -129, 2**31 - 1, -(2**31), 1000, -1000, 65536, 300, 2]
LONGS = [0, 1, -1, 2**40, -(2**40), 2**63 - 1, -(2**63), 128, 255, 3_000_000_000, -3_000_000_000]
SHORTS = [0, 1, -1, 127, 128, -128, 32767, -32768, 255, 256, -300]
BYTES = [0, 1, -1, 127, -128, 5, -5, 64, -64]
DOUBLES = [0.0, 1.0, -1.0, 2.5, -2.5, 1e300, -1e-300, float("inf"), float("-inf"), 0.1, 3.0]
FLOATS = [0.5, -0.5, 1.5, -1.5, 3.0e38, 0.25, 0.0, -3.0e38, 8.0]
PAIRS = [("a", 1), ("a", -1), ("b", 0), ("", 5), ("ab", 1), ("a", 128), ("é", 2)]
ROWS = [(1, "a"), (-1, "a"), (1, None), (128, "b"), (0, ""), (1, "ab")]
UNTYPED_INTS = INTS + [2**40, 2**70, -(2**70), 2**63]
UNTYPED_FLOATS = [0.5, -0.5, 1e10, -1e10, 0.1, float("inf"), 2.0, 1e-300]
UNTYPED_TUPLES = [("a", 1), ("b",), ("a", "b"), (1, 2, 3), (), ("a", 1.5), ("ab", 1), (("a",), 2)]
UNTYPED_MIXED = [None, True, "a", 2, 2.5, b"x", ("t",), -3, "", b"", "\U0001f600"]


def case_keys(api: Any) -> Dict[str, Tuple[Optional[Any], List[Any]]]:
    """name -> (key type or None, the keys)."""
    T = api.Types  # noqa: N806
    return {
        "STRING": (T.STRING(), STRINGS),
        "INT": (T.INT(), INTS),
        "LONG": (T.LONG(), LONGS),
        "SHORT": (T.SHORT(), SHORTS),
        "BYTE": (T.BYTE(), BYTES),
        "BOOLEAN": (T.BOOLEAN(), [True, False]),
        "DOUBLE": (T.DOUBLE(), DOUBLES),
        "FLOAT": (T.FLOAT(), FLOATS),
        "TUPLE(STRING, INT)": (T.TUPLE([T.STRING(), T.INT()]), PAIRS),
        "ROW(INT, STRING)": (T.ROW([T.INT(), T.STRING()]), ROWS),
        "untyped STRING": (None, STRINGS),
        "untyped INT": (None, UNTYPED_INTS),
        "untyped FLOAT": (None, UNTYPED_FLOATS),
        "untyped tuple": (None, UNTYPED_TUPLES),
        "untyped mixed": (None, UNTYPED_MIXED),
    }


def elements(keys: List[Any], name: str) -> List[Tuple[Any, int]]:
    """Each key twice, ``(key, 1)`` and ``(key, 10)``, shuffled (seeded by the case's name)."""
    out = [(k, 1) for k in keys] + [(k, 10) for k in keys]
    random.Random(f"{SEED}-{name}").shuffle(out)
    return out


def build(api: Any, env: Any, name: str, source: Optional[Callable[[Any, List[Any]], Any]] = None) -> Any:
    """The case's job on ``env`` (``source(env, elements)``: an untyped bounded stream, ``from_collection`` by
    default), up to a stream of strings ``"<repr(key)> <sum>"`` in the order the reduce emitted them."""
    key_type, keys = case_keys(api)[name]
    data = elements(keys, name)
    ds = source(env, data) if source is not None else env.from_collection(data)
    if name.startswith("ROW"):
        Row = api.Row  # noqa: N806
        keyed = ds.key_by(lambda v: Row(*v[0]), key_type)
    elif key_type is not None:
        keyed = ds.key_by(lambda v: v[0], key_type)
    else:
        keyed = ds.key_by(lambda v: v[0])
    return keyed.reduce(lambda a, b: (a[0], a[1] + b[1])).map(lambda v: f"{v[0]!r} {v[1]}", api.Types.STRING())


def load() -> Dict[str, Any]:
    return json.loads(ORACLE.read_text())  # type: ignore[no-any-return]
