"""``spark/file_sink.py``'s commit protocol without Spark: the record of a commit cut short is finished on restart, a
committed batch is skipped, and part file names are deterministic per (query, batch, task)."""

from __future__ import annotations

import json
from pathlib import Path

from pyspark_flinkish.common import Encoder, Types
from pyspark_flinkish.core.clock import ManualClock
from pyspark_flinkish.datastream.connectors.file_system import BucketAssigner, FileSink
from pyspark_flinkish.spark.file_sink import FileBatchWriter, part_uid


def _writer(base: Path) -> FileBatchWriter:
    sink = (
        FileSink.for_row_format(str(base), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    return FileBatchWriter(sink, Types.STRING(), ManualClock(0))


def test_a_commit_cut_short_is_finished_from_its_record_and_the_batch_is_not_written_again(tmp_path: Path) -> None:
    out, chk = tmp_path / "out", tmp_path / "chk"
    out.mkdir()
    # batch 4 pre-committed two files; the crash came after the first rename
    (out / "part-u-0").write_text("a\n")
    (out / ".part-u-1.inprogress.x").write_text("b\n")
    record = chk / "file_sinks" / "sink-1.json"
    record.parent.mkdir(parents=True)
    files = [[str(out / ".part-u-0.inprogress.x"), str(out / "part-u-0")], [str(out / ".part-u-1.inprogress.x"), str(out / "part-u-1")]]
    record.write_text(json.dumps({"committed": 3, "pending": {"batch": 4, "files": files}}))
    writer = _writer(out)
    writer(None, None, 4, {"checkpoint": str(chk), "sink_uid": "sink-1"})  # type: ignore[arg-type] (never read)
    assert sorted(p.name for p in out.iterdir()) == ["part-u-0", "part-u-1"]
    assert json.loads(record.read_text()) == {"committed": 4, "pending": None}
    assert writer.skipped == 1 and writer.commits == 0


def test_part_file_uuids_are_deterministic_per_query_batch_and_task() -> None:
    assert part_uid("app", 3, 1) == part_uid("app", 3, 1)
    assert len({part_uid("app", 3, 1), part_uid("app", 3, 0), part_uid("app", 4, 1), part_uid("other", 3, 1)}) == 4


def test_a_writer_reused_by_another_checkpoint_reads_that_checkpoints_record(tmp_path: Path) -> None:
    from pyspark_flinkish.spark.sink_frames import SinkFrame

    old, new = tmp_path / "old", tmp_path / "new"
    (old / "file_sinks").mkdir(parents=True)
    (old / "file_sinks" / "s.json").write_text(json.dumps({"committed": 5, "pending": None}))
    writer = _writer(tmp_path / "out")
    empty = SinkFrame(None, Types.STRING(), 0)
    writer(None, empty, 2, {"checkpoint": str(old), "sink_uid": "s"})
    assert writer.skipped == 1  # batch 2 of the old checkpoint is committed
    writer(None, empty, 2, {"checkpoint": str(new), "sink_uid": "s"})
    assert writer.skipped == 1  # a new checkpoint has committed nothing: its batch 2 is written (here: empty)
