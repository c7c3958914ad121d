"""Where the foreachBatch executor spends its time: one steady micro-batch of ``bench_tumbling``, without a JVM.

Spark's Python workers run ``pyspark_flinkish`` code that a driver-side profiler cannot see, so this script
replays what the executor does for one micro-batch in this process, calling the package's own functions in the
order ``ForeachBatchDriver._step`` does (the Spark parts — Arrow transfer, shuffle, persist, collect — are
left out and reported by ``bench_tumbling.py`` as the difference to the wall time).

By default the pipeline is the ``foreach_batch`` engine's (``ColumnAggregate(Count(), Sum("value"))``): the
columnar path (``ForeachBatchDriver._step_columnar``):

1. Spark's ``columnar.prepared`` and ``columnar.statistics`` (here DuckDB: the same columns, and a hash of the key
   columns for the state partition);
2. ``ForeachBatchDriver._advance_watermarks`` (driver);
3. Spark's ``columnar.split``: the package's ``window_geometry`` SQL and ``on_time`` filter evaluated by DuckDB, the
   on-time rows pre-aggregated per (state partition, key, window);
4. ``columnar.columnar_function`` (``run_partition``) per state partition, with its heartbeat row;
5. the driver's sort and delivery to the sink (``ForeachBatchDriver._deliver``), then ``_commit``.

With ``--general`` (a Python trigger and ``ProcessWindowFunction``) or ``--python-agg`` (a Python
``AggregateFunction``: the batch-wise path) the stages are ``source_rows.dataframe_rows``, ``chain.route_partition``,
``_advance_watermarks``, ``keyed_partition.run_keyed_partition`` per keyed operator and state partition (with its
heartbeat row), then the same delivery and commit.

Batch 0 (fresh state) is run first without profiling; batch 1 (restores batch 0's state) is timed stage by
stage and profiled with pyinstrument (``pip install pyinstrument``) when it is installed.

``--driver`` instead profiles the driver side of the latency floor: a real Spark query over tiny micro-batches
(``bench_tumbling``'s tiny input), with pyinstrument started inside the ``foreachBatch`` callback thread for every
batch after the first two; it shows which Spark jobs and driver steps one micro-batch waits for.

    .venv/bin/python benchmarks/profile_foreach_batch.py [--general | --python-agg] [--batch-rows 200000] [--keys 10000]
    .venv/bin/python benchmarks/profile_foreach_batch.py --driver
    .venv/bin/python benchmarks/profile_foreach_batch.py --stateful

``--stateful`` profiles the applyInPandasWithState executor's Python work the same way: ``stateful.route``, then
``stateful.keyed_function`` once per key with data (and per key whose timeout expired), with a dictionary
standing in for Spark's ``GroupState``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from typing import Any, Dict, List, Tuple

import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_tumbling as bench

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.datastream.aggregates import ColumnAggregate, Count, Sum
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows
from pyspark_flinkish.spark import chain as spark_chain
from pyspark_flinkish.spark import columnar
from pyspark_flinkish.spark import keyed_partition as spark_keyed
from pyspark_flinkish.spark import rows as spark_rows
from pyspark_flinkish.spark import source_rows as spark_source_rows
from pyspark_flinkish.spark.driver import ForeachBatchDriver
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment


class _FakeStreamingFrame:
    """Stands in for the streaming DataFrame of ``bench_tumbling``'s Parquet input: ``from_dataframe`` reads its
    ``isStreaming``, ``schema`` and ``columns``; ``mapInPandas`` hands back the function the executors would run."""

    columns = ("key", "ts", "value", "seq")
    isStreaming = True  # noqa: N815 (Spark's name)

    @property
    def schema(self) -> Any:
        from pyspark.sql.types import LongType, StructField, StructType  # plain Python objects, no JVM

        return StructType([StructField(c, LongType()) for c in self.columns])

    def mapInPandas(self, fn: Any, schema: str) -> Any:  # noqa: N802 (Spark's name)
        return fn


def _input_frames(batch_rows: int, keys: int, disorder_ms: int, seed: int) -> List[pd.DataFrame]:
    """Two consecutive batches of the benchmark's input (same generator, same parameters as ``--events 2M``)."""
    with tempfile.TemporaryDirectory() as d:
        bench.generate(d, 2 * batch_rows, keys, batch_rows, disorder_ms, seed)
        import pyarrow.parquet as pq

        return [pq.read_table(os.path.join(d, f"batch-{i:06d}.parquet")).to_pandas() for i in range(2)]


