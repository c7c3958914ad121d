"""The columnar path (``spark/columnar.py``) gives exactly the general path's results.

A DataFrame source with out-of-order, late and within-lateness events, keyed by plain fields, into tumbling or
sliding windows with a ``ColumnAggregate``: the same query runs with ``vectorize=True`` (Spark pre-aggregates
on-time rows) and ``vectorize=False`` (every element through the per-element WindowOperator, which the
conformance suite ties to Flink), and every main and late output must agree.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from pyspark_flinkish.common import Duration, WatermarkStrategy
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.core.errors import StateError
from pyspark_flinkish.datastream import OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.aggregates import ColumnAggregate, Count, Max, Min, Sum
from pyspark_flinkish.datastream.functions import ProcessWindowFunction
from pyspark_flinkish.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows

pytestmark = pytest.mark.spark


class WithWindow(ProcessWindowFunction):  # type: ignore[type-arg]
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        w = context.window()
        for result in elements:
            yield (key, w.start, w.end, result, context.current_watermark())


def _write_batches(directory: Path, seed: int) -> None:
    rng = random.Random(seed)
    directory.mkdir()
    seq, t = 0, 0
    for i in range(6):
        rows = []
        for _ in range(60):
            t += rng.randint(0, 6)
            ts = t - rng.randint(0, 8)
            if rng.random() < 0.12:
                ts -= rng.randint(20, 150)  # late, some within the allowed lateness
            v = None if rng.random() < 0.05 else rng.randint(-50, 50)
            rows.append({"seq": seq, "k": rng.randint(0, 5), "region": rng.choice(["eu", "us"]), "ts": ts, "v": v})
            seq += 1
        path = directory / f"batch-{i:03d}.json"
        path.write_text("\n".join(json.dumps(r) for r in rows))
        os.utime(path, (1_000 + i, 1_000 + i))


def _run(
    spark: Any, src: Path, ck: Path, vectorize: bool, sliding: bool, size_ms: int = 20, progress: Any = None
) -> Tuple[List[Any], List[Any], bool, List[Any]]:
    df = spark.readStream.schema("seq long, k long, region string, ts long, v long").option("maxFilesPerTrigger", 1).json(str(src))
    # processing time 0 and a 500 ms horizon: the later event times count as far-future records
    env = StreamExecutionEnvironment.get_execution_environment(
        spark, vectorize=vectorize, clock=ManualClock(0), future_horizon_ms=500
    )
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5))
    stream = env.from_dataframe(df, strategy, timestamp_column="ts", order_columns=["seq"])
    late = OutputTag("late")
    if sliding:
        keyed = stream.key_by(lambda r: (r.k, r["region"]))
        assigner = SlidingEventTimeWindows.of(Duration.of_millis(30), Duration.of_millis(10), Duration.of_millis(-3))
    else:
        keyed = stream.key_by(lambda r: r.k)
        assigner = TumblingEventTimeWindows.of(Duration.of_millis(size_ms))
    windowed = (
        keyed.window(assigner)
        .allowed_lateness(Duration.of_millis(25))
        .side_output_late_data(late)
        .aggregate(ColumnAggregate(Count(), Sum("v"), Min("v"), Max("v")), WithWindow())
    )
    main: List[Any] = []
    late_out: List[Any] = []
    windowed.add_sink(main.append)
    windowed.get_side_output(late).map(lambda r: (r.seq, r.ts)).add_sink(late_out.append)
    handle = env.execute("columnar", checkpoint_location=str(ck), trigger={"availableNow": True}, progress=progress)
    handle.await_termination()
    window = [next(o for o in p["operators"].values() if o["keyed"]) for p in handle.recent_progress()]  # per batch
    return main, late_out, handle.driver.columnar is not None, window


@pytest.mark.parametrize("sliding", [False, True], ids=["tumbling", "sliding"])
def test_columnar_path_equals_general_path(spark: Any, tmp_path: Path, sliding: bool) -> None:
    src = tmp_path / "in"
    _write_batches(src, seed=7 if sliding else 3)
    progress_v: List[Any] = []
    progress_g: List[Any] = []
    main_v, late_v, used, metrics_v = _run(spark, src, tmp_path / "ck-v", True, sliding, progress=progress_v.append)
    main_g, late_g, used_g, metrics_g = _run(spark, src, tmp_path / "ck-g", False, sliding, progress=progress_g.append)
    assert used and not used_g
    assert main_v and late_v, "the input must produce window results and late records"
    # firings caused by late elements within the allowed lateness (at a watermark past the window's end)
    assert any(r[4] >= r[2] and r[4] < 2**62 for r in main_g)
    assert sorted(map(repr, main_v)) == sorted(map(repr, main_g))
    assert sorted(late_v) == sorted(late_g)
    # the window's metrics per batch are the same on both paths, and add up to what the sinks received
    names = ("numRecordsIn", "numRecordsOut", "numWindowsFired", "numWindowsCleaned", "numLateRecordsToSideOutput",
             "numLateRecordsDropped", "openWindows", "numKeys", "currentOutputWatermark")
    assert [{n: m[n] for n in names} for m in metrics_v] == [{n: m[n] for n in names} for m in metrics_g]
    assert len(metrics_v) == 6 and sum(m["numRecordsIn"] for m in metrics_v) == 360
    assert sum(m["numLateRecordsToSideOutput"] for m in metrics_v) == len(late_v)
    assert sum(m["numWindowsFired"] for m in metrics_v) == len(main_v)  # one result per firing
    assert sum(m["numRecordsOut"] for m in metrics_v) == len(main_v) + len(late_v)
    assert metrics_v[-1]["openWindows"] > 0 and all(m["stateSizeBytes"] > 0 for m in metrics_v + metrics_g)
    # far-future records are counted alike on both paths (Spark's aggregation there, the route here)
    future_v = [p["future_records"] for p in progress_v]
    assert future_v == [p["future_records"] for p in progress_g]
    assert future_v[0] == {} and future_v[-1]["DataFrame"][""] > 0


def test_a_checkpoint_keeps_the_state_layout_it_was_started_with(spark: Any, tmp_path: Path, caplog: Any) -> None:
    """vectorize shapes the state files: a restart with another setting keeps the checkpoint's and says so."""
    src = tmp_path / "in"
    _write_batches(src, seed=11)
    _, _, used_a, _ = _run(spark, src, tmp_path / "ck", True, False)
    with caplog.at_level("WARNING", logger="pyspark_flinkish.spark"):
        main_b, late_b, used_b, _ = _run(spark, src, tmp_path / "ck", False, False)
    assert used_a and used_b
    assert "vectorize=True" in caplog.text
    assert main_b == [] and late_b == []  # nothing new to read: the restart resumed, nothing was recomputed


