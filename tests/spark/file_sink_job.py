"""The job of ``test_file_sink_exactly_once.py``: Flink's file connectors end to end on Spark, as a driver process the
test SIGKILLs.

A ``FileSource`` monitoring ``--input`` (Spark's file source; the test adds files while the job runs) feeds
``map(upper-case)`` into a ``FileSink`` under ``--output`` (base-path buckets, 40-byte part files: several part files
per micro-batch, so that a commit has several renames), and ``map((upper-case, length))`` into a bulk-format
``FileSink`` writing Parquet under ``<--output>-parquet`` (a part file per writing task and micro-batch). A second
``FileSource`` monitors ``--csv-input`` with ``CsvReaderFormat`` (Spark's ``binaryFile`` source, each file parsed by
the executors) and writes its rows, as Flink's ``RowData`` text, under ``<--output>-csv``. The job stops itself once
the committed part files hold ``--expect`` lines (text, Parquet) and ``--expect-csv`` rows.

Kill points (the driver SIGKILLs its JVM, then itself, as if its machine died: ``pyspark_flinkish.testing.sigkill``):

* ``--kill-after-renames N``: right after the N-th rename of an in-progress file to its part file name (counted in
  this process), i.e. in the middle of a micro-batch's commit, after its pending files were recorded;
* ``--kill-before-precommit N``: when the N-th micro-batch's in-progress files are all written, before the sink
  records them as pending (the executors' work is lost; the batch is written again).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, List, Optional

from pyspark_flinkish.common import Duration, Encoder, Row, Types, WatermarkStrategy
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)
from pyspark_flinkish.datastream.formats.csv import CsvReaderFormat, CsvSchema
from pyspark_flinkish.datastream.formats.parquet import ParquetBulkWriters
from pyspark_flinkish.table import DataTypes
from pyspark_flinkish.testing.sigkill import crash

PART_SIZE = 40


CSV_FORMAT = CsvReaderFormat.for_schema(
    CsvSchema.builder().add_number_column("id", number_type=DataTypes.INT()).add_string_column("text").build()
)


def build(env: Any, source: FileSource, output: str, csv_source: Optional[FileSource] = None) -> None:
    """The pipeline (the test runs it on the JVM-free engine too, over the same files, bounded)."""
    if csv_source is not None:
        env.from_source(csv_source, WatermarkStrategy.no_watermarks(), "csv-files").sink_to(
            FileSink.for_row_format(csv_output(output), Encoder.simple_string_encoder())
            .with_output_file_config(OutputFileConfig.builder().with_part_prefix("part").with_part_suffix(".txt").build())
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
            .build()
        )
    lines = env.from_source(source, WatermarkStrategy.no_watermarks(), "files")
    lines.map(lambda line: line.upper(), output_type=Types.STRING()).sink_to(
        FileSink.for_row_format(output, Encoder.simple_string_encoder())
        .with_output_file_config(OutputFileConfig.builder().with_part_prefix("part").with_part_suffix(".txt").build())
        .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=PART_SIZE))
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    row_type = DataTypes.ROW([DataTypes.FIELD("line", DataTypes.STRING()), DataTypes.FIELD("length", DataTypes.INT())])
    lines.map(
        lambda line: Row(line.upper(), len(line)), output_type=Types.ROW_NAMED(["line", "length"], [Types.STRING(), Types.INT()])
    ).sink_to(
        FileSink.for_bulk_format(bulk_output(output), ParquetBulkWriters.for_row_type(row_type))
        .with_output_file_config(OutputFileConfig.builder().with_part_prefix("part").with_part_suffix(".parquet").build())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )


def csv_output(output: str) -> str:
    """Where the CSV source's records of the job writing ``output`` go."""
    return output.rstrip("/") + "-csv"


def bulk_output(output: str) -> str:
    """Where the bulk-format sink of the job writing ``output`` writes."""
    return output.rstrip("/") + "-parquet"


def visible_lines(output: str) -> List[str]:
    """The lines of the finished part files (hidden in-progress files skipped)."""
    out: List[str] = []
    for path in Path(output).rglob("*"):
        if path.is_file() and not path.name.startswith("."):
            out.extend(path.read_text().splitlines())
    return out


def visible_rows(output: str) -> List[Any]:
    """The rows ``(line, length)`` of the bulk sink's finished Parquet part files (in-progress files skipped)."""
    import pyarrow.parquet as pq

    out: List[Any] = []
    for path in Path(bulk_output(output)).rglob("*"):
        if path.is_file() and not path.name.startswith("."):
            out.extend((r["line"], r["length"]) for r in pq.read_table(path).to_pylist())
    return out


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--expect", type=int, required=True)
    parser.add_argument("--csv-input", required=True)
    parser.add_argument("--expect-csv", type=int, required=True)
    parser.add_argument("--kill-after-renames", type=int, default=None)
    parser.add_argument("--kill-before-precommit", type=int, default=None)
    args = parser.parse_args(argv)

    from pyspark_flinkish.spark import file_sink, session, storage

    renames = precommits = 0
    replace_file, write_bytes = storage.replace_file, storage.write_bytes

    def counted_replace(src: str, dst: str) -> None:
        nonlocal renames
        replace_file(src, dst)
        renames += 1
        if args.kill_after_renames is not None and renames >= args.kill_after_renames:
            crash(f"after rename {renames}: {dst}")

    def counted_write(uri: str, data: bytes) -> None:
        nonlocal precommits
        if "/file_sinks/" in uri and b'"pending": {' in data:
            precommits += 1
            if args.kill_before_precommit is not None and precommits >= args.kill_before_precommit:
                crash(f"before pre-commit {precommits}")
        write_bytes(uri, data)

    file_sink.storage.replace_file = counted_replace  # type: ignore[assignment]
    file_sink.storage.write_bytes = counted_write  # type: ignore[assignment]

    spark = session("file-sink-job", master="local[2]", shuffle_partitions=2, spark__default__parallelism="2")
    spark.sparkContext.setLogLevel("ERROR")
    env: Any = StreamExecutionEnvironment.get_execution_environment(spark)
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), args.input)
        .monitor_continuously(Duration.of_millis(500))
        .build()
    )
    csv_source = FileSource.for_record_stream_format(CSV_FORMAT, args.csv_input).monitor_continuously(Duration.of_millis(500))
    build(env, source, args.output, csv_source.build())

    def progress(p: Any) -> None:
        print(f"committed batch_id={p['batch_id']}", flush=True)

    handle = env.execute(
        "file-sink", checkpoint_location=args.checkpoint, trigger={"processingTime": "500 milliseconds"}, progress=progress
    )
    deadline = time.monotonic() + 120
    while (
        len(visible_lines(args.output)) < args.expect
        or len(visible_rows(args.output)) < args.expect
        or len(visible_lines(csv_output(args.output))) < args.expect_csv
    ) and time.monotonic() < deadline:
        if not handle.is_active:
            handle.await_termination()  # raises the query's error
            break
        time.sleep(0.2)
    handle.stop()
    print(f"done: {len(visible_lines(args.output))} lines", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