def _duckdb() -> Any:
    import duckdb  # the test extra's; reads the window geometry's SQL as Spark does

    return duckdb.connect()


def _columnar_prepared(cw: columnar.ColumnarWindow, pdf: pd.DataFrame, parts: int) -> pd.DataFrame:
    """What ``columnar.prepared`` makes Spark compute, for a ``LongType`` timestamp column: ``__ts``, ``__k<i>``,
    ``__ord`` (the order columns), ``__part`` and ``__sp`` (DuckDB's ``hash`` stands in for Spark's ``xxhash64``:
    another spread of the keys over the state partitions, the same in every batch)."""
    assert not cw.timestamp_is_time, "bench_tumbling's ts is a LongType column"
    assert not cw.partition_column
    assert cw.order_columns
    keys = ", ".join(f"{c} AS __k{i}" for i, c in enumerate(cw.key_columns))
    order = ", ".join(f"CAST({c} AS BIGINT)" for c in cw.order_columns)
    spread = f"CAST(hash({', '.join(cw.key_columns)}) % {parts} AS INTEGER)"
    return (
        _duckdb()
        .execute(
            f"SELECT {', '.join(cw.columns)}, CAST({cw.timestamp_column} AS BIGINT) AS __ts, {keys}, [{order}] AS __ord,"
            f" CAST(NULL AS VARCHAR) AS __part, {spread} AS __sp FROM pdf"
        )
        .df()
    )


def _columnar_split(cw: columnar.ColumnarWindow, prepared: pd.DataFrame, watermark: int, ordered: bool = False) -> Any:
    """What ``columnar.split`` makes Spark compute (tumbling windows): the package's ``window_geometry`` SQL and its
    ``on_time`` filter, evaluated by DuckDB; on-time rows pre-aggregated per (state partition, key, window), in
    DuckDB's (threaded, so varying) order or, ``ordered``, sorted (two runs' outputs then compare in order)."""
    assert cw.slide == cw.size, "the profile's pipeline has tumbling windows"
    geometry = columnar.window_geometry("__ts", cw.size, cw.slide, cw.offset)
    sql = "SELECT * FROM prepared"
    for name, expression in geometry.columns:  # in order, as ``columnar.with_geometry`` adds them
        sql = f"SELECT *, {expression} AS {name} FROM ({sql})"
    keys = ", ".join(f"__k{i}" for i in range(len(cw.key_columns)))
    aggs = []
    for i, (op, field) in enumerate(cw.parts):
        if op == "count":
            aggs.append(f"count(*) AS __a{i}")
        elif op == "sum":
            aggs.append(f"CAST(sum(coalesce({field}, 0)) AS BIGINT) AS __a{i}")
        else:
            kind = "DOUBLE" if prepared[field].dtype.kind == "f" else "BIGINT"
            aggs.append(f"CAST({op}({field}) AS {kind}) AS __a{i}")
    on_time = geometry.on_time(watermark)
    con = _duckdb()
    con.register("prepared", prepared)
    partials = con.execute(
        f"SELECT __sp, {keys}, {geometry.latest} AS __start, {', '.join(aggs)}, false AS __hb FROM ({sql})"
        f" WHERE {on_time} GROUP BY __sp, {keys}, __start{f' ORDER BY __sp, {keys}, __start' if ordered else ''}"
    ).df()
    others = con.execute(f"SELECT {', '.join(prepared.columns)} FROM ({sql}) WHERE NOT {on_time}").df()
    return partials, others


