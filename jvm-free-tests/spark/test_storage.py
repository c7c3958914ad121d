"""``spark/storage.py`` is the one home of the package's bytes under a checkpoint: its operations on local paths and
``file:`` URIs (the other file systems run in ``tests/hdfs``), its errors, and a source scan that no other module of
the Spark executors opens, lists, renames or deletes files itself, except the places listed here with the reason
they are not checkpoint paths."""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pyarrow as pa
import pytest

from pyspark_flinkish.core.errors import StateError, UnsupportedFeatureError
from pyspark_flinkish.spark import storage

SPARK = Path(__file__).resolve().parents[2] / "pyspark_flinkish" / "spark"

ALLOWED: Dict[str, Tuple[Set[str], str]] = {
    "storage.py": ({"*"}, "the storage layer itself"),
    "state_cache.py": ({"os.makedirs", "os.remove"}, "the executor's local cache (SQLite), never the checkpoint"),
    "jars.py": ({"shutil.rmtree"}, "the Maven jars under .jars/"),
    "session.py": ({"os.makedirs"}, "local temporary directories (/dbfs/tmp on Databricks)"),
    "connect.py": ({"open", "os.walk", "shutil.rmtree"}, "the package's own source files shipped as a Connect artifact"),
    "environment.py": ({"os.path.exists", "os.path.isdir", "shutil.make_archive"}, "add_python_file: the user's local files"),
    "delta_commits.py": ({"os.listdir", "open"}, "a local Delta table's _delta_log (other tables: DESCRIBE HISTORY)"),
    "progress_files.py": ({"os.path.isfile"}, "telling a local log file from a checkpoint location"),
    "checkpoint_migration.py": (
        {"open", "os.remove", "os.listdir", "os.path.isdir"},
        "pickled checkpoints of old versions, which were local only (the driver migrates local ones only)",
    ),
    "stateful.py": (
        {"os.stat", "os.path.isdir", "os.makedirs", "pq.write_table", "os.utime", "os.rename", "shutil.rmtree"},
        "apply_in_pandas_with_state's replay input in the local temporary directory (its state: Spark's store)",
    ),
}

_OS = {"listdir", "makedirs", "mkdir", "remove", "replace", "rename", "walk", "unlink", "utime", "scandir", "stat", "rmdir"}
_PATH = {"exists", "isdir", "isfile", "getsize", "getmtime", "getctime"}


def _file_calls(path: Path) -> List[Tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id == "open":
            out.append((node.lineno, "open"))
        elif isinstance(f, ast.Attribute):
            v = f.value
            if isinstance(v, ast.Name) and v.id == "os" and f.attr in _OS:
                out.append((node.lineno, f"os.{f.attr}"))
            elif isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name) and (v.value.id, v.attr) == ("os", "path"):
                if f.attr in _PATH:
                    out.append((node.lineno, f"os.path.{f.attr}"))
            elif isinstance(v, ast.Name) and v.id in ("glob", "shutil", "pafs"):
                out.append((node.lineno, f"{v.id}.{f.attr}"))
            elif isinstance(v, ast.Name) and v.id in ("pq", "parquet") and f.attr in ("read_table", "write_table", "ParquetFile"):
                out.append((node.lineno, f"pq.{f.attr}"))
    return out


def test_only_the_storage_layer_touches_files_under_a_checkpoint() -> None:
    found = {}
    for path in sorted(SPARK.glob("*.py")):
        allowed = ALLOWED.get(path.name, (set(), ""))[0]
        bad = [(line, call) for line, call in _file_calls(path) if "*" not in allowed and call not in allowed]
        if bad:
            found[path.name] = bad
    assert not found, f"file-system calls outside spark/storage.py (go through it, or list the reason here): {found}"
    # the allow-list names only what is there (a stale entry would hide a new call)
    for name, (calls, _) in ALLOWED.items():
        present = {call for _, call in _file_calls(SPARK / name)}
        assert "*" in calls or calls <= present, (name, calls - present)


