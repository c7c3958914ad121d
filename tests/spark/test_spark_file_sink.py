"""``FileSink`` on both Spark executors (foreachBatch and applyInPandasWithState): an event-time window's results over
two micro-batches, committed as part files whose lines equal the JVM-free engine's, nothing left in progress; the same
results through the four bulk formats (Parquet, ORC, Avro, CSV sinks of the same query: the executors write the files
with pyarrow and fastavro), whose files hold the JVM-free engine's rows; and the same into a directory of the test
HDFS (``hdfs://``: the executors write through ``spark/storage.py``). The same query also reads bounded
``FileSource``s of Parquet and CSV files (``ParquetColumnarRowInputFormat``, ``CsvReaderFormat``: the trees of
``jvm-free-tests/connectors/file_reader_inputs.py``, locally and in HDFS), read by the executors, and writes their
records as Flink's ``RowData`` text, which must be what PyFlink 2.3.0 printed for them."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import pytest

from pyspark_flinkish.common import Encoder, Row, Time, Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors.file_system import BucketAssigner, FileSink, FileSource, OutputFileConfig
from pyspark_flinkish.datastream.formats.avro import AvroBulkWriters, AvroSchema, GenericRecordAvroTypeInfo
from pyspark_flinkish.datastream.formats.csv import CsvBulkWriters, CsvReaderFormat, CsvSchema
from pyspark_flinkish.datastream.formats.orc import OrcBulkWriters
from pyspark_flinkish.datastream.formats.parquet import ParquetBulkWriters, ParquetColumnarRowInputFormat
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows
from pyspark_flinkish.table import DataTypes

pytestmark = pytest.mark.spark

READERS_DIR = Path(__file__).resolve().parents[2] / "jvm-free-tests" / "connectors"
sys.path.insert(0, str(READERS_DIR))
import file_reader_inputs as reader_inputs  # noqa: E402 (the reader oracle's input files)

READ = json.loads((READERS_DIR / "pyflink_file_readers.json").read_text())["cases"]  # PyFlink 2.3.0's printed records
PARQUET_ROW_TYPE = DataTypes.ROW([
    DataTypes.FIELD("id", DataTypes.INT()), DataTypes.FIELD("n", DataTypes.BIGINT()),
    DataTypes.FIELD("name", DataTypes.STRING()), DataTypes.FIELD("score", DataTypes.DOUBLE()),
    DataTypes.FIELD("ok", DataTypes.BOOLEAN()), DataTypes.FIELD("b", DataTypes.TINYINT()),
    DataTypes.FIELD("s", DataTypes.SMALLINT()), DataTypes.FIELD("f", DataTypes.FLOAT())])
CSV_READ = (CsvSchema.builder().add_number_column("id", number_type=DataTypes.INT()).add_number_column("n")
            .add_string_column("name").add_number_column("score", number_type=DataTypes.DOUBLE())
            .add_boolean_column("ok").build())


AVRO = AvroSchema.parse_string('{"type": "record", "name": "W", "fields": [{"name": "k", "type": "string"}, '
                               '{"name": "v", "type": "int"}]}')
BULK = {
    "parquet": ParquetBulkWriters.for_row_type,
    "orc": OrcBulkWriters.for_row_type,
    "csv": lambda _: CsvBulkWriters.for_schema(
        CsvSchema.builder().add_string_column("k").add_number_column("v", number_type=DataTypes.INT()).build()
    ),
    "avro": lambda _: AvroBulkWriters.for_generic_record(AVRO),
}


def _pipeline(env: Any, out: Union[Path, str], bulk: bool = False, read: Optional[Dict[str, str]] = None) -> None:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, ts: v[1])
    batches = [MicroBatch([("a", 1), ("b", 2), ("a", 6)]), MicroBatch([("b", 7), ("a", 12)])]
    sums = (
        env.from_micro_batches(batches, strategy)
        .key_by(lambda v: v[0], key_type=Types.STRING())
        .window(TumblingEventTimeWindows.of(Time.milliseconds(5)))
        .reduce(lambda x, y: (x[0], x[1] + y[1]), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
    )
    sums.sink_to(
        FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
        .with_output_file_config(OutputFileConfig.builder().with_part_prefix("w").with_part_suffix(".txt").build())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    for kind, directory in (read or {}).items():  # bounded FileSources, their records written as Flink's RowData text
        fmt = ParquetColumnarRowInputFormat(PARQUET_ROW_TYPE) if kind == "parquet" else CsvReaderFormat.for_schema(CSV_READ)
        builder = (FileSource.for_bulk_file_format(fmt, directory) if kind == "parquet"
                   else FileSource.for_record_stream_format(fmt, directory))
        env.from_source(builder.build(), WatermarkStrategy.no_watermarks(), f"{kind}-files").sink_to(
            FileSink.for_row_format(f"{out}-read-{kind}", Encoder.simple_string_encoder())
            .with_output_file_config(OutputFileConfig.builder().with_part_prefix("r").build())
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
            .build()
        )
    if not bulk:
        return
    rows = sums.map(lambda t: Row(t[0], t[1]), output_type=Types.ROW_NAMED(["k", "v"], [Types.STRING(), Types.INT()]))
    row_type = DataTypes.ROW([DataTypes.FIELD("k", DataTypes.STRING()), DataTypes.FIELD("v", DataTypes.INT())])
    for kind, factory in BULK.items():
        stream = rows if kind != "avro" else rows.map(lambda r: {"k": r[0], "v": r[1]}, output_type=GenericRecordAvroTypeInfo(AVRO))
        stream.sink_to(
            FileSink.for_bulk_format(f"{out}-{kind}", factory(row_type))
            .with_output_file_config(OutputFileConfig.builder().with_part_prefix("b").with_part_suffix(f".{kind}").build())
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
            .build()
        )


def _rows_of(kind: str, data: bytes) -> List[Any]:
    """The rows ``[k, v]`` of one bulk part file's bytes."""
    import io

    import fastavro
    import pyarrow as pa
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    if kind == "parquet":
        return [[r["k"], r["v"]] for r in pq.read_table(pa.BufferReader(data)).to_pylist()]
    if kind == "orc":
        return [[r["k"], r["v"]] for r in orc.read_table(pa.BufferReader(data)).to_pylist()]
    if kind == "avro":
        return [[r["k"], r["v"]] for r in fastavro.reader(io.BytesIO(data))]  # type: ignore[index]
    return [line.split(",") for line in data.decode("utf-8").splitlines()]