def test_a_changed_window_on_an_existing_checkpoint_is_refused(spark: Any, tmp_path: Path) -> None:
    """State written by a 20 ms window is never read as a 30 ms window's, nor silently dropped."""
    src = tmp_path / "in"
    _write_batches(src, seed=5)
    _run(spark, src, tmp_path / "ck", True, False, size_ms=20)
    with pytest.raises(StateError, match=r"TumblingEventTimeWindows\(20, 0\).*TumblingEventTimeWindows\(30, 0\)"):
        _run(spark, src, tmp_path / "ck", True, False, size_ms=30)


def test_the_columnar_window_geometry_is_the_core_assigners(spark: Any) -> None:
    """The columnar path computes windows in Spark SQL (``columnar.window_geometry``: ``with_geometry``,
    ``window_starts``, ``on_time``); the core's assigners are the reference. One Spark job over every (size, slide,
    offset) case below and timestamps around zero (Flink's floorMod) and next to ``Long.MIN_VALUE`` /
    ``Long.MAX_VALUE``, compared window by window, with the on-time test against the core's lateness rule (a row is
    on time when none of its windows' ``max_timestamp()`` is at or below the watermark). A row the core refuses (no
    timestamp, a window outside Java's ``long``) must not fit, so that the core gets it element by element.
    ``jvm-free-tests/spark/test_columnar_geometry.py`` evaluates the same SQL against the core on random cases."""
    from pyspark.sql import functions as F

    from pyspark_flinkish.core.javamath import LONG_MAX, LONG_MIN
    from pyspark_flinkish.core.windows import TimeWindow
    from pyspark_flinkish.spark.columnar import window_geometry, window_starts, with_geometry

    # tumbling with a negative offset, sliding with slides that do and do not divide the size, a gap (slide > size):
    # the JVM-free property test covers every small case against the core; here Spark must evaluate as DuckDB does
    cases = [(5, 5, -2), (10, 3, 2), (10, 5, 4), (4, 6, 1), (7, 2, -1)]
    # found by the JVM-free property test against the SQL this path had before (Spark's double division, ts - offset
    # and first + size - 1 out of range, Long.MIN_VALUE taken for a timestamp)
    cases += [(2, 2, 0), (10, 10, 3), (2**54, 2**53, 0), (LONG_MAX, LONG_MAX - 1, 5)]
    extremes = [LONG_MIN, LONG_MIN + 1, LONG_MIN + 9, LONG_MAX, LONG_MAX - 9, 2**53 - 1, 2**53, LONG_MAX - 2**54 + 1]
    timestamps = list(range(-23, 24)) + [-1_000_003, 1_000_003] + extremes
    watermarks = [4, LONG_MIN]
    base = spark.createDataFrame([(t,) for t in timestamps], "ts long")
    frames = []
    for i, (size, slide, offset) in enumerate(cases):
        geometry = window_geometry("ts", size, slide, offset if slide != size else offset % size)
        rows = with_geometry(base.select(F.lit(i).alias("case"), "ts"), geometry)
        timely = [F.expr(geometry.on_time(w)).alias(f"on_time_{n}") for n, w in enumerate(watermarks)]
        # one row per window of a row that fits (a row that does not: null starts, never read)
        frames.append(rows.select("case", "ts", F.expr(geometry.fits).alias("fits"), *timely, window_starts(geometry).alias("start")))
    union = frames[0]
    for f in frames[1:]:
        union = union.unionByName(f)
    starts_of: Dict[Tuple[int, int], List[int]] = {}
    timely_of: Dict[Tuple[int, int], Tuple[bool, List[bool]]] = {}
    for r in union.collect():
        timely_of[(r["case"], r["ts"])] = (r["fits"], [r[f"on_time_{n}"] for n in range(len(watermarks))])
        if r["fits"]:
            starts_of.setdefault((r["case"], r["ts"]), []).append(r["start"])
    for i, (size, slide, offset) in enumerate(cases):
        assigner = (
            TumblingEventTimeWindows.of(Duration.of_millis(size), Duration.of_millis(offset))
            if slide == size
            else SlidingEventTimeWindows.of(Duration.of_millis(size), Duration.of_millis(slide), Duration.of_millis(offset))
        )
        for t in timestamps:
            fits, on_time = timely_of[(i, t)]
            try:
                windows: List[TimeWindow] = list(assigner.assign_windows(None, t, None))
            except ValueError:  # no timestamp, or a window outside Java's long: the core's to refuse
                assert not fits and not any(on_time), (size, slide, offset, t)
                continue
            assert fits == bool(windows), (size, slide, offset, t)
            assert sorted(starts_of.get((i, t), [])) == sorted(w.start for w in windows), (size, slide, offset, t)
            assert all(w.end - w.start == size for w in windows)
            for watermark, timely in zip(watermarks, on_time):
                expected = bool(windows) and all(w.max_timestamp() > watermark for w in windows)
                assert timely == expected, (size, slide, offset, t, watermark)
