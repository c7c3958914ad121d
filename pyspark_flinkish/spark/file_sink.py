"""``FileSink`` on the Spark executors: part files written by the tasks, committed by the driver, exactly once.

Flink's two phases, with a micro-batch as the checkpoint:

1. *pre-commit*: every task writes its records of the batch (in Flink's order) into hidden in-progress files
   ``.<prefix>-<uuid>-<n><suffix>.inprogress.<id>`` (:class:`~pyspark_flinkish.core.file_parts.PartFileWriter`) and
   returns their names: the driver learns file names, never records;
2. *commit*: the driver records the batch's pending files in the job's checkpoint
   (``<checkpoint>/file_sinks/<sink uid>.json``), renames each to its final name ``<prefix>-<uuid>-<n><suffix>``,
   then records the batch as committed.

After a crash Spark replays the batch that was not marked done in its own commit log: a batch the sink recorded as
committed is skipped; a batch whose pending files were recorded has its renames finished (Flink's committer recovers
the committables of a completed checkpoint the same way) and is not written again. Names are deterministic per
(query, batch, task): ``<uuid>`` is a name-based UUID of the sink's app id (:func:`.delta_commits.app_id`), the
batch id and the task, and a replayed task writes the same in-progress names again. No part file is written twice
and none is lost.

Files are reached through :mod:`.storage` (a local path, ``file:``, ``hdfs:`` or ``dbfs:``: stores with an atomic
rename); object stores, which have none, are refused up front.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from ..core.clock import Clock
from ..core.errors import UnsupportedFeatureError
from ..core.file_parts import PartFileSettings, PartFileWriter
from ..datastream.plan import FileSinkSpec, Transformation
from . import storage
from .delta_commits import app_id
from .record_columns import RecordColumns, arrow_values
from .sink_frames import STEP_COLUMN, SinkFrame

_log = logging.getLogger("pyspark_flinkish.spark.file_sink")
_NAMESPACE = uuid.UUID("6f1c3c1e-7a55-4d7e-9a3b-0b7f1f1e5a11")


def part_uid(app: str, batch_id: int, task: int) -> str:
    """The ``<uuid>`` of the part files task ``task`` writes in batch ``batch_id`` of the sink ``app``."""
    return str(uuid.uuid5(_NAMESPACE, f"{app}/{batch_id}/{task}"))


def write_task(
    batches: Iterable[Any],
    settings: PartFileSettings,
    base: str,
    app: str,
    batch_id: int,
    bucket: str,
    layout: Optional[RecordColumns] = None,
) -> Iterator[Any]:
    """``mapInArrow`` body (one task): the task's records (in Flink's order: pickled ``value``, or the columns of
    ``layout`` where they crossed as columns, ``spark/record_columns.py``) into hidden in-progress part files under
    ``base``/``bucket``; yields the pending files as (``hidden``, ``final``) rows."""
    import pyarrow as pa
    from pyspark import TaskContext

    context = TaskContext.get()
    task = context.partitionId() if context is not None else 0
    uid = part_uid(app, batch_id, task)
    writer = PartFileWriter(settings, base, uid, str(uuid.uuid5(_NAMESPACE, uid)), storage.open_output)
    for batch in batches:
        for element in arrow_values(batch, layout):
            writer.write(element, bucket)
    pending = writer.finish()
    yield pa.RecordBatch.from_arrays(
        [pa.array([h for h, _ in pending], pa.string()), pa.array([f for _, f in pending], pa.string())],
        names=["hidden", "final"],
    )


class FileBatchWriter:
    """Writes one ``FileSink``'s micro-batches as part files, exactly once per (query, sink, batch id).

    Called on the driver by both Spark executors with the batch's records as a :class:`~.sink_frames.SinkFrame` and
    a context (``checkpoint``, ``sink_uid``). Lifecycle: one instance per sink of a pipeline; it reads the sink's
    commit record from the checkpoint before its first batch (finishing a commit a crash cut short).
    """

    def __init__(self, sink: Any, output_type: Any, clock: Clock) -> None:
        scheme = storage.scheme_of(sink.base_path)
        if scheme in storage.OBJECT_STORES:
            msg = (
                f"FileSink({sink.base_path!r}): the {scheme!r} object store has no atomic rename, which the sink's "
                "commit needs (an in-progress file becomes a part file by a rename); write to HDFS or a local/mounted "
                "path, or write object stores with DeltaSink"
            )
            raise UnsupportedFeatureError(msg)
        self.sink = sink
        self.output_type = output_type
        self.clock = clock
        # per commit record (a checkpoint's, the writer is reused by later runs of the environment): the newest
        # committed batch id (-1: none), read from the record before the first batch
        self._committed: Dict[str, int] = {}
        self.commits = 0
        self.skipped = 0

    def _record(self, context: Dict[str, Any]) -> str:
        return storage.join(str(context.get("checkpoint", "")), "file_sinks", f"{context.get('sink_uid', 'sink')}.json")

    def _recover(self, record: str) -> int:
        """Read the commit record; finish the renames of a batch whose pending files were recorded. Returns the
        newest committed batch id (-1: none)."""
        doc = json.loads(storage.read_bytes(record)) if storage.exists(record) else {"committed": -1, "pending": None}
        pending = doc.get("pending")
        if pending is not None:
            _log.info("FileSink(%s): finishing the commit of batch %s", self.sink.base_path, pending["batch"])
            self._rename(pending["files"])
            doc = {"committed": pending["batch"], "pending": None}
            storage.write_bytes(record, json.dumps(doc).encode())
        return int(doc["committed"])

    @staticmethod
    def _rename(files: List[Tuple[str, str]]) -> None:
        for hidden, final in files:
            if storage.exists(hidden):  # else renamed before the crash
                storage.replace_file(hidden, final)

    def __call__(self, spark: Any, frame: SinkFrame, batch_id: int, context: Dict[str, Any]) -> None:
        record = self._record(context)
        if record not in self._committed:
            self._committed[record] = self._recover(record)
        committed = self._committed[record]
        if batch_id <= committed:
            self.skipped += 1
            return
        if frame.count == 0:
            return
        app = app_id(str(context.get("checkpoint", "")), str(context.get("sink_uid", "sink")))
        settings = self.sink.part_file_settings(self.output_type)
        bucket = self.sink.bucket_assigner.bucket_id(self.clock.now())
        base = storage.abspath(self.sink.base_path)
        columns = frame.value_columns()
        layout = frame.layout
        rows = frame.rows.select(*columns, "ord", STEP_COLUMN)
        if frame.count is not None:
            rows = rows.coalesce(frame.partitions())
        rows = rows.sortWithinPartitions(STEP_COLUMN, "ord").select(*columns)

        def write(batches: Iterable[Any]) -> Iterator[Any]:
            return write_task(batches, settings, base, app, batch_id, bucket, layout)

        files = [(r["hidden"], r["final"]) for r in rows.mapInArrow(write, "hidden string, final string").collect()]
        pending = {"committed": committed, "pending": {"batch": batch_id, "files": files}}
        storage.write_bytes(record, json.dumps(pending).encode())  # pre-committed: a crash from here on is recovered
        self._rename(files)
        storage.write_bytes(record, json.dumps({"committed": batch_id, "pending": None}).encode())
        self._committed[record] = batch_id
        self.commits += 1


def with_file_writers(sinks: List[Transformation], clock: Clock) -> List[Transformation]:
    """Give every ``FileSink`` of the pipeline its :class:`FileBatchWriter` (the sink only describes the files), with
    the environment's processing-time ``clock`` (its date-time buckets). Returns ``sinks``."""
    for t in sinks:
        if isinstance(t.spec, FileSinkSpec) and t.spec.writer is None:
            t.spec.writer = FileBatchWriter(t.spec.sink, t.inputs[0].output_type, clock)
    return sinks


__all__ = ["FileBatchWriter", "part_uid", "with_file_writers", "write_task"]
