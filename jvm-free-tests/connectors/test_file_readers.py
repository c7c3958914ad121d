"""``FileSource`` reader formats on the JVM-free engine against PyFlink 2.3.0: each recorded job
(``benchmarks/pyflink_file_readers.py``: ``CsvReaderFormat``, ``ParquetColumnarRowInputFormat``, text lines over
the trees of ``file_reader_inputs.py``) runs here with only its imports changed, and prints what Flink printed: the
same records (values, nulls, Java's number forms), each file's in Flink's order; what Flink fails on fails here.
Also: the refusals, named."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from pyspark_flinkish.core.errors import UnsupportedFeatureError
from pyspark_flinkish.core.file_readers import FileReadError, csv_records
from pyspark_flinkish.datastream.connectors.file_system import FileSource
from pyspark_flinkish.datastream.formats.csv import CsvReaderFormat, CsvSchema
from pyspark_flinkish.datastream.formats.parquet import ParquetColumnarRowInputFormat
from pyspark_flinkish.table import DataTypes

sys.path.insert(0, str(Path(__file__).parent))
import file_reader_inputs as inputs  # the oracle's own input files

RECORDED = json.loads(Path(__file__).with_name("pyflink_file_readers.json").read_text())
CASES: Dict[str, Any] = RECORDED["cases"]
TREES = {
    "parquet": inputs.write_parquet_tree,
    "times": inputs.write_timestamp_tree,
    "csv": inputs.write_csv_tree,
    "csv_options": lambda root: inputs.write_csv_tree(root, inputs.CSV_OPTION_FILES, "csv_options"),
    "csv_bad": lambda root: inputs.write_csv_tree(root, inputs.CSV_BAD_FILES, "csv_bad"),
}


def _run_recorded(kind: str, root: Path) -> None:
    """The recorded job ``kind`` on the JVM-free engine, with only its imports changed."""
    case = CASES[kind]
    directory = TREES[case["input"]](root)
    program = "\n".join((RECORDED["prelude"], f"INPUT = {str(directory)!r}", case["job"], RECORDED["collect"]))
    program = program.replace("from pyflink.", "from pyspark_flinkish.")
    exec(compile(program, f"<recorded {kind}>", "exec"), {"__name__": "recorded"})


def _per_file(lines: List[str], kind: str) -> Dict[Any, List[str]]:
    """The printed records grouped by how they were printed (Flink's ``RowData`` by ``print()``, a ``Row`` of a
    Python map by Python's ``str``) and input file (by their ``id``, 100 * file + position; text lines by the file
    holding them), each group in printed order: Flink orders a file's records only."""
    groups: Dict[Any, List[str]] = {}
    if kind != "text":  # a record whose string holds a line break is printed on two lines
        records: List[str] = []
        for line in lines:
            if line.startswith(("+I(", "Row(")) or not records:
                records.append(line)
            else:
                records[-1] += "\n" + line
        lines = records
    for line in lines:
        if kind == "text":
            key: Any = next(name for name, text in inputs.CSV_FILES.items() if line in text)
        elif line.startswith("Row("):
            key = ("Row", int(re.search(r"id=(-?\d+)", line).group(1)) // 100)  # type: ignore[union-attr]
        else:
            fields = line[len("+I(") : -1].split(",")
            ids = [int(f) for f in fields if f.lstrip("-").isdigit()]
            key = ("RowData", ids[-1] // 100 if kind == "parquet_columnar_projection" else int(fields[0]) // 100)
        groups.setdefault(key, []).append(line)
    return groups


PRINTED = sorted(k for k, v in CASES.items() if "printed" in v and CASES[k]["input"] != "times")
FAILED = sorted(k for k, v in CASES.items() if "error" in v)


@pytest.mark.parametrize("kind", PRINTED)
def test_a_recorded_reader_job_prints_what_pyflink_printed(kind: str, tmp_path: Path, capsys: Any) -> None:
    _run_recorded(kind, tmp_path)
    ours = capsys.readouterr().out.splitlines()
    flinks = CASES[kind]["printed"]
    assert sorted(ours) == sorted(flinks)  # the same records: values, nulls, Java's number text
    assert _per_file(ours, kind) == _per_file(flinks, kind)  # each file's records in Flink's order


def test_the_recorded_cases_cover_what_flink_prints_and_refuses() -> None:
    assert {"parquet_columnar", "parquet_columnar_projection", "csv", "csv_options", "csv_map", "text"} <= set(PRINTED)
    assert any(line.startswith("Row(id=") for line in CASES["csv_map"]["printed"])  # a Python map gets Rows
    assert CASES["csv_empty_number"]["error"] == 'java.lang.NumberFormatException: For input string: ""'
    error = CASES["parquet_columnar_collect"]["error"]  # execute_and_collect cannot convert RowData
    assert "RowData" in error and "is not supported in PyFlink" in error


def test_an_empty_number_field_fails_the_job_as_in_flink(tmp_path: Path) -> None:
    with pytest.raises(FileReadError, match='NumberFormatException: For input string: ""'):
        _run_recorded("csv_empty_number", tmp_path)


@pytest.mark.parametrize("kind", ["parquet_columnar_times", "parquet_columnar_local_zoned"])
def test_date_and_timestamp_columns_are_refused_up_front(kind: str, tmp_path: Path) -> None:
    assert CASES[kind]["printed"][0].startswith("+I(0,")  # Flink prints its internal forms (days, TimestampData)
    with pytest.raises((UnsupportedFeatureError, AttributeError)):
        _run_recorded(kind, tmp_path)


def test_rows_are_rows_of_the_declared_fields_with_python_values(tmp_path: Path) -> None:
    row_type = DataTypes.ROW([DataTypes.FIELD("f", DataTypes.FLOAT()), DataTypes.FIELD("id", DataTypes.INT()),
                              DataTypes.FIELD("missing", DataTypes.STRING())])
    source = FileSource.for_bulk_file_format(
        ParquetColumnarRowInputFormat(row_type), str(inputs.write_parquet_tree(tmp_path) / "part-0.parquet")).build()
    rows = source.batches[0].elements
    assert [r.as_dict() for r in rows] == [
        {"f": 3.25, "id": 0, "missing": None},
        {"f": 0.10000000149011612, "id": 1, "missing": None},  # a 32-bit float, as Flink holds it
        {"f": None, "id": 2, "missing": None},
    ]
    assert [type(v).__name__ for v in rows[0]] == ["float", "int", "NoneType"]


def test_csv_records_follow_jacksons_quoting() -> None:
    assert csv_records('a,"b,""c""\nd",\r\n\n"",x', ",", '"') == [
        [("a", False), ('b,"c"\nd', True), ("", False)],
        [("", True), ("x", False)],
    ]


def test_reading_options_that_change_the_records_are_refused_by_name() -> None:
    for option in ("set_allow_comments", "set_skip_first_data_row"):
        builder = getattr(CsvSchema.builder().add_string_column("a"), option)()
        with pytest.raises(UnsupportedFeatureError, match=option):
            CsvReaderFormat.for_schema(builder.build())
    with pytest.raises(UnsupportedFeatureError, match="header"):
        CsvSchema.builder().set_use_header()
    with pytest.raises(UnsupportedFeatureError, match="case-sensitive"):
        ParquetColumnarRowInputFormat(DataTypes.ROW([DataTypes.FIELD("a", DataTypes.INT())]), is_case_sensitive=False)
    with pytest.raises(UnsupportedFeatureError, match="TIMESTAMP"):
        ParquetColumnarRowInputFormat(DataTypes.ROW([DataTypes.FIELD("t", DataTypes.TIMESTAMP(3))]))


def test_a_parquet_column_of_another_type_fails_naming_it(tmp_path: Path) -> None:
    row_type = DataTypes.ROW([DataTypes.FIELD("n", DataTypes.INT())])  # the files' n is int64
    source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(row_type), str(inputs.write_parquet_tree(tmp_path))).build()
    with pytest.raises(FileReadError, match="'n' is int64 in the file; the row type declares INT"):
        _ = source.batches


def test_execute_and_collect_refuses_rowdata_as_pyflink_and_a_map_hands_on_rows(tmp_path: Path) -> None:
    from pyspark_flinkish.common import WatermarkStrategy
    from pyspark_flinkish.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    source = FileSource.for_record_stream_format(
        CsvReaderFormat.for_schema(CsvSchema.builder().add_string_column("a").build()),
        str(inputs.write_csv_tree(tmp_path, {"x.csv": "p\nq\n"}))).build()
    ds = env.from_source(source, WatermarkStrategy.no_watermarks(), "files")
    with pytest.raises(UnsupportedFeatureError, match="RowData, which PyFlink cannot collect"):
        ds.execute_and_collect()
    assert [r.as_dict() for r in ds.map(lambda r: r).execute_and_collect()] == [{"a": "p"}, {"a": "q"}]


def test_csv_numbers_and_booleans_parse_as_javas_parsers() -> None:
    from pyspark_flinkish.core.file_readers import ReaderFormat

    reader = ReaderFormat("csv", (("f", "FLOAT"), ("d", "DOUBLE"), ("i", "TINYINT"), ("b", "BOOLEAN")))
    rows = reader.read_bytes(b"3.5e38,1e400,-128,Yes\n0.1f, NaN ,+5,TRUE\n1.,.5,7,\n", "x.csv")
    assert rows[0].as_dict() == {"f": float("inf"), "d": float("inf"), "i": -128, "b": False}
    assert rows[1]["f"] == 0.10000000149011612 and rows[1]["d"] != rows[1]["d"] and rows[1]["i"] == 5 and rows[1]["b"]
    assert rows[2].as_dict() == {"f": 1.0, "d": 0.5, "i": 7, "b": False}
    for bad in (b"1,1,128,true\n", b"1,1_0,1,true\n", b"1,0x10,1,true\n"):  # out of a TINYINT's range, not Java's syntax
        with pytest.raises(FileReadError, match="NumberFormatException"):
            reader.read_bytes(bad, "x.csv")
