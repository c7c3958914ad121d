"""Which keys are one key (``core/key_identity.py``), on the local engine, compared with real PyFlink 2.3.0's outputs
(``pyflink_key_identity.json``, written by ``benchmarks/pyflink_key_identity.py`` from the jobs of
``key_identity_cases.py``). The foreachBatch executor's bodies run the same cases in
``jvm-free-tests/spark/test_key_identity_foreach_batch.py``.

Each case comes twice: with a separator key between every two records (Flink's identity of keys: the key's
serialized bytes) the package's output is PyFlink's; back to back, PyFlink's Python worker keeps the state of a key
``==`` to the previous one (``RemoteKeyedStateBackend.set_current_key``), which the package does not reproduce
(``docs/differences.md``): there its output is the separated case's without the separators.
"""

from __future__ import annotations

import pickle
from types import SimpleNamespace
from typing import Any, List

import key_identity_cases as cases
import pytest

from pyspark_flinkish.common import Row, Types
from pyspark_flinkish.core.key_identity import DistinctKey, distinct_key, plain_key
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import KeyedProcessFunction

ORACLE = cases.load()
API = SimpleNamespace(Types=Types, Row=Row, KeyedProcessFunction=KeyedProcessFunction)
SEPARATED = [n for n in cases.case_keys(API) if n.endswith(" separated")]


def collect(stream: Any) -> List[Any]:
    with stream.execute_and_collect() as results:
        return list(results)


def without_separators(name: str) -> List[str]:
    """The separated case's output without its separator key's lines."""
    _, keys = cases.case_keys(API)[name]
    sep = keys[1]
    return [line for line, k in zip(ORACLE["cases"][name], keys) if k is not sep]


def test_the_oracle_is_real_pyflink_output() -> None:
    assert ORACLE["pyflink_version"] == "2.3.0" and ORACLE["runtime_mode"] == "STREAMING"
    assert ORACLE["command"].startswith("benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_key_identity.py")
    assert list(ORACLE["cases"]) == list(cases.case_keys(API))
    assert list(ORACLE["current_keys"]) == cases.CURRENT_KEY_CASES
    assert list(ORACLE["errors"]) == list(cases.error_cases(API))


@pytest.mark.parametrize("name", cases.CURRENT_KEY_CASES)
def test_a_keyed_function_gets_the_key_as_flink_hands_it_back(name: str) -> None:
    """``ctx.get_current_key()`` in ``process_element`` is the key decoded from Flink's bytes, as in PyFlink: a
    ``DOUBLE`` key of ``1`` is ``1.0``, a ``FLOAT`` key rounded, an ``INT`` key of ``True`` ``1``, a ``ROW`` key a
    ``Row`` with the type's names whatever form the selector returned, a ``BIG_DEC`` key a ``Decimal``."""
    env = StreamExecutionEnvironment.get_execution_environment()
    assert collect(cases.build_current_key(API, env, name)) == ORACLE["current_keys"][name]


def test_a_tuple_for_a_row_key_which_pyflink_refuses_is_the_row_here() -> None:
    """PyFlink's job fails on a tuple returned for a ``ROW`` key type (recorded); the package takes the tuple as the
    row (``docs/differences.md``), one key with the ``Row`` forms of the same values."""
    name = "ROW_NAMED(id INT, name STRING) from a tuple"
    assert "get_fields_by_names" in ORACLE["errors"][name]
    env = StreamExecutionEnvironment.get_execution_environment()
    assert collect(cases.build(API, env, name)) == ["(1, 'a') 1"]


@pytest.mark.parametrize("name", SEPARATED)
def test_keys_are_told_apart_as_flink_does(name: str) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    assert collect(cases.build(API, env, name)) == ORACLE["cases"][name]


