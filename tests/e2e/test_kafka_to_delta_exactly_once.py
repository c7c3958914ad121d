"""Real Kafka in, real Delta out, exactly once across driver crashes and a broker restart.

A real broker (KRaft) holds a 4-partition topic of 100,000 seeded JSON events read 12,500 per micro-batch
(``FLINKISH_KILL_TESTS=full``; ``make test`` produces 40,000 read 5,000 per micro-batch: as many batches, in less
time) (explicit partition per event;
out of order within the watermark bound, a lagging partition, and 2 % stragglers 1-15 minutes behind: some on
time, some late within the allowed lateness, most beyond it). ``kafka_delta_job.py`` — its own Spark driver
process — reads it with ``env.from_kafka`` (a watermark per partition, ``max_offsets_per_trigger`` micro-batches,
``availableNow``) and writes three Delta tables: every firing of event-time session windows with allowed
lateness (append), their late-data side output (append), and a tumbling 1-minute count/sum per key (merge on
key and window start).

The job's checkpoint (Spark's and the package's files, keyed state included) and its three Delta tables are on the
test HDFS (``hdfs_cluster``: a MiniDFSCluster in its own JVM, one per test session), under ``hdfs://…/e2e-<id>/``;
the job is given plain ``hdfs://`` URIs, and the test reads Spark's logs and the Delta logs back through the
JVM-free hdfs-native client (``hdfs_cluster.client()``). Only the runs' logs and the summary are on the local disk
(``tmp_path``), and the test checks that nothing of the checkpoint or the tables landed there (nor in the job's
working directory).

The driver is SIGKILLed five times (``FLINKISH_KILL_TESTS=full``; ``make test`` kills it three times, once of each
kind marked *default* below, to keep the suite in its time budget), each time restarted from its checkpoint, at
points drawn with a seeded ``random.Random`` (the seed is in every assertion message) in a shuffled order:

* 2 x ``delta`` (default: 1): the job kills itself right after the k-th of a batch's 3 Delta commits (k random), i.e. inside
  the batch after part or all of its output is in Delta, before the driver and Spark commit the batch;
* 1 x ``commit`` (full run only; ``tests/spark/test_exactly_once.py`` kills there by default): right after the driver committed its state for a batch, before Spark commits it;
* 1 x ``planning`` (default): right after Spark wrote the next batch's offsets (a batch planned and not started);
* 1 x ``timer`` (default): the test kills every process of the run a random fraction of a batch's duration after a batch
  committed — wherever the job is.

The last run restarts the broker (``KafkaBroker.restart()``) after its first batch and reads the topic to its
end.

What the tables must equal: the JVM-free engine over *the same micro-batches*. Flink's watermark advances at the
end of each micro-batch, so which records are late (and the watermark a window fires at) depends on where the
batches end; Spark's offsets log (``<checkpoint>/spark/offsets/<batch>``: each partition's end offset) gives
the boundaries of the run under test, crashes and replays included. The test rebuilds every batch from it — per
partition the offset range after the previous batch's end, in (partition, offset) order, each record in its
split ``<topic>-<partition>`` — and runs the same pipeline on the JVM-free engine with the same per-partition
bounded-out-of-orderness watermarks (no idleness: it reads the driver's wall clock).

Why these sink modes make the comparison exact: append tables hold every emitted record, so the table's
multiset of rows must equal the engine's output — a batch written twice shows as duplicated rows, a lost one as
missing rows. Session windows with allowed lateness fire more than once per window (late firings), which append
keeps and a merge would hide. The tumbling windows have no allowed lateness, so each (key, window start) fires
exactly once and the merged table equals the set of firings; its duplicates are checked on the Delta log
instead: every table must have exactly one commit per Spark batch id (its ``userMetadata``), and no MERGE
may update a row.

Set ``KAFKA_DELTA_E2E_SEED`` to try other seeds (``KAFKA_DELTA_E2E_EVENTS`` and ``KAFKA_DELTA_E2E_MAX_OFFSETS``
change the size, e.g. for a quicker run while developing).
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import random
import signal
import time
import uuid
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from pyspark_flinkish.testing.sigkill import DriverRun, job_module

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.hdfs, pytest.mark.slow]

JOB = Path(__file__).resolve().with_name("kafka_delta_job.py")
JOB_CWD = JOB.parents[2]  # the job's working directory: the checkout
SEED = int(os.environ.get("KAFKA_DELTA_E2E_SEED", "1729"))
FULL = os.environ.get("FLINKISH_KILL_TESTS") == "full"
N_EVENTS = int(os.environ.get("KAFKA_DELTA_E2E_EVENTS", "100000" if FULL else "40000"))
MAX_OFFSETS_PER_TRIGGER = int(os.environ.get("KAFKA_DELTA_E2E_MAX_OFFSETS", "12500" if FULL else "5000"))  # about 8 micro-batches
FULL_KILLS = ["delta", "delta", "commit", "planning", "timer"]
# make test's smaller default: one kill of each kind the Spark-only exactly-once test does not already make by default
KILLS = FULL_KILLS if FULL else ["delta", "planning", "timer"]  # shuffled with the seed
RUN_TIMEOUT = 600  # seconds for one driver process (start-up included)


class Run(DriverRun):
    """One driver process of the job, with what its log says."""

    def __init__(self, log: Path, args: List[str]) -> None:
        super().__init__(JOB, args, log, cwd=JOB_CWD)

    def committed(self) -> List[int]:
        return [int(ln.split()[1].split("=")[1]) for ln in self.lines() if ln.startswith("committed ")]

    def commit_times(self) -> List[float]:
        return [float(ln.split(" t=", 1)[1].split("s", 1)[0]) for ln in self.lines() if ln.startswith("committed ")]


def _produce(broker: Any, topic: str, events: List[Tuple[int, Dict[str, Any]]]) -> Dict[Tuple[int, int], Dict[str, Any]]:
    """Send the (partition, event) pairs as JSON, batched; returns (partition, offset) -> event as acknowledged."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all", linger_ms=20, batch_size=512 * 1024)
    try:
        futures = [(producer.send(topic, value=json.dumps(e, separators=(",", ":")).encode(), partition=p), e) for p, e in events]
        producer.flush()
        stored = {}
        for future, event in futures:
            meta = future.get(timeout=60)
            stored[(int(meta.partition), int(meta.offset))] = event
        return stored
    finally:
        producer.close()