def test_bytes_and_tables_on_local_paths_and_file_uris(tmp_path: Path) -> None:
    for base in (str(tmp_path / "a"), f"file:{tmp_path}/b", f"file://{tmp_path}/c"):
        doc = storage.join(base, "flinkish", "driver", "b=1.json")
        storage.write_bytes(doc, b"one")
        storage.write_bytes(doc, b"two")  # replaced atomically: a temporary file renamed over it
        assert storage.read_bytes(doc) == b"two"
        assert storage.list_names(storage.parent(doc)) == ["b=1.json"]  # no temporary file left
        table = pa.table({"k": [1, 2]})
        part = storage.join(base, "state", "op=x", "sp=00000", "s=1.parquet")
        assert storage.write_table(part, table) == os.path.getsize(storage.local_path(part))  # type: ignore[arg-type]
        assert storage.read_table(part).equals(table) and storage.num_rows(part) == 2
        assert storage.list_dirs(storage.join(base, "state")) == ["op=x"] and storage.is_dir(storage.join(base, "state"))
        copy = storage.join(base, "other", "op=x", "sp=00001", "s=2.parquet")
        storage.copy_file(part, copy)  # as it is, into a directory made for it
        assert storage.read_bytes(copy) == storage.read_bytes(part)
        storage.delete(copy)
        storage.delete(part)
        storage.delete(part)  # gone already: nothing
        with pytest.raises(StateError, match=r"s=1\.parquet is missing"):
            storage.copy_file(part, copy)
        assert not storage.exists(part) and storage.list_names(storage.join(base, "nothing-here")) == []
        with pytest.raises(StateError, match=r"b=2\.json is missing"):
            storage.read_bytes(storage.join(base, "flinkish", "driver", "b=2.json"))
        with pytest.raises(StateError, match=r"s=1\.parquet is missing"):
            storage.read_table(part)


def test_directories_are_renamed_and_modification_times_set_on_local_and_hdfs_only(tmp_path: Path) -> None:
    src, dst = str(tmp_path / "replay.tmp"), str(tmp_path / "replay")
    storage.write_bytes(storage.join(src, "batch-0.parquet"), b"x")
    storage.set_modified(storage.join(src, "batch-0.parquet"), 1_000_000_000)
    storage.rename_dir(src, dst)
    assert storage.modified_ms(storage.join(dst, "batch-0.parquet")) == 1_000_000_000
    storage.delete_tree(dst)
    assert not storage.exists(dst)


def test_unreachable_file_systems_are_refused_naming_the_uri() -> None:
    with pytest.raises(UnsupportedFeatureError, match=r"'ftp' file system is not supported for checkpoints"):
        storage.read_bytes("ftp://host/ck/x")
    with pytest.raises(UnsupportedFeatureError, match=r"needs an authority"):
        storage.exists("hdfs:/ck")


def test_dbfs_is_the_databricks_mount() -> None:
    assert storage.local_path("dbfs:/tmp/ck/x") == "/dbfs/tmp/ck/x"
    assert storage.local_path("dbfs:///tmp/ck") == "/dbfs/tmp/ck"


def test_s3_client_settings_follow_sparks_s3a_settings() -> None:
    conf = {"fs.s3a.endpoint": "http://127.0.0.1:9000", "fs.s3a.path.style.access": "true", "fs.s3a.access.key": "k",
            "fs.s3a.secret.key": "s", "fs.s3a.buffer.dir": "/tmp"}
    assert storage.options_from_hadoop(conf) == {
        "s3a.endpoint": "http://127.0.0.1:9000", "s3a.path.style.access": "true", "s3a.access.key": "k", "s3a.secret.key": "s",
    }
    storage.configure(storage.options_from_hadoop(conf))
    try:
        fs, path, native = storage.resolve("s3a://bucket/jobs/ck/flinkish/meta.json")
        assert (type(fs).__name__, path, native) == ("S3FileSystem", "bucket/jobs/ck/flinkish/meta.json", None)
        assert storage.current_options()["s3a.endpoint"] == "http://127.0.0.1:9000"
    finally:
        storage.configure({})
