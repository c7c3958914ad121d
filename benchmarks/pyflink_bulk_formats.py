"""Records what PyFlink 2.3.0's ``FileSink.for_bulk_format`` writes with each of Flink's bulk writers
(``ParquetBulkWriters.for_row_type``, ``OrcBulkWriters.for_row_type``, ``AvroBulkWriters.for_generic_record``,
``CsvBulkWriters.for_schema``) for a small typed stream: the directory layout (buckets, part-file names with the uuid
replaced by ``<uuid>``), and each file read back (pyarrow for Parquet and ORC: column names, Arrow types, rows;
fastavro for Avro: the writer schema and records; CSV: its text), as the oracle of
``jvm-free-tests/connectors/test_bulk_formats.py``.

Runs with PyFlink's own interpreter (Java 17 on ``PATH``) and the format jars PyFlink does not ship
(``org.apache.flink:flink-sql-parquet``, ``flink-sql-orc``, ``flink-sql-avro`` 2.3.0, fetched with ``mvn
dependency:copy`` into ``--jars``) plus the Hadoop client jars of pyspark (Parquet and ORC need Hadoop's
``Configuration``)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_bulk_formats.py --jars /tmp/flink-format-jars \\
        --hadoop-jars .venv/lib/python3.11/site-packages/pyspark/jars \\
        --out jvm-free-tests/connectors/pyflink_bulk_formats.json
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import decimal
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List

import pyflink_oracle as oracle

ROWS = """
import datetime
from pyflink.common import Row, Types
ROW_TYPE_INFO = Types.ROW_NAMED(
    ["id", "n", "name", "score", "ok"], [Types.INT(), Types.LONG(), Types.STRING(), Types.DOUBLE(), Types.BOOLEAN()])
ROWS = [
    Row(1, 10_000_000_000, "ann", 1.5, True),
    Row(-2, -1, "b\u00e9a, \\"q\\"", -0.25, False),
    Row(3, 0, None, None, None),
]
"""
PRELUDE = """
import sys
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import BucketAssigner, FileSink, OutputFileConfig
from pyflink.table import DataTypes
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.add_jars(*["file://" + j for j in sys.argv[2].split(",")])
""" + ROWS
ROW_TYPE = """
row_type = DataTypes.ROW([
    DataTypes.FIELD("id", DataTypes.INT()), DataTypes.FIELD("n", DataTypes.BIGINT()),
    DataTypes.FIELD("name", DataTypes.STRING()), DataTypes.FIELD("score", DataTypes.DOUBLE()),
    DataTypes.FIELD("ok", DataTypes.BOOLEAN())])
"""
NARROW = """
narrow_type = DataTypes.ROW([
    DataTypes.FIELD("b", DataTypes.TINYINT()), DataTypes.FIELD("s", DataTypes.SMALLINT()),
    DataTypes.FIELD("f", DataTypes.FLOAT()), DataTypes.FIELD("d", DataTypes.DOUBLE()),
    DataTypes.FIELD("t", DataTypes.STRING())])
ds = env.from_collection(
    [Row(-128, 32767, 3.2, 1e20, "it's, a\\nline"), Row(127, -32768, 0.1, 0.1, ""), Row(0, 0, 1.0, 1.0, None),
     Row(None, None, None, 123456789.125, "x")],
    type_info=Types.ROW_NAMED(["b", "s", "f", "d", "t"],
                              [Types.BYTE(), Types.SHORT(), Types.FLOAT(), Types.DOUBLE(), Types.STRING()]))
"""
JOBS = {
    "parquet": ROW_TYPE + """
from pyflink.datastream.formats.parquet import ParquetBulkWriters
factory = ParquetBulkWriters.for_row_type(row_type, utc_timestamp=True)
ds = env.from_collection(ROWS, type_info=ROW_TYPE_INFO)
""",
    "orc": ROW_TYPE + """
