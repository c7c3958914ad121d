"""``connectors.file_system`` on the JVM-free engine: Flink's part-file rules (hidden in-progress files renamed when
their micro-batch commits, rolling by size, date-time buckets of the environment's clock), ``FileSource``'s lines,
and what is refused up front."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List

import pytest

from pyspark_flinkish.common import Encoder, Row, Types
from pyspark_flinkish.core.errors import (
    InvalidArgumentError,
    InvalidPipelineError,
    InvalidTypeError,
    UnsupportedFeatureError,
)
from pyspark_flinkish.core.file_parts import java_date_time
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors.file_system import (
    BucketAssigner,
    BulkFormat,
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)
from pyspark_flinkish.datastream.sources import MicroBatch

# PyFlink 2.3.0's FileSink output, recorded by benchmarks/pyflink_file_sink.py
ORACLE = json.loads(Path(__file__).with_name("pyflink_file_sink.json").read_text())["cases"]


def _sink(base: Path, policy: RollingPolicy, assigner: BucketAssigner) -> FileSink:
    return (
        FileSink.for_row_format(str(base), Encoder.simple_string_encoder())
        .with_output_file_config(OutputFileConfig.builder().with_part_prefix("pre").with_part_suffix(".txt").build())
        .with_rolling_policy(policy)
        .with_bucket_assigner(assigner)
        .build()
    )


def _visible(base: Path) -> List[str]:
    return sorted(p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file() and not p.name.startswith("."))


def test_part_files_appear_only_when_their_micro_batch_commits(tmp_path: Path) -> None:
    #   batch 0: a b   -> committed at its end: one part file
    #   batch 1: c     -> a second part file (counter 1), same uuid
    env = StreamExecutionEnvironment.get_execution_environment()
    seen: List[List[str]] = []

    class Peek:
        def __call__(self, value: str) -> None:  # runs inside the batch, before the sink's commit
            seen.append(_visible(tmp_path / "out"))

    ds = env.from_micro_batches([MicroBatch(["a", "b"]), MicroBatch(["c"])]).map(lambda v: v, output_type=Types.STRING())
    ds.sink_to(_sink(tmp_path / "out", RollingPolicy.on_checkpoint_rolling_policy(), BucketAssigner.base_path_bucket_assigner()))
    ds.add_sink(Peek())
    env.execute()
    files = _visible(tmp_path / "out")
    assert len(files) == 2 and seen == [[], [], files[:1]]  # batch 0's file is visible in batch 1, not before
    uuids = {f.split("-", 1)[1].rsplit("-", 1)[0] for f in files}
    assert len(uuids) == 1 and sorted(f.rsplit("-", 1)[1] for f in files) == ["0.txt", "1.txt"]
    assert sorted((tmp_path / "out" / f).read_text() for f in files) == ["a\nb\n", "c\n"]
    assert list((tmp_path / "out").rglob(".*")) == []


def test_a_part_file_rolls_when_it_holds_more_than_the_part_size(tmp_path: Path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(["aaaa", "bbbb", "cccc"], Types.STRING()).sink_to(
        _sink(tmp_path, RollingPolicy.default_rolling_policy(part_size=5), BucketAssigner.base_path_bucket_assigner())
    )
    env.execute()
    # Flink's DefaultRollingPolicy rolls before a record when the file holds more than part_size bytes: 5 > 5 is false
    contents = sorted((tmp_path / f).read_text() for f in _visible(tmp_path))
    assert contents == ["aaaa\nbbbb\n", "cccc\n"]


def test_records_are_written_as_java_to_string_of_the_streams_type(tmp_path: Path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([("hi", 1), ("x", None)], Types.TUPLE([Types.STRING(), Types.INT()])).sink_to(
        _sink(tmp_path, RollingPolicy.on_checkpoint_rolling_policy(), BucketAssigner.base_path_bucket_assigner())
    )
    env.execute()
    (name,) = _visible(tmp_path)
    assert (tmp_path / name).read_text() == "(hi,1)\n(x,null)\n"  # what print() shows


def test_a_row_is_written_as_javas_row_to_string_not_as_pyflinks_print(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = ORACLE["row"]
    env = StreamExecutionEnvironment.get_execution_environment()
    row_type = Types.ROW_NAMED(["a", "b", "c"], [Types.STRING(), Types.INT(), Types.DOUBLE()])
    ds = env.from_collection([Row("hi", 1, None), Row("x", 2, 1.5)], type_info=row_type)
    ds.print()
    ds.sink_to(_sink(tmp_path, RollingPolicy.default_rolling_policy(), BucketAssigner.base_path_bucket_assigner()))
    env.execute()
    assert capsys.readouterr().out.splitlines() == case["printed"] == ["+I[hi,1,None]", "+I[x,2,1.5]"]
    (name,) = _visible(tmp_path)
    assert (tmp_path / name).read_text().splitlines() == case["part_lines"] == ["+I[hi, 1, null]", "+I[x, 2, 1.5]"]


def test_a_stream_without_a_declared_type_is_refused(tmp_path: Path) -> None:
    # PyFlink writes each pickled record's Java identity
    assert all(line.startswith("[B@") for line in ORACLE["untyped"]["part_lines"])
    env = StreamExecutionEnvironment.get_execution_environment()
    ds = env.from_collection(["a", "b"]).map(lambda x: x + "!")
    with pytest.raises(InvalidPipelineError, match=r"needs the stream's declared type.*\[B@"):
        ds.sink_to(_sink(tmp_path, RollingPolicy.default_rolling_policy(), BucketAssigner.base_path_bucket_assigner()))


def test_the_default_bucket_is_the_hour_of_the_environments_clock(tmp_path: Path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_manual_clock(1_700_000_000_000)  # 2023-11-14 22:13:20 UTC
    assigner = BucketAssigner.date_time_bucket_assigner("yyyy-MM-dd--HH", "UTC")
    env.from_collection(["a"], Types.STRING()).sink_to(_sink(tmp_path, RollingPolicy.default_rolling_policy(), assigner))
    env.execute()
    (name,) = _visible(tmp_path)
    assert name.startswith("2023-11-14--22/pre-") and name.endswith("-0.txt")


def test_java_date_time_patterns() -> None:
    ms = 1_700_000_000_123
    assert java_date_time("yyyy-MM-dd--HH", ms, "UTC") == "2023-11-14--22"
    assert java_date_time("yyyy/MM/dd/HH/mm/ss.SSS", ms, "Europe/Berlin") == "2023/11/14/23/13/20.123"
    assert java_date_time("'day='yyyyMMdd", ms, "UTC") == "day=20231114"
    with pytest.raises(InvalidArgumentError, match="pattern letters 'EEE'"):
        BucketAssigner.date_time_bucket_assigner("EEE")
    with pytest.raises(InvalidArgumentError, match="unknown time zone"):
        BucketAssigner.date_time_bucket_assigner("yyyy", "Mars/Olympus")


def test_file_source_reads_lines_as_javas_read_line(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_bytes(b"one\r\ntwo\rthree\n\nfour")
    (tmp_path / "in" / ".hidden").write_text("never\n")
    (tmp_path / "in" / "b.txt").write_text("five\n")
    env = StreamExecutionEnvironment.get_execution_environment()
    from pyspark_flinkish.common import WatermarkStrategy

    source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path / "in")).build()
    got = list(env.from_source(source, WatermarkStrategy.no_watermarks(), "files").execute_and_collect())
    assert got == ["one", "two", "three", "", "four", "five"]


def test_what_is_not_offered_is_refused_by_name(tmp_path: Path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    from pyspark_flinkish.common import Duration, WatermarkStrategy

    monitored = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path))
        .monitor_continuously(Duration.of_seconds(1))
        .build()
    )
    env.from_source(monitored, WatermarkStrategy.no_watermarks(), "files").print()  # refused when the job runs
    with pytest.raises(UnsupportedFeatureError, match=r"monitor_continuously.*unbounded.*Spark"):
        env.execute()
    with pytest.raises(InvalidTypeError, match="BulkFormat is made by a format"):
        BulkFormat("parquet")  # the reader formats: test_file_readers.py
    with pytest.raises(InvalidTypeError, match="for_bulk_file_format needs a BulkFormat"):
        FileSource.for_bulk_file_format(StreamFormat.text_line_format(), str(tmp_path))
    with pytest.raises(InvalidTypeError, match="for_bulk_format needs a BulkWriterFactory"):
        FileSink.for_bulk_format(str(tmp_path), None)  # the bulk writers: test_bulk_formats.py
    with pytest.raises(UnsupportedFeatureError, match="compaction"):
        FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder()).enable_compact(None, None)
    with pytest.raises(UnsupportedFeatureError, match="rolls at the end of its micro-batch"):
        RollingPolicy.default_rolling_policy(rollover_interval=10)
