"""A function's parallel subtask as its ``RuntimeContext`` reports it (``core/subtasks.py``), on the local engine,
compared with real PyFlink 2.3.0 (``pyflink_subtasks.json``, written by ``benchmarks/pyflink_subtasks.py`` from the
jobs of ``subtask_cases.py``): the number of subtasks and the max parallelism of an operator, the index of the subtask
that owns a key (Flink's ``KeyGroupRangeAssignment``); and where the package refuses the index, naming the concept.
"""

from __future__ import annotations

import decimal
from types import SimpleNamespace
from typing import Any, List

import pytest
import subtask_cases as cases

from pyspark_flinkish.common import Row, Types
from pyspark_flinkish.core.errors import InvalidPipelineError, UnsupportedFeatureError, UserFunctionError
from pyspark_flinkish.core.subtasks import default_max_parallelism, java_key_hash, murmur_hash, subtask_of_key
from pyspark_flinkish.datastream import (
    BroadcastProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedProcessFunction,
    MapFunction,
    ProcessWindowFunction,
    StreamExecutionEnvironment,
)
from pyspark_flinkish.datastream.state import MapStateDescriptor

ORACLE = cases.load()
API = SimpleNamespace(
    Types=Types, Row=Row, KeyedProcessFunction=KeyedProcessFunction, MapFunction=MapFunction,
    ProcessWindowFunction=ProcessWindowFunction,
)


def collect(stream: Any) -> List[Any]:
    with stream.execute_and_collect() as results:
        return sorted(results)


def test_the_oracle_is_real_pyflink_output() -> None:
    assert ORACLE["pyflink_version"] == "2.3.0"
    assert ORACLE["command"].startswith("benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_subtasks.py")
    assert list(ORACLE["keyed"]) == list(cases.KEYED) and list(ORACLE["maps"]) == list(cases.MAPS)
    assert list(ORACLE["windows"]) == list(cases.WINDOWS)


@pytest.mark.parametrize("name", list(cases.KEYED))
def test_a_keyed_function_sees_its_keys_subtask(name: str) -> None:
    expected = ORACLE["keyed"][name]
    indices = {line.split()[-3] for line in expected}
    assert len(indices) > 1 or name.endswith("p1")  # the keys spread over the subtasks
    assert collect(cases.keyed_job(API, StreamExecutionEnvironment.get_execution_environment, name)) == expected


@pytest.mark.parametrize("name", list(cases.WINDOWS))
def test_a_window_function_sees_its_keys_subtask(name: str) -> None:
    expected = ORACLE["windows"][name]
    assert len({line.split()[-2] for line in expected}) > 1
    assert collect(cases.window_job(API, StreamExecutionEnvironment.get_execution_environment, name)) == expected


@pytest.mark.parametrize("name", list(cases.MAPS))
def test_a_function_sees_its_operators_parallelism(name: str) -> None:
    assert collect(cases.map_job(API, StreamExecutionEnvironment.get_execution_environment, name)) == ORACLE["maps"][name]


def test_flinks_hashes() -> None:
    """MathUtils.murmurHash and KeyGroupRangeAssignment's default max parallelism; a key's hash is its one-field
    Row's (31 * kind + 31 * 1 + 31 + hashCode). The numbers are Flink 2.3.0's own (flink-dist's MathUtils,
    KeyGroupRangeAssignment and Row.of("a").hashCode(), run in Java 17)."""
    assert [murmur_hash(x) for x in (0, 1, -1)] == [593689054, 68075478, 1982413648]
    assert [default_max_parallelism(p) for p in (1, 85, 86, 1000, 30000)] == [128, 128, 256, 2048, 32768]
    assert java_key_hash("a", Types.STRING()) == 62 + 97
    assert java_key_hash(None, Types.STRING()) == 31
    assert java_key_hash(decimal.Decimal(1), Types.BIG_DEC()) is None
    assert subtask_of_key(Row(1), None, 128, 2) is None  # an untyped Row: its pickle names PyFlink's class