def _names(client: Any, directory: str) -> List[str]:
    """The names of the files in the HDFS ``directory`` whose name starts with a digit (a log's entries; Spark's
    and Delta's temporary files start with ``.``); none when it does not exist (yet)."""
    try:
        statuses = list(client.list_status(directory))
    except FileNotFoundError:
        return []
    names = (s.path.rstrip("/").rsplit("/", 1)[-1] for s in statuses if not s.isdir)
    return sorted(n for n in names if n[:1].isdigit())


def _read(client: Any, path: str) -> str:
    with client.read(path) as f:
        return f.read().decode("utf-8")


def _next_batch(client: Any, checkpoint: str) -> int:
    """The batch id a restart from ``checkpoint`` (its path on HDFS) begins with: the one after Spark's last
    committed batch."""
    commits = [int(n) for n in _names(client, f"{checkpoint}/spark/commits")]
    return max(commits) + 1 if commits else 0


def _offsets_log(client: Any, checkpoint: str, topic: str) -> Dict[int, Dict[int, int]]:
    """batch id -> partition -> end offset (exclusive), from Spark's offsets log (on HDFS)."""
    out = {}
    for name in _names(client, f"{checkpoint}/spark/offsets"):
        lines = _read(client, f"{checkpoint}/spark/offsets/{name}").splitlines()
        source = json.loads(lines[2])  # "v1", the batch metadata, then the (only) source's offset
        out[int(name)] = {int(p): int(o) for p, o in source[topic].items()}
    return out


