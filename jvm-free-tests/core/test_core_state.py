"""Keyed state and TTL (spec §14, §18.17)."""

from __future__ import annotations

from typing import Any, List

import pytest

from pyspark_flinkish.common import Duration
from pyspark_flinkish.core.errors import FlinkishError, InvalidArgumentError, StateError
from pyspark_flinkish.core.state import VOID_NAMESPACE, KeyedStateBackend
from pyspark_flinkish.datastream.functions import AggregateFunction
from pyspark_flinkish.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)


class Clock:
    def __init__(self, t: int = 0) -> None:
        self.t = t

    def __call__(self) -> int:
        return self.t


class ListAgg(AggregateFunction):
    """Accumulator = list of added values (counts created accumulators); result = their sum."""

    created = 0

    def create_accumulator(self) -> List[int]:
        ListAgg.created += 1
        return []

    def add(self, value: int, accumulator: List[int]) -> List[int]:
        return accumulator + [value]

    def get_result(self, accumulator: List[int]) -> Any:
        return ("sum", sum(accumulator), len(accumulator))

    def merge(self, acc_a: List[int], acc_b: List[int]) -> List[int]:
        return acc_a + acc_b


def backend(key: Any = "k", t: int = 0) -> tuple:  # type: ignore[type-arg]
    clock = Clock(t)
    b = KeyedStateBackend(clock=clock)
    b.set_current_key(key)
    return b, clock


def ttl(ms: int, read: bool = False, stale: bool = False) -> StateTtlConfig:
    builder = StateTtlConfig.new_builder(Duration.of_millis(ms))
    if read:
        builder = builder.update_ttl_on_read_and_write()
    if stale:
        builder = builder.return_expired_if_not_cleaned_up()
    return builder.build()


# ----------------------------------------------------------------------------- state types


def test_value_state() -> None:
    b, _ = backend()
    s = b.create_state(ValueStateDescriptor("v"))
    assert s.value() is None
    s.update(0)
    assert s.value() == 0  # falsy values are values
    s.update("x")
    assert s.value() == "x"
    s.update(None)  # update(None) clears
    assert s.value() is None
    assert b.keys() == []
    s.update(5)
    s.clear()
    assert s.value() is None


def test_list_state() -> None:
    b, _ = backend()
    s = b.create_state(ListStateDescriptor("l"))
    assert s.get() == []  # never None
    assert s.get() is not None
    s.add(3)
    s.add(1)
    s.add(3)
    assert s.get() == [3, 1, 3]  # insertion order, duplicates kept
    with pytest.raises(StateError):
        s.add(None)
    assert s.get() == [3, 1, 3]
    s.add_all([7, 8])
    assert s.get() == [3, 1, 3, 7, 8]
    s.update([9])
    assert s.get() == [9]
    s.update([])
    assert s.get() == []
    s.add(1)
    s.clear()
    assert s.get() == []
    # the returned list is a copy: mutating it does not change the state
    s.add(1)
    got = s.get()
    got.append(2)
    assert s.get() == [1]


def test_map_state() -> None:
    b, _ = backend()
    m = b.create_state(MapStateDescriptor("m"))
    assert m.get("a") is None
    assert list(m.keys()) == []
    assert list(m.values()) == []
    assert list(m.items()) == []
    assert m.is_empty()
    assert not m.contains("a")
    m.put("a", 1)
    m.put("b", 2)
    m.put_all({"c": 3, "a": 10})
    assert m.get("a") == 10
    assert m.contains("b")
    assert "b" in m
    assert sorted(m.keys()) == ["a", "b", "c"]
    assert sorted(m.values()) == [2, 3, 10]
    assert sorted(m.items()) == [("a", 10), ("b", 2), ("c", 3)]
    assert not m.is_empty()
    m.remove("b")
    m.remove("nope")  # removing a missing key is fine
    assert not m.contains("b")
    assert m.get("b") is None
    assert m["c"] == 3
    with pytest.raises(KeyError):
        m["b"]
    m["d"] = 4
    del m["d"]
    assert sorted(m) == ["a", "c"]
    m.remove("a")
    m.remove("c")
    assert m.is_empty()
    assert b.keys() == []  # an emptied map leaves nothing behind