def test_the_index_is_refused_where_the_package_cannot_know_it() -> None:
    """Outside a keyed element or timer at a parallelism above 1 (open(), a non-keyed operator, the broadcast side),
    and for a key whose hash the package cannot compute: refused, naming the concept; at parallelism 1 it is 0."""

    class OpenIndex(MapFunction):
        def open(self, runtime_context: Any) -> None:
            self.index = runtime_context.get_index_of_this_subtask()

        def map(self, value: Any) -> Any:
            return self.index

    env = StreamExecutionEnvironment.get_execution_environment()
    assert collect(env.from_collection([1, 2]).map(OpenIndex())) == [0, 0]
    env.set_parallelism(2)
    with pytest.raises(UserFunctionError, match=r"get_index_of_this_subtask.*parallelism 2.*set_parallelism\(1\)") as info:
        collect(env.from_collection([1, 2]).map(OpenIndex()))
    assert isinstance(info.value.__cause__, UnsupportedFeatureError)

    class KeyIndex(KeyedProcessFunction):
        def open(self, runtime_context: Any) -> None:
            self.context = runtime_context

        def process_element(self, value: Any, ctx: Any) -> Any:
            yield self.context.get_index_of_this_subtask()

    big_dec = env.from_collection([decimal.Decimal(1)]).key_by(lambda v: v, Types.BIG_DEC()).process(KeyIndex())
    with pytest.raises(UserFunctionError, match="KeyGroupRangeAssignment"):
        collect(big_dec)


def test_broadcast_functions_see_the_parallelism_and_refuse_the_index_on_the_broadcast_side() -> None:
    rules = MapStateDescriptor("rules", Types.STRING(), Types.STRING())

    class Rules(BroadcastProcessFunction):
        def open(self, runtime_context: Any) -> None:
            self.context = runtime_context

        def process_element(self, value: Any, ctx: Any) -> Any:
            yield ("element", self.context.get_number_of_parallel_subtasks())

        def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
            yield ("broadcast", self.context.get_number_of_parallel_subtasks())

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    stream = env.from_collection([1]).connect(env.from_collection(["r"]).broadcast(rules)).process(Rules())
    assert collect(stream) == [("broadcast", 2), ("broadcast", 2), ("element", 2)]  # once per instance

    class KeyedRules(KeyedBroadcastProcessFunction):
        def open(self, runtime_context: Any) -> None:
            self.context = runtime_context

        def process_element(self, value: Any, ctx: Any) -> Any:
            yield ("element", self.context.get_index_of_this_subtask())

        def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
            yield ("broadcast", self.context.get_index_of_this_subtask())

    keyed = env.from_collection(["a"]).key_by(lambda v: v, Types.STRING())
    with pytest.raises(UserFunctionError, match="outside a keyed element or timer"):
        collect(keyed.connect(env.from_collection(["r"]).broadcast(rules)).process(KeyedRules()))
    only_elements = env.from_collection(["a", "b"]).key_by(lambda v: v, Types.STRING())
    got = collect(only_elements.connect(env.from_collection([]).broadcast(rules)).process(KeyedRules()))
    assert got == sorted(("element", subtask_of_key(k, Types.STRING(), 128, 2)) for k in ("a", "b"))


def test_the_environments_max_parallelism_is_read_when_the_job_starts() -> None:
    """As Flink's job graph: an operator without its own max parallelism gets the environment's when the job starts
    (its parallelism is the environment's when it was made), and a parallelism above the max parallelism is refused
    with Flink's message (PyFlink 2.3.0: "Vertex Map's parallelism (3) is higher than the max parallelism (2).
    Please lower the parallelism or increase the max parallelism.")."""

    class Sizes(MapFunction):
        def open(self, runtime_context: Any) -> None:
            self.sizes = (runtime_context.get_number_of_parallel_subtasks(),
                          runtime_context.get_max_number_of_parallel_subtasks())

        def map(self, value: Any) -> Any:
            return self.sizes

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(3)
    stream = env.from_collection([1]).map(Sizes())
    env.set_parallelism(4)  # too late for the map, made at 3
    env.set_max_parallelism(10)  # read when the job starts
    assert collect(stream) == [(3, 10)]
    env.set_max_parallelism(2)
    with pytest.raises(InvalidPipelineError, match=r"^Vertex Map's parallelism \(4\) is higher than the max parallelism"):
        collect(env.from_collection([1]).map(lambda v: v))
    assert collect(env.from_collection([1]).map(Sizes()).set_max_parallelism(8)) == [(4, 8)]
