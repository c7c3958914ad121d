"""TimeWindow / GlobalWindow geometry and dunders, merge_windows, and the Java bit-mixing hash.

Spec: ../shared/spec/flink-semantics.md §5 (TimeWindow helpers), §9 (merging), §18.18 (Java arithmetic).

The ``long_to_int_with_bit_mixing`` and ``java_hash_set_order`` vectors below were printed by a real
Java 17 program (``MathUtils.longToIntWithBitMixing`` copied verbatim, and a ``java.util.HashSet`` of
objects whose ``hashCode()`` is that mixing of ``start + end`` -- i.e. Flink's ``TimeWindow.hashCode``).
The tests never run Java themselves.
"""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyspark_flinkish.core.javamath import (
    LONG_MAX,
    LONG_MIN,
    floor_mod,
    java_hash_set_order,
    java_rem,
    long_add,
    long_to_int_with_bit_mixing,
)
from pyspark_flinkish.datastream.window import GlobalWindow, TimeWindow

# ---------------------------------------------------------------------------------------------------
# TimeWindow geometry


def test_max_timestamp_is_end_minus_one() -> None:
    assert TimeWindow(0, 10).max_timestamp() == 9
    assert TimeWindow(-10, 0).max_timestamp() == -1
    assert TimeWindow(LONG_MAX - 10, LONG_MAX).max_timestamp() == LONG_MAX - 1


def test_fields() -> None:
    w = TimeWindow(-3, 7)
    assert (w.start, w.end) == (-3, 7)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((0, 5), (5, 9), True),  # touching: a.end == b.start -> intersect (Flink)
        ((5, 9), (0, 5), True),  # symmetric
        ((0, 5), (6, 9), False),  # gap of one millisecond
        ((6, 9), (0, 5), False),
        ((0, 10), (3, 4), True),  # containment
        ((3, 4), (0, 10), True),
        ((0, 10), (0, 10), True),  # identical
        ((0, 10), (9, 20), True),  # overlap
        ((-10, -5), (-5, 0), True),  # touching, negative
        ((-10, -5), (-4, 0), False),
    ],
)
def test_intersects(a: tuple, b: tuple, expected: bool) -> None:
    assert TimeWindow(*a).intersects(TimeWindow(*b)) is expected


@pytest.mark.parametrize(
    ("a", "b", "cover"),
    [
        ((0, 5), (5, 9), (0, 9)),
        ((5, 9), (0, 5), (0, 9)),
        ((0, 10), (3, 4), (0, 10)),
        ((0, 5), (10, 20), (0, 20)),  # cover does not require intersection
        ((-7, -3), (-20, -10), (-20, -3)),
    ],
)
def test_cover(a: tuple, b: tuple, cover: tuple) -> None:
    assert TimeWindow(*a).cover(TimeWindow(*b)) == TimeWindow(*cover)


@settings(max_examples=200, deadline=None)
@given(st.integers(-1000, 1000), st.integers(1, 100), st.integers(-1000, 1000), st.integers(1, 100))
def test_intersects_and_cover_properties(s1: int, l1: int, s2: int, l2: int) -> None:
    a, b = TimeWindow(s1, s1 + l1), TimeWindow(s2, s2 + l2)
    assert a.intersects(b) == b.intersects(a)
    # Flink: a.start <= b.end && a.end >= b.start (inclusive: touching windows intersect)
    assert a.intersects(b) == (s1 <= s2 + l2 and s1 + l1 >= s2)
    c = a.cover(b)
    assert c == b.cover(a)
    assert c.start == min(s1, s2)
    assert c.end == max(s1 + l1, s2 + l2)


# ---------------------------------------------------------------------------------------------------
# TimeWindow dunders


def test_eq_and_hash() -> None:
    assert TimeWindow(0, 10) == TimeWindow(0, 10)
    assert TimeWindow(0, 10) != TimeWindow(0, 11)
    assert TimeWindow(0, 10) != TimeWindow(1, 10)
    assert TimeWindow(0, 10) != GlobalWindow()
    assert TimeWindow(0, 10) != (0, 10)
    assert hash(TimeWindow(0, 10)) == hash(TimeWindow(0, 10))
    assert len({TimeWindow(0, 10), TimeWindow(0, 10), TimeWindow(0, 11)}) == 2
    assert {TimeWindow(0, 10): "x"}[TimeWindow(0, 10)] == "x"


