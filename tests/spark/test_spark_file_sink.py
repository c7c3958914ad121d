"""``FileSink`` on both Spark executors (foreachBatch and applyInPandasWithState): an event-time window's results over
two micro-batches, committed as part files whose lines equal the JVM-free engine's, nothing left in progress; the same
results through the four bulk formats (Parquet, ORC, Avro, CSV sinks of the same query: the executors write the files
with pyarrow and fastavro), whose files hold the JVM-free engine's rows; and the same into a directory of the test
HDFS (``hdfs://``: the executors write through ``spark/storage.py``)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Dict, List, Union

import pytest

from pyspark_flinkish.common import Encoder, Row, Time, Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors.file_system import BucketAssigner, FileSink, OutputFileConfig
from pyspark_flinkish.datastream.formats.avro import AvroBulkWriters, AvroSchema, GenericRecordAvroTypeInfo
from pyspark_flinkish.datastream.formats.csv import CsvBulkWriters, CsvSchema
from pyspark_flinkish.datastream.formats.orc import OrcBulkWriters
from pyspark_flinkish.datastream.formats.parquet import ParquetBulkWriters
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows
from pyspark_flinkish.table import DataTypes

pytestmark = pytest.mark.spark


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


def _pipeline(env: Any, out: Union[Path, str], bulk: bool = False) -> None:
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


@pytest.mark.parametrize("backend", ["foreach_batch", "apply_in_pandas_with_state"])
def test_file_sink_on_spark_writes_the_jvm_free_engines_lines(spark: Any, tmp_path: Path, backend: str) -> None:
    local = StreamExecutionEnvironment.get_execution_environment()
    _pipeline(local, tmp_path / "local", bulk=True)
    local.execute()
    expected = _lines(tmp_path / "local")
    assert expected == ["(a,1)", "(a,12)", "(a,6)", "(b,2)", "(b,7)"]
    expected_bulk = _bulk_rows(tmp_path / "local")
    rows = [["a", 1], ["a", 6], ["a", 12], ["b", 2], ["b", 7]]
    assert expected_bulk == {"parquet": rows, "orc": rows, "avro": rows, "csv": sorted([k, str(v)] for k, v in rows)}
    options = {} if backend == "foreach_batch" else {"backend": backend}
    env = StreamExecutionEnvironment.get_execution_environment(spark, **options)
    _pipeline(env, tmp_path / "spark", bulk=True)
    env.execute("file-sink-" + backend)
    assert _lines(tmp_path / "spark") == expected
    assert _bulk_rows(tmp_path / "spark") == expected_bulk


@pytest.mark.hdfs
def test_file_sink_on_spark_writes_into_hdfs(spark: Any, hdfs_cluster: Any) -> None:
    """The part files in an ``hdfs://`` directory, row and bulk formats: written and committed by the executors, as
    on a local disk."""
    directory = f"/file-sink-{uuid.uuid4().hex[:8]}"
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    _pipeline(env, hdfs_cluster.uri + directory, bulk=True)
    env.execute("file-sink-hdfs")
    client = hdfs_cluster.client()
    assert _hdfs_lines(client, directory) == ["(a,1)", "(a,12)", "(a,6)", "(b,2)", "(b,7)"]
    rows = [["a", 1], ["a", 6], ["a", 12], ["b", 2], ["b", 7]]
    for kind in BULK:  # the bulk formats' part files, written by the executors into HDFS as well
        got = sorted(r for data in _hdfs_files(client, f"{directory}-{kind}", "b-", f".{kind}") for r in _rows_of(kind, data))
        assert got == (rows if kind != "csv" else sorted([k, str(v)] for k, v in rows)), kind
