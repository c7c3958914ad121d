"""Row, typed values and print(), rolling aggregations and keyed state in simple functions on the local engine,
compared with real PyFlink 2.3.0's outputs (``pyflink_rows.json``, written by ``benchmarks/pyflink_rows.py`` from
the pipelines of ``rows_cases.py``), plus the Row API itself against PyFlink's documented behaviour."""

from __future__ import annotations

import pickle
import re
from types import SimpleNamespace
from typing import Any, ClassVar, List

import pytest
from rows_cases import build, encode, load

from pyspark_flinkish.common import Row, RowKind, Types
from pyspark_flinkish.core.codec import decode_snapshot, encode_snapshot
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import (
    FilterFunction,
    FlatMapFunction,
    MapFunction,
    ProcessWindowFunction,
    ReduceFunction,
)
from pyspark_flinkish.datastream.state import ValueStateDescriptor
from pyspark_flinkish.datastream.window import TimeWindow, Trigger

ORACLE = load()
CASES = {c["name"]: c for c in ORACLE["cases"]}
API = SimpleNamespace(
    Types=Types, Row=Row, MapFunction=MapFunction, FlatMapFunction=FlatMapFunction, FilterFunction=FilterFunction,
    ReduceFunction=ReduceFunction, ValueStateDescriptor=ValueStateDescriptor,
)


def test_oracle_is_real_pyflink_output() -> None:
    assert ORACLE["pyflink_version"] == "2.3.0"
    assert ORACLE["command"].startswith("benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_rows.py")
    assert all(c["values"] and len(c["printed"]) == len(c["values"]) for c in ORACLE["cases"])


def _collect(name: str) -> List[Any]:
    env = StreamExecutionEnvironment.get_execution_environment()
    with build(API, env, name).execute_and_collect() as results:
        return [encode(r) for r in results]


