"""The columnar path's window geometry in SQL (``spark/columnar.py``, ``window_geometry``) is the core's assigners.

The columnar path decides in Spark SQL which windows a row belongs to and whether they are all still on time; the
core's ``TumblingEventTimeWindows`` / ``SlidingEventTimeWindows`` are the reference (the conformance suite ties them to
Flink). This test evaluates the very SQL strings the columnar path hands Spark (``F.expr``), with DuckDB (an SQL engine
that reads this subset of SQL as Spark does: BIGINT arithmetic, Java's truncating ``%``, lazy ``CASE``, and which
raises on an arithmetic overflow, so an intermediate value outside Java's ``long`` fails the test too), against the
core for random sizes, slides, offsets and watermarks and timestamps over the whole ``long`` range: around zero, near
window boundaries, next to ``Long.MIN_VALUE`` / ``Long.MAX_VALUE``, and null. For every row either the core assigns its
windows and the SQL gives the same ones (count, every start, latest first) and the same on-time verdict (every
window's ``max_timestamp() > watermark``), or the core refuses the row (no timestamp, a window outside ``long``) and the
SQL says it does not fit, so the row goes to the core element by element (which refuses it as on the general path).
``tests/spark/test_spark_columnar.py`` runs the same expressions on Spark over fixed cases, these extremes included.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import duckdb
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pyspark_flinkish.core.assigners import SlidingEventTimeWindows, TumblingEventTimeWindows
from pyspark_flinkish.core.javamath import LONG_MAX, LONG_MIN
from pyspark_flinkish.spark.columnar import WindowGeometry, window_geometry

_CON: Any = None


def connection() -> Any:
    """One in-memory DuckDB for the module (opening one costs more than a query)."""
    global _CON
    if _CON is None:
        _CON = duckdb.connect()
    return _CON


def evaluate(geometry: WindowGeometry, timestamps: List[Optional[int]], watermarks: List[int]) -> List[Tuple[Any, ...]]:
    """``(ts, count, fits, latest, starts, on_time per watermark)`` per timestamp, every value computed by DuckDB
    from the geometry's SQL (the columns added in order, as ``columnar.with_geometry`` adds them on Spark)."""
    con = connection()
    sql = f"SELECT unnest(?::BIGINT[]) AS {geometry.ts}"
    for name, expression in geometry.columns:
        sql = f"SELECT *, {expression} AS {name} FROM ({sql})"
    on_time = ", ".join(geometry.on_time(w) for w in watermarks)
    rows = con.execute(
        f"SELECT {geometry.ts}, {geometry.count}, {geometry.fits}, {geometry.latest}, {on_time} FROM ({sql})",
        [timestamps],
    ).fetchall()
    # every window's start, from the same expression the Spark frame explodes (``columnar.window_starts``)
    pairs = [(row[3], i) for row in rows if row[2] for i in range(row[1])]
    starts = {}
    if pairs:
        found = con.execute(
            f"SELECT {geometry.latest}, i, {geometry.start('i')} FROM (SELECT unnest(?::BIGINT[]) AS {geometry.latest},"
            " unnest(?::BIGINT[]) AS i)",
            [[p[0] for p in pairs], [p[1] for p in pairs]],
        ).fetchall()
        starts = {(latest, i): start for latest, i, start in found}
    out = []
    for ts, count, fits, latest, *timely in rows:
        windows = [starts[(latest, i)] for i in range(count)] if fits else None
        out.append((ts, count, fits, latest, windows, timely))
    return out


def near(values: List[int]) -> st.SearchStrategy[int]:
    """Longs within a few ms of ``values`` (kept in range)."""
    return st.builds(lambda v, d: min(LONG_MAX, max(LONG_MIN, v + d)), st.sampled_from(values), st.integers(-3, 3))