def test_reducing_state_first_value_as_is() -> None:
    calls: List[Any] = []

    def reduce(a: Any, b: Any) -> Any:
        calls.append((a, b))
        return a + b

    b, _ = backend()
    s = b.create_state(ReducingStateDescriptor("r", reduce))
    assert s.get() is None
    s.add("x")
    assert s.get() == "x"
    assert calls == []  # the first value is stored without calling reduce
    s.add("y")
    s.add("z")
    assert s.get() == "xyz"
    assert calls == [("x", "y"), ("xy", "z")]
    s.clear()
    assert s.get() is None


def test_aggregating_state_lazy_accumulator() -> None:
    b, _ = backend()
    ListAgg.created = 0
    s = b.create_state(AggregatingStateDescriptor("a", ListAgg()))
    assert s.get() is None
    assert ListAgg.created == 0  # no accumulator until the first add
    s.add(2)
    s.add(5)
    assert ListAgg.created == 1
    assert s.get() == ("sum", 7, 2)
    s.clear()
    assert s.get() is None
    s.add(1)
    assert ListAgg.created == 2
    assert s.get() == ("sum", 1, 1)


def test_namespaces_and_keys_isolate() -> None:
    b, _ = backend("k1")
    d = ValueStateDescriptor("v")
    s1 = b.create_state(d, "ns1")
    s2 = b.create_state(d, "ns2")
    s1.update("one")
    assert s2.value() is None
    s2.update("two")
    assert s1.value() == "one"
    b.set_current_key("k2")
    assert s1.value() is None
    assert s2.value() is None
    s1.update("k2-one")
    b.set_current_key("k1")
    assert s1.value() == "one"
    s1.clear()  # only the current key and namespace
    assert s1.value() is None
    assert s2.value() == "two"
    b.set_current_key("k2")
    assert s1.value() == "k2-one"
    # a namespace view can be re-pointed
    s1.set_current_namespace("ns2")
    assert s1.value() is None
    b.set_current_key("k1")
    assert s1.value() == "two"
    # void namespace default
    sv = b.create_state(ValueStateDescriptor("other"))
    sv.update(1)
    assert b.key_table("k1")[("other", VOID_NAMESPACE)] == 1


def test_state_without_key_raises() -> None:
    b = KeyedStateBackend(clock=Clock())
    s = b.create_state(ValueStateDescriptor("v"))
    with pytest.raises(StateError):
        s.value()


def test_descriptor_kind_clash_raises() -> None:
    b, _ = backend()
    b.create_state(ValueStateDescriptor("x"))
    b.create_state(ValueStateDescriptor("x"))  # same kind again is fine
    with pytest.raises(StateError):
        b.create_state(ListStateDescriptor("x"))
    with pytest.raises(StateError):
        b.create_state(ReducingStateDescriptor("x", lambda a, c: a))


def test_merge_namespaces_list() -> None:
    b, _ = backend()
    s = b.create_state(ListStateDescriptor("l"), "t")
    s.add(1)
    for ns, values in (("s1", [2, 3]), ("s2", [4])):
        s.set_current_namespace(ns)
        s.add_all(values)
    s.set_current_namespace("s3")  # empty source
    s.merge_namespaces("t", ["s1", "s3", "s2"])
    assert s.get() == []
    s.set_current_namespace("s1")
    assert s.get() == []
    s.set_current_namespace("t")
    assert s.get() == [1, 2, 3, 4]  # target first, then the sources in order


def test_merge_namespaces_list_into_empty_target() -> None:
    b, _ = backend()
    s = b.create_state(ListStateDescriptor("l"), "s1")
    s.add("a")
    s.merge_namespaces("t", ["s1"])
    s.set_current_namespace("t")
    assert s.get() == ["a"]


def test_merge_namespaces_reducing() -> None:
    b, _ = backend()
    s = b.create_state(ReducingStateDescriptor("r", lambda x, y: x + y), "t")
    s.add("T")
    s.set_current_namespace("s1")
    s.add("a")
    s.set_current_namespace("s2")
    s.add("b")
    s.merge_namespaces("t", ["s1", "s2"])
    assert s.get() is None  # the view keeps its namespace (s2), now cleared
    s.set_current_namespace("t")
    assert s.get() == "Tab"  # reduce(target, reduce(s1, s2))
    s.set_current_namespace("s1")
    assert s.get() is None


def test_merge_namespaces_aggregating() -> None:
    b, _ = backend()
    s = b.create_state(AggregatingStateDescriptor("a", ListAgg()), "s1")
    s.add(1)
    s.set_current_namespace("s2")
    s.add(2)
    s.add(3)
    s.merge_namespaces("t", ["s1", "s2"])
    s.set_current_namespace("t")
    assert s.get_accumulator() == [1, 2, 3]
    assert s.get() == ("sum", 6, 3)