def main() -> int:
    p = argparse.ArgumentParser(description="profile one micro-batch of the foreachBatch executor (no JVM)")
    p.add_argument("--batch-rows", type=int, default=200_000)
    p.add_argument("--keys", type=int, default=10_000)
    p.add_argument("--disorder-ms", type=int, default=5_000)
    p.add_argument("--general", action="store_true", help="the general path (Python trigger + ProcessWindowFunction)")
    p.add_argument("--python-agg", action="store_true", help="a Python AggregateFunction: the batch-wise path")
    p.add_argument("--count-trigger", type=int, default=3)
    p.add_argument("--arrow-rows", type=int, default=10_000, help="rows per pandas frame (Spark's maxRecordsPerBatch)")
    p.add_argument("--html", default=None, help="also write pyinstrument's HTML report here")
    p.add_argument("--no-profiler", action="store_true", help="stage timings only (pyinstrument adds overhead per call)")
    p.add_argument("--dump", default=None, help="write the sink's values (repr, in delivery order) to this file; the split's rows then sorted")
    p.add_argument("--stateful", action="store_true", help="the applyInPandasWithState executor instead")
    p.add_argument("--driver", action="store_true", help="profile the driver over tiny micro-batches on Spark")
    args = p.parse_args()
    if args.driver:
        return profile_driver(args)
    if args.stateful:
        return profile_stateful(args)

    frames = _input_frames(args.batch_rows, args.keys, args.disorder_ms, 42)
    env = SparkStreamExecutionEnvironment(spark=None, state_partitions=2)
    stream = env.from_dataframe(
        _FakeStreamingFrame(),
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(args.disorder_ms)),
        timestamp_column="ts",
        order_columns=["seq"],
    )
    windowed = stream.key_by(lambda r: r.key).window(TumblingEventTimeWindows.of(Duration.of_minutes(1)))
    out: List[Any] = []
    if args.general:
        windowed.trigger(bench.EarlyCountEventTimeTrigger(args.count_trigger)).process(
            bench.CountSumProcess(), output_type=Types.TUPLE([Types.LONG()] * 4 + [Types.BOOLEAN()])
        ).add_sink(out.append)
    else:
        agg = bench.CountSum() if args.python_agg else ColumnAggregate(Count(), Sum("value"))
        windowed.aggregate(agg, bench.WithWindow(), output_type=Types.TUPLE([Types.LONG()] * 4)).add_sink(out.append)
    checkpoint = tempfile.mkdtemp(prefix="flinkish-profile-")
    driver = ForeachBatchDriver(env, list(env._sinks), checkpoint, None)
    src_t = next(t for t in driver.plan.transformations if t.kind == "source")
    convert = spark_source_rows.dataframe_rows(src_t, driver.plan.nodes[driver.plan.transformations.index(src_t)].uid)
    cw = driver.columnar
    print(f"path: {'columnar (spark/columnar.py)' if cw is not None else 'route + keyed stage (spark/chain.py, keyed_partition.py)'}")

    cpu: Dict[str, float] = {}  # CPU-s of this process per stage (the wall time counts other processes' load too)
    cpu_at = [time.process_time()]

    def lap(timings: Dict[str, float], name: str, t0: float) -> float:
        t1, c1 = time.perf_counter(), time.process_time()
        timings[name] = timings.get(name, 0.0) + (t1 - t0)
        cpu[name] = cpu.get(name, 0.0) + (c1 - cpu_at[0])
        cpu_at[0] = c1
        return t1

    def deliver(outputs: List[pd.DataFrame], batch_id: int, timings: Dict[str, float], t: float) -> None:
        """The driver's part after the keyed stage: sort and hand the sink its values, record manifests, commit."""
        plan = driver.exec_plan
        everything = pd.concat(outputs)
        records = everything[(everything["kind"] == "rec") & everything["dest"].isin(plan.sinks)]
        rows = [{"dest": d, "value": v, "ord": o} for d, v, o in zip(records["dest"], records["value"], records["ord"])]
        rows.sort(key=lambda r: list(r["ord"]))
        for sink_index in plan.sinks:
            driver._deliver(driver.plan.transformations[sink_index], [r for r in rows if r["dest"] == sink_index], batch_id)
        t = lap(timings, "5 driver: sort + sink delivery", t)
        metric = everything[everything["kind"] == "metric"]  # the keyed partitions' new manifests
        driver._record_manifests([(0, int(d), json.loads(v)) for d, v in zip(metric["dest"], metric["value"])])
        driver._commit(batch_id)
        lap(timings, "6 driver: commit", t)

    def open_batch(batch_id: int, timings: Dict[str, float]) -> Tuple[float, Any, Any, int, int, int]:
        """``ForeachBatchDriver._open`` and what a batch starts from: (lap time, manifests, plan, state partitions,
        processing time, the watermark before the batch)."""
        t, cpu_at[0] = time.perf_counter(), time.process_time()
        driver._open(batch_id)
        opened = (driver.manifests(), driver.exec_plan, driver.partitions, env.clock.now(), driver._wm_now())
        return (lap(timings, "0 driver: open", t), *opened)

    def one_batch(batch_id: int, pdf: pd.DataFrame, timings: Dict[str, float]) -> None:
        """``ForeachBatchDriver._step`` (route, watermarks, keyed stage) and the driver's delivery."""
        t, manifests, plan, parts, now, wm_prev = open_batch(batch_id, timings)
        source_index = {plan.nodes[i].uid: i for i in plan.sources}
        chunks = [pdf.iloc[i : i + args.arrow_rows] for i in range(0, len(pdf), args.arrow_rows)]
        source_rows = list(convert(iter(chunks)))
        t = lap(timings, "1 source rows (dataframe_rows.convert)", t)
        routed = pd.concat(list(spark_chain.route_partition(plan, iter(source_rows), wm_prev, now, parts, source_index)))
        t = lap(timings, "2 route (route_partition)", t)
        stats = routed[routed["kind"] == "stat"].to_dict("records")
        driver._advance_watermarks(stats)
        wm_new = driver._wm_now()
        t = lap(timings, "3 driver: watermarks", t)
        outputs = [routed[routed["kind"] == "rec"]]
        for level in plan.levels:
            nodes = plan.keyed_at(level)
            pending = pd.concat(outputs)
            pending = pending[pending["dest"].isin(nodes)]
            keyed_out = []
            for node in nodes:
                for sp in range(parts):
                    group = pending[(pending["dest"] == node) & (pending["sp"] == sp)]
                    hb = {c: None for c in spark_rows.ROW_COLUMNS} | {"kind": "hb", "dest": node, "sp": sp}
                    for layout in plan.typed_columns():  # never null, as the driver's heartbeat rows
                        hb |= dict(zip(layout.columns, layout.placeholders))
                    group = pd.concat([group, pd.DataFrame([hb])], ignore_index=True)
                    keyed_out.append(
                        spark_keyed.run_keyed_partition(
                            plan, group, wm_prev, wm_new, now, parts, driver.state_root, batch_id, manifests
                        )
                    )
            outputs.append(pd.concat(keyed_out))
        t = lap(timings, "4 keyed (run_keyed_partition)", t)
        deliver(outputs[1:], batch_id, timings, t)

    def one_columnar_batch(batch_id: int, pdf: pd.DataFrame, timings: Dict[str, float]) -> None:
        """``ForeachBatchDriver._step_columnar``: Spark's SQL (``columnar.prepared``, ``statistics``, ``split``) is
        replayed by DuckDB on the same window-geometry SQL; the keyed stage is ``columnar.columnar_function``."""
        assert cw is not None
        t, manifests, plan, parts, now, wm_prev = open_batch(batch_id, timings)
        prepared = _columnar_prepared(cw, pdf, parts)
        stats = [
            {"kind": "stat", "part": "", "stat_max": int(prepared["__ts"].max()), "stat_count": int(prepared["__ts"].count()),
             "stat_batch": -1, "dest": cw.source}
        ]
        t = lap(timings, "1 Spark's prepared + statistics (DuckDB)", t)
        driver._advance_watermarks(stats)
        wm_new = driver._wm_now()
        t = lap(timings, "2 driver: watermarks", t)
        partials, others = _columnar_split(cw, prepared, wm_prev[cw.window], bool(args.dump))
        t = lap(timings, "3 Spark's split + pre-aggregation (DuckDB)", t)
        function = columnar.columnar_function(
            cw, plan, wm_prev[cw.window], wm_new[cw.window], now, parts, driver.state_root, batch_id, manifests
        )
        keyed_out = []
        for sp in range(parts):
            heartbeat = pd.DataFrame([{c: (sp if c == "__sp" else c == "__hb" or None) for c in partials.columns}])
            group = pd.concat([partials[partials["__sp"] == sp], heartbeat], ignore_index=True)
            keyed_out.append(function(group, others[others["__sp"] == sp]))
        t = lap(timings, "4 keyed (columnar.run_partition)", t)
        deliver(keyed_out, batch_id, timings, t)

    step = one_columnar_batch if cw is not None else one_batch
    warm: Dict[str, float] = {}
    step(0, frames[0], warm)
    timings: Dict[str, float] = {}
    profiler = None
    try:
        if args.no_profiler:
            raise ImportError
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.001)
    except ImportError:
        print("(no pyinstrument profile: stage timings only)")
    if profiler is not None:
        profiler.start()
    cpu.clear()
    t0, c0 = time.perf_counter(), time.process_time()
    step(1, frames[1], timings)
    total, total_cpu = time.perf_counter() - t0, time.process_time() - c0
    if profiler is not None:
        profiler.stop()
    n = len(frames[1])
    print(
        f"\nbatch 1: {n:,} events, {len(out):,} windows emitted so far, {total:.2f} s in one process "
        f"= {n / total:,.0f} events/s on one core ({1e6 * total / n:.1f} us/event), {total_cpu:.2f} CPU-s "
        f"(load average {os.getloadavg()[0]:.1f})"
    )
    for name, s in sorted(timings.items()):
        print(
            f"  {name:45s} {s:7.2f} s  {100 * s / total:5.1f} %  {1e6 * s / n:6.1f} us/event  {cpu[name]:6.2f} CPU-s"
        )
    if args.dump:
        with open(args.dump, "w") as f:
            f.writelines(f"{v!r}\n" for v in out)
    if profiler is not None:
        print(profiler.output_text(unicode=False, color=False, show_all=False, short_mode=False))
        if args.html:
            with open(args.html, "w") as f:
                f.write(profiler.output_html())
    return 0