def test_is_immutable() -> None:
    w = TimeWindow(0, 10)
    with pytest.raises(AttributeError):
        w.start = 5  # type: ignore[misc]


def test_repr() -> None:
    assert repr(TimeWindow(0, 10)) == "TimeWindow(start=0, end=10)"
    assert repr(TimeWindow(-5, -1)) == "TimeWindow(start=-5, end=-1)"


def test_ordering_operators() -> None:
    # PyFlink's TimeWindow.__le__ was always False; here windows order by (start, end).
    a, b = TimeWindow(0, 10), TimeWindow(0, 20)
    c = TimeWindow(5, 6)
    assert a < b < c
    assert a <= b <= c
    assert a <= TimeWindow(0, 10)
    assert a >= TimeWindow(0, 10)
    assert not a < TimeWindow(0, 10)
    assert not a > TimeWindow(0, 10)
    assert c > b > a
    assert c >= b >= a
    assert not b <= a
    assert not a >= b
    assert sorted([c, b, TimeWindow(-1, 100), a]) == [TimeWindow(-1, 100), a, b, c]
    assert max([a, c, b]) == c
    assert min([c, b, a]) == a


def test_ordering_against_other_types_raises() -> None:
    with pytest.raises(TypeError):
        _ = TimeWindow(0, 10) < 5  # type: ignore[operator]
    with pytest.raises(TypeError):
        _ = TimeWindow(0, 10) <= (0, 10)  # type: ignore[operator]


def test_pickle_and_copy_round_trip() -> None:
    w = TimeWindow(-5, 17)
    assert pickle.loads(pickle.dumps(w)) == w
    assert copy.deepcopy(w) == w


@pytest.mark.parametrize(
    "bad",
    [(LONG_MIN - 1, 0), (0, LONG_MAX + 1)],
)
def test_out_of_long_range_rejected(bad: tuple) -> None:
    with pytest.raises(ValueError, match="Java long"):
        TimeWindow(*bad)


@pytest.mark.parametrize("bad", [(0.0, 10), (0, "10"), (True, 10), (None, 10)])
def test_non_int_rejected(bad: tuple) -> None:
    with pytest.raises(TypeError):
        TimeWindow(*bad)


def test_java_hash_code_is_bit_mixing_of_start_plus_end() -> None:
    # Flink: TimeWindow.hashCode() = MathUtils.longToIntWithBitMixing(start + end)
    assert TimeWindow(0, 10).java_hash_code() == 625529613  # mix(10)
    assert TimeWindow(400, 600).java_hash_code() == 1215879745  # mix(1000)
    assert TimeWindow(-1, 0).java_hash_code() == 1266835233  # mix(-1)


# ---------------------------------------------------------------------------------------------------
# GlobalWindow


def test_global_window_singleton() -> None:
    assert GlobalWindow() is GlobalWindow()
    assert GlobalWindow.get() is GlobalWindow()


def test_global_window_eq_hash_repr() -> None:
    assert GlobalWindow() == GlobalWindow.get()
    assert GlobalWindow() != TimeWindow(0, 10)
    assert GlobalWindow() != "GlobalWindow()"
    assert hash(GlobalWindow()) == hash(GlobalWindow.get())
    assert len({GlobalWindow(), GlobalWindow.get()}) == 1
    assert repr(GlobalWindow()) == "GlobalWindow()"


def test_global_window_max_timestamp_is_long_max() -> None:
    assert GlobalWindow().max_timestamp() == LONG_MAX == 2**63 - 1


def test_global_window_pickle_keeps_singleton() -> None:
    assert pickle.loads(pickle.dumps(GlobalWindow())) is GlobalWindow()
    assert copy.deepcopy(GlobalWindow()) is GlobalWindow()
    assert copy.copy(GlobalWindow()) is GlobalWindow()
    assert pickle.loads(pickle.dumps({GlobalWindow(): 1})) == {GlobalWindow(): 1}