def _batches(
    offsets: Dict[int, Dict[int, int]], last: int, stored: Dict[Tuple[int, int], Dict[str, Any]]
) -> List[List[Tuple[int, int, Dict[str, Any]]]]:
    """Spark's micro-batches 0..last as (partition, offset, event) lists: each partition's records from the
    previous batch's end offset (0 before batch 0: the topic starts at offset 0) to this batch's."""
    batches, previous = [], collections.defaultdict(int)
    for b in range(last + 1):
        end = offsets[b]
        batches.append([(p, o, stored[(p, o)]) for p in sorted(end) for o in range(previous[p], end[p])])
        previous.update(end)
    return batches


def _commits(client: Any, table: str) -> List[Dict[str, Any]]:
    """The commitInfo of every commit of a Delta table (its path on HDFS), in version order (from its JSON log)."""
    out = []
    for name in _names(client, f"{table}/_delta_log"):  # zero-padded versions: name order is version order
        if name.endswith(".json"):
            text = _read(client, f"{table}/_delta_log/{name}")
            out.append(next(json.loads(line)["commitInfo"] for line in text.splitlines() if '"commitInfo"' in line))
    return out


LOCAL_NAMES = ("spark", "flinkish", "_delta_log", "hdfs:")
"""Directories a checkpoint or a table would leave on the local disk (``hdfs:``: an ``hdfs://`` URI taken for a
relative path)."""


def _local_leftovers(tmp_path: Path, run_dir: str) -> List[str]:
    """Directories under ``tmp_path`` that are a checkpoint's or a table's, or named after the run's HDFS directory."""
    return sorted(str(p) for p in tmp_path.rglob("*") if p.is_dir() and (p.name in LOCAL_NAMES or p.name == run_dir))


def _diff(expected: collections.Counter, got: collections.Counter) -> str:  # type: ignore[type-arg]
    lost, extra = expected - got, got - expected
    return f"lost {sum(lost.values())} {list(lost.items())[:3]}, extra/duplicated {sum(extra.values())} {list(extra.items())[:3]}"


