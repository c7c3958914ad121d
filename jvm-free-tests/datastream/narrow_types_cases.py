"""Values of every basic type through small jobs, written once for both APIs: ``benchmarks/pyflink_narrow_types.py``
runs them in real PyFlink 2.3.0 and records what the Python functions saw in ``pyflink_narrow_types.json``;
``test_narrow_types.py`` runs them with pyspark_flinkish (local engine and the foreachBatch executor's bodies) and
compares.

Every case's stream is of strings ``"<type name> <repr>"`` made by a Python function *after* a network boundary
(``key_by``), so the oracle shows what PyFlink's coders did to the values, not what the collecting client makes of
them. The values are drawn from ``random.Random(SEED)`` (the same list on both sides): edge values of each type
first, then random ones.

This module imports neither library: functions take ``api``, a namespace with ``Types``, ``Row``, ``OutputTag``,
``ProcessFunction``, ``KeyedProcessFunction``, ``AggregateFunction``, ``ValueStateDescriptor``,
``ListStateDescriptor``, ``MapStateDescriptor``, ``WatermarkStrategy`` and ``TimestampAssigner`` from one of them, and ``source(env, values)``, an untyped
bounded stream of ``values`` (``from_collection`` in PyFlink, a replayed micro-batch on the Spark harness).
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import random
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

ORACLE = Path(__file__).with_name("pyflink_narrow_types.json")
SEED = 28
RANDOM_PER_TYPE = 24

UTC_PLUS_2 = datetime.timezone(datetime.timedelta(hours=2))


def load() -> Dict[str, Any]:
    return json.loads(ORACLE.read_text())  # type: ignore[no-any-return]


def show(x: Any) -> str:
    """What a Python function sees, as text: its type's name and ``repr``."""
    return f"{type(x).__name__} {x!r}"


def _random_float(rnd: random.Random) -> float:
    return rnd.choice([-1, 1]) * rnd.random() * 10.0 ** rnd.randint(-46, 40)


def _random_datetime(rnd: random.Random) -> datetime.datetime:
    seconds = rnd.randint(-2_000_000_000, 4_000_000_000)
    micros = rnd.randint(0, 999_999) if seconds >= 0 else 0
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=seconds, microseconds=micros)