class _FakeGroupState:
    """Spark's ``GroupState`` for one key, backed by a dict entry."""

    def __init__(self, store: Dict[Any, Any], key: Any, watermark_ms: int) -> None:
        self.store, self.key, self.watermark_ms = store, key, watermark_ms

    @property
    def exists(self) -> bool:
        return self.key in self.store

    @property
    def get(self) -> Any:
        return self.store[self.key][0]

    def update(self, value: Any) -> None:
        self.store[self.key] = (value, self.store.get(self.key, (None, None))[1])

    def remove(self) -> None:
        self.store.pop(self.key, None)

    def setTimeoutTimestamp(self, ts: int) -> None:  # noqa: N802 (Spark's name)
        self.store[self.key] = (self.store[self.key][0], ts)

    def getCurrentWatermarkMs(self) -> int:  # noqa: N802 (Spark's name)
        return self.watermark_ms


def profile_stateful(args: argparse.Namespace) -> int:
    from pyspark_flinkish.spark import stateful

    frames = _input_frames(args.batch_rows, args.keys, args.disorder_ms, 42)
    env = SparkStreamExecutionEnvironment(spark=None, state_partitions=2, backend="apply_in_pandas_with_state")
    stream = env.from_dataframe(
        _FakeStreamingFrame(),
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(args.disorder_ms)),
        timestamp_column="ts",
        order_columns=["seq"],
    )
    windowed = stream.key_by(lambda r: r.key).window(TumblingEventTimeWindows.of(Duration.of_minutes(1)))
    if args.general:
        s = windowed.trigger(bench.EarlyCountEventTimeTrigger(args.count_trigger)).process(
            bench.CountSumProcess(), output_type=Types.TUPLE([Types.LONG()] * 4 + [Types.BOOLEAN()])
        )
    else:
        s = windowed.aggregate(bench.CountSum(), bench.WithWindow(), output_type=Types.TUPLE([Types.LONG()] * 4))
    s.add_sink(lambda v: None)
    builder = stateful.StatefulQueryBuilder(env, sinks=list(env._sinks))
    plan = stateful._for_executors(builder.plan)
    info = builder.info
    source_t = builder.plan.transformations[info["source"]]
    source_uid = builder.plan.nodes[info["source"]].uid
    convert = spark_source_rows.dataframe_rows(source_t, source_uid)
    fn = stateful.keyed_function(plan, info["keyed"], info["delay"], 0)
    store: Dict[Any, Any] = {}
    spark_wm = 0
    outputs = 0

    def one_batch(pdf: pd.DataFrame, timings: Dict[str, float]) -> int:
        nonlocal spark_wm, outputs
        chunks = [pdf.iloc[i : i + args.arrow_rows] for i in range(0, len(pdf), args.arrow_rows)]
        t = time.perf_counter()
        source_rows = list(convert(iter(chunks)))
        t1 = time.perf_counter()
        timings["1 source rows (dataframe_rows.convert)"] = t1 - t
        routed = pd.concat(list(stateful.route(plan, iter(source_rows), 0, source_uid)))
        t2 = time.perf_counter()
        timings["2 route (stateful.route)"] = t2 - t1
        carriers = routed[routed["kind"] == "carrier"]
        records = routed[routed["kind"] == "rec"]
        groups = {k: g for k, g in records.groupby("key", sort=False)}
        due = [k for k, (_, timeout) in store.items() if timeout is not None and spark_wm > timeout and k not in groups]
        t3 = time.perf_counter()
        timings["3 group by key (Spark's job, here pandas)"] = t3 - t2
        empty = records.iloc[:0]
        calls = 0
        for key in list(groups) + due:
            frame = groups.get(key, empty)
            for out in fn((key,), iter([frame[["ord", "value", "ts"]]]), _FakeGroupState(store, key, spark_wm)):
                outputs += len(out)
            calls += 1
        timings["4 keyed_function (one call per key)"] = time.perf_counter() - t3
        top = int(carriers["__et"].max().value // 1_000_000)
        spark_wm = max(spark_wm, top - info["delay"])  # Spark's watermark for the next batch
        return calls

    one_batch(frames[0], {})
    timings: Dict[str, float] = {}
    profiler = None
    try:
        if args.no_profiler:
            raise ImportError
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.001)
        profiler.start()
    except ImportError:
        print("(no pyinstrument profile: stage timings only)")
    t0 = time.perf_counter()
    calls = one_batch(frames[1], timings)
    total = time.perf_counter() - t0
    if profiler is not None:
        profiler.stop()
    n = len(frames[1])
    print(
        f"\nbatch 1: {n:,} events, {calls:,} keyed_function calls, {outputs:,} output rows so far, {total:.2f} s "
        f"in one process = {n / total:,.0f} events/s on one core ({1e6 * total / n:.1f} us/event)"
    )
    for name, sec in sorted(timings.items()):
        print(f"  {name:45s} {sec:7.2f} s  {100 * sec / total:5.1f} %  {1e6 * sec / n:6.1f} us/event")
    if profiler is not None:
        print(profiler.output_text(unicode=False, color=False, show_all=False))
    return 0


