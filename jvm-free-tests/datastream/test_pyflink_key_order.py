"""The order of keys in BATCH execution (Flink sorts a keyed operator's input by the key's serialized bytes,
``core/key_order.py``), on the local engine, compared with real PyFlink 2.3.0's outputs (``pyflink_key_order.json``,
written by ``benchmarks/pyflink_key_order.py`` from the jobs of ``key_order_cases.py``); the key bytes of each type
as Flink's serializers write them. The foreachBatch executor's bodies run the same cases in
``jvm-free-tests/spark/test_key_order_foreach_batch.py``.
"""

from __future__ import annotations

import decimal
from types import SimpleNamespace
from typing import Any, List

import key_order_cases as cases
import pytest

from pyspark_flinkish.common import Row, Types
from pyspark_flinkish.core.key_order import batch_sort_key, serialized_key
from pyspark_flinkish.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

ORACLE = cases.load()
API = SimpleNamespace(Types=Types, Row=Row)


def batch_env() -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    return env


def collect(stream: Any) -> List[Any]:
    with stream.execute_and_collect() as results:
        return list(results)


def test_the_oracle_is_real_pyflink_output() -> None:
    assert ORACLE["pyflink_version"] == "2.3.0" and ORACLE["runtime_mode"] == "BATCH"
    assert ORACLE["command"].startswith("benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_key_order.py")
    assert list(ORACLE["cases"]) == list(cases.case_keys(API))


@pytest.mark.parametrize("name", list(cases.case_keys(API)))
def test_batch_processes_the_keys_in_flinks_order(name: str) -> None:
    expected = ORACLE["cases"][name]
    _, keys = cases.case_keys(API)[name]
    assert len(expected) == len(keys) and all(line.endswith(" 11") for line in expected)
    first_seen = list(dict.fromkeys(repr(k) for k, _ in cases.elements(keys, name)))
    if len(keys) > 2:  # the case can tell the orders apart (BOOLEAN's two keys come in Flink's order)
        assert [line[: -len(" 11")] for line in expected] != first_seen
    assert collect(cases.build(API, batch_env(), name)) == expected


def test_streaming_mode_emits_in_arrival_order() -> None:
    """The same job in STREAMING: every running sum, in arrival order (no sorting)."""
    env = StreamExecutionEnvironment.get_execution_environment()
    got = collect(cases.build(API, env, "INT"))
    assert len(got) == 2 * len(cases.INTS)
    assert [g.split()[0] for g in got] == [repr(k) for k, _ in cases.elements(cases.INTS, "INT")]


def test_word_count_order_is_pickled_length_first() -> None:
    """Untyped string keys (Flink's word_count.py): the pickle's length first, then its bytes, signed."""
    words = ["the", "a", "To", "'tis", "be,", "be", "Be"]
    assert sorted(words, key=lambda w: batch_sort_key(w, None)) == ["a", "Be", "To", "be", "be,", "the", "'tis"]


@pytest.mark.parametrize(
    ("key", "key_type", "data"),
    [
        ("a", Types.STRING(), b"\x00\x02a"),
        ("", Types.STRING(), b"\x00\x01"),
        ("y" * 127, Types.STRING(), b"\x00\x80\x01" + b"y" * 127),  # length + 1 = 128: two bytes
        ("é", Types.STRING(), b"\x00\x02\xe9\x01"),  # U+00E9: 0x69 | 0x80, then 1
        ("\U0001f600", Types.STRING(), b"\x00\x03\xbd\xb0\x03\x80\xbc\x03"),  # two UTF-16 code units
        (1, Types.INT(), b"\x00\x00\x00\x00\x01"),
        (-129, Types.INT(), b"\x00\xff\xff\xff\x7f"),
        (-2, Types.LONG(), b"\x00" + b"\xff" * 7 + b"\xfe"),
        (-1, Types.SHORT(), b"\x00\xff\xff"),
        (-1, Types.BYTE(), b"\x00\xff"),
        (True, Types.BOOLEAN(), b"\x00\x01"),
        (0.1, Types.FLOAT(), b"\x00\x3d\xcc\xcc\xcd"),
        (float("nan"), Types.DOUBLE(), b"\x00\x7f\xf8" + b"\x00" * 6),
        ("a", Types.CHAR(), b"\x00\x00a"),
        (("a", 1), Types.TUPLE([Types.STRING(), Types.INT()]), b"\x00\x02a\x00\x00\x00\x01"),
        (Row(1, None), Types.ROW([Types.INT(), Types.STRING()]), b"\x00\x10\x00\x00\x00\x01"),  # field 2 null
        (None, Types.INT(), b"\x20"),
        (None, None, b"\x20"),
        (2, None, b"\x00\x00\x00\x00\x05\x80\x05K\x02."),  # pickle protocol 5, its length first
    ],
)
def test_key_bytes_as_flinks_serializers_write_them(key: Any, key_type: Any, data: bytes) -> None:
    assert serialized_key(key, key_type) == data


@pytest.mark.parametrize(
    ("key", "key_type"),
    [
        (decimal.Decimal("1.5"), Types.BIG_DEC()),
        (1, Types.BIG_INT()),
        ([1, 2], Types.LIST(Types.INT())),
        (Row(1), None),  # cloudpickle's bytes name PyFlink's Row class
        (frozenset({1}), None),
        (2**31, Types.INT()),  # PyFlink refuses it
        ("ab", Types.CHAR()),
    ],
)
def test_keys_whose_bytes_the_package_cannot_know(key: Any, key_type: Any) -> None:
    assert serialized_key(key, key_type) is None and batch_sort_key(key, key_type) is None


def test_unknown_key_bytes_keep_the_first_seen_order() -> None:
    """BIG_DEC keys: the package does not know their bytes, so keys run in the order of their first element (the
    documented difference); every key's own output is still Flink's."""
    data = [(decimal.Decimal(d), 1) for d in ("3", "1", "2", "1")]
    stream = batch_env().from_collection(data).key_by(lambda v: v[0], Types.BIG_DEC())
    got = collect(stream.reduce(lambda a, b: (a[0], a[1] + b[1])).map(lambda v: f"{v[0]} {v[1]}", Types.STRING()))
    assert got == ["3 1", "1 2", "2 1"]