@pytest.mark.parametrize("name", [n[: -len(" separated")] for n in SEPARATED])
def test_back_to_back_keys_are_not_merged_by_python_equality(name: str) -> None:
    """PyFlink's shortcut merges back-to-back ``==`` keys (a documented difference); the package keeps Flink's
    identity, as in the separated case."""
    env = StreamExecutionEnvironment.get_execution_environment()
    if name in ("INT", "BOOLEAN"):  # keys == to each other are one key as these types: PyFlink's output exactly
        expected = ORACLE["cases"][name]
    else:
        expected = without_separators(name + " separated")
    assert collect(cases.build(API, env, name)) == expected


def test_the_oracle_shows_pyflinks_back_to_back_shortcut() -> None:
    """What docs/differences.md describes: back to back, PyFlink merges ``0.0``/``-0.0`` and ``1``/``True``/``1.0``."""
    assert ORACLE["cases"]["untyped zeros"] == [f"0.0 {n}" for n in range(1, 7)]
    assert ORACLE["cases"]["untyped one"] == [f"1 {n}" for n in range(1, 7)]
    assert without_separators("untyped zeros separated") == ["0.0 1", "-0.0 1", "0.0 2", "-0.0 2", "0 1", "False 1"]


@pytest.mark.parametrize(
    ("keys", "key_type", "distinct"),
    [
        ([0.0, -0.0, 1, True, 1.0, float("nan"), float("nan"), -float("nan")], None, 7),
        ([(0.0, "a"), (-0.0, "a"), (1, "a"), (True, "a"), (1.0, "a"), ("a", 1)], None, 6),
        ([0.1, 0.1 + 1e-12, 0.0, -0.0, float("nan"), -float("nan")], Types.FLOAT(), 4),
        ([0.1, 0.1 + 1e-12, 0.0, -0.0, float("nan")], Types.DOUBLE(), 5),
        ([1, True, 1], Types.INT(), 1),
        (["a", "a", "b"], Types.STRING(), 2),
    ],
)
def test_distinct_key(keys: List[Any], key_type: Any, distinct: int) -> None:
    ids = [distinct_key(k, key_type) for k in keys]
    assert len(set(ids)) == distinct
    assert all(distinct_key(i, key_type) == i for i in ids)  # idempotent
    assert [pickle.loads(pickle.dumps(i)) for i in ids] == ids


def test_common_keys_stay_themselves() -> None:
    for key, key_type in [("a", None), (7, None), (b"x", None), (None, None), (("a", 1), None), ("a", Types.STRING()),
                          (7, Types.LONG())]:
        assert distinct_key(key, key_type) is key and plain_key(key) is key
    k = distinct_key(0.1, Types.FLOAT())
    assert isinstance(k, DistinctKey) and plain_key(k) == 0.10000000149011612  # as Flink hands a FLOAT key back


def test_timers_are_per_key_as_flink_tells_keys_apart() -> None:
    """A timer is Flink's per key: ``0.0`` and ``-0.0`` each get theirs; two FLOAT keys that round together share
    one (registered twice, fired once), and ``on_timer`` gets the key as Flink hands it back (rounded)."""
    from pyspark_flinkish.datastream.functions import KeyedProcessFunction

    class Timer(KeyedProcessFunction):  # type: ignore[misc]
        def process_element(self, value: Any, ctx: Any) -> Any:
            ctx.timer_service().register_event_time_timer(100)
            return iter(())

        def on_timer(self, timestamp: int, ctx: Any) -> Any:
            yield repr(ctx.get_current_key())

    def fired(keys: List[Any], key_type: Any) -> List[str]:
        env = StreamExecutionEnvironment.get_execution_environment()
        ds = env.from_collection(keys)
        keyed = ds.key_by(lambda v: v, key_type) if key_type is not None else ds.key_by(lambda v: v)
        return collect(keyed.process(Timer(), Types.STRING()))

    assert sorted(fired([0.0, -0.0, 0.0, 1, True], None)) == ["-0.0", "0.0", "1", "True"]
    assert fired([0.1, 0.1 + 1e-12], Types.FLOAT()) == ["0.10000000149011612"]