def profile_driver(args: argparse.Namespace) -> int:
    from pyinstrument import Profiler

    from pyspark_flinkish.spark import session as flinkish_session

    profiler = Profiler(interval=0.001)
    original = ForeachBatchDriver.__call__
    durations: List[float] = []

    def profiled(self: Any, df: Any, batch_id: int) -> None:
        t = time.perf_counter()
        if batch_id >= 2:
            profiler.start()
        try:
            original(self, df, batch_id)
        finally:
            if batch_id >= 2:
                profiler.stop()
            durations.append(time.perf_counter() - t)

    ForeachBatchDriver.__call__ = profiled  # type: ignore[method-assign]
    work = tempfile.mkdtemp(prefix="flinkish-profile-driver-")
    bench.generate_tiny(os.path.join(work, "tiny"), 12, 100, args.keys, 43)
    spark = flinkish_session("profile_driver", shuffle_partitions=2, spark__default__parallelism="2")
    spark.sparkContext.setLogLevel("ERROR")
    ns = argparse.Namespace(disorder_ms=args.disorder_ms, timeout_s=600, count_trigger=args.count_trigger)
    bench.run_engine("native", spark, os.path.join(work, "tiny"), ns, os.path.join(work, "ck"))  # warm-up
    engine = "foreach_batch_general" if args.general else "foreach_batch"
    query = bench.run_engine(engine, spark, os.path.join(work, "tiny"), ns, os.path.join(work, "ck"))[0]
    progress = bench._progress(query)
    spark.stop()
    print("foreachBatch callback s per batch:", " ".join(f"{d:.2f}" for d in durations))
    print("triggerExecution ms per batch:   ", " ".join(str(p["ms"]) for p in progress))
    print(profiler.output_text(unicode=False, color=False, show_all=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