from pyflink.datastream.formats.orc import OrcBulkWriters
factory = OrcBulkWriters.for_row_type(row_type)
ds = env.from_collection(ROWS, type_info=ROW_TYPE_INFO)
""",
    "avro": """
from pyflink.datastream.formats.avro import AvroBulkWriters, AvroSchema, GenericRecordAvroTypeInfo
schema = AvroSchema.parse_string('''{"type": "record", "name": "Rec", "fields": [
    {"name": "id", "type": "int"}, {"name": "n", "type": "long"}, {"name": "name", "type": ["null", "string"]},
    {"name": "score", "type": ["null", "double"]}, {"name": "ok", "type": ["null", "boolean"]}]}''')
factory = AvroBulkWriters.for_generic_record(schema)
# PyFlink's docstring: a map declaring GenericRecordAvroTypeInfo before the sink, not from_collection itself
ds = env.from_collection(ROWS, type_info=ROW_TYPE_INFO).map(
    lambda r: {"id": r[0], "n": r[1], "name": r[2], "score": r[3], "ok": r[4]},
    output_type=GenericRecordAvroTypeInfo(schema))
""",
    "csv": """
from pyflink.datastream.formats.csv import CsvBulkWriters, CsvSchema
schema = (CsvSchema.builder().add_number_column("id", number_type=DataTypes.INT())
          .add_number_column("n", number_type=DataTypes.BIGINT()).add_string_column("name")
          .add_number_column("score", number_type=DataTypes.DOUBLE()).add_boolean_column("ok")
          .set_column_separator("|").build())
factory = CsvBulkWriters.for_schema(schema)
ds = env.from_collection(ROWS, type_info=ROW_TYPE_INFO)
""",
    # the narrow types: TINYINT, SMALLINT, FLOAT of a stream typed BYTE, SHORT, FLOAT
    "parquet_narrow": NARROW + """
from pyflink.datastream.formats.parquet import ParquetBulkWriters
factory = ParquetBulkWriters.for_row_type(narrow_type)
""",
    "orc_narrow": NARROW + """
from pyflink.datastream.formats.orc import OrcBulkWriters
factory = OrcBulkWriters.for_row_type(narrow_type)
""",
    # CSV's number text (Java's), quoting with another quote character, a null value, the default separator
    "csv_narrow": NARROW + """
from pyflink.datastream.formats.csv import CsvBulkWriters, CsvSchema
schema = (CsvSchema.builder().add_number_column("b", number_type=DataTypes.TINYINT())
          .add_number_column("s", number_type=DataTypes.SMALLINT())
          .add_number_column("f", number_type=DataTypes.FLOAT()).add_number_column("d", number_type=DataTypes.DOUBLE())
          .add_string_column("t").set_null_value("NA").set_quote_char("'").build())
factory = CsvBulkWriters.for_schema(schema)
""",
    # a DATE column of a stream typed Types.SQL_DATE() (the DataStream API's only date type): Flink fails at run time
    "parquet_sql_date": """
from pyflink.datastream.formats.parquet import ParquetBulkWriters
factory = ParquetBulkWriters.for_row_type(DataTypes.ROW([DataTypes.FIELD("day", DataTypes.DATE())]))
ds = env.from_collection([Row(datetime.date(2024, 1, 31))], type_info=Types.ROW_NAMED(["day"], [Types.SQL_DATE()]))
""",
    "parquet_sql_timestamp": """
from pyflink.datastream.formats.parquet import ParquetBulkWriters
factory = ParquetBulkWriters.for_row_type(DataTypes.ROW([DataTypes.FIELD("ts", DataTypes.TIMESTAMP(3))]))
ds = env.from_collection([Row(datetime.datetime(2024, 1, 31, 12, 30))],
                         type_info=Types.ROW_NAMED(["ts"], [Types.SQL_TIMESTAMP()]))