def test_value_state_cannot_merge() -> None:
    b, _ = backend()
    s = b.create_state(ValueStateDescriptor("v"), "t")
    with pytest.raises(StateError):
        s.merge_namespaces("t", ["a"])


# ------------------------------------------------------------------------------------------ TTL


@pytest.mark.parametrize("ms", [0, -1])
def test_ttl_must_be_positive(ms: int) -> None:
    with pytest.raises(InvalidArgumentError):
        StateTtlConfig.new_builder(Duration.of_millis(ms)).build()
    with pytest.raises(InvalidArgumentError):
        StateTtlConfig(ms)


def test_ttl_defaults() -> None:
    cfg = StateTtlConfig.new_builder(Duration.of_seconds(1)).build()
    assert cfg.get_ttl() == 1000
    assert cfg.update_type is StateTtlConfig.UpdateType.OnCreateAndWrite
    assert cfg.state_visibility is StateTtlConfig.StateVisibility.NeverReturnExpired


def test_ttl_value_exact_boundary() -> None:
    b, clock = backend(t=1000)
    d = ValueStateDescriptor("v")
    d.enable_time_to_live(ttl(100))
    s = b.create_state(d)
    s.update("x")
    clock.t = 1099
    assert s.value() == "x"  # 1000 + 100 > 1099
    clock.t = 1100
    assert s.value() is None  # expired iff last + ttl <= now
    assert b.keys() == []  # cleaned up on read


def test_ttl_on_create_and_write_reads_do_not_refresh() -> None:
    b, clock = backend()
    d = ValueStateDescriptor("v")
    d.enable_time_to_live(ttl(100))
    s = b.create_state(d)
    s.update(1)
    clock.t = 90
    assert s.value() == 1
    clock.t = 100
    assert s.value() is None  # the read at 90 did not refresh
    s.update(2)  # writes do refresh
    clock.t = 150
    s.update(3)
    clock.t = 249
    assert s.value() == 3
    clock.t = 250
    assert s.value() is None


def test_ttl_on_read_and_write_reads_refresh() -> None:
    b, clock = backend()
    d = ValueStateDescriptor("v")
    d.enable_time_to_live(ttl(100, read=True))
    s = b.create_state(d)
    s.update(1)
    clock.t = 90
    assert s.value() == 1  # refreshes to 90
    clock.t = 189
    assert s.value() == 1  # refreshes to 189
    clock.t = 289
    assert s.value() is None


def test_ttl_visibility_return_expired_if_not_cleaned_up() -> None:
    b, clock = backend()
    d = ValueStateDescriptor("v")
    d.enable_time_to_live(ttl(100, stale=True))
    s = b.create_state(d)
    s.update("old")
    clock.t = 100
    assert s.value() == "old"  # expired but not cleaned up yet: stale value returned
    assert s.value() is None  # the read cleaned it up

    d2 = ValueStateDescriptor("v2")
    d2.enable_time_to_live(ttl(100))
    s2 = b.create_state(d2)
    s2.update("old")
    clock.t = 200
    assert s2.value() is None  # NeverReturnExpired


def test_ttl_list_per_element() -> None:
    b, clock = backend()
    d = ListStateDescriptor("l")
    d.enable_time_to_live(ttl(10))
    s = b.create_state(d)
    s.add("a")
    clock.t = 5
    s.add("b")
    clock.t = 9
    assert s.get() == ["a", "b"]
    clock.t = 10
    assert s.get() == ["b"]  # per element
    clock.t = 14
    s.add("c")
    clock.t = 15
    assert s.get() == ["c"]
    clock.t = 24
    assert s.get() == []
    assert b.keys() == []


def test_ttl_list_on_read_and_write() -> None:
    b, clock = backend()
    d = ListStateDescriptor("l")
    d.enable_time_to_live(ttl(10, read=True))
    s = b.create_state(d)
    s.add("a")
    clock.t = 8
    assert s.get() == ["a"]  # refreshed to 8
    clock.t = 17
    assert s.get() == ["a"]
    clock.t = 27
    assert s.get() == []


def test_ttl_list_return_expired_if_not_cleaned_up() -> None:
    b, clock = backend()
    d = ListStateDescriptor("l")
    d.enable_time_to_live(ttl(10, stale=True))
    s = b.create_state(d)
    s.add("a")
    clock.t = 5
    s.add("b")
    clock.t = 10
    first = s.get()
    assert first in (["a", "b"], ["b"])  # may return stale values
    assert s.get() == ["b"]  # the expired element was cleaned up by the read


