"""``Configuration``, environment-configuration and ``KeyedStream.execute_and_collect`` cases, written once for
both APIs: ``benchmarks/pyflink_configuration.py`` runs them in real PyFlink 2.3.0 and records what they give in
``pyflink_configuration.json``; ``test_pyflink_configuration.py`` runs them with pyspark_flinkish and compares.

This module imports neither library: the functions take PyFlink's or the package's ``Configuration``, ``Types`` and a
factory of environments (parallelism 1), so the cases are the same code, only the imports differ.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Dict


def outcome(f: Callable[[], Any]) -> Any:
    """``{"value": repr, "type": name}`` of what ``f`` returns (a set sorted), or ``{"error": "<class>: <message>"}``;
    a Py4J error gives the Java exception's class and message (its first ``...Exception:`` line)."""
    try:
        v = f()
    except Exception as exc:
        java = [ln.strip() for ln in str(exc).splitlines() if "Exception:" in ln]
        return {"error": java[0] if java else f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
    return {"value": repr(sorted(v) if isinstance(v, set) else v), "type": type(v).__name__}


def configuration_cases(Configuration: Any) -> Dict[str, Callable[[], Any]]:  # noqa: N803 - the class under test
    """Every method of ``Configuration`` on small inputs: values and their types, conversions between the typed
    getters and setters, copies, equality, the map views."""

    def conf() -> Any:
        c = Configuration()
        c.set_string("s.word", "abc")
        c.set_string("s.num", "7")
        c.set_string("s.float", "2.5")
        c.set_string("s.TRUE", "TRUE")
        c.set_string("s.yes", "yes")
        c.set_integer("i", 3)
        c.set_integer("i.big", 2**40)
        c.set_boolean("b", True)
        c.set_float("f", 1.5)
        c.set_float("f.int", 2)
        c.set_float("f.huge", 1e20)
        c.set_float("f.small", 0.1)
        return c

    c = conf()
    cases: Dict[str, Callable[[], Any]] = {
        "get_string(missing, 'd')": lambda: c.get_string("missing", "d"),
        "get_string(missing, None)": lambda: c.get_string("missing", None),
        "get_string(s.word)": lambda: c.get_string("s.word", "d"),
        "get_string(i)": lambda: c.get_string("i", "d"),
        "get_string(i.big)": lambda: c.get_string("i.big", "d"),
        "get_string(b)": lambda: c.get_string("b", "d"),
        "get_string(f)": lambda: c.get_string("f", "d"),
        "get_string(f.int)": lambda: c.get_string("f.int", "d"),
        "get_string(f.huge)": lambda: c.get_string("f.huge", "d"),
        "get_string(f.small)": lambda: c.get_string("f.small", "d"),
        "get_integer(missing, 5)": lambda: c.get_integer("missing", 5),
        "get_integer(i)": lambda: c.get_integer("i", 0),
        "get_integer(i.big)": lambda: c.get_integer("i.big", 0),
        "get_integer(s.num)": lambda: c.get_integer("s.num", 0),
        "get_integer(s.word)": lambda: c.get_integer("s.word", 0),
        "get_integer(s.float)": lambda: c.get_integer("s.float", 0),
        "get_integer(f)": lambda: c.get_integer("f", 0),
        "get_integer(f.int)": lambda: c.get_integer("f.int", 0),
        "get_integer(b)": lambda: c.get_integer("b", 0),
        "get_boolean(missing, True)": lambda: c.get_boolean("missing", True),
        "get_boolean(b)": lambda: c.get_boolean("b", False),
        "get_boolean(s.TRUE)": lambda: c.get_boolean("s.TRUE", False),
        "get_boolean(s.yes)": lambda: c.get_boolean("s.yes", False),
        "get_boolean(i)": lambda: c.get_boolean("i", False),
        "get_float(missing, 2)": lambda: c.get_float("missing", 2),
        "get_float(f)": lambda: c.get_float("f", 0.0),
        "get_float(i)": lambda: c.get_float("i", 0.0),
        "get_float(s.float)": lambda: c.get_float("s.float", 0.0),
        "get_float(s.word)": lambda: c.get_float("s.word", 0.0),
        "get_float(b)": lambda: c.get_float("b", 0.0),
        "contains_key(i)": lambda: c.contains_key("i"),
        "contains_key(missing)": lambda: c.contains_key("missing"),
        "key_set()": lambda: c.key_set(),
        "to_dict()": lambda: c.to_dict(),
        "str()": lambda: str(conf()),
        "set_string returns self": lambda: c.set_string("x", "y") is c,
        "set_integer returns self": lambda: c.set_integer("x", 1) is c,
        "set_boolean returns self": lambda: c.set_boolean("x", True) is c,
        "set_float returns self": lambda: c.set_float("x", 1.0) is c,
        "remove_config(x)": lambda: c.remove_config("x"),
        "remove_config(x) again": lambda: c.remove_config("x"),
        "overwrite: set_string then set_integer, get_string": lambda: Configuration()
        .set_string("k", "5").set_integer("k", 6).get_string("k", "d"),
        "overwrite: set_integer then set_string, get_integer": lambda: Configuration()
        .set_integer("k", 5).set_string("k", "6").get_integer("k", 0),
        "set_bytearray/get_bytearray": lambda: Configuration().set_bytearray("k", bytearray(b"\x01\x02")).get_bytearray(
            "k", bytearray()
        ),
        "get_bytearray(missing)": lambda: Configuration().get_bytearray("k", bytearray(b"d")),
        "set_bytearray then to_dict": lambda: Configuration().set_bytearray("k", bytearray(b"\x01\x02")).to_dict(),
        "set_bytearray then get_string": lambda: Configuration().set_bytearray("k", bytearray(b"\x01\x02")).get_string(
            "k", "d"
        ),
        "add_all": lambda: Configuration().set_string("a", "1").add_all(Configuration().set_integer("b", 2)).to_dict(),
        "add_all(prefix)": lambda: Configuration()
        .set_string("a", "1")
        .add_all(Configuration().set_integer("b", 2), "p.")
        .to_dict(),
        "add_all returns self": lambda: (lambda x: x.add_all(Configuration()) is x)(Configuration()),
        "add_all_to_dict": lambda: (lambda d: (conf().add_all_to_dict(d), d)[1])({"old": 1}),
        "from_dict": lambda: Configuration.from_dict({"a": "1", "b": "true"}).to_dict(),
        "from_dict get_integer": lambda: Configuration.from_dict({"a": "1"}).get_integer("a", 0),
        "copy constructor is independent": lambda: (
            lambda orig: (Configuration(orig).set_string("a", "changed"), orig.get_string("a", "d"))[1]
        )(Configuration().set_string("a", "1")),
        "copy constructor copies": lambda: Configuration(conf()).to_dict() == conf().to_dict(),
        "deepcopy is independent": lambda: (
            lambda orig: (copy.deepcopy(orig).set_string("a", "changed"), orig.get_string("a", "d"))[1]
        )(Configuration().set_string("a", "1")),
        "deepcopy copies": lambda: copy.deepcopy(conf()).to_dict() == conf().to_dict(),
        "eq same entries": lambda: Configuration().set_string("a", "1") == Configuration().set_string("a", "1"),
        "eq string vs integer value": lambda: Configuration().set_string("a", "1") == Configuration().set_integer("a", 1),
        "eq different": lambda: Configuration().set_string("a", "1") == Configuration().set_string("a", "2"),
        "eq dict": lambda: Configuration().set_string("a", "1") == {"a": "1"},
        "hash equal for equal": lambda: hash(Configuration().set_string("a", "1"))
        == hash(Configuration().set_string("a", "1")),
        "bool(empty)": lambda: bool(Configuration()),
        "str() hides sensitive values": lambda: str(
            Configuration().set_string("my.password", "x").set_string("api.token", "y").set_string("a", "1")
        ),
        "to_dict() of sensitive values": lambda: Configuration().set_string("my.password", "x").to_dict(),
        "set_bytearray(100 bytes) then get_string": lambda: Configuration()
        .set_bytearray("k", bytearray(range(100)))
        .get_string("k", "d"),
        "parse_list_value('a;b')": lambda: Configuration.parse_list_value("a;b"),
        "parse_list_value('[a, b]')": lambda: Configuration.parse_list_value("[a, b]"),
        "parse_list_value('')": lambda: Configuration.parse_list_value(""),
    }
    return cases


ENV_SETTINGS: Dict[str, Dict[str, Any]] = {
        "parallelism.default=3 (int)": {"parallelism.default": 3},
        "parallelism.default='3' (string)": {"parallelism.default": "3"},
        "parallelism.default='abc'": {"parallelism.default": "abc"},
        "parallelism.default=0": {"parallelism.default": 0},
        "parallelism.default=-1": {"parallelism.default": -1},
        "pipeline.max-parallelism=16": {"pipeline.max-parallelism": 16},
        "pipeline.auto-watermark-interval='500 ms'": {"pipeline.auto-watermark-interval": "500 ms"},
        "pipeline.auto-watermark-interval='1 s'": {"pipeline.auto-watermark-interval": "1 s"},
        "pipeline.auto-watermark-interval=700 (int)": {"pipeline.auto-watermark-interval": 700},
        "pipeline.auto-watermark-interval='0'": {"pipeline.auto-watermark-interval": "0"},
        "pipeline.auto-watermark-interval='abc'": {"pipeline.auto-watermark-interval": "abc"},
        "execution.checkpointing.interval='5 s'": {"execution.checkpointing.interval": "5 s"},
        "execution.checkpointing.interval=2000 (int)": {"execution.checkpointing.interval": 2000},
        "execution.checkpointing.interval='5 s' + mode AT_LEAST_ONCE": {
            "execution.checkpointing.interval": "5 s",
            "execution.checkpointing.mode": "AT_LEAST_ONCE",
        },
        "execution.checkpointing.mode='at_least_once' alone": {"execution.checkpointing.mode": "at_least_once"},
        "execution.checkpointing.mode='EXACTLY_ONCE' alone": {"execution.checkpointing.mode": "EXACTLY_ONCE"},
        "execution.checkpointing.interval='abc'": {"execution.checkpointing.interval": "abc"},
        "unknown key": {"no.such.key": "x"},
    }
"""Configurations given to ``get_execution_environment(configuration)`` and ``configure(configuration)``: what
the environment's getters return afterwards (or the error)."""

RUNTIME_MODES = ("STREAMING", "BATCH", "batch", "AUTOMATIC", "FOO")
"""Values of ``execution.runtime-mode`` for the rolling-reduce job (a BATCH job emits each key's final value)."""

ROLLING_INPUT = [("a", 1), ("b", 2), ("a", 3)]


def configuration_of(Configuration: Any, entries: Dict[str, Any]) -> Any:  # noqa: N803
    """A configuration of ``entries``: a bool with ``set_boolean``, an int with ``set_integer``, else ``set_string``."""
    c = Configuration()
    for k, v in entries.items():
        if isinstance(v, bool):
            c.set_boolean(k, v)
        elif isinstance(v, int):
            c.set_integer(k, v)
        else:
            c.set_string(k, v)
    return c


def getters(env: Any) -> Dict[str, Any]:
    return {
        "get_parallelism": outcome(env.get_parallelism),
        "get_config().get_parallelism": outcome(lambda: env.get_config().get_parallelism()),
        "get_max_parallelism": outcome(env.get_max_parallelism),
        "get_auto_watermark_interval": outcome(lambda: env.get_config().get_auto_watermark_interval()),
        "get_checkpoint_interval": outcome(env.get_checkpoint_interval),
        "get_checkpointing_mode": outcome(lambda: str(env.get_checkpointing_mode())),
    }


def rolling_reduce(env: Any, Types: Any) -> Any:  # noqa: N803
    """A rolling sum per key: every running value in STREAMING mode, each key's final one in BATCH."""
    ds = env.from_collection(ROLLING_INPUT, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    return sorted(list(v) for v in ds.key_by(lambda v: v[0]).reduce(lambda x, y: (x[0], x[1] + y[1])).execute_and_collect())


def describe(e: Any, Row: Any) -> Dict[str, Any]:  # noqa: N803
    """A collected element: its ``repr`` and type, a ``Row``'s fields (``repr``, type) and ``as_dict``."""
    d: Dict[str, Any] = {"repr": repr(e), "type": type(e).__name__}
    if isinstance(e, Row):
        d["fields"] = [{"repr": repr(f), "type": type(f).__name__} for f in e]
        try:
            d["as_dict"] = repr(e.as_dict())
        except Exception as exc:
            d["as_dict"] = f"{type(exc).__name__}: {exc}"
    return d


def keyed_collect_cases(env: Callable[[], Any], Types: Any) -> Dict[str, Callable[[], Any]]:  # noqa: N803
    """``execute_and_collect`` on keyed streams of untyped, tuple-, row- and string-typed elements, with and without
    ``key_type`` and ``limit`` (and on plain streams, for what ``limit`` returns)."""
    pairs = [(1, "a"), (2, "b")]
    tuple_type = Types.TUPLE([Types.INT(), Types.STRING()])
    row_type = Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()])
    cases: Dict[str, Callable[[], Any]] = {
        "untyped, key x[0]": lambda: env().from_collection(pairs).key_by(lambda x: x[0]).execute_and_collect(),
        "TUPLE, key x[0]": lambda: env().from_collection(pairs, type_info=tuple_type)
        .key_by(lambda x: x[0])
        .execute_and_collect(),
        "TUPLE, key x[0], key_type INT": lambda: env().from_collection(pairs, type_info=tuple_type)
        .key_by(lambda x: x[0], key_type=Types.INT())
        .execute_and_collect(),
        "ROW_NAMED, key x.name": lambda: env().from_collection(pairs, type_info=row_type)
        .key_by(lambda x: x.name)
        .execute_and_collect(),
        "STRING, key len, key_type INT": lambda: env().from_collection(["a", "bb"], type_info=Types.STRING())
        .key_by(len, key_type=Types.INT())
        .execute_and_collect(),
        "TUPLE, tuple key": lambda: env().from_collection(pairs, type_info=tuple_type)
        .key_by(lambda x: (x[0], x[1]))
        .execute_and_collect(),
        "TUPLE, key x[0], limit=1": lambda: env().from_collection(pairs, type_info=tuple_type)
        .key_by(lambda x: x[0])
        .execute_and_collect(limit=1),
        "TUPLE, key x[0], name and limit=5": lambda: env().from_collection(pairs, type_info=tuple_type)
        .key_by(lambda x: x[0])
        .execute_and_collect("named", limit=5),
        "DataStream TUPLE, limit=1": lambda: env().from_collection(pairs, type_info=tuple_type).execute_and_collect(
            limit=1
        ),
        "DataStream TUPLE, no limit": lambda: env().from_collection(pairs, type_info=tuple_type).execute_and_collect(),
    }
    return cases


def collected(result: Any, Row: Any) -> Dict[str, Any]:  # noqa: N803
    """What ``execute_and_collect`` returned: its type and its elements (:func:`describe`); an iterator is closed."""
    kind = type(result).__name__
    elements = list(result)
    if hasattr(result, "close"):
        result.close()
    return {"returns": kind, "elements": [describe(e, Row) for e in elements]}