def values_of(type_name: str) -> List[Any]:
    """The fixed list of values (none that PyFlink refuses) sent through a job declared ``Types.<type_name>()``."""
    rnd = random.Random(f"{SEED}-{type_name}")
    d = decimal.Decimal
    if type_name == "FLOAT":
        edge: List[Any] = [110.1, 0.1, 3.2, 1 / 3, 0.0, -0.0, 1e-40, 1e-50, -1e-50, 3.4028235e38, 3.4028236e38, 1e39,
                           -1e39, math.inf, -math.inf, 16777217, -3, True, d("0.1"), 2.5e-45, 7e-46]
        return edge + [_random_float(rnd) for _ in range(RANDOM_PER_TYPE)]
    if type_name == "DOUBLE":
        return [0.1, 3, True, d("0.1"), -0.0, 1e308, 2**60] + [_random_float(rnd) for _ in range(RANDOM_PER_TYPE)]
    bits = {"BYTE": 8, "SHORT": 16, "INT": 32, "LONG": 64}.get(type_name)
    if bits is not None:
        low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        edge = [low, high, 0, -1, 1.7, -1.7, 0.5, True, False, d("2.5"), d("-2.5"), float(high // 2)]
        return edge + [rnd.randint(low, high) for _ in range(RANDOM_PER_TYPE)]
    if type_name == "BOOLEAN":
        return [True, False, 0, 1, 2, 255, 0.5, 1.5, -0.0]
    if type_name == "STRING":
        return ["", "a", "é", "\U0001f600", "a\x00b"] + [
            "".join(chr(rnd.randint(32, 0x2FFF)) for _ in range(rnd.randint(0, 8))) for _ in range(RANDOM_PER_TYPE)
        ]
    if type_name == "BIG_DEC":
        edge = [0.1, 1e30, 1e-7, 5, "1.5", d("1.234567890123456789012345678901234567890"), d("1E+3"),
                d("-0.000"), d("12345678901234567890.5")]
        return edge + [d(rnd.randint(-(10**30), 10**30)).scaleb(-rnd.randint(0, 40)) for _ in range(RANDOM_PER_TYPE)]
    if type_name == "SQL_DATE":
        edge = [datetime.date(1970, 1, 1), datetime.date(1, 1, 1), datetime.date(9999, 12, 31),
                datetime.datetime(2020, 1, 2, 3, 4, 5, 6)]
        return edge + [datetime.date(1970, 1, 1) + datetime.timedelta(days=rnd.randint(-700_000, 2_900_000))
                       for _ in range(RANDOM_PER_TYPE)]
    if type_name == "SQL_TIME":
        edge = [datetime.time(0, 0), datetime.time(23, 59, 59, 999999), datetime.time(1, 2, 3, 456789),
                datetime.time(1, 2, 3, 999, tzinfo=UTC_PLUS_2)]
        return edge + [datetime.time(rnd.randint(0, 23), rnd.randint(0, 59), rnd.randint(0, 59),
                                     rnd.randint(0, 999_999)) for _ in range(RANDOM_PER_TYPE)]
    if type_name == "SQL_TIMESTAMP":
        # before 1970 PyFlink keeps whole seconds, moves a fraction below 1 ms one second later and refuses
        # other fractions (REFUSED); the last second before 1970 it moves to the first after
        edge = [datetime.datetime(1970, 1, 1), datetime.datetime(2020, 1, 2, 3, 4, 5, 123456),
                datetime.datetime(1969, 12, 31, 23, 59, 59, 500000), datetime.datetime(1960, 6, 1, 12, 0, 0, 500),
                datetime.datetime(1960, 6, 1, 12, 0, 0), datetime.datetime(1, 1, 1), datetime.datetime(9999, 12, 31),
                datetime.datetime(2020, 1, 2, 3, 4, 5, 123456, tzinfo=UTC_PLUS_2)]
        return edge + [_random_datetime(rnd) for _ in range(RANDOM_PER_TYPE)]
    msg = f"no values for {type_name}"
    raise KeyError(msg)


BASIC_TYPES = ["FLOAT", "DOUBLE", "BYTE", "SHORT", "INT", "LONG", "BOOLEAN", "STRING", "BIG_DEC", "SQL_DATE",
               "SQL_TIME", "SQL_TIMESTAMP"]

# (type, value) that PyFlink's coders refuse: the job fails
REFUSED: List[Tuple[str, Any]] = [
    ("FLOAT", "1.5"), ("DOUBLE", "1.5"), ("BYTE", 128), ("BYTE", -129), ("BYTE", "1"), ("SHORT", 40000),
    ("SHORT", -40000), ("INT", 2**31), ("INT", -(2**31) - 1), ("INT", "3"), ("LONG", 2**63), ("LONG", -(2**63) - 1),
    ("BOOLEAN", 256), ("BOOLEAN", -1), ("BOOLEAN", "x"), ("STRING", 5), ("STRING", b"x"), ("SQL_TIME", "01:02"),
    ("SQL_DATE", "2020-01-01"), ("BIG_DEC", True), ("BIG_DEC", decimal.Decimal("NaN")), ("BIG_DEC", "x"),
    ("SQL_TIMESTAMP", datetime.datetime(1960, 6, 1, 12, 0, 0, 1500)), ("SQL_TIMESTAMP", datetime.date(2020, 1, 2)),
]


def _types(api: Any, name: str) -> Any:
    return getattr(api.Types, name)()


def _stateful(api: Any) -> Dict[str, Any]:
    T = api.Types  # noqa: N806

    class StateSeen(api.KeyedProcessFunction):  # type: ignore[misc,name-defined]
        """What FLOAT state holds across elements and right after an update."""

        def open(self, runtime_context: Any) -> None:
            self.v = runtime_context.get_state(api.ValueStateDescriptor("v", T.FLOAT()))
            self.items = runtime_context.get_list_state(api.ListStateDescriptor("l", T.FLOAT()))
            self.m = runtime_context.get_map_state(api.MapStateDescriptor("m", T.STRING(), T.FLOAT()))

        def process_element(self, value: Any, ctx: Any) -> Any:
            before = self.v.value()
            self.v.update(value)
            self.items.add(value)
            self.m.put("k", value)
            yield f"before={before!r} after={self.v.value()!r} list={list(self.items.get())!r} map={self.m.get('k')!r}"

    class SideAndMain(api.ProcessFunction):  # type: ignore[misc,name-defined]
        def process_element(self, value: Any, ctx: Any) -> Any:
            yield api.OutputTag("side", T.FLOAT()), value
            yield value

    class Sum(api.AggregateFunction):  # type: ignore[misc,name-defined]
        def create_accumulator(self) -> Any:
            return 0.0

        def add(self, value: Any, accumulator: Any) -> Any:
            return accumulator + value

        def get_result(self, accumulator: Any) -> Any:
            return accumulator

        def merge(self, a: Any, b: Any) -> Any:
            return a + b

    return {"state": StateSeen, "side": SideAndMain, "sum": Sum}


# two chained Python functions: PyFlink hands the first one's value to the second uncoded
CHAINED = "chained_maps"
SUMMANDS = [0.1, 0.2, 0.3, 0.4, 110.1, 3.2, 1e-3, 7.77]


def _pipelines(api: Any, source: Callable[[Any, List[Any]], Any]) -> Dict[str, Callable[[Any], Any]]:
    T = api.Types  # noqa: N806
    s = T.STRING()
    f = T.FLOAT()
    fns = _stateful(api)

    def ident(x: Any) -> Any:
        return x

    def key0(x: Any) -> int:
        return 0

    def across(ds: Any) -> Any:
        """``ds``'s values as a Python function sees them after a network boundary."""
        return ds.key_by(key0).map(show, s)

    cases: Dict[str, Callable[[Any], Any]] = {}
    for name in BASIC_TYPES:
        cases[f"coded_{name}"] = lambda env, name=name: across(source(env, values_of(name)).map(ident, _types(api, name)))
    containers = {
        "row": (T.ROW_NAMED(["x", "n", "t"], [f, T.INT(), T.SQL_TIME()]),
                lambda x: api.Row(x=x, n=int(x) if abs(x) < 2**31 else 0, t=datetime.time(1, 2, 3, 456789))),
        "tuple": (T.TUPLE([s, f, T.DOUBLE()]), lambda x: ("a", x, x)),
        "list": (T.LIST(f), lambda x: [x, x / 3]),
        "basic_array": (T.BASIC_ARRAY(f), lambda x: [x]),
        "map": (T.MAP(s, f), lambda x: {"k": x}),
    }
    floats = [x for x in values_of("FLOAT") if isinstance(x, float) and math.isfinite(x)]
    for name, (type_info, make) in containers.items():
        cases[f"container_{name}"] = lambda env, t=type_info, m=make: across(source(env, floats).map(m, t))
    cases["side_output"] = lambda env: source(env, floats).process(fns["side"](), f).get_side_output(
        api.OutputTag("side", f)
    ).key_by(key0).map(show, s)
    cases["keyed_state"] = lambda env: source(env, SUMMANDS).key_by(key0).process(fns["state"](), s)
    floats_in = lambda env: source(env, SUMMANDS).map(ident, f).key_by(key0)  # noqa: E731
    cases["rolling_reduce"] = lambda env: across(floats_in(env).reduce(lambda a, b: a + b))
    cases["window_reduce"] = lambda env: across(floats_in(env).count_window(4).reduce(lambda a, b: a + b))
    cases["window_aggregate_float_accumulator"] = lambda env: across(
        source(env, SUMMANDS).key_by(key0).count_window(4).aggregate(fns["sum"](), accumulator_type=f,
                                                                        output_type=T.DOUBLE())
    )
    cases["window_aggregate_float_output"] = lambda env: across(
        source(env, SUMMANDS).key_by(key0).count_window(4).aggregate(fns["sum"](), accumulator_type=T.DOUBLE(),
                                                                        output_type=f)
    )
    cases[CHAINED] = lambda env: across(source(env, SUMMANDS).map(ident, f).map(lambda x: x * 3, f))
    return cases


def case_names(api: Any, source: Callable[[Any, List[Any]], Any]) -> List[str]:
    return list(_pipelines(api, source))


def build(api: Any, source: Callable[[Any, List[Any]], Any], env: Any, name: str) -> Any:
    """Case ``name``'s stream on ``env``."""
    return _pipelines(api, source)[name](env)


def refused(api: Any, source: Callable[[Any, List[Any]], Any], env: Any, type_name: str, value: Any) -> Any:
    """A job whose map returns ``value`` declared as ``type_name``, which PyFlink refuses."""
    return source(env, [0]).map(lambda _: value, _types(api, type_name)).key_by(lambda x: 0).map(show, api.Types.STRING())


NATURAL = {"FLOAT": float, "DOUBLE": float, "BYTE": int, "SHORT": int, "INT": int, "LONG": int, "BOOLEAN": bool,
           "STRING": str, "BIG_DEC": decimal.Decimal, "SQL_DATE": datetime.date, "SQL_TIME": datetime.time,
           "SQL_TIMESTAMP": datetime.datetime}


def natural_values_of(type_name: str) -> List[Any]:
    """The values of :func:`values_of` of the Python type PyFlink documents for ``type_name`` (``from_collection``
    converts values with Java's rules, not its coders': an ``int`` in a ``FLOAT`` collection fails there)."""
    kind = NATURAL[type_name]
    return [v for v in values_of(type_name) if type(v) is kind and not (kind is datetime.datetime and v.tzinfo)]


def from_collection_typed(api: Any, env: Any, type_name: str) -> Any:
    """``from_collection(values, type_info=...)`` of :func:`natural_values_of`, read by a Python function."""
    values = natural_values_of(type_name)
    return env.from_collection(values, type_info=_types(api, type_name)).map(show, api.Types.STRING())


# Where PyFlink codes a value between two Python functions (its operator chaining): each case declares
# Types.FLOAT() in one function and shows what the next function gets. PyFlink hands it on uncoded where it chains
# the two (UNCODED_IN_PYFLINK); here every operator's output is coded (docs/differences.md).
CHAIN_VALUES = [110.1, 0.3]
UNCODED_IN_PYFLINK = {"map_map", "flat_map_map", "filter_between", "keyed_map_map", "window_reduce_map", "forward"}


def chain_cases(api: Any) -> Dict[str, Callable[[Any], Any]]:
    T = api.Types  # noqa: N806
    f, s = T.FLOAT(), T.STRING()

    def ident(x: Any) -> Any:
        return x

    class One(api.TimestampAssigner):  # type: ignore[misc,name-defined]
        def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
            return 1

    def src(env: Any) -> Any:
        return env.from_collection(list(CHAIN_VALUES))

    def two_consumers(env: Any) -> Any:
        first = src(env).map(ident, f)
        first.map(lambda x: "other", s).print()  # a second consumer of the first map
        return first.map(show, s)

    class SideOut(api.ProcessFunction):  # type: ignore[misc,name-defined]
        def process_element(self, value: Any, ctx: Any) -> Any:
            yield api.OutputTag("side", api.Types.FLOAT()), value  # a new one: PyFlink's used types do not pickle

    timestamps = api.WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(One())
    return {
        "map_map": lambda env: src(env).map(ident, f).map(show, s),
        "flat_map_map": lambda env: src(env).flat_map(lambda x: [x], f).map(show, s),
        "filter_between": lambda env: src(env).map(ident, f).filter(lambda x: True).map(show, s),
        "keyed_map_map": lambda env: src(env).key_by(lambda x: 0).map(ident, f).map(show, s),
        "window_reduce_map": lambda env: src(env).map(ident, f).key_by(lambda x: 0).count_window(len(CHAIN_VALUES))
        .reduce(lambda a, b: a + b).map(show, s),
        "forward": lambda env: src(env).map(ident, f).forward().map(show, s),
        "shuffle": lambda env: src(env).map(ident, f).shuffle().map(show, s),
        "rebalance": lambda env: src(env).map(ident, f).rebalance().map(show, s),
        "union_after": lambda env: src(env).map(ident, f).map(show, s).union(env.from_collection(["u"], type_info=s)),
        "two_consumers": two_consumers,
        "start_new_chain": lambda env: src(env).map(ident, f).map(show, s).start_new_chain(),
        "disable_chaining": lambda env: src(env).map(ident, f).map(show, s).disable_chaining(),
        "assign_timestamps": lambda env: src(env).map(ident, f).assign_timestamps_and_watermarks(timestamps)
        .map(show, s),
        "side_output": lambda env: src(env).process(SideOut(), f).get_side_output(api.OutputTag("side", f))
        .map(show, s),
    }