""",
}
SINK = """
ds.sink_to(FileSink.for_bulk_format(sys.argv[1], factory)
           .with_output_file_config(OutputFileConfig.builder().with_part_prefix("pre").with_part_suffix(".%s").build())
           .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
env.execute()
"""
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _plain(value: Any) -> Any:
    """A value read back as JSON: dates and timestamps in ISO form, bytes in base64."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


def read_back(kind: str, path: Path) -> Dict[str, Any]:
    """One part file's schema and rows."""
    if kind in ("parquet", "orc"):
        import pyarrow.orc as orc
        import pyarrow.parquet as pq

        table = pq.read_table(path) if kind == "parquet" else orc.read_table(path)
        if kind == "parquet":
            meta = pq.ParquetFile(path).metadata
            compression = meta.row_group(0).column(0).compression if meta.num_row_groups else None
        else:
            compression = orc.ORCFile(path).compression
        return {
            "compression": compression,
            "columns": [[f.name, str(f.type)] for f in table.schema],
            "rows": [_plain(list(r.values())) for r in table.to_pylist()],
        }
    if kind == "avro":
        import fastavro

        with path.open("rb") as f:
            reader = fastavro.reader(f)
            return {"schema": reader.writer_schema, "codec": reader.codec, "rows": [_plain(r) for r in reader]}
    return {"text": path.read_text(encoding="utf-8")}


def format_jars(jars_dir: str, hadoop_jars_dir: str) -> List[str]:
    """The jars a format job adds (``env.add_jars``): Flink's format jars in ``jars_dir``
    (``flink-sql-{parquet,orc,avro}-2.3.0.jar``, fetched with ``mvn dependency:copy``) and the Hadoop client jars in
    ``hadoop_jars_dir`` (pyspark's ``jars`` folder)."""
    jars = sorted(str(p.resolve()) for p in Path(jars_dir).glob("flink-sql-*.jar"))
    return jars + sorted(str(p.resolve()) for p in Path(hadoop_jars_dir).glob("hadoop-client-*.jar"))


def job_environ() -> Dict[str, str]:
    """The environment of a format job's process: this interpreter's directory first on ``PATH``, ``TZ=UTC``."""
    return dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""), TZ="UTC")


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--jars", required=True, help="folder with flink-sql-{parquet,orc,avro}-2.3.0.jar")
    parser.add_argument("--hadoop-jars", required=True, help="folder with hadoop-client-{api,runtime}-*.jar")
    args = parser.parse_args(argv)
    jars = format_jars(args.jars, args.hadoop_jars)
    env = job_environ()
    cases: Dict[str, Any] = {}
    for kind, job in JOBS.items():
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "job.py"
            script.write_text(PRELUDE + job + SINK % kind)
            out = Path(tmp) / "out"
            done = subprocess.run(
                [sys.executable, str(script), str(out), ",".join(jars)], env=env, capture_output=True, text=True
            )
            if done.returncode != 0:
                causes = re.findall(r"Caused by: (\S+: .*)", done.stdout + done.stderr)
                cases[kind] = {"job": job.strip(), "error": causes[-1] if causes else done.stderr[-2000:]}
                continue
            files = sorted(p for p in out.rglob("*") if p.is_file())
            cases[kind] = {
                "job": job.strip(),
                "files": [_UUID.sub("<uuid>", p.relative_to(out).as_posix()) for p in files],
                "contents": [read_back(kind.split("_")[0], p) for p in files if not p.name.startswith(".")],
            }
    import pyflink.version

    command = (
        f"{oracle.VENV_PYTHON} benchmarks/{Path(__file__).name} --jars <folder of flink-sql-{{parquet,orc,avro}}-2.3.0.jar> "
        f"--hadoop-jars <pyspark's jars folder> --out {args.out}"
    )
    body = {"rows": ROWS.strip(), "prelude_sink": SINK.strip(), "cases": cases}
    oracle.write_json(args.out, {"pyflink_version": pyflink.version.__version__, "command": command, **body})
    print(json.dumps(cases, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
