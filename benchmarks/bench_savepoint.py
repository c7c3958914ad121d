"""The pieces of the suite's part 8 (``run_all.py --parts 8``): savepoint and restore of K keys (issue 13), against
native Spark's state data source reader and restart on the same keys.

The input and the jobs are part 7's (``bench_state_growth.py``): K idle keys (one event each, in load batches of at
most 100,000 events), then a few small batches of 10,000 events on 10 keys.

* ``package``: ``key_by(key).process(IdleKeys()).uid("idle_keys")`` in ``state_partitions`` partitions (the
  shuffle partitions, 2). The job reads a ``MicroBatchSource(end_of_input=False)`` (as when savepoints refused file
  streams, so that figures compare with earlier runs) whose micro-batches are
  the rows of part 7's files as dicts (the same elements ``IdleKeys`` sees in part 7), one file per micro-batch.
  Timed separately: the load (``execute`` writes the replay files, then ``process_all_available``);
  ``stop_with_savepoint`` (and, inside it, ``take_savepoint``: writing the savepoint after the query stopped) and
  the savepoint's size; ``read_state(savepoint).agg(count, sum)`` (and the same on the stopped job's checkpoint);
  ``execute(..., from_savepoint=...)`` into a new checkpoint with ``restore_partitions`` state partitions (a
  rescale; inside it ``restore_savepoint``, the split job), then each small batch: Spark's ``triggerExecution``,
  and the wall time from the ``execute`` call to the end of the batch's work (the ``progress`` callback the
  driver calls at the end of each batch). The restored job's source holds the load batches and the small batches;
  it replays the small ones only (the savepoint's position).
* ``native_hdfs`` / ``native_rocksdb``: part 7's ``groupBy(key).count()`` (HDFS-backed store; RocksDB with
  changelog checkpointing), fed the same files one per micro-batch, then stopped. Spark has no savepoint: timed are
  Spark's state data source reader (``spark.read.format("statestore").load(checkpoint).agg(count, sum)``) and a
  restart on the same checkpoint with the first small file already there (``start`` until it returns, then the
  wall time to the end of ``processAllAvailable``), then the next small batches one at a time.

Results before figures: the savepoint and the stopped job's checkpoint must read as K keys summing to the load's
events; after the restore the emitted ``(key, count)`` rows must be the ones computed from the input, ``numKeys``
must be K, the new checkpoint must have ``restore_partitions`` state partitions and ``read_state`` on it must give K
keys summing to every event. For the native engines, the state reader must give K keys summing to the load's events
before the restart, and part 7's checks after it.

The breakdowns inside ``stop_with_savepoint`` and ``execute`` are taken by wrapping ``take_savepoint`` and
``restore_savepoint`` with a timer for the duration of the call (the package's code is not changed).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
import uuid
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import bench_state_growth as bsg
import pyarrow.parquet as pq

from pyspark_flinkish.common import Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, StreamExecutionEnvironment

ENGINES = ["package", "native_hdfs", "native_rocksdb"]


def generate(directory: str, keys: int, load_rows: int, small_batches: int, batch_events: int, touched: int,
             seed: int) -> bsg.GrowthInput:
    """Part 7's input: ``keys`` idle keys in load files of at most ``load_rows`` events, then ``small_batches``."""
    return bsg.generate(directory, keys, -(-keys // load_rows), small_batches, batch_events, touched, seed)


def _elements(inp: bsg.GrowthInput, name: str) -> List[Dict[str, int]]:
    """A file's rows as the dicts ``IdleKeys`` reads (``value["key"]``, ``value["mark"]``), in ``seq`` order."""
    return pq.read_table(os.path.join(inp.staging, name)).to_pylist()  # type: ignore[no-any-return]


def _size(root: str) -> int:
    return sum(size for size, _ in bsg.snapshot(root).values())


@contextlib.contextmanager
def _timed(module: Any, name: str, into: Dict[str, float], label: Optional[str] = None) -> Iterator[None]:
    """While inside: ``module.name`` is wrapped so that each call adds its wall seconds to ``into[label or name]``
    (a class is timed by wrapping it where it is looked up; a method by wrapping it on its class)."""
    original = getattr(module, name)
    own = name in vars(module)  # a method of a base class is put back by removing the wrapper
    label = label or name

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            into[label] = into.get(label, 0.0) + time.perf_counter() - t

    setattr(module, name, wrapper)
    try:
        yield
    finally:
        if own:
            setattr(module, name, original)
        else:
            delattr(module, name)


def _first_trigger(query: Any) -> Optional[Tuple[float, float]]:
    """The query's first batch: when its trigger started (epoch seconds) and its ms before ``addBatch`` (Spark's
    ``latestOffset``, ``walCommit``, ``getBatch`` and ``queryPlanning``), from Spark's progress."""
    from datetime import UTC, datetime

    progress = query.recentProgress
    if not progress:
        return None
    first = progress[0]
    at = datetime.strptime(first["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
    ms = first.get("durationMs") or {}
    return at, float(sum(ms.get(k, 0) for k in ("latestOffset", "walCommit", "getBatch", "queryPlanning")))


def _restore_steps() -> List[Tuple[Any, str, str]]:
    """The driver's steps from ``execute`` to the query's first batch that :func:`_package_restore` times, as
    ``(owner, attribute, label)``: inside ``restore_savepoint`` (reading the savepoint's metadata, the plan's state
    signatures and their comparison, the split or copy job, writing ``restored.json`` and ``meta.json``), the rest of
    the driver's construction, the replay files and the input stream, seeding Spark's logs, and Spark's
    ``DataStreamWriter.start``."""
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    from pyspark_flinkish.spark import driver as driver_module
    from pyspark_flinkish.spark import environment as environment_module
    from pyspark_flinkish.spark import savepoint as savepoint_module

    d = driver_module.ForeachBatchDriver
    return [
        (driver_module, "restore_savepoint", "restore_savepoint"),
        (savepoint_module, "read_savepoint", "  read the savepoint's metadata"),
        (savepoint_module, "state_signature", "  state signatures of the plan"),
        (savepoint_module, "compatibility_problems", "  compare with the savepoint"),
        (savepoint_module, "columnar_keys", "  columnar window detection"),
        (savepoint_module, "split_state", "  the split / copy job"),
        (savepoint_module, "write_meta", "  write meta.json"),
        (driver_module, "restored_state", "read restored.json"),
        (driver_module, "ExecPlan", "the driver's plan"),
        (d, "_check_operators", "check the operators"),
        (d, "_stored_layouts", "stored layouts"),
        (d, "_new_graph", "watermark graph"),
        (environment_module, "ForeachBatchDriver", "the driver's construction (all of it)"),
        (d, "input_stream", "input stream (replay files)"),
        (d, "seed_spark_checkpoint", "seed Spark's logs"),
        (DataStreamWriter, "start", "Spark's DataStreamWriter.start"),
    ]


def _ts(e: Any, _: Any) -> int:
    return int(e["ts"])


def _pipeline(spark: Any, partitions: int, batches: List[List[Dict[str, int]]], out: List[Any]) -> Any:
    env = StreamExecutionEnvironment.get_execution_environment(spark, state_partitions=partitions)
    source = MicroBatchSource([MicroBatch(b) for b in batches], end_of_input=False)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(_ts)
    (
        env.from_source(source, strategy, "events").uid("events")
        .key_by(lambda r: r["key"], key_type=Types.LONG())
        .process(bsg.IdleKeys(), output_type=Types.TUPLE([Types.LONG(), Types.LONG()]))
        .uid(bsg.UID)
        .add_sink(out.append)
    )
    return env


def _count_sum(df: Any, column: str) -> Tuple[int, int]:
    from pyspark.sql import functions as F

    row = df.agg(F.count("*"), F.sum(column)).first()
    return int(row[0]), int(row[1] or 0)


def _batch_ms(query: Any) -> Dict[int, int]:
    """Spark's ``triggerExecution`` of each batch that ran, per batch id."""
    return {b: ms for b, (_, ms) in bsg._progress_ms(query).items()}


def run_package(spark: Any, inp: bsg.GrowthInput, work: str, partitions: int, restore_partitions: int,
                log: Callable[[str], None] = print) -> Dict[str, Any]:
    """The package's job: load, stop with a savepoint, read it, restore it rescaled and run the small batches.
    Returns the figures and ``problems`` (the failed checks). Raises what the job raised."""
    from pyspark_flinkish.spark import driver as driver_module
    from pyspark_flinkish.spark import read_state
    from pyspark_flinkish.spark import savepoint as savepoint_module
    from pyspark_flinkish.spark.checkpoint import read_meta

    run = os.path.join(work, f"package-{inp.keys}-{uuid.uuid4().hex[:6]}")
    ck1, ck2, savepoints = (os.path.join(run, x) for x in ("ck1", "ck2", "savepoints"))
    load_events = sum(inp.rows[: inp.load_batches])
    problems: List[str] = []
    r: Dict[str, Any] = {"load_events": load_events, "state_partitions": partitions,
                         "restore_partitions": restore_partitions}
    t = time.perf_counter()
    batches = [_elements(inp, name) for name in inp.files]
    r["elements_s"] = time.perf_counter() - t
    load = batches[: inp.load_batches]

    # the first job: the load batches, then stop with a savepoint
    out1: List[Any] = []
    env = _pipeline(spark, partitions, load, out1)
    t = time.perf_counter()
    handle = env.execute("bench_savepoint_" + uuid.uuid4().hex[:8], checkpoint_location=ck1)
    r["load_start_s"] = time.perf_counter() - t
    try:
        handle.process_all_available()
    except BaseException:
        handle.stop()
        raise
    r["load_s"] = time.perf_counter() - t
    history = handle.recent_progress()
    keys = history[-1]["operators"].get(bsg.UID, {}).get("numKeys") if history else None
    if keys != inp.keys:
        problems.append(f"numKeys {keys} after the load, expected {inp.keys}")
    log(f"    package K={inp.keys:,}: loaded in {r['load_s']:.1f} s ({r['load_start_s']:.1f} s of it in execute: "
        f"the replay files)")
    inner: Dict[str, float] = {}
    with _timed(savepoint_module, "take_savepoint", inner):
        t = time.perf_counter()
        path = handle.stop_with_savepoint(savepoints)
        r["savepoint_s"] = time.perf_counter() - t
    r["savepoint_write_s"] = inner.get("take_savepoint")
    r["savepoint_bytes"] = _size(path)
    r["savepoint_files"] = len(bsg.snapshot(path))
    r["checkpoint_state_bytes"] = _size(os.path.join(ck1, "flinkish", "state"))
    log(f"    package K={inp.keys:,}: stop_with_savepoint {r['savepoint_s']:.1f} s (writing "
        f"{r['savepoint_write_s'] or 0:.1f} s), {r['savepoint_bytes']:,} bytes")

    # reading the keys back: from the savepoint, then from the stopped job's checkpoint
    t = time.perf_counter()
    got = _count_sum(read_state(spark, path, bsg.UID, bsg.COUNT, key_type=Types.LONG()), "value")
    r["read_s"] = time.perf_counter() - t
    r["keys_read"] = got[0]
    if got != (inp.keys, load_events):
        problems.append(f"read_state(savepoint): {got[0]} keys summing to {got[1]}, expected {inp.keys} and {load_events}")
    t = time.perf_counter()
    got = _count_sum(read_state(spark, ck1, bsg.UID, bsg.COUNT, key_type=Types.LONG()), "value")
    r["read_checkpoint_s"] = time.perf_counter() - t
    if got != (inp.keys, load_events):
        problems.append(f"read_state(checkpoint): {got[0]} keys summing to {got[1]}, expected {inp.keys} and {load_events}")
    log(f"    package K={inp.keys:,}: read_state {r['read_s']:.1f} s from the savepoint, "
        f"{r['read_checkpoint_s']:.1f} s from the checkpoint")

    # the restore, rescaled, and the small batches
    out2: List[Any] = []
    env = _pipeline(spark, restore_partitions, batches, out2)
    ended: Dict[int, float] = {}

    def stamp(progress: Dict[str, Any]) -> None:
        if progress.get("replay_batch") is not None:
            ended[int(progress["replay_batch"])] = time.perf_counter()

    inner = {}
    with _timed(driver_module, "restore_savepoint", inner):
        t0 = time.perf_counter()
        handle = env.execute("bench_savepoint_restored_" + uuid.uuid4().hex[:8], checkpoint_location=ck2,
                             from_savepoint=path, progress=stamp)
        r["restore_s"] = time.perf_counter() - t0
    r["restore_split_s"] = inner.get("restore_savepoint")
    try:
        handle.process_all_available()
        history = handle.recent_progress()
        spark_ms = _batch_ms(handle.query)
    finally:
        handle.stop()
    by_replay = {int(p["replay_batch"]): p for p in history if p.get("replay_batch") is not None}
    r["small"] = []
    for i in range(inp.load_batches, len(inp.files)):
        p = by_replay.get(i)
        if p is None:
            problems.append(f"no progress of the restored job for replay batch {i}")
            continue
        r["small"].append({"replay_batch": i, "batch_id": p["batch_id"], "ms": spark_ms.get(p["batch_id"]),
                           "since_restore_s": ended[i] - t0 if i in ended else None,
                           "durations_ms": p.get("durations_ms")})
    if r["small"] and r["small"][0]["since_restore_s"] is not None:
        r["restore_first_batch_s"] = r["small"][0]["since_restore_s"]
    log(f"    package K={inp.keys:,}: restore {r['restore_s']:.1f} s (split {r['restore_split_s'] or 0:.1f} s), "
        f"small batches {[b['ms'] for b in r['small']]} ms")

    emitted = sorted((int(k), int(n)) for k, n in out1 + out2)
    if emitted != inp.emitted:
        problems.append(f"emitted {len(emitted)} (key, count) rows, expected {len(inp.emitted)}; first differing: "
                        f"{next(((g, e) for g, e in zip(emitted, inp.emitted) if g != e), None)}")
    keys = history[-1]["operators"].get(bsg.UID, {}).get("numKeys") if history else None
    if keys != inp.keys:
        problems.append(f"numKeys {keys} after the restore and the small batches, expected {inp.keys}")
    if int(read_meta(ck2)["state_partitions"]) != restore_partitions:
        problems.append(f"the restored checkpoint has {read_meta(ck2)['state_partitions']} state partitions, "
                        f"expected {restore_partitions}")
    got = _count_sum(read_state(spark, ck2, bsg.UID, bsg.COUNT, key_type=Types.LONG()), "value")
    if got != (inp.keys, inp.events):
        problems.append(f"read_state after the restore: {got[0]} keys summing to {got[1]}, expected {inp.keys} and "
                        f"{inp.events}")
    r["problems"] = problems
    shutil.rmtree(run, ignore_errors=True)
    return r


def _link(inp: bsg.GrowthInput, name: str, source: str, run: str) -> None:
    """Makes a staged file appear whole in the query's source directory (as part 7 does)."""
    try:
        os.link(os.path.join(inp.staging, name), os.path.join(source, name))
    except OSError:
        tmp = os.path.join(run, name)
        shutil.copyfile(os.path.join(inp.staging, name), tmp)
        os.replace(tmp, os.path.join(source, name))


def run_native(spark: Any, inp: bsg.GrowthInput, work: str, rocksdb: bool,
               log: Callable[[str], None] = print) -> Dict[str, Any]:
    """Native ``groupBy(key).count()``: load, stop, read the state with Spark's state data source, restart on the
    same checkpoint and run the small batches. Returns the figures and ``problems``."""
    engine = "native_rocksdb" if rocksdb else "native_hdfs"
    run = os.path.join(work, f"{engine}-{inp.keys}-{uuid.uuid4().hex[:6]}")
    load_events = sum(inp.rows[: inp.load_batches])
    problems: List[str] = []
    r: Dict[str, Any] = {"load_events": load_events}
    t = time.perf_counter()
    source, ck = _native_loaded(spark, inp, run, rocksdb)
    r["load_s"] = time.perf_counter() - t
    r["checkpoint_state_bytes"] = _size(os.path.join(ck, "state"))
    log(f"    {engine} K={inp.keys:,}: loaded in {r['load_s']:.1f} s")

    t = time.perf_counter()
    got = _count_sum(spark.read.format("statestore").load(ck), "value.count")
    r["read_s"] = time.perf_counter() - t
    r["keys_read"] = got[0]
    if got != (inp.keys, load_events):
        problems.append(f"state data source: {got[0]} keys summing to {got[1]}, expected {inp.keys} and {load_events}")

    small = inp.files[inp.load_batches:]
    _link(inp, small[0], source, run)  # waiting when the query restarts, as the package's restored batches are
    t0 = time.perf_counter()
    q = bsg.start_native(spark, inp, source, ck, rocksdb)
    r["restore_s"] = time.perf_counter() - t0
    walls = []
    try:
        q.process_all_available()
        walls.append(time.perf_counter() - t0)
        for name in small[1:]:
            t = time.perf_counter()
            _link(inp, name, source, run)
            q.process_all_available()
            walls.append(time.perf_counter() - t)
        problems.extend(q.check())
        spark_ms = _batch_ms(q.query)
    finally:
        q.stop()
    ran = sorted(spark_ms)
    if len(ran) != len(small):
        problems.append(f"{len(ran)} micro-batches ran after the restart, expected one per small file ({len(small)})")
    r["small"] = [{"batch_id": b, "ms": spark_ms[b], "wall_s": w} for b, w in zip(ran, walls)]
    r["restore_first_batch_s"] = walls[0]
    log(f"    {engine} K={inp.keys:,}: state reader {r['read_s']:.1f} s; restart {r['restore_s']:.1f} s, "
        f"small batches {[b['ms'] for b in r['small']]} ms")
    r["problems"] = problems
    shutil.rmtree(run, ignore_errors=True)
    return r


def run_engine(engine: str, spark: Any, inp: bsg.GrowthInput, work: str, partitions: int, restore_partitions: int,
               log: Callable[[str], None] = print) -> Dict[str, Any]:
    if engine == "package":
        return run_package(spark, inp, work, partitions, restore_partitions, log)
    if engine in ("native_hdfs", "native_rocksdb"):
        return run_native(spark, inp, work, engine == "native_rocksdb", log)
    msg = f"unknown engine {engine!r}; choose from {ENGINES}"
    raise ValueError(msg)


def first_and_later(r: Dict[str, Any]) -> Tuple[Optional[int], List[int]]:
    """Spark's ms of the first small batch after the restore/restart, and of the later ones."""
    ms = [b["ms"] for b in r.get("small", [])]
    return (ms[0] if ms else None), [m for m in ms[1:] if m is not None]


# ----------------------------------------------------------------------------------------------- side by side
BREAKDOWN: List[Dict[str, Any]] = []
"""Of each package restore of :func:`side_by_side`: the state partitions, ``execute`` (which restores), the split job
inside it, the query's start (from ``execute``'s return to the first small batch's start), the first small batch's
phases (``durations_ms`` of its progress), and the Spark jobs of the restore and of that batch with their stages
(:func:`spark_jobs`)."""


def _ui_get(spark: Any, path: str) -> Any:
    import json
    import urllib.request

    sc = spark.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/{path}"
    with urllib.request.urlopen(url, timeout=30) as response:  # the local Spark UI's REST API (loopback)
        return json.loads(response.read())


def _ms_between(start: Optional[str], end: Optional[str]) -> Optional[float]:
    """Milliseconds between two of the REST API's times (``2026-11-27T19:50:01.123GMT``)."""
    from datetime import datetime

    if not start or not end:
        return None
    parse = [datetime.strptime(t.replace("GMT", ""), "%Y-%m-%dT%H:%M:%S.%f") for t in (start, end)]
    return (parse[1] - parse[0]).total_seconds() * 1000


def spark_jobs(spark: Any, group: Optional[str] = None, ids: Optional[List[int]] = None) -> Optional[List[Dict[str, Any]]]:
    """The Spark jobs of job group ``group`` (or with the ids ``ids``), oldest first, each with its wall ms and its
    stages (name, tasks, wall ms, the tasks' run and deserialisation ms summed), from the Spark UI's REST API; None
    when the UI is off or does not answer."""
    try:
        jobs = _ui_get(spark, "jobs")
        out = []
        for job in sorted(jobs, key=lambda j: j["jobId"]):
            if (group is not None and job.get("jobGroup") != group) or (ids is not None and job["jobId"] not in ids):
                continue
            stages = []
            for stage_id in sorted(job["stageIds"]):
                for attempt in _ui_get(spark, f"stages/{stage_id}?details=false"):
                    if attempt.get("status") == "SKIPPED":
                        continue
                    stages.append({
                        "stage": stage_id, "name": attempt.get("name"), "tasks": attempt.get("numTasks"),
                        "ms": _ms_between(attempt.get("submissionTime"), attempt.get("completionTime")),
                        "run_ms": attempt.get("executorRunTime"),
                        "deserialize_ms": attempt.get("executorDeserializeTime"),
                    })
            out.append({"job": job["jobId"], "name": job.get("name"),
                        "ms": _ms_between(job.get("submissionTime"), job.get("completionTime")), "stages": stages})
        return out
    except Exception:  # a profile is optional: the UI may be off
        return None


def _package_loaded(spark: Any, inp: bsg.GrowthInput, run: str, partitions: int,
                    batches: List[List[Dict[str, int]]]) -> str:
    """The package's job through the load batches, stopped with a savepoint; returns the savepoint's path."""
    env = _pipeline(spark, partitions, batches[: inp.load_batches], [])
    handle = env.execute("bench_savepoint_" + uuid.uuid4().hex[:8], checkpoint_location=os.path.join(run, "ck1"))
    try:
        handle.process_all_available()
    except BaseException:
        handle.stop()
        raise
    return str(handle.stop_with_savepoint(os.path.join(run, "savepoints")))


def _package_read(spark: Any, inp: bsg.GrowthInput, path: str) -> Tuple[float, List[str]]:
    from pyspark_flinkish.spark import read_state

    load_events = sum(inp.rows[: inp.load_batches])
    t = time.perf_counter()
    got = _count_sum(read_state(spark, path, bsg.UID, bsg.COUNT, key_type=Types.LONG()), "value")
    seconds = time.perf_counter() - t
    return seconds, [] if got == (inp.keys, load_events) else [f"read_state: {got}, expected {(inp.keys, load_events)}"]


def _package_restore(spark: Any, inp: bsg.GrowthInput, run: str, path: str, restore_partitions: int,
                     batches: List[List[Dict[str, int]]], i: int) -> Tuple[float, List[str]]:
    """Restore into a new checkpoint (so no executor's cache holds its partitions, as after a real restore) and run the
    small batches; returns the wall seconds from ``execute`` to the end of the first small batch."""
    from pyspark_flinkish.spark import driver as driver_module

    ended: Dict[int, float] = {}
    first: Dict[str, Any] = {}
    first_jobs: List[int] = []

    def stamp(progress: Dict[str, Any]) -> None:
        if progress.get("replay_batch") is not None:
            ended.setdefault(int(progress["replay_batch"]), time.perf_counter())
            if int(progress["replay_batch"]) == inp.load_batches:
                first.update(progress.get("durations_ms") or {})
                phases = (progress.get("spark_jobs") or {}).get("phases") or {}
                first_jobs.extend(j for ids in phases.values() for j in ids)

    out: List[Any] = []
    env = _pipeline(spark, restore_partitions, batches, out)
    inner: Dict[str, float] = {}
    called: List[float] = []
    trigger: Optional[Tuple[float, float]] = None
    group = f"bench-restore-{uuid.uuid4().hex[:8]}"
    spark.sparkContext.setJobGroup(group, "the restore inside execute")
    steps = _restore_steps()
    original_call = driver_module.ForeachBatchDriver.__call__

    def first_call(self: Any, df: Any, batch_id: int) -> None:
        if not called:
            called.append(time.perf_counter())
        original_call(self, df, batch_id)

    try:
        with contextlib.ExitStack() as stack:
            for owner, name, label in steps:
                stack.enter_context(_timed(owner, name, inner, label))
            driver_module.ForeachBatchDriver.__call__ = first_call  # type: ignore[method-assign]
            stack.callback(setattr, driver_module.ForeachBatchDriver, "__call__", original_call)
            t0 = time.perf_counter()
            handle = env.execute("bench_savepoint_restored_" + uuid.uuid4().hex[:8],
                                 checkpoint_location=os.path.join(run, f"ck2-{i}"), from_savepoint=path,
                                 progress=stamp)
            started, returned = time.perf_counter() - t0, time.time()
            try:
                handle.process_all_available()
                trigger = _first_trigger(handle.query)
            finally:
                handle.stop()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    seconds = ended.get(inp.load_batches, time.perf_counter()) - t0
    query_start = seconds - started - first.get("total", 0.0) / 1000 if first else None
    profile = {label: inner.get(label) for _, _, label in steps}
    profile["from execute's return to the first batch's call"] = called[0] - t0 - started if called else None
    if trigger is not None:  # Spark's query initialisation (its sources, the tick source's Python runner), then batch 0
        profile["  Spark initialises the query (to the first trigger)"] = trigger[0] - returned
        profile["  the first trigger until foreachBatch (offsets, planning)"] = trigger[1] / 1000
    BREAKDOWN.append({"partitions": restore_partitions, "execute_s": started, "split_s": inner.get("restore_savepoint"),
                      "steps_s": profile, "query_start_s": query_start, "first_batch_ms": first,
                      "restore_jobs": spark_jobs(spark, group=group),
                      "first_batch_jobs": spark_jobs(spark, ids=first_jobs) if first_jobs else None})
    problems = [] if inp.load_batches in ended else ["no first small batch after the restore"]
    if i < 2:  # once per number of partitions: the restored state and the small batch make up every event
        from pyspark_flinkish.spark import read_state

        ck2 = os.path.join(run, f"ck2-{i}")
        got = _count_sum(read_state(spark, ck2, bsg.UID, bsg.COUNT, key_type=Types.LONG()), "value")
        if got != (inp.keys, inp.events):
            problems.append(f"read_state after the restore: {got}, expected {(inp.keys, inp.events)}")
    return seconds, problems


def _native_loaded(spark: Any, inp: bsg.GrowthInput, run: str, rocksdb: bool) -> Tuple[str, str]:
    """The native query's checkpoint after the load batches, stopped: (its source directory, its checkpoint)."""
    source, ck = os.path.join(run, "input"), os.path.join(run, "ck")
    os.makedirs(source)
    q = bsg.start_native(spark, inp, source, ck, rocksdb)
    try:
        for name in inp.files[: inp.load_batches]:
            _link(inp, name, source, run)
            q.process_all_available()
    finally:
        q.stop()
    return source, ck


def _native_read(spark: Any, inp: bsg.GrowthInput, ck: str) -> Tuple[float, List[str]]:
    load_events = sum(inp.rows[: inp.load_batches])
    t = time.perf_counter()
    got = _count_sum(spark.read.format("statestore").load(ck), "value.count")
    seconds = time.perf_counter() - t
    return seconds, [] if got == (inp.keys, load_events) else [f"state reader: {got}, expected {(inp.keys, load_events)}"]


def _native_restart(spark: Any, inp: bsg.GrowthInput, run: str, source: str, ck: str, rocksdb: bool,
                    i: int) -> Tuple[float, List[str]]:
    """Restart on a copy of the stopped checkpoint (copied before the clock starts; its file source log names the
    load files of ``source``) with the first small file in ``source``; returns the wall seconds from ``start`` to
    the end of that batch."""
    copy_ck = os.path.join(run, f"ck-{i}")
    shutil.copytree(ck, copy_ck)
    first_small = inp.files[inp.load_batches]
    if not os.path.exists(os.path.join(source, first_small)):
        _link(inp, first_small, source, run)
    t0 = time.perf_counter()
    q = bsg.start_native(spark, inp, source, copy_ck, rocksdb)
    try:
        q.process_all_available()
        seconds = time.perf_counter() - t0
        ran = _batch_ms(q.query)
    finally:
        q.stop()
    shutil.rmtree(copy_ck, ignore_errors=True)
    return seconds, [] if len(ran) == 1 else [f"{len(ran)} batches ran after the restart, expected 1"]


def side_by_side(spark: Any, inp: bsg.GrowthInput, work: str, partitions: int, restore_partitions: List[int],
                 repeats: int, engines: List[str], log: Callable[[str], None] = print) -> Dict[str, Any]:
    """Issue 27's comparison in one process: each engine loaded once, then ``repeats`` rounds, each reading the K
    keys and restoring/restarting once per engine (the package once into each of ``restore_partitions``: as many
    state partitions as it had, a copy, or another number, a split), engines alternating (the order reversed every
    round), with the 1-minute load average at each measurement. Returns ``{"read": {engine: [s]}, "restore":
    {engine: [s]}, "load_avg": [...], "problems": [...]}`` (the package's restores as ``package into <n>``); the
    package's restore is into a new checkpoint each time, the native restart on a fresh copy of its stopped
    checkpoint."""
    run = os.path.join(work, f"side-by-side-{inp.keys}-{uuid.uuid4().hex[:6]}")
    batches = [_elements(inp, name) for name in inp.files]
    loaded: Dict[str, Any] = {}
    for e in engines:
        t = time.perf_counter()
        if e == "package":
            os.makedirs(os.path.join(run, e))
            loaded[e] = _package_loaded(spark, inp, os.path.join(run, e), partitions, batches)
        else:
            loaded[e] = _native_loaded(spark, inp, os.path.join(run, e), e == "native_rocksdb")
        log(f"    {e}: loaded {inp.keys:,} keys in {time.perf_counter() - t:.1f} s")
    restorers = [f"package into {n}" if e == "package" else e for e in engines for n in
                 (restore_partitions if e == "package" else [0])]
    out: Dict[str, Any] = {"read": {e: [] for e in engines}, "restore": {e: [] for e in restorers}, "load_avg": [],
                           "problems": []}
    for i in range(repeats):
        for what in ("read", "restore"):
            order = engines if what == "read" else restorers
            for e in order if i % 2 == 0 else list(reversed(order)):
                if e == "package":
                    s, problems = _package_read(spark, inp, loaded[e])
                elif e.startswith("package into "):
                    s, problems = _package_restore(spark, inp, os.path.join(run, "package"), loaded["package"],
                                                   int(e.rsplit(" ", 1)[1]), batches, len(BREAKDOWN))
                elif what == "read":
                    s, problems = _native_read(spark, inp, loaded[e][1])
                else:
                    s, problems = _native_restart(spark, inp, os.path.join(run, e), *loaded[e],
                                                  e == "native_rocksdb", i)
                out[what][e].append(s)
                out["load_avg"].append(os.getloadavg()[0])
                out["problems"].extend(f"{e} {what} {i}: {p}" for p in problems)
                log(f"    round {i + 1}: {e} {what} {s:.2f} s (load {os.getloadavg()[0]:.1f})"
                    + (f" PROBLEMS {problems}" if problems else ""))
    out["package_restore_breakdown"] = list(BREAKDOWN)
    shutil.rmtree(run, ignore_errors=True)
    return out


def main(argv: List[str]) -> int:
    """``python benchmarks/bench_savepoint.py [--keys K] [--repeats N] [--json FILE]``: :func:`side_by_side`."""
    import argparse
    import json
    import statistics
    import tempfile

    from pyspark_flinkish.spark import session

    p = argparse.ArgumentParser(description=side_by_side.__doc__.splitlines()[0] if side_by_side.__doc__ else None)
    p.add_argument("--keys", type=int, default=1_000_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--restore-partitions", default="2,3",
                   help="the package restores into each (the savepoint has 2 state partitions: 2 copies, 3 splits)")
    p.add_argument("--json", default=None)
    p.add_argument("--seed", type=int, default=42)
    args = p.parse_args(argv)
    work = tempfile.mkdtemp(prefix="bench-savepoint-")
    spark = session("bench_savepoint", master="local[2]", shuffle_partitions=2, spark__default__parallelism="2",
                    spark__driver__memory="6g", spark__sql__streaming__numRecentProgressUpdates="10000",
                    spark__ui__enabled="true")  # the REST API of spark_jobs (the local host only)
    spark.sparkContext.setLogLevel("ERROR")
    inp = generate(os.path.join(work, "input"), args.keys, 100_000, 1, 10_000, 10, args.seed)
    restores = [int(n) for n in args.restore_partitions.split(",")]
    out = side_by_side(spark, inp, work, 2, restores, args.repeats, args.engines.split(","))
    for what in ("read", "restore"):
        packages = {e: statistics.median(t) for e, t in out[what].items() if e.startswith("package")}
        for e, times in out[what].items():
            ratios = "" if e.startswith("package") else "".join(
                f", {p} / this {m / statistics.median(times):.2f}" for p, m in packages.items())
            print(f"{what} {e}: {', '.join(f'{t:.2f}' for t in times)} s (median {statistics.median(times):.2f}){ratios}")
    for b in out.get("package_restore_breakdown", []):
        print(f"package restore into {b['partitions']}: execute {b['execute_s']:.2f} s (split {b['split_s'] or 0:.2f} s), "
              f"query start {b['query_start_s'] or 0:.2f} s, first batch {b['first_batch_ms']}")
        print("    steps: " + "; ".join(f"{k.strip()} {v:.3f} s" for k, v in (b.get("steps_s") or {}).items()
                                        if v is not None))
        for label in ("restore_jobs", "first_batch_jobs"):
            for job in b.get(label) or []:
                stages = "; ".join(f"{st['name']} x{st['tasks']} {st['ms']:.0f} ms (run {st['run_ms']} ms)"
                                   for st in job["stages"] if st["ms"] is not None)
                print(f"    {label} {job['job']} {job['ms'] or 0:.0f} ms: {stages}")
    print(f"load average during the measurements: {min(out['load_avg']):.1f}-{max(out['load_avg']):.1f}")
    print("problems:", out["problems"] or "none")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    return 1 if out["problems"] else 0


from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # ship this module's functions to workers by value


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