@pytest.mark.parametrize("name", sorted(CASES))
def test_collected_values_match_pyflink(name: str) -> None:
    assert _collect(name) == CASES[name]["values"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_print_matches_pyflink(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    build(API, env, name).print(name)
    env.execute("print")
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"{name}> {p}" for p in CASES[name]["printed"]]


@pytest.mark.parametrize("call", ["name", "uid", "set_parallelism", "get_name"])
def test_keyed_stream_refuses_operator_settings_as_pyflink(call: str) -> None:
    keyed = StreamExecutionEnvironment.get_execution_environment().from_collection([("a", 1)]).key_by(lambda e: e[0])
    args = {"name": ("x",), "uid": ("x",), "set_parallelism": (2,), "get_name": ()}[call]
    expected = ORACLE["keyed_stream_refusals"][call]
    with pytest.raises(Exception, match=re.escape(expected.split(": ", 1)[1])) as info:
        getattr(keyed, call)(*args)
    assert f"{type(info.value).__name__}: {info.value}" == expected


def test_rolling_aggregation_position_must_be_int_or_str() -> None:
    keyed = StreamExecutionEnvironment.get_execution_environment().from_collection([("a", 1)]).key_by(lambda e: e[0])
    with pytest.raises(TypeError, match="must be of int or str type"):
        keyed.sum(1.5)  # type: ignore[arg-type]


def test_rolling_aggregation_on_a_plain_value_takes_position_zero_only() -> None:
    from pyspark_flinkish.core.errors import UserFunctionError

    env = StreamExecutionEnvironment.get_execution_environment()
    stream = env.from_collection([1, 3]).key_by(lambda x: 0).sum(1)
    with pytest.raises(UserFunctionError, match="can only select the 0th field"):
        list(stream.execute_and_collect())


def test_emitted_rolling_values_never_change_afterwards() -> None:
    """PyFlink's min on a list mutates its running value (each output is serialized at once); here every output
    is a new value, so collected elements keep what they were when emitted."""
    env = StreamExecutionEnvironment.get_execution_environment()
    out: List[Any] = []
    env.from_collection([["a", 3], ["a", 1], ["a", 2]]).key_by(lambda e: e[0]).min(1).add_sink(out.append)
    env.execute("min")
    assert out == [["a", 3], ["a", 1], ["a", 1]]


def test_tuples_returned_for_a_row_type_become_rows() -> None:
    """PyFlink needs a Row where a ROW type crosses the network (a tuple fails there); here a tuple, list or dict
    is accepted and handed on as a Row with the type's names (docs/differences.md)."""
    env = StreamExecutionEnvironment.get_execution_environment()
    t = Types.ROW_NAMED(["k", "v"], [Types.STRING(), Types.INT()])
    out = list(env.from_collection([1, 2]).map(lambda x: ("n", x) if x == 1 else {"k": "d", "v": x}, output_type=t)
               .execute_and_collect())
    assert out == [Row(k="n", v=1), Row(k="d", v=2)] and out[0].k == "n"


def test_keyed_state_of_simple_functions_survives_snapshot_and_restore() -> None:
    """The keyed map's and reduce's state live in the keyed operator: restored from encoded snapshots after every
    micro-batch (what the Spark executors do), the outputs are PyFlink's."""
    from rows_cases import TRIPLES

    from pyspark_flinkish.common import WatermarkStrategy
    from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource
    from pyspark_flinkish.local.executor import LocalExecutor

    for name in ("keyed_map_state", "reduce_function_open", "max_by_row_by_name"):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection = lambda items, type_info=None, env=env: env.from_source(  # type: ignore[method-assign]
            MicroBatchSource([MicroBatch([_typed(e, type_info)]) for e in items]), WatermarkStrategy.no_watermarks(), "in"
        )
        out: List[Any] = []
        build(API, env, name).add_sink(out.append)
        LocalExecutor(env._sinks, env.clock, restore_every_batch=True).run(name)
        assert len(TRIPLES) == len(out) and [encode(v) for v in out] == CASES[name]["values"], name


def _typed(element: Any, type_info: Any) -> Any:
    from pyspark_flinkish.core.rows import as_declared

    return as_declared(element, type_info)


class TestRow:
    def test_positional_and_named(self) -> None:
        r = Row(name="Alice", age=11)
        assert repr(r) == "Row(name='Alice', age=11)" and str(r) == repr(r)
        assert (r["name"], r.age, r[1]) == ("Alice", 11, 11)
        assert "name" in r and "x" not in r
        assert r.as_dict() == {"name": "Alice", "age": 11}
        p = Row("a", 1)
        assert repr(p) == "<Row('a', 1)>" and list(p) == ["a", 1] and len(p) == 2 and "a" in p
        with pytest.raises(TypeError, match="Cannot convert a Row class into dict"):
            p.as_dict()
        with pytest.raises(ValueError, match="both args and kwargs"):
            Row(1, a=2)

    def test_factory_and_nested_as_dict(self) -> None:
        person = Row("name", "age")
        assert repr(person) == "<Row('name', 'age')>"
        assert person("Alice", 11) == Row(name="Alice", age=11)
        r = Row(key=1, value=Row(name="a", age=2))
        assert r.as_dict(True) == {"key": 1, "value": {"name": "a", "age": 2}}

    def test_equality_hash_and_kind(self) -> None:
        assert Row(a=1, b=2) == Row(b=2, a=1)  # same names and values, whatever the order
        assert Row(a=1, b=2) != Row(1, 2) and Row(1, 2) == Row(1, 2)
        assert hash(Row(a=1, b=2)) == hash((1, 2))
        r = Row.of_kind(RowKind.DELETE, 1)
        assert r.get_row_kind() is RowKind.DELETE and r != Row(1) and str(RowKind.UPDATE_BEFORE) == "-U"
        r.set_row_kind(RowKind.INSERT)
        assert r == Row(1)

    def test_attribute_and_item_rules(self) -> None:
        r = Row(a=1)
        r["a"] = 5
        r[0] += 1
        assert r.a == 6
        with pytest.raises(AttributeError):
            _ = r.b
        with pytest.raises(AttributeError):
            r.a = 3
        assert r.get_fields_by_names(["a"]) == [6]

    def test_pickle_and_codec_keep_names_and_kind(self) -> None:
        r = Row.of_kind(RowKind.UPDATE_AFTER, x=1, y=Row("n", [2]))
        for copy in (pickle.loads(pickle.dumps(r)),
                     decode_snapshot(encode_snapshot({"state": {("s", None): r}, "event_timers": [],
                                                      "processing_timers": []}), allow_pickle=False)["state"][("s", None)]):
            assert copy == r and copy.get_row_kind() is RowKind.UPDATE_AFTER and copy.y == Row("n", [2])


def test_types_and_type_infos_as_pyflink() -> None:
    from pyspark_flinkish.common.typeinfo import BasicTypeInfo, RowTypeInfo, SqlTimeTypeInfo, TupleTypeInfo

    t = Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.BIG_DEC()])
    assert isinstance(t, RowTypeInfo) and t.get_field_names() == ["a", "b"] and t.get_field_index("b") == 1
    assert Types.ROW([Types.INT()]).get_field_names() == ["f0"]
    assert isinstance(Types.TUPLE([Types.INT()]), TupleTypeInfo) and Types.CHAR() == BasicTypeInfo.CHAR_TYPE_INFO()
    assert Types.SQL_DATE() == SqlTimeTypeInfo.DATE() and Types.SQL_TIME() != Types.SQL_DATE()
    for f in (Types.BIG_INT, Types.INSTANT, Types.SQL_TIME):
        assert f().name == f.__name__
    assert Types.OBJECT_ARRAY(t).children == (t,)
    assert pickle.loads(pickle.dumps(t)) == t


def test_window_api_details() -> None:
    class Pwf(ProcessWindowFunction):  # type: ignore[type-arg]
        def process(self, key: str, context: ProcessWindowFunction.Context[TimeWindow], elements: Any) -> Any:
            yield key

    assert ProcessWindowFunction.Context[TimeWindow] is not None and Pwf is not None
    assert Trigger.TriggerContext.__name__ == "TriggerContext" and issubclass(Trigger.OnMergeContext, Trigger.TriggerContext)


def test_named_values_fill_a_row_type_by_name() -> None:
    from pyspark_flinkish.core.rows import as_declared

    t = Types.ROW_NAMED(["k", "v"], [Types.STRING(), Types.INT()])
    assert as_declared(Row(v=2, k="x"), t) == Row(k="x", v=2) and as_declared(Row(v=2, k="x"), t).k == "x"
    assert as_declared({"v": 2, "k": "x"}, t).k == "x"

    class Fielded(tuple):  # what pyspark.sql.Row is: a tuple with __fields__
        __fields__: ClassVar[List[str]] = ["v", "k"]

    assert as_declared(Fielded((2, "x")), t) == Row(k="x", v=2)
    with pytest.raises(ValueError, match="fields"):
        as_declared(("x",), t)
