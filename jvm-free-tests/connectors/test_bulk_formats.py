"""``FileSink.for_bulk_format`` on the JVM-free engine against PyFlink 2.3.0: each recorded job (Parquet, ORC, Avro,
CSV writers of ``pyflink.datastream.formats``) runs here with only its imports changed, and the committed part
files' names, schemas and rows are the ones real Flink wrote; what Flink fails on at run time is refused up front.
Also: the bulk builder's rolling policy, part files per micro-batch, and the refusals."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from pyspark_flinkish.common import Row, Types
from pyspark_flinkish.core.errors import InvalidArgumentError, InvalidPipelineError, UnsupportedFeatureError
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
from pyspark_flinkish.datastream.formats.avro import AvroBulkWriters, AvroSchema, GenericRecordAvroTypeInfo
from pyspark_flinkish.datastream.formats.csv import CsvBulkWriters, CsvSchema
from pyspark_flinkish.datastream.formats.orc import OrcBulkWriters
from pyspark_flinkish.datastream.formats.parquet import ParquetBulkWriters
from pyspark_flinkish.datastream.sources import MicroBatch
from pyspark_flinkish.table import DataTypes

# recorded by benchmarks/pyflink_bulk_formats.py with PyFlink 2.3.0
RECORDED = json.loads(Path(__file__).with_name("pyflink_bulk_formats.json").read_text())
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from pyflink_bulk_formats import read_back  # noqa: E402 (the recorder's own reading of the part files)

CASES: Dict[str, Any] = RECORDED["cases"]
PRELUDE = """
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import BucketAssigner, FileSink, OutputFileConfig
from pyflink.table import DataTypes
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
"""
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _swapped(code: str) -> str:
    """A PyFlink program with only its imports changed."""
    return code.replace("from pyflink.", "from pyspark_flinkish.")


def _run_recorded(kind: str, out: Path) -> None:
    """The recorded job ``kind`` (its rows, job and sink as PyFlink ran them) on the JVM-free engine."""
    sink = (RECORDED["prelude_sink"] % kind).replace("sys.argv[1]", repr(str(out)))
    program = _swapped(PRELUDE + RECORDED["rows"] + "\n" + CASES[kind]["job"] + "\n" + sink)
    exec(compile(program, f"<recorded {kind}>", "exec"), {"__name__": "recorded"})


def _files(out: Path) -> List[Path]:
    return sorted(p for p in out.rglob("*") if p.is_file())


WRITTEN = sorted(k for k, v in CASES.items() if "error" not in v)
FAILED = sorted(k for k, v in CASES.items() if "error" in v)


def test_the_recording_covers_every_writer() -> None:
    assert RECORDED["pyflink_version"] == "2.3.0"
    assert {k.split("_")[0] for k in WRITTEN} == {"parquet", "orc", "avro", "csv"}
    assert FAILED  # Flink's run-time failures are recorded too


@pytest.mark.parametrize("kind", WRITTEN)
def test_committed_files_are_flinks(kind: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    _run_recorded(kind, out)
    files = _files(out)
    expected = CASES[kind]
    assert [_UUID.sub("<uuid>", p.relative_to(out).as_posix()) for p in files] == expected["files"]
    assert [read_back(kind.split("_")[0], p) for p in files] == expected["contents"]


@pytest.mark.parametrize("kind", FAILED)
def test_what_flink_fails_on_at_run_time_is_refused_up_front(kind: str, tmp_path: Path) -> None:
    # Flink: ClassCastException of java.sql.Date/Timestamp when the job runs; here: refused at the writer's factory
    sql_type = "DATE" if "date" in kind else "TIMESTAMP"
    assert "ClassCastException" in CASES[kind]["error"]
    with pytest.raises(UnsupportedFeatureError, match=rf"of type {sql_type}.*STRING"):
        _run_recorded(kind, tmp_path / "out")
    assert not (tmp_path / "out").exists()


ROW_TYPE = DataTypes.ROW([DataTypes.FIELD("k", DataTypes.STRING()), DataTypes.FIELD("v", DataTypes.INT())])
STREAM_TYPE = Types.ROW_NAMED(["k", "v"], [Types.STRING(), Types.INT()])


def test_a_part_file_per_bucket_per_micro_batch_hidden_until_it_commits(tmp_path: Path) -> None:
    #   batch 0: (a,1) (b,2)  -> pre-<uuid>-0.parquet when batch 0 commits
    #   batch 1: (c,3)        -> pre-<uuid>-1.parquet (bulk formats roll on checkpoints only)
    import pyarrow.parquet as pq

    env = StreamExecutionEnvironment.get_execution_environment()
    seen: List[List[str]] = []
    ds = env.from_micro_batches([MicroBatch([Row("a", 1), Row("b", 2)]), MicroBatch([Row("c", 3)])]).map(
        lambda r: r, output_type=STREAM_TYPE
    )
    ds.sink_to(
        FileSink.for_bulk_format(str(tmp_path / "out"), ParquetBulkWriters.for_row_type(ROW_TYPE))
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    ds.add_sink(lambda _: seen.append([p.name for p in _files(tmp_path / "out") if not p.name.startswith(".")]))
    env.execute()
    files = _files(tmp_path / "out")
    assert [_UUID.sub("<uuid>", p.name) for p in files] == ["part-<uuid>-0", "part-<uuid>-1"]
    assert seen[0] == [] and seen[1] == [] and len(seen[2]) == 1  # in-progress files are hidden
    assert [pq.read_table(p).to_pylist() for p in files] == [[{"k": "a", "v": 1}, {"k": "b", "v": 2}], [{"k": "c", "v": 3}]]


def test_bulk_formats_take_only_the_on_checkpoint_rolling_policy(tmp_path: Path) -> None:
    builder = FileSink.for_bulk_format(str(tmp_path), OrcBulkWriters.for_row_type(ROW_TYPE))
    builder.with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
    with pytest.raises(InvalidArgumentError, match="must be OnCheckpointRollingPolicy for bulk format"):
        builder.with_rolling_policy(RollingPolicy.default_rolling_policy())


def test_a_stream_flinks_converter_would_fail_on_is_refused_when_sunk(tmp_path: Path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    sink = FileSink.for_bulk_format(str(tmp_path), ParquetBulkWriters.for_row_type(ROW_TYPE)).build()
    wrong = env.from_collection([Row("a", 1)], type_info=Types.ROW_NAMED(["k", "v"], [Types.STRING(), Types.LONG()]))
    with pytest.raises(InvalidPipelineError, match=r"Types.ROW_NAMED\(names, \[Types.STRING\(\), Types.INT\(\)\]\)"):
        wrong.sink_to(sink)
    with pytest.raises(InvalidPipelineError, match="must be declared"):
        env.from_collection(["a"]).sink_to(sink)
    schema = AvroSchema.parse_string('{"type": "record", "name": "R", "fields": [{"name": "k", "type": "string"}]}')
    avro = FileSink.for_bulk_format(str(tmp_path), AvroBulkWriters.for_generic_record(schema)).build()
    with pytest.raises(InvalidPipelineError, match=r"GenericRecordAvroTypeInfo\(schema\)"):
        env.from_collection([Row("a", 1)], type_info=STREAM_TYPE).sink_to(avro)
    env.from_collection([Row("a", 1)], type_info=STREAM_TYPE).map(
        lambda r: {"k": r[0]}, output_type=GenericRecordAvroTypeInfo(schema)
    ).sink_to(avro)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: ParquetBulkWriters.for_row_type(DataTypes.ROW([DataTypes.FIELD("d", DataTypes.DECIMAL(10, 2))])), "DECIMAL"),
        (lambda: OrcBulkWriters.for_row_type(DataTypes.ROW([DataTypes.FIELD("a", DataTypes.ARRAY(DataTypes.INT()))])), "ARRAY"),
        (lambda: ParquetBulkWriters.for_row_type(DataTypes.ROW([DataTypes.FIELD("c", DataTypes.VARCHAR(3))])), r"VARCHAR\(3\)"),
        (lambda: CsvSchema.builder().add_array_column("xs"), "array columns"),
        (lambda: CsvSchema.builder().set_use_header(), "header"),
        (lambda: CsvSchema.builder().set_escape_char("\\"), "escape"),
        (lambda: OrcBulkWriters.for_row_type(ROW_TYPE, writer_properties={"orc.compress": "SNAPPY"}), "writer_properties"),
        (lambda: AvroSchema.parse_string('{"type": "int", "logicalType": "date"}'), "logical types"),
    ],
)
def test_what_is_not_written_as_flink_writes_it_is_refused_by_name(make: Any, match: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match=match):
        make()


def test_csv_quotes_as_jacksons_encoder() -> None:
    from pyspark_flinkish.core.bulk_writers import BulkEncoding

    factory = CsvBulkWriters.for_schema(CsvSchema.builder().add_string_column("s").build())
    encoding: BulkEncoding = factory.encoding

    class Out:
        data = b""

        def write(self, b: bytes) -> None:
            Out.data += b

    w = encoding.open(Out())  # type: ignore[arg-type]
    for s in ["plain", "a,b", "x" * 24, "x" * 25, "", "say \"hi\"", "-dash", "#hash"]:
        w.add([s])
    w.finish()
    # a character below '-' (after ',', '"', '\n') or more than 24 characters: quoted
    assert Out.data.decode().split("\n")[:-1] == [
        "plain", '"a,b"', "x" * 24, '"' + "x" * 25 + '"', "", '"say ""hi"""', "-dash", '"#hash"',
    ]