def test_global_window_not_less_than_itself() -> None:
    assert not GlobalWindow() < GlobalWindow()
    assert sorted([GlobalWindow(), GlobalWindow()]) == [GlobalWindow(), GlobalWindow()]


# ---------------------------------------------------------------------------------------------------
# Java arithmetic helpers

# (input, MathUtils.longToIntWithBitMixing(input)) as printed by Java 17
JAVA_MIX_VECTORS = [
    (0, 0),
    (1, 885181228),
    (-1, 1266835233),
    (42, -1908254260),
    (10, 625529613),
    (1000, 1215879745),
    (-123456789, -1330231901),
    (1700000000000, 741455522),
    (LONG_MAX, -1456411158),
    (LONG_MIN, -1355701101),
    (0x123456789ABCDEF, -1996346134),
    (-9, 456436828),
]


@pytest.mark.parametrize(("value", "expected"), JAVA_MIX_VECTORS)
def test_long_to_int_with_bit_mixing_matches_java(value: int, expected: int) -> None:
    assert long_to_int_with_bit_mixing(value) == expected


@settings(max_examples=200, deadline=None)
@given(st.integers(LONG_MIN, LONG_MAX))
def test_long_to_int_with_bit_mixing_is_a_java_int(value: int) -> None:
    h = long_to_int_with_bit_mixing(value)
    assert -(2**31) <= h < 2**31


# Java: new HashSet<>() filled with TimeWindow-like objects in the given order, then iterated.
JAVA_HASH_SET_VECTORS = [
    pytest.param([(0, 10), (5, 15), (12, 20)], [(12, 20), (0, 10), (5, 15)], id="three"),
    pytest.param([(12, 20), (5, 15), (0, 10)], [(12, 20), (0, 10), (5, 15)], id="three-reversed-insert"),
    pytest.param(
        [(-30, -20), (100, 110), (7, 17), (-5, 5)],
        [(-30, -20), (-5, 5), (100, 110), (7, 17)],
        id="negative",
    ),
    pytest.param(
        [(i * 3, i * 3 + 4) for i in range(20)],
        [
            (6, 10),
            (24, 28),
            (39, 43),
            (0, 4),
            (3, 7),
            (18, 22),
            (48, 52),
            (9, 13),
            (12, 16),
            (30, 34),
            (33, 37),
            (27, 31),
            (54, 58),
            (36, 40),
            (15, 19),
            (51, 55),
            (45, 49),
            (57, 61),
            (42, 46),
            (21, 25),
        ],
        id="twenty-resized-to-32",
    ),
    pytest.param(
        [(1000 - i * 7, 1000 - i * 7 + 10) for i in range(13)],
        [
            (937, 947),
            (972, 982),
            (958, 968),
            (923, 933),
            (1000, 1010),
            (944, 954),
            (916, 926),
            (993, 1003),
            (965, 975),
            (951, 961),
            (979, 989),
            (986, 996),
            (930, 940),
        ],
        id="thirteen-just-over-threshold",
    ),
    # (20,30), (150,160), (390,400) share a bucket: their relative order is insertion order.
    pytest.param(
        [(390, 400), (20, 30), (150, 160), (40, 50)],
        [(40, 50), (390, 400), (20, 30), (150, 160)],
        id="bucket-collision-a",
    ),
    pytest.param(
        [(150, 160), (390, 400), (20, 30), (40, 50)],
        [(40, 50), (150, 160), (390, 400), (20, 30)],
        id="bucket-collision-b",
    ),
]


@pytest.mark.parametrize(("inserted", "iterated"), JAVA_HASH_SET_VECTORS)
def test_java_hash_set_order_matches_java(inserted: list, iterated: list) -> None:
    windows = [TimeWindow(s, e) for s, e in inserted]
    got = java_hash_set_order(windows, TimeWindow.java_hash_code)
    assert [(w.start, w.end) for w in got] == iterated


