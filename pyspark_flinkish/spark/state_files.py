"""The file operations of the keyed-state store, in one place (runs on the executors and the driver).

Every byte of keyed state goes through these functions: Parquet tables written once under a name no other write
uses and never renamed or appended to (what object stores offer), read back whole or by columns, listed and
deleted. They take the paths of ``spark/state_store.py`` and use ``pyarrow.fs``, which resolves a local path or a
``file:`` URI to the local file system.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..core.errors import StateError


def _fs(path: str) -> tuple[pafs.FileSystem, str]:
    if path.startswith("file:"):
        return pafs.FileSystem.from_uri(path)
    return pafs.LocalFileSystem(), path


def write_table(path: str, table: pa.Table) -> int:
    """Write ``table`` as the Parquet file ``path`` (its directory is created); returns the file's size. The name
    must be new: a file is never overwritten, so a reader sees a whole file or none (the store's manifests name
    only files whose write returned)."""
    fs, p = _fs(path)
    fs.create_dir(p.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(p) as out:
        pq.write_table(table, out)
        size = out.tell()
    return int(size)


def read_table(path: str, columns: Optional[Sequence[str]] = None) -> pa.Table:
    """The Parquet file ``path`` (or some of its ``columns``); a missing file is a :class:`StateError` naming it."""
    fs, p = _fs(path)
    try:
        return pq.read_table(p, columns=list(columns) if columns is not None else None, filesystem=fs)
    except FileNotFoundError as exc:
        msg = (
            f"keyed state file {path} is missing: the checkpoint's state is incomplete (was the checkpoint directory "
            "copied partially, or a file deleted by hand?)"
        )
        raise StateError(msg) from exc


def list_names(directory: str) -> List[str]:
    """The names of the files in ``directory`` (none when it does not exist)."""
    fs, p = _fs(directory)
    infos = fs.get_file_info(pafs.FileSelector(p, allow_not_found=True))
    return sorted(i.base_name for i in infos if i.type == pafs.FileType.File)


def list_dirs(directory: str) -> List[str]:
    """The names of the directories in ``directory`` (none when it does not exist)."""
    fs, p = _fs(directory)
    infos = fs.get_file_info(pafs.FileSelector(p, allow_not_found=True))
    return sorted(i.base_name for i in infos if i.type == pafs.FileType.Directory)


def delete(path: str) -> None:
    """Delete the file ``path`` (nothing when it is gone already)."""
    fs, p = _fs(path)
    try:
        fs.delete_file(p)
    except FileNotFoundError:
        pass


def exists(path: str) -> bool:
    fs, p = _fs(path)
    return bool(fs.get_file_info(p).type != pafs.FileType.NotFound)


def num_rows(path: str) -> int:
    """Rows of the Parquet file ``path`` (from its footer)."""
    fs, p = _fs(path)
    with fs.open_input_file(p) as f:
        return int(pq.ParquetFile(f).metadata.num_rows)


__all__ = ["write_table", "read_table", "list_names", "list_dirs", "delete", "exists", "num_rows"]
