"""Replay sources on Spark: a ``MicroBatchSource`` replayed through a Parquet file stream, one file per micro-batch.
"""

from __future__ import annotations

import uuid
from typing import Any, Dict, List

from ..core.errors import StateError, UnsupportedFeatureError
from ..datastream.plan import Transformation
from . import storage
from .error_transport import package_error_from
from .plan import ExecPlan
from .rows import dumps
from .session import spark_path
from .source_rows import SOURCE_DDL, assign_timestamp, source_batch


def replay_rows(plan: ExecPlan, sources: List[Transformation], i: int) -> Dict[str, List[Any]]:
    """The columns (``SOURCE_DDL``) of replay file ``i``: every source's batch ``i`` (elements pickled, timestamps
    assigned, partitions as their ``repr``, order ``[i, k, position]`` for the ``k``-th source: the local engine's
    order, every source's elements of the batch after the previous source's) and one marker row per source."""
    rows: Dict[str, List[Any]] = {c: [] for c in ("src", "value", "ts", "part", "ord", "batch", "marker")}
    for k, t in enumerate(sources):
        node = plan.nodes[plan.transformations.index(t)]
        batches = t.source.batches
        elements = batches[i].elements if i < len(batches) else []
        for j, value in enumerate(elements):
            ts = assign_timestamp(t, node, value, None)
            part = batches[i].partition_of(j)
            for c, v in zip(rows, (node.uid, dumps(value), ts, repr(part), [i, k, j], i, False)):
                rows[c].append(v)
        for c, v in zip(rows, (node.uid, None, None, None, [i, k, -1], i, True)):
            rows[c].append(v)
    return rows


def replay_stream(spark: Any, plan: ExecPlan, checkpoint: str, sources: List[Transformation], first: int = 0) -> Any:
    """Replay sources as a file stream: file ``i`` holds every source's batch ``i`` (plus markers, and
    one last end-of-input file), and ``maxFilesPerTrigger=1`` makes each file one micro-batch. ``first``: the
    first batch replayed (a job restored from a savepoint goes on after the savepoint's)."""
    import pyarrow as pa

    directory = storage.join(checkpoint, "flinkish", "replay")
    if storage.scheme_of(directory) in storage.OBJECT_STORES:
        msg = (
            f"MicroBatchSource on Spark replays its micro-batches from files under the checkpoint, in the order of their "
            f"modification times, which the {storage.scheme_of(directory)!r} store keeps in whole seconds: use a local "
            "or hdfs:// checkpoint for replayed micro-batches (tests, demos), or a Kafka or DataFrame source"
        )
        raise UnsupportedFeatureError(msg)
    if not storage.is_dir(directory):
        tmp = directory + ".tmp-" + uuid.uuid4().hex[:6]
        n = max(len(t.source.batches) for t in sources)
        read = [(k, t) for k, t in enumerate(sources) if getattr(t.source, "executors_read", False)]
        for i in range(first, n + 1):
            rows = replay_rows(plan, sources, i)
            path = storage.join(tmp, f"batch-{i:09d}.parquet")
            if i == 0 and read:  # bounded FileSources: their records read and written by the executors
                _write_on_executors(spark, plan, read, rows, tmp, path)
                storage.set_modified(path, (1_000_000 + i) * 1000)
                continue
            table = pa.Table.from_batches([source_batch(rows)])
            storage.write_table(path, table)
            storage.set_modified(path, (1_000_000 + i) * 1000)  # Spark's file source takes files in this order
        storage.rename_dir(tmp, directory)
    return spark.readStream.schema(SOURCE_DDL).option("maxFilesPerTrigger", 1).parquet(spark_path(directory))


def _write_on_executors(spark: Any, plan: ExecPlan, read: List[Any], rows: Dict[str, List[Any]], tmp: str, path: str) -> None:
    """Replay file ``path``: the driver's ``rows`` (markers, other sources' elements) and the records of the bounded
    sources ``read`` (``(k, t)``: a ``FileSource``'s files, a static DataFrame's rows), which a Spark job reads,
    converts and writes on the executors into one file (one micro-batch of the replay stream). A user function's
    error there (a timestamp assigner) is raised as the package's error, naming the source."""
    from . import file_source, static_frames
    from .session import spark_path

    frame = spark.createDataFrame(list(zip(*rows.values())), SOURCE_DDL)
    for k, t in read:
        reader = static_frames if isinstance(t.source, static_frames.StaticFrameSource) else file_source
        frame = frame.unionByName(reader.executor_rows(spark, t, plan.nodes[plan.transformations.index(t)].uid, k))
    written = storage.join(tmp, "executors-" + uuid.uuid4().hex[:8])
    try:
        frame.coalesce(1).write.parquet(spark_path(written))
    except Exception as exc:
        error = package_error_from(exc)
        if error is None:
            raise
        raise error from exc
    parts = [n for n in storage.list_names(written) if n.endswith(".parquet") and not n.startswith((".", "_"))]
    if len(parts) != 1:
        msg = f"the executors wrote {len(parts)} files for one replayed micro-batch under {written}; expected 1"
        raise StateError(msg)
    storage.replace_file(storage.join(written, parts[0]), path)
    storage.delete_tree(written)


__all__ = [
    "replay_rows",
    "replay_stream",
]
