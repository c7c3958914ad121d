"""Pipelines with ``Row``, typed values, rolling aggregations and keyed state in simple functions, written once
for both APIs: ``benchmarks/pyflink_rows.py`` runs them in real PyFlink 2.3.0 and records their outputs in
``pyflink_rows.json``; ``test_pyflink_rows.py`` (local engine) and ``tests/spark/test_spark_rows.py``
(foreachBatch executor) run them with pyspark_flinkish and compare.

This module imports neither library: every function takes ``api``, a namespace with ``Types``, ``Row``,
``MapFunction``, ``FlatMapFunction``, ``FilterFunction``, ``ReduceFunction`` and ``ValueStateDescriptor`` from
one of them (so the pipelines are the same code, only the imports differ, as a user's job would).

A case's ``values`` are the collected elements as JSON (:func:`encode`: a Row is ``{"Row": [kind, names,
values]}``, a tuple ``{"tuple": [...]}``); ``printed`` is what ``print(name)`` wrote for it, line by line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List

ORACLE = Path(__file__).with_name("pyflink_rows.json")

# (key, value, sequence number): ties on the value for key "a" show which element min_by/max_by keep
TRIPLES = [("a", 3, 1), ("b", 5, 2), ("a", 1, 3), ("a", 1, 4), ("b", 7, 5), ("a", 4, 6), ("b", 7, 7), ("a", 0, 8)]
NUMBERS = [5, 2, 8, 2, 9, 1, 4]


def load() -> Dict[str, Any]:
    return json.loads(ORACLE.read_text())  # type: ignore[no-any-return]


def encode(value: Any) -> Any:
    """An element as JSON, keeping the difference between Row, tuple and list."""
    if type(value).__name__ == "Row":
        names = getattr(value, "_fields", None)
        return {"Row": [str(value.get_row_kind()), None if names is None else list(names), [encode(v) for v in value]]}
    if isinstance(value, tuple):
        return {"tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {"dict": [[encode(k), encode(v)] for k, v in value.items()]}
    return value


def _triple_types(api: Any) -> Any:
    return [api.Types.STRING(), api.Types.INT(), api.Types.INT()]


def _named(api: Any) -> Any:
    return api.Types.ROW_NAMED(["key", "v", "seq"], _triple_types(api))


def _functions(api: Any) -> Dict[str, Any]:
    """User functions with keyed state, as a PyFlink user writes them."""

    class CountPerKey(api.MapFunction):  # type: ignore[misc,name-defined]
        def open(self, runtime_context: Any) -> None:
            self.count = runtime_context.get_state(api.ValueStateDescriptor("count", api.Types.INT()))

        def map(self, value: Any) -> Any:
            n = (self.count.value() or 0) + 1
            self.count.update(n)
            return (value[0], value[2], n)

    class FirstPerValue(api.FilterFunction):  # type: ignore[misc,name-defined]
        def open(self, runtime_context: Any) -> None:
            self.seen = runtime_context.get_state(api.ValueStateDescriptor("seen", api.Types.BOOLEAN()))

        def filter(self, value: Any) -> bool:
            if self.seen.value():
                return False
            self.seen.update(True)
            return True

    class RepeatRunning(api.FlatMapFunction):  # type: ignore[misc,name-defined]
        def open(self, runtime_context: Any) -> None:
            self.total = runtime_context.get_state(api.ValueStateDescriptor("total", api.Types.INT()))

        def flat_map(self, value: Any) -> Any:
            total = (self.total.value() or 0) + value[1]
            self.total.update(total)
            for i in range(value[1] % 3):
                yield (value[0], total, i)

    class SumWithBonus(api.ReduceFunction):  # type: ignore[misc,name-defined]
        def open(self, runtime_context: Any) -> None:
            self.bonus = 100

        def reduce(self, a: Any, b: Any) -> Any:
            return api.Row(key=a.key, v=a.v + b.v + self.bonus, seq=b.seq)

    return {"count": CountPerKey, "first": FirstPerValue, "repeat": RepeatRunning, "bonus": SumWithBonus}


def _pipelines(api: Any) -> Dict[str, Callable[[Any], Any]]:
    T = api.Types  # noqa: N806
    triple_t = T.TUPLE(_triple_types(api))
    named_t = _named(api)
    fns = _functions(api)

    def triples(env: Any, type_info: Any = None) -> Any:
        if type_info is None:
            return env.from_collection(list(TRIPLES))
        return env.from_collection(list(TRIPLES), type_info=type_info)

    def by_key(ds: Any) -> Any:
        return ds.key_by(lambda e: e[0], key_type=T.STRING())

    return {
        # Row and typed values
        "row_named_source": lambda env: triples(env, named_t),
        "row_positional_source": lambda env: triples(env, T.ROW(_triple_types(api))),
        "row_fields_by_name": lambda env: triples(env, named_t).map(
            lambda r: f"{r.key}/{r['v']}/{r.as_dict()['seq']}/{'v' in r}", output_type=T.STRING()
        ),
        "map_row_output": lambda env: triples(env, named_t).map(
            lambda r: api.Row(key=r.key, doubled=r.v * 2), output_type=T.ROW_NAMED(["key", "doubled"], [T.STRING(), T.INT()])
        ),
        "map_positional_row_then_keyed": lambda env: by_key(
            triples(env).map(lambda t: api.Row(t[0], t[1]), output_type=T.ROW_NAMED(["key", "v"], [T.STRING(), T.INT()]))
        ).map(lambda r: f"{type(r).__name__}:{r.key}:{r.v}:{r}", output_type=T.STRING()),
        "untyped_rows": lambda env: triples(env).map(lambda t: api.Row(t[0], t[1])),
        "tuple_typed_print": lambda env: env.from_collection(
            [("x", True, 1.5, 10000000000.0, 7)], type_info=T.TUPLE([T.STRING(), T.BOOLEAN(), T.DOUBLE(), T.DOUBLE(), T.LONG()])
        ),
        "row_typed_print": lambda env: env.from_collection(
            [("x", True, 1.5, None, [1, 2])],
            type_info=T.ROW([T.STRING(), T.BOOLEAN(), T.DOUBLE(), T.STRING(), T.LIST(T.INT())]),
        ),
        "basic_typed_print": lambda env: env.from_collection([True, False], type_info=T.BOOLEAN()),
        # rolling aggregations
        "sum_tuple": lambda env: by_key(triples(env, triple_t)).sum(1),
        "min_tuple": lambda env: by_key(triples(env, triple_t)).min(1),
        "max_tuple": lambda env: by_key(triples(env, triple_t)).max(1),
        "min_by_tuple": lambda env: by_key(triples(env, triple_t)).min_by(1),
        "max_by_tuple": lambda env: by_key(triples(env, triple_t)).max_by(1),
        "sum_untyped_tuple": lambda env: by_key(triples(env)).sum(1),
        "min_untyped_list": lambda env: by_key(triples(env).map(lambda t: list(t))).min(1),
        "sum_row_by_name": lambda env: by_key(triples(env, named_t)).sum("v"),
        "min_row_by_name": lambda env: by_key(triples(env, named_t)).min("v"),
        "max_by_row_by_name": lambda env: by_key(triples(env, named_t)).max_by("v"),
        "min_by_row_by_position": lambda env: by_key(triples(env, named_t)).min_by(1),
        "sum_plain": lambda env: env.from_collection(list(NUMBERS), type_info=T.INT()).key_by(lambda x: x % 2).sum(),
        "min_plain": lambda env: env.from_collection(list(NUMBERS)).key_by(lambda x: x % 2).min(),
        "max_by_plain": lambda env: env.from_collection(list(NUMBERS)).key_by(lambda x: x % 2).max_by(0),
        # keyed state in simple functions
        "keyed_map_state": lambda env: by_key(triples(env)).map(fns["count"](), output_type=triple_t),
        "keyed_filter_state": lambda env: triples(env, triple_t).key_by(lambda e: e[1]).filter(fns["first"]()),
        "keyed_flat_map_state": lambda env: by_key(triples(env)).flat_map(fns["repeat"](), output_type=triple_t),
        "reduce_function_open": lambda env: by_key(triples(env, named_t)).reduce(fns["bonus"]()),
    }


def case_names(api: Any) -> List[str]:
    return list(_pipelines(api))


def build(api: Any, env: Any, name: str) -> Any:
    """Case ``name``'s stream on ``env``."""
    return _pipelines(api)[name](env)