@pytest.mark.timeout(1800)
def test_kafka_to_delta_exactly_once_across_driver_kills_and_a_broker_restart(
    kafka_broker: Any, kafka_topic: Any, hdfs_cluster: Any, tmp_path: Path, driver_runs: List[DriverRun],
    request: pytest.FixtureRequest,
) -> None:
    runs = driver_runs
    job: Any = job_module(JOB)
    rng = random.Random(SEED)
    t0 = time.monotonic()
    timings: Dict[str, float] = {}
    topic = kafka_topic(partitions=job.PARTITIONS)
    stored = _produce(kafka_broker, topic, job.events(N_EVENTS))
    assert len(stored) == N_EVENTS
    timings["produce"] = time.monotonic() - t0

    # the checkpoint and the tables on the test HDFS: the job gets URIs, the test reads paths with hdfs-native
    run_dir = f"e2e-{uuid.uuid4().hex[:12]}"
    checkpoint, lake = f"/{run_dir}/checkpoint", f"/{run_dir}/lake"
    hdfs = hdfs_cluster.client()
    local_names_before = {n for n in (*LOCAL_NAMES, run_dir) if (JOB_CWD / n).exists()}
    base = [
        "--checkpoint", hdfs_cluster.uri + checkpoint, "--lake", hdfs_cluster.uri + lake, "--topic", topic,
        "--bootstrap-servers", kafka_broker.bootstrap_servers, "--max-offsets-per-trigger", str(MAX_OFFSETS_PER_TRIGGER),
    ]  # fmt: skip
    seed_msg = f"[KAFKA_DELTA_E2E_SEED={SEED}; logs in {tmp_path}; checkpoint and lake in {hdfs_cluster.uri}/{run_dir}]"
    plan = KILLS[:]
    rng.shuffle(plan)
    history: List[Dict[str, Any]] = []
    batch_seconds: List[float] = []
    for i, kind in enumerate(plan):
        first = _next_batch(hdfs, checkpoint)  # the batch this run starts with (Spark replays it if it was begun)
        # the batch each kill aims at: this run's first (a second crash in a replayed batch) or the next one, so
        # that the kills fall in the first half of the ~8 batches and the last run still has several to go
        target = first + (1 if kind == "timer" else rng.randint(0, 1))
        event: Dict[str, Any] = {"kind": kind, "first_batch": first, "target_batch": target}
        if kind == "timer":
            fraction = rng.uniform(0.0, 0.9)
            run = Run(tmp_path / f"run{i}-timer.log", base)
            runs.append(run)
            while run.proc.poll() is None and target - 1 not in run.committed():
                assert time.monotonic() - run.started < RUN_TIMEOUT, f"{seed_msg} run {i} hangs:\n{run.tail()}"
                time.sleep(0.05)
            delay = fraction * (sorted(batch_seconds)[len(batch_seconds) // 2] if batch_seconds else 10.0)
            time.sleep(delay)
            event.update(delay_after_commit=round(delay, 2), alive_at_kill=run.proc.poll() is None)
            run.kill_all()
        else:
            # delta: the k-th of the target batch's 3 Delta writes; commit: after the driver's commit of the
            # target batch; planning: when Spark then writes the offsets of the batch after it
            n = (target - first) * len(job.TABLES) + rng.randint(1, len(job.TABLES)) if kind == "delta" else target - first + 1
            event[f"kill_after_{kind}"] = n
            run = Run(
                tmp_path / f"run{i}-{kind}{n}.log", [*base, f"--kill-after-{kind.replace('delta', 'delta-commit')}", str(n)]
            )
            runs.append(run)
        rc = run.finish(RUN_TIMEOUT, since_start=True)
        times = run.commit_times()
        batch_seconds.extend(b - a for a, b in itertools.pairwise(times))
        event.update(rc=rc, seconds=round(run.elapsed, 1), committed=run.committed(), last_line=(run.lines() or [""])[-1][:120])
        history.append(event)
        assert rc == -signal.SIGKILL, f"{seed_msg} run {i} ({event}) was not killed (rc {rc}):\n{run.tail()}"
        if kind != "timer":
            assert any(ln.startswith("SIGKILL ") for ln in run.lines()), f"{seed_msg} run {i} ({event}) did not kill itself"
        if kind in ("delta", "commit"):
            last = [ln for ln in run.lines() if ln.startswith(("delta ", "committed "))][-1]
            assert f"batch_id={target} " in last, f"{seed_msg} run {i} ({event}) was killed in: {last}"

    # the last run: restart the broker after its first batch, then read the topic to its end
    final = Run(tmp_path / "run-final.log", base)
    runs.append(final)
    while final.proc.poll() is None and not final.committed():
        assert time.monotonic() - final.started < RUN_TIMEOUT, f"{seed_msg} the last run hangs:\n{final.tail()}"
        time.sleep(0.05)
    restarted_at = final.committed()
    t_broker = time.monotonic()
    kafka_broker.restart()
    timings["broker_restart"] = time.monotonic() - t_broker
    rc = final.finish(RUN_TIMEOUT, since_start=True)
    history.append({"kind": "final", "rc": rc, "seconds": round(final.elapsed, 1), "committed": final.committed(),
                    "broker_restarted_after": restarted_at})  # fmt: skip
    assert rc == 0, f"{seed_msg} the restarted job failed after {history}:\n{final.tail()}"
    assert final.committed()[-1] > restarted_at[-1], f"{seed_msg} no batch ran after the broker restart: {history}"
    timings["runs"] = time.monotonic() - t0 - timings["produce"]

    # the checkpoint and the tables are on HDFS, and nothing of them on the local disk: no checkpoint or Delta log
    # directory among the logs (tmp_path), none new in the job's working directory
    def listing(path: str) -> List[str]:
        return sorted(s.path.rstrip("/").rsplit("/", 1)[-1] for s in hdfs.list_status(path))

    assert {"spark", "flinkish"} <= set(listing(checkpoint)), f"{seed_msg} checkpoint on HDFS: {listing(checkpoint)}"
    assert listing(lake) == sorted(job.TABLES), f"{seed_msg} lake on HDFS: {listing(lake)}"
    for name in job.TABLES:
        assert "_delta_log" in listing(f"{lake}/{name}"), f"{seed_msg} {name} on HDFS: {listing(f'{lake}/{name}')}"
    assert not _local_leftovers(tmp_path, run_dir), f"{seed_msg} on the local disk: {_local_leftovers(tmp_path, run_dir)}"
    local_names = {n for n in (*LOCAL_NAMES, run_dir) if (JOB_CWD / n).exists()}
    assert local_names == local_names_before, f"{seed_msg} new in {JOB_CWD}: {local_names - local_names_before}"
    assert not Path("/", run_dir).exists(), f"{seed_msg} the HDFS paths taken for local ones: /{run_dir} exists"

    # the micro-batches of the run, from Spark's offsets log
    last = _next_batch(hdfs, checkpoint) - 1
    offsets = _offsets_log(hdfs, checkpoint, topic)
    assert sorted(offsets) == list(range(last + 1)), f"{seed_msg} offsets log {sorted(offsets)}, last commit {last}"
    ends = collections.Counter(p for p, _ in stored)
    assert offsets[last] == dict(ends), f"{seed_msg} the job stopped at {offsets[last]}, the topic ends at {dict(ends)}"
    batches = _batches(offsets, last, stored)
    assert sum(len(b) for b in batches) == N_EVENTS
    t_local = time.monotonic()
    expected = job.run_local(topic, batches)
    timings["jvm_free"] = time.monotonic() - t_local

    from pyspark_flinkish.spark.types import to_rows

    spark = request.getfixturevalue("spark")
    summary: Dict[str, Any] = {"seed": SEED, "batches": last + 1, "runs": history}
    for name in job.TABLES:
        want = collections.Counter(tuple(r) for r in to_rows(expected[name], job.TYPES[name]))
        table = spark.read.format("delta").load(f"{hdfs_cluster.uri}{lake}/{name}")
        got = collections.Counter(tuple(r) for r in table.select(*job.TYPES[name].field_names).collect())
        assert got == want, f"{seed_msg} {name}: Delta vs the JVM-free engine: {_diff(want, got)}; runs: {history}"
        # one commit per Spark batch id, none repeated (a replayed batch's commit is skipped by Delta)
        commits = [c for c in _commits(hdfs, f"{lake}/{name}") if c.get("userMetadata")]
        batch_ids = [json.loads(c["userMetadata"])["flinkish"]["batch_id"] for c in commits]
        assert batch_ids == list(range(last + 1)), f"{seed_msg} {name}: commits for batch ids {batch_ids}"
        updated = sum(int(c.get("operationMetrics", {}).get("numTargetRowsUpdated", 0)) for c in commits)
        summary[name] = {"rows": sum(want.values()), "commits": len(commits), "merge_updates": updated}
        if name in job.MERGE_KEYS:
            assert updated == 0, f"{seed_msg} {name}: a MERGE updated {updated} rows (a window written twice)"
            assert len(want) == sum(want.values()), f"{seed_msg} {name}: a tumbling window fired twice"

    # the scenario has what it claims: late records, and late firings (a session window fired again)
    fired = collections.Counter((s["k"], s["start"]) for s in expected["sessions"])
    late_firings = sum(n - 1 for n in fired.values())
    assert expected["late"] and late_firings, f"{seed_msg} no late records or late firings: {summary}"
    timings["total"] = time.monotonic() - t0
    summary.update(late_firings=late_firings, timings={k: round(v, 1) for k, v in timings.items()})
    print("kafka-to-delta summary:", json.dumps(summary, indent=1, default=str))
    (tmp_path / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
