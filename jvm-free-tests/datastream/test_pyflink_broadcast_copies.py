"""What each parallel instance gets of a broadcast element on the local engine, compared with real PyFlink 2.3.0
(``pyflink_broadcast_copies.json``, written by ``benchmarks/pyflink_broadcast_copies.py`` from the jobs of
``broadcast_copy_cases.py``): every instance its own copy as Flink's coders leave it (``core/coders.py``,
``transported``: a pickle round trip for an untyped element, never ``copy.deepcopy``)."""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

import broadcast_copy_cases as cases
import pytest

from pyspark_flinkish.common import Types
from pyspark_flinkish.core.coders import transported
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import BroadcastProcessFunction
from pyspark_flinkish.datastream.state import MapStateDescriptor

ORACLE = cases.recorded()
API = SimpleNamespace(Types=Types, MapStateDescriptor=MapStateDescriptor, BroadcastProcessFunction=BroadcastProcessFunction)
KNOWN_DIFFERENT = {
    "broadcast state Generation": (
        "process_broadcast_element runs once (on the element as the engine holds it) and the other instances' outputs "
        "are copies of its outputs: equal to Flink's unless a pickle round trip changes the element (docs/differences.md)"
    ),
}


def environment() -> Any:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    return env


def collected(name: str) -> Any:
    with cases.job(API, environment, name).execute_and_collect() as results:
        return sorted(results)


def test_the_oracle_is_real_pyflink_output() -> None:
    doc = cases.json.loads(cases.ORACLE.read_text(encoding="utf-8"))
    assert doc["pyflink_version"] == "2.3.0"
    assert doc["command"].startswith("benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_broadcast_copies.py")
    assert list(ORACLE) == list(cases.CASES)
    # deepcopy would differ from Flink: DeepCopied's __deepcopy__ adds 100, Flink's instances never see it
    assert ORACLE["broadcast map DeepCopied"] == sorted(["DeepCopied:0", "DeepCopied:1", "DeepCopied:2"] * 2)


@pytest.mark.parametrize("name", [n for n in cases.CASES if n not in KNOWN_DIFFERENT])
def test_each_instance_gets_the_copy_flinks_coders_give_it(name: str) -> None:
    assert collected(name) == ORACLE[name]


@pytest.mark.parametrize("name", list(KNOWN_DIFFERENT))
def test_the_documented_difference_is_still_there(name: str) -> None:
    """Fails when the difference goes: then compare the case above and drop it from docs/differences.md."""
    assert collected(name) != ORACLE[name], KNOWN_DIFFERENT[name]


def test_transported_is_a_pickle_round_trip_or_the_declared_types_coder() -> None:
    d = cases.DeepCopied(1)
    assert copy.deepcopy(d).n == 101 and transported(d, None).n == 1 and transported(d, None) is not d
    assert transported(cases.Generation(1), Types.PICKLED_BYTE_ARRAY()).n == 2
    assert transported(0.1, Types.FLOAT()) == 0.10000000149011612
    pair = [1, "a"]
    assert transported(pair, Types.TUPLE([Types.INT(), Types.STRING()])) == (1, "a")
    f = lambda v: v  # noqa: E731 - pickle cannot write it by reference (PyFlink's cloudpickle writes it by value)
    assert transported(f, None) is f