def timestamps(size: int, slide: int, offset: int) -> st.SearchStrategy[Optional[int]]:
    edges = [0, LONG_MIN, LONG_MAX, LONG_MAX - size, LONG_MIN + size, LONG_MIN + slide, LONG_MAX - slide, offset, size]
    edges = [e for e in edges if LONG_MIN <= e <= LONG_MAX]
    aligned = st.builds(  # window boundaries: k * slide + offset (+ size)
        lambda k, extra, d: min(LONG_MAX, max(LONG_MIN, k * slide + offset + extra + d)),
        st.integers(-(2**63) // slide - 1, LONG_MAX // slide + 1),
        st.sampled_from([0, size]),
        st.integers(-2, 2),
    )
    return st.one_of(
        st.none(),
        st.integers(-100, 100),
        st.integers(LONG_MIN, LONG_MAX),
        near(edges),
        aligned,
    )


def lengths() -> st.SearchStrategy[int]:
    """Window sizes and slides: small, large, powers of two and their neighbours (double rounding), up to
    ``Long.MAX_VALUE``."""
    return st.one_of(
        st.integers(1, 30),
        st.integers(1, LONG_MAX),
        st.builds(lambda e, d: max(1, min(LONG_MAX, 2**e + d)), st.integers(1, 63), st.integers(-2, 2)),
    )


@st.composite
def assigners(draw: Any) -> Any:
    slide = draw(lengths())
    if draw(st.booleans()):
        offset = draw(st.integers(-(slide - 1), slide - 1))
        return TumblingEventTimeWindows(slide, offset)
    # size / slide: mostly small, at most 2,000 here (the assigner allows 10^7; the core lists every window)
    ratio = draw(st.one_of(st.integers(1, 4), st.integers(0, 2_000)))
    size = draw(
        st.one_of(
            st.integers(1, max(1, min(LONG_MAX, slide * ratio + slide - 1))),
            st.just(min(LONG_MAX, slide * max(ratio, 1))),
            st.just(max(1, min(LONG_MAX, slide * max(ratio, 1) - 1))),
        )
    )
    size = min(size, LONG_MAX, slide * 2_000)
    offset = draw(st.integers(-(slide - 1), slide - 1))
    return SlidingEventTimeWindows(size, slide, offset)


def geometry_of(assigner: Any) -> WindowGeometry:
    """The geometry the columnar path builds for ``assigner`` (``columnar.detect``'s size, slide and offset)."""
    if isinstance(assigner, TumblingEventTimeWindows):
        return window_geometry("ts", assigner.size, assigner.size, assigner.offset % assigner.size)
    return window_geometry("ts", assigner.size, assigner.slide, assigner.offset)


def check(assigner: Any, stamps: List[Optional[int]], watermarks: List[int]) -> None:
    for ts, count, fits, latest, starts, timely in evaluate(geometry_of(assigner), stamps, watermarks):
        where = (assigner, ts)
        windows = None
        if ts is not None:
            try:
                windows = assigner.assign_windows(None, ts, None)
            except ValueError:  # no timestamp (Long.MIN_VALUE), or a window outside Java's long
                windows = None
        if windows is None:  # the core refuses the row: the SQL sends it to the core
            assert fits is False and not any(timely), where
            continue
        if not windows:  # in a gap between sliding windows: dropped by the core, so not pre-aggregated either
            assert count == 0 and fits is False and not any(timely), where
            continue
        assert fits is True, where
        assert count == len(windows), where
        assert latest == windows[0].start, where
        assert starts == [w.start for w in windows], where  # latest first, as the core lists them
        for watermark, on_time in zip(watermarks, timely):
            assert on_time is all(w.max_timestamp() > watermark for w in windows), (*where, watermark)


@st.composite
def cases(draw: Any) -> Tuple[Any, List[Optional[int]], List[int]]:
    assigner = draw(assigners())
    slide = getattr(assigner, "slide", assigner.size)
    offset = assigner.offset
    stamps = draw(st.lists(timestamps(assigner.size, slide, offset), min_size=1, max_size=40))
    near_stamps = near([s for s in stamps if s is not None] or [0])
    watermarks = draw(st.lists(st.integers(LONG_MIN, LONG_MAX) | near_stamps, min_size=1, max_size=4))
    return assigner, stamps, [LONG_MIN, LONG_MAX, *watermarks]


@given(cases())
@settings(max_examples=200, deadline=None)
@example((TumblingEventTimeWindows(2, 0), [LONG_MIN, LONG_MIN + 1], [LONG_MIN]))  # Long.MIN_VALUE: no timestamp
@example((TumblingEventTimeWindows(10, 3), [LONG_MIN + 1, LONG_MIN + 9], [LONG_MIN]))  # ts - offset below Long.MIN
@example((TumblingEventTimeWindows(10, -3), [LONG_MAX, LONG_MAX - 9], [LONG_MIN]))  # ts - offset above Long.MAX
@example((SlidingEventTimeWindows(2**53 * 2, 2**53, 0), [0, 2**53 - 1, 2**53, -1], [LONG_MIN]))  # double rounding
@example((SlidingEventTimeWindows(LONG_MAX, LONG_MAX - 1, 5), [0, 4, 5, 6, LONG_MAX, LONG_MIN + 7], [0, LONG_MAX]))
def test_the_sql_geometry_is_the_core_assigners(case: Tuple[Any, List[Optional[int]], List[int]]) -> None:
    check(*case)


def test_small_cases_exhaustively() -> None:
    """Every timestamp in [-25, 25] for small sizes, slides and offsets (tumbling, overlapping, gapped sliding),
    at watermarks before, inside and after their windows."""
    for slide in range(1, 6):
        for offset in range(-(slide - 1), slide):
            for size in range(1, 13):
                assigner = (
                    TumblingEventTimeWindows(size, offset) if size == slide else SlidingEventTimeWindows(size, slide, offset)
                )
                check(assigner, [*range(-25, 26), None], [LONG_MIN, -7, 0, 4, 13])