def test_ttl_map_per_entry() -> None:
    b, clock = backend()
    d = MapStateDescriptor("m")
    d.enable_time_to_live(ttl(10))
    m = b.create_state(d)
    m.put("a", 1)
    clock.t = 5
    m.put("b", 2)
    clock.t = 10
    assert m.get("a") is None
    assert not m.contains("a")
    assert m.get("b") == 2
    assert sorted(m.items()) == [("b", 2)]
    clock.t = 12
    m.put("a", 3)  # a write refreshes the entry
    clock.t = 15
    assert sorted(m.keys()) == ["a"]
    assert not m.is_empty()
    clock.t = 22
    assert m.is_empty()
    assert list(m.values()) == []
    assert b.keys() == []


def test_ttl_map_on_read_and_write() -> None:
    b, clock = backend()
    d = MapStateDescriptor("m")
    d.enable_time_to_live(ttl(10, read=True))
    m = b.create_state(d)
    m.put("a", 1)
    m.put("b", 2)
    clock.t = 9
    assert m.get("a") == 1  # only "a" is refreshed
    clock.t = 10
    assert m.get("b") is None
    assert m.get("a") == 1
    clock.t = 19
    assert m.get("a") == 1  # refreshed at 10: 10 + 10 > 19; refreshed again to 19
    clock.t = 29
    assert m.get("a") is None


def test_ttl_expired_reducing_starts_fresh() -> None:
    b, clock = backend()
    d = ReducingStateDescriptor("r", lambda x, y: x + y)
    d.enable_time_to_live(ttl(10))
    s = b.create_state(d)
    s.add(1)
    clock.t = 5
    s.add(2)  # a write: refreshes to 5
    clock.t = 14
    assert s.get() == 3
    clock.t = 15
    s.add(100)  # expired accumulator counts as absent
    assert s.get() == 100


def test_ttl_expired_aggregating_starts_fresh() -> None:
    b, clock = backend()
    ListAgg.created = 0
    d = AggregatingStateDescriptor("a", ListAgg())
    d.enable_time_to_live(ttl(10))
    s = b.create_state(d)
    s.add(1)
    s.add(2)
    assert ListAgg.created == 1
    clock.t = 10
    s.add(7)
    assert ListAgg.created == 2  # a fresh accumulator
    assert s.get() == ("sum", 7, 1)
    clock.t = 20
    assert s.get() is None


def test_purge_expired() -> None:
    b, clock = backend("k")
    dv = ValueStateDescriptor("v")
    dv.enable_time_to_live(ttl(10))
    dl = ListStateDescriptor("l")
    dl.enable_time_to_live(ttl(10))
    dm = MapStateDescriptor("m")
    dm.enable_time_to_live(ttl(10))
    dn = ValueStateDescriptor("no-ttl")
    v, lst, m, n = (b.create_state(d) for d in (dv, dl, dm, dn))
    v.update(1)
    lst.add("old")
    m.put("old", 1)
    n.update("keep")
    clock.t = 5
    lst.add("new")
    m.put("new", 2)
    clock.t = 10
    b.purge_expired("k")
    table = b.key_table("k")
    assert ("v", VOID_NAMESPACE) not in table
    assert [tv.value for tv in table[("l", VOID_NAMESPACE)]] == ["new"]
    assert {k: tv.value for k, tv in table[("m", VOID_NAMESPACE)].items()} == {"new": 2}
    assert table[("no-ttl", VOID_NAMESPACE)] == "keep"
    clock.t = 15
    b.purge_expired("k")
    assert b.key_table("k") == {("no-ttl", VOID_NAMESPACE): "keep"}
    n.clear()
    assert b.keys() == []
    b.purge_expired("absent")  # no-op


def test_purge_expired_drops_key_when_all_expired() -> None:
    b, clock = backend("k")
    d = ValueStateDescriptor("v")
    d.enable_time_to_live(ttl(10))
    b.create_state(d).update(1)
    clock.t = 10
    b.purge_expired("k")
    assert not b.has_key("k")


def test_ttl_only_processing_time() -> None:
    builder = StateTtlConfig.new_builder(Duration.of_millis(10))
    builder.set_ttl_time_characteristic(StateTtlConfig.TtlTimeCharacteristic.ProcessingTime)
    with pytest.raises(FlinkishError):
        builder.set_ttl_time_characteristic("EventTime")
