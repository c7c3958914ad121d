"""Records what PyFlink 2.3.0's ``FileSource`` yields with each reader format of its Python API
(``CsvReaderFormat.for_schema``, ``ParquetColumnarRowInputFormat``, ``StreamFormat.text_line_format``) over the
directory trees of ``jvm-free-tests/connectors/file_reader_inputs.py`` (Parquet written by pyarrow, CSV text; nested
directories, hidden files), as the oracle of ``jvm-free-tests/connectors/test_file_readers.py``.

Each source is printed with ``print()`` (Flink holds the records as ``RowData``: Java's ``toString``,
``+I(0,1.0E20,null)``), and in the ``*_map`` cases also through a Python ``map`` (the ``Row`` of Python values a
Python function gets, printed with Python's ``str``); the records in Flink's order (a file's records in order; the
order of files is Flink's enumerator's). ``execute_and_collect`` fails on these records (no Python conversion of
``RowData``: the ``*_collect`` case). A job Flink fails is recorded with its error.

Runs with PyFlink's own interpreter and the format jars of ``benchmarks/pyflink_bulk_formats.py`` (same ``--jars``
and ``--hadoop-jars``)::

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_file_readers.py --jars /tmp/flink-format-jars \\
        --hadoop-jars .venv/lib/python3.11/site-packages/pyspark/jars \\
        --out jvm-free-tests/connectors/pyflink_file_readers.json
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List

import pyflink_oracle as oracle
from pyflink_bulk_formats import format_jars, job_environ

INPUTS_DIR = Path(__file__).resolve().parents[1] / "jvm-free-tests" / "connectors"

# A job's program: PRELUDE, the case's text (it builds ``source`` over the directory ``INPUT``), then COLLECT.
PRELUDE = """
from pyflink.common import WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSource, StreamFormat
from pyflink.table import DataTypes
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
"""
COLLECT = """
ds = env.from_source(source, WatermarkStrategy.no_watermarks(), "files")
ds.print()
env.execute()
"""
ROW_TYPE = """
row_type = DataTypes.ROW([
    DataTypes.FIELD("id", DataTypes.INT()), DataTypes.FIELD("n", DataTypes.BIGINT()),
    DataTypes.FIELD("name", DataTypes.STRING()), DataTypes.FIELD("score", DataTypes.DOUBLE()),
    DataTypes.FIELD("ok", DataTypes.BOOLEAN()), DataTypes.FIELD("b", DataTypes.TINYINT()),
    DataTypes.FIELD("s", DataTypes.SMALLINT()), DataTypes.FIELD("f", DataTypes.FLOAT())])
"""
CSV_SCHEMA = """
from pyflink.datastream.formats.csv import CsvReaderFormat, CsvSchema
schema = (CsvSchema.builder().add_number_column("id", number_type=DataTypes.INT())
          .add_number_column("n").add_string_column("name")
          .add_number_column("score", number_type=DataTypes.DOUBLE()).add_boolean_column("ok").build())
"""
# case -> (input tree, job text)
JOBS: Dict[str, List[str]] = {
    "parquet_columnar": ["parquet", ROW_TYPE + """
from pyflink.datastream.formats.parquet import ParquetColumnarRowInputFormat
source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(row_type), INPUT).build()
"""],
    # a subset of the columns, in another order: read by name
    "parquet_columnar_projection": ["parquet", """
from pyflink.datastream.formats.parquet import ParquetColumnarRowInputFormat
row_type = DataTypes.ROW([DataTypes.FIELD("name", DataTypes.STRING()), DataTypes.FIELD("id", DataTypes.INT())])
source = FileSource.for_bulk_file_format(
    ParquetColumnarRowInputFormat(row_type, batch_size=2, is_utc_timestamp=False, is_case_sensitive=True), INPUT
).build()
"""],
    "parquet_columnar_times": ["times", """
from pyflink.datastream.formats.parquet import ParquetColumnarRowInputFormat
row_type = DataTypes.ROW([DataTypes.FIELD("id", DataTypes.INT()), DataTypes.FIELD("day", DataTypes.DATE()),
                          DataTypes.FIELD("ts", DataTypes.TIMESTAMP(3))])
source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(row_type), INPUT).build()
"""],
    "parquet_columnar_local_zoned": ["times", """
from pyflink.datastream.formats.parquet import ParquetColumnarRowInputFormat
row_type = DataTypes.ROW([DataTypes.FIELD("id", DataTypes.INT()),
                          DataTypes.FIELD("utc", DataTypes.TIMESTAMP_WITH_LOCAL_TIME_ZONE(6))])
source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(row_type, is_utc_timestamp=True), INPUT).build()
"""],
    "csv": ["csv", CSV_SCHEMA + """
source = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(schema), INPUT).build()
"""],
    "csv_empty_number": ["csv_bad", CSV_SCHEMA + """
source = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(schema), INPUT).build()
"""],
    "csv_options": ["csv_options", """
from pyflink.datastream.formats.csv import CsvReaderFormat, CsvSchema
schema = (CsvSchema.builder().add_number_column("id", number_type=DataTypes.INT())
          .add_number_column("n", number_type=DataTypes.BIGINT()).add_string_column("name")
          .add_number_column("score", number_type=DataTypes.FLOAT()).add_boolean_column("ok")
          .set_column_separator("|").set_quote_char("'").set_null_value("NA").build())
source = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(schema), INPUT).build()
"""],
    # what the reader formats give execute_and_collect (it cannot convert their Java type, RowData, into Python
    # values: fails) and a Python function (a map: Rows of Python values, printed with Python's str)
    "parquet_columnar_collect": ["parquet", ROW_TYPE + """
from pyflink.datastream.formats.parquet import ParquetColumnarRowInputFormat
source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(row_type), INPUT).build()
ELEMENTS = list(env.from_source(source, WatermarkStrategy.no_watermarks(), "files").execute_and_collect())
"""],
    "parquet_columnar_map": ["parquet", ROW_TYPE + """
from pyflink.datastream.formats.parquet import ParquetColumnarRowInputFormat
source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(row_type), INPUT).build()
env.from_source(source, WatermarkStrategy.no_watermarks(), "files").map(lambda r: r).print()
"""],
    "csv_map": ["csv", CSV_SCHEMA + """
source = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(schema), INPUT).build()
env.from_source(source, WatermarkStrategy.no_watermarks(), "files").map(lambda r: r).print()
"""],
    "text": ["csv", """
source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), INPUT).build()
"""],
}
RUN = """
import json, sys
sys.path.insert(0, sys.argv[3])
from file_reader_inputs import describe
env.add_jars(*["file://" + j for j in sys.argv[2].split(",") if j])
INPUT = sys.argv[1]
"""
DUMP = ""


_LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ ")


def write_inputs(root: Path) -> Dict[str, Path]:
    """Every input tree under ``root``, by name."""
    sys.path.insert(0, str(INPUTS_DIR))
    import file_reader_inputs as inputs

    return {
        "parquet": inputs.write_parquet_tree(root),
        "times": inputs.write_timestamp_tree(root),
        "csv": inputs.write_csv_tree(root),
        "csv_options": inputs.write_csv_tree(root, inputs.CSV_OPTION_FILES, "csv_options"),
        "csv_bad": inputs.write_csv_tree(root, inputs.CSV_BAD_FILES, "csv_bad"),
    }


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--jars", required=True, help="folder with flink-sql-{parquet,orc,avro}-2.3.0.jar")
    parser.add_argument("--hadoop-jars", required=True, help="folder with hadoop-client-{api,runtime}-*.jar")
    parser.add_argument("--only", nargs="*", help="record only these cases (the others are kept from --out)")
    args = parser.parse_args(argv)
    jars = format_jars(args.jars, args.hadoop_jars)
    cases: Dict[str, Any] = {}
    if args.only and Path(args.out).exists():
        cases = json.loads(Path(args.out).read_text())["cases"]
    with tempfile.TemporaryDirectory() as tmp:
        trees = write_inputs(Path(tmp) / "in")
        for kind, (tree, job) in JOBS.items():
            if args.only and kind not in args.only:
                continue
            script, result = Path(tmp) / "job.py", Path(tmp) / "result.json"
            script.write_text(PRELUDE + RUN + job + COLLECT + DUMP)
            done = subprocess.run(
                [sys.executable, str(script), str(trees[tree]), ",".join(jars), str(INPUTS_DIR), str(result)],
                env=job_environ(), capture_output=True, text=True,
            )
            if done.returncode != 0:
                causes = re.findall(r"Caused by: (\S+: .*)", done.stdout + done.stderr)
                errors = re.findall(r"^(\w+(?:\.\w+)*(?:Error|Exception): .*)$", done.stderr, re.M)
                reason = causes[-1] if causes else errors[-1] if errors else done.stderr[-2000:]
                cases[kind] = {"input": tree, "job": job.strip(), "error": reason}
            else:
                cases[kind] = {"input": tree, "job": job.strip(), "printed": [line for line in done.stdout.splitlines() if not _LOG_LINE.match(line)]}
            print(kind, json.dumps(cases[kind])[:3000], flush=True)
    command = (
        f"{oracle.VENV_PYTHON} benchmarks/{Path(__file__).name} --jars <folder of flink-sql-{{parquet,orc,avro}}-2.3.0.jar> "
        f"--hadoop-jars <pyspark's jars folder> --out {args.out}"
    )
    import pyflink.version

    body = {"prelude": PRELUDE.strip(), "collect": COLLECT.strip(), "cases": cases}
    oracle.write_json(args.out, {"pyflink_version": pyflink.version.__version__, "command": command, **body},
                      ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