def _bulk_rows(out: Path) -> Dict[str, List[Any]]:
    """Per bulk format: the rows ``[k, v]`` of the committed part files (sorted), none left in progress."""
    rows: Dict[str, List[Any]] = {}
    for kind in BULK:
        directory = Path(f"{out}-{kind}")
        assert [p for p in directory.rglob(".*")] == [], "no in-progress file is left"
        rows[kind] = sorted(r for p in directory.rglob(f"b-*.{kind}") for r in _rows_of(kind, p.read_bytes()))
    return rows


def _records(lines: List[str]) -> List[str]:
    """Printed ``RowData`` lines as records (a string with a line break spans two lines), sorted."""
    records: List[str] = []
    for line in lines:
        if line.startswith("+I(") or not records:
            records.append(line)
        else:
            records[-1] += "\n" + line
    return sorted(records)


def _read_records(out: Path) -> Dict[str, List[str]]:
    """Per read format: the records the query wrote (sorted), none left in progress."""
    got = {}
    for kind in ("parquet", "csv"):
        directory = Path(f"{out}-read-{kind}")
        assert [p for p in directory.rglob(".*")] == [], "no in-progress file is left"
        got[kind] = _records([line for p in sorted(directory.rglob("r-*")) for line in p.read_text().splitlines()])
    return got


FLINK_READ = {"parquet": _records(READ["parquet_columnar"]["printed"]), "csv": _records(READ["csv"]["printed"])}


def _lines(out: Path) -> List[str]:
    assert [p for p in out.rglob(".*")] == [], "no in-progress file is left"
    return sorted(line for p in out.rglob("w-*.txt") for line in p.read_text().splitlines())


def _hdfs_files(client: Any, directory: str, prefix: str, suffix: str) -> List[bytes]:
    """The bytes of the committed part files ``<prefix>*<suffix>`` under an HDFS ``directory`` (its path), none left
    in progress."""
    files, names = [], []
    pending = [directory]
    while pending:
        for status in client.list_status(pending.pop()):
            name = status.path.rstrip("/").rsplit("/", 1)[-1]
            if status.isdir:
                pending.append(status.path)
                continue
            names.append(name)
            if name.startswith(prefix) and name.endswith(suffix):
                with client.read(status.path) as f:
                    files.append(f.read())
    assert [n for n in names if n.startswith(".")] == [], "no in-progress file is left"
    return files


