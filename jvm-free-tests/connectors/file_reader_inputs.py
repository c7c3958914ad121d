"""The input files of the ``FileSource`` reader formats' oracle (``benchmarks/pyflink_file_readers.py``, PyFlink 2.3.0)
and of the tests that compare with its recording (``test_file_readers.py``; on Spark ``tests/spark``): Parquet files
written by pyarrow (Snappy, as the package's ``ParquetBulkWriters``) and CSV text, several files in a directory
tree with hidden (``.``/``_``) files that a reader must skip.

Imports only pyarrow and the standard library (the PyFlink venv runs it too); every call writes the same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List

__all__ = ["CSV_FILES", "CSV_BAD_FILES", "CSV_OPTION_FILES", "PARQUET_FILES", "describe", "write_csv_tree", "write_parquet_tree", "write_timestamp_tree"]

# Each row's ``id`` is 100 * file + position: a reader's order within a file is checkable.
PARQUET_FILES: Dict[str, List[tuple]] = {
    "part-0.parquet": [
        (0, 10_000_000_000, "ann", 1.5, True, -128, 32767, 3.25),
        (1, -1, "b\u00e9a, \"q\"", -0.25, False, 127, -32768, 0.1),
        (2, 0, None, None, None, None, None, None),
    ],
    "sub/part-1.parquet": [(100, 7, "", 1e20, True, 0, 0, -1.0), (101, None, "z", 2.0, False, 1, 2, 3.0)],
    "part-2.parquet": [(200, 42, "last", 0.0, None, 5, 6, 7.5)],
    ".part-3.parquet.inprogress": [(300, 1, "hidden", 1.0, True, 1, 1, 1.0)],
    "_part-4.parquet": [(400, 1, "hidden", 1.0, True, 1, 1, 1.0)],
}
PARQUET_COLUMNS = [
    ("id", "int32"), ("n", "int64"), ("name", "string"), ("score", "float64"), ("ok", "bool_"),
    ("b", "int8"), ("s", "int16"), ("f", "float32"),
]

CSV_FILES: Dict[str, str] = {
    # id,n,name,score,ok: quoting, a doubled quote, a separator and a line break inside quotes, empty fields
    "a.csv": '0,10000000000,ann,1.5,true\n1,-1,"b\u00e9a, ""q""",-0.25,false\n2,0,,0.5,false\n3,1,"",-0.0,true\n',
    "sub/b.csv": '100,7,"two\nlines",1e20,TRUE\r\n101,-5,  padded  ,2,false\r\n',
    "c.csv": "200,42,last,0.0,true",
    ".d.csv": "300,1,hidden,1.0,true\n",
    "_e.csv": "400,1,hidden,1.0,true\n",
}
# an empty number field: Flink's reader fails the job (NumberFormatException: empty String)
CSV_BAD_FILES: Dict[str, str] = {"bad.csv": "0,1,x,1.0,true\n1,,y,2.0,false\n"}
# the second schema's text: separator '|', quote "'", null value NA
CSV_OPTION_FILES: Dict[str, str] = {
    "x.csv": "0|NA|'it''s | here'|NA|true\n1|5|NA|2.5|NA\n2|6||3|false\n",
}


def _write_parquet(path: Path, columns: List[tuple], rows: List[tuple]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = [pa.array([r[i] for r in rows], getattr(pa, t)()) for i, (_, t) in enumerate(columns)]
    pq.write_table(pa.table(arrays, names=[n for n, _ in columns]), path, compression="snappy")


def write_parquet_tree(root: Path) -> Path:
    """:data:`PARQUET_FILES` under ``root/parquet``; returns that directory."""
    base = Path(root) / "parquet"
    for name, rows in PARQUET_FILES.items():
        _write_parquet(base / name, PARQUET_COLUMNS, rows)
    return base


def write_timestamp_tree(root: Path) -> Path:
    """One Parquet file of ``DATE`` and ``TIMESTAMP`` columns (pyarrow's ``date32``, ``timestamp[ms]`` and
    ``timestamp[us, tz=UTC]``) under ``root/times``; returns that directory."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    base = Path(root) / "times"
    base.mkdir(parents=True, exist_ok=True)
    table = pa.table({
        "id": pa.array([0, 1, 2], pa.int32()),
        "day": pa.array([dt.date(2024, 1, 31), dt.date(1969, 12, 31), None], pa.date32()),
        "ts": pa.array([dt.datetime(2024, 1, 31, 12, 30, 0, 123000), dt.datetime(1970, 1, 1), None], pa.timestamp("ms")),
        "utc": pa.array([dt.datetime(2024, 1, 31, 12, 30, 0, 5), None, dt.datetime(2000, 2, 29, 23, 59, 59)],
                        pa.timestamp("us", tz="UTC")),
    })
    pq.write_table(table, base / "part-0.parquet", compression="snappy")
    return base


def write_csv_tree(root: Path, files: Dict[str, str] = CSV_FILES, name: str = "csv") -> Path:
    """``files`` (path -> text, UTF-8) under ``root/name``; returns that directory."""
    base = Path(root) / name
    for path, text in files.items():
        (base / path).parent.mkdir(parents=True, exist_ok=True)
        (base / path).write_bytes(text.encode("utf-8"))
    return base


def describe(value: object) -> object:
    """An element as JSON: a ``Row`` as ``{"row": field names or None, "values": [...]}``, a dict (an Avro generic
    record) as ``{"record": {...}}``, a scalar as ``[type name, value]`` (dates and times in ISO form)."""
    import datetime as dt

    if hasattr(value, "_values") and type(value).__name__ == "Row":
        names = getattr(value, "_fields", None)
        return {"row": list(names) if names is not None else None, "values": [describe(v) for v in value]}  # type: ignore[attr-defined]
    if isinstance(value, dict):
        return {"record": {k: describe(v) for k, v in value.items()}}
    if isinstance(value, (dt.date, dt.time)):
        return [type(value).__name__, value.isoformat()]
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [describe(v) for v in value]]
    return [type(value).__name__, value]