def test_java_hash_set_order_deduplicates() -> None:
    windows = [TimeWindow(0, 10), TimeWindow(5, 15), TimeWindow(0, 10), TimeWindow(12, 20)]
    got = java_hash_set_order(windows, TimeWindow.java_hash_code)
    assert got == [TimeWindow(12, 20), TimeWindow(0, 10), TimeWindow(5, 15)]


def test_floor_mod_and_java_rem() -> None:
    assert floor_mod(-7, 5) == 3
    assert floor_mod(7, 5) == 2
    assert java_rem(-7, 5) == -2  # Java % truncates toward zero
    assert java_rem(7, 5) == 2
    assert java_rem(-35, 10) == -5
    assert java_rem(-10, 10) == 0


def test_long_add_wraps() -> None:
    assert long_add(LONG_MAX, 1) == LONG_MIN
    assert long_add(LONG_MAX - 8, 100) == LONG_MIN + 91
    assert long_add(LONG_MIN, -1) == LONG_MAX
    assert long_add(5, -7) == -2


# ---------------------------------------------------------------------------------------------------
# TimeWindow.merge_windows (Flink's TimeWindow.mergeWindows)


def _merge(windows: list) -> list:
    calls: list = []
    TimeWindow.merge_windows(windows, lambda members, cover: calls.append((list(members), cover)))
    return calls


def test_merge_windows_reports_group_in_java_hash_set_order() -> None:
    calls = _merge([TimeWindow(12, 20), TimeWindow(0, 10), TimeWindow(5, 15)])
    assert calls == [([TimeWindow(12, 20), TimeWindow(0, 10), TimeWindow(5, 15)], TimeWindow(0, 20))]


def test_merge_windows_touching_windows_merge() -> None:
    assert _merge([TimeWindow(0, 5), TimeWindow(5, 10)]) == [
        (java_hash_set_order([TimeWindow(0, 5), TimeWindow(5, 10)], TimeWindow.java_hash_code), TimeWindow(0, 10))
    ]


def test_merge_windows_only_groups_of_more_than_one() -> None:
    calls = _merge([TimeWindow(0, 5), TimeWindow(6, 10), TimeWindow(20, 30), TimeWindow(25, 26), TimeWindow(40, 41)])
    assert len(calls) == 1
    members, cover = calls[0]
    assert cover == TimeWindow(20, 30)
    assert sorted(members) == [TimeWindow(20, 30), TimeWindow(25, 26)]


def test_merge_windows_duplicates_are_one_member() -> None:
    # a HashSet holds equal windows once: a group of two equal windows is not reported
    assert _merge([TimeWindow(0, 5), TimeWindow(0, 5)]) == []


def test_merge_windows_chain_sweeps_over_running_cover() -> None:
    # [0,4) and [10,14) do not intersect each other but both intersect the running cover via [3,11)
    calls = _merge([TimeWindow(10, 14), TimeWindow(0, 4), TimeWindow(3, 11)])
    assert len(calls) == 1
    assert calls[0][1] == TimeWindow(0, 14)
    assert sorted(calls[0][0]) == [TimeWindow(0, 4), TimeWindow(3, 11), TimeWindow(10, 14)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-50, 50), st.integers(1, 10)), min_size=0, max_size=12))
def test_merge_windows_properties(raw: list) -> None:
    windows = [TimeWindow(s, s + n) for s, n in raw]
    calls = _merge(windows)
    covers = [c for _, c in calls]
    reported = [m for members, _ in calls for m in members]
    # each reported group: >1 distinct members, cover = union span of members
    for members, cover in calls:
        assert len(members) == len(set(members)) > 1
        assert cover == TimeWindow(min(m.start for m in members), max(m.end for m in members))
        assert members == java_hash_set_order(members, TimeWindow.java_hash_code)
    # groups are disjoint and their covers do not intersect each other
    assert len(reported) == len(set(reported))
    for i, a in enumerate(covers):
        for b in covers[i + 1 :]:
            assert not a.intersects(b)
    # every input window is either reported, or intersects no other distinct input window
    for w in set(windows):
        if w not in reported:
            assert not any(o != w and o.intersects(w) for o in set(windows))