def _hdfs_lines(client: Any, directory: str) -> List[str]:
    """The lines of the committed part files under an HDFS ``directory`` (its path), none left in progress."""
    return sorted(line for data in _hdfs_files(client, directory, "w-", ".txt") for line in data.decode("utf-8").splitlines())


def _local_trees(root: Path) -> Dict[str, str]:
    return {"parquet": str(reader_inputs.write_parquet_tree(root / "in")), "csv": str(reader_inputs.write_csv_tree(root / "in"))}


def _hdfs_trees(client: Any, uri: str, directory: str, tmp: Path) -> Dict[str, str]:
    """The reader oracle's Parquet and CSV trees copied into HDFS under ``directory``; their ``hdfs://`` URIs."""
    trees = _local_trees(tmp)
    for kind, local in trees.items():
        for path in Path(local).rglob("*"):
            if path.is_file():
                writer = client.create(f"{directory}/{kind}/{path.relative_to(local).as_posix()}")
                writer.write(path.read_bytes())
                writer.close()
    return {kind: f"{uri}{directory}/{kind}" for kind in trees}


@pytest.mark.parametrize("backend", ["foreach_batch", "apply_in_pandas_with_state"])
def test_file_sink_on_spark_writes_the_jvm_free_engines_lines(spark: Any, tmp_path: Path, backend: str) -> None:
    local = StreamExecutionEnvironment.get_execution_environment()
    _pipeline(local, tmp_path / "local", bulk=True, read=_local_trees(tmp_path))
    local.execute()
    assert _read_records(tmp_path / "local") == FLINK_READ
    expected = _lines(tmp_path / "local")
    assert expected == ["(a,1)", "(a,12)", "(a,6)", "(b,2)", "(b,7)"]
    expected_bulk = _bulk_rows(tmp_path / "local")
    rows = [["a", 1], ["a", 6], ["a", 12], ["b", 2], ["b", 7]]
    assert expected_bulk == {"parquet": rows, "orc": rows, "avro": rows, "csv": sorted([k, str(v)] for k, v in rows)}
    options = {} if backend == "foreach_batch" else {"backend": backend}
    env = StreamExecutionEnvironment.get_execution_environment(spark, **options)
    # the foreachBatch executor also reads bounded FileSources (executors read the files)
    read = _local_trees(tmp_path) if backend == "foreach_batch" else None
    _pipeline(env, tmp_path / "spark", bulk=True, read=read)
    env.execute("file-sink-" + backend)
    assert _lines(tmp_path / "spark") == expected
    assert _bulk_rows(tmp_path / "spark") == expected_bulk
    if read is not None:
        assert _read_records(tmp_path / "spark") == FLINK_READ


@pytest.mark.hdfs
def test_file_sink_on_spark_writes_into_hdfs(spark: Any, hdfs_cluster: Any, tmp_path: Path) -> None:
    """The part files in an ``hdfs://`` directory, row and bulk formats: written and committed by the executors, as
    on a local disk; and bounded FileSources over ``hdfs://`` directories, read by the executors."""
    directory = f"/file-sink-{uuid.uuid4().hex[:8]}"
    client = hdfs_cluster.client()
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    read = _hdfs_trees(client, hdfs_cluster.uri, directory + "-in", tmp_path)  # bounded FileSources over HDFS
    _pipeline(env, hdfs_cluster.uri + directory, bulk=True, read=read)
    env.execute("file-sink-hdfs")
    for kind in ("parquet", "csv"):  # read by the executors from HDFS: the records PyFlink printed
        data = _hdfs_files(client, f"{directory}-read-{kind}", "r-", "")
        assert _records([line for d in data for line in d.decode("utf-8").splitlines()]) == FLINK_READ[kind], kind
    assert _hdfs_lines(client, directory) == ["(a,1)", "(a,12)", "(a,6)", "(b,2)", "(b,7)"]
    rows = [["a", 1], ["a", 6], ["a", 12], ["b", 2], ["b", 7]]
    for kind in BULK:  # the bulk formats' part files, written by the executors into HDFS as well
        got = sorted(r for data in _hdfs_files(client, f"{directory}-{kind}", "b-", f".{kind}") for r in _rows_of(kind, data))
        assert got == (rows if kind != "csv" else sorted([k, str(v)] for k, v in rows)), kind
