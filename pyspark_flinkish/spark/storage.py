"""Where the package keeps its bytes: every file under a checkpoint location, on the driver and the executors.

A location is a local path or a URI, resolved once on the driver as Spark resolves it
(``checkpoint_location.resolve_checkpoint``); every function here takes such a path or URI (joined with
:func:`join`) and reaches its file system with a client that needs no JVM, so Spark's Python workers use it too:

======================= ============================================= ======================================
scheme                  client                                        replace a file atomically
======================= ============================================= ======================================
a path, ``file:``       ``pyarrow.fs.LocalFileSystem``                 rename
``hdfs:``               ``hdfs-native`` (PyPI; ``pip install           rename with overwrite (one NameNode
                        'pyspark_flinkish[hdfs]'``); reads              operation)
                        ``HADOOP_CONF_DIR`` for HA name services
``s3a:``, ``s3:``       ``pyarrow.fs.S3FileSystem``, configured from    a PUT is atomic: the file is written
                        the session's ``fs.s3a.*`` (:func:`options_from  in place
                        _hadoop`), else the AWS defaults
``gs:``                 ``pyarrow.fs.GcsFileSystem``                    as S3
``abfs:``, ``abfss:``   ``pyarrow.fs.AzureFileSystem``                  as S3
``dbfs:``               the local ``/dbfs`` mount (Databricks)          rename
======================= ============================================= ======================================

The store's state files are written once under new names and never replaced (``spark/state_store.py``); only the
driver's small documents are replaced (:func:`write_bytes`). Nothing else in the package opens, lists or deletes
a file under a checkpoint (``jvm-free-tests/spark/test_storage.py`` enforces it).
"""

from __future__ import annotations

import os
import threading
import uuid
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..core.errors import StateError, UnsupportedFeatureError

SCHEMES = ("file", "hdfs", "s3a", "s3", "gs", "abfs", "abfss", "dbfs")
"""URI schemes a checkpoint location may have (a path without a scheme is the local or the default file system)."""
OBJECT_STORES = ("s3a", "s3", "gs", "abfs", "abfss")
"""Schemes without an atomic rename, where a whole-object PUT is what replaces a file atomically."""

_options: Dict[str, str] = {}
_clients: Dict[Tuple[str, str], Any] = {}
_lock = threading.Lock()


def scheme_of(location: str) -> str:
    """The URI scheme of ``location`` as Hadoop's ``Path`` finds it (lower case; ``""`` for none): the text before
    a ``:`` that comes before any ``/``."""
    colon, slash = location.find(":"), location.find("/")
    if colon > 0 and (slash < 0 or colon < slash):
        return location[:colon].lower()
    return ""


def configure(options: Dict[str, str]) -> None:
    """Client options for this process (from the driver's :func:`options_from_hadoop`; the executors get them with
    the plan). A change drops the clients made with the old ones."""
    global _options
    if options != _options:
        with _lock:
            _options = dict(options)
            _clients.clear()


def current_options() -> Dict[str, str]:
    """The options :func:`configure` set in this process (to hand to another process)."""
    return dict(_options)


S3A_SETTINGS = tuple(
    f"fs.s3a.{name}"
    for name in ("endpoint", "access.key", "secret.key", "session.token", "endpoint.region", "path.style.access",
                 "connection.ssl.enabled")
)
"""The Hadoop settings of Spark's ``s3a`` file system that the package's S3 client follows."""


def options_from_hadoop(conf: Dict[str, str]) -> Dict[str, str]:
    """The S3 client's options from a session's Hadoop settings (:data:`S3A_SETTINGS`, ``fs.s3a.<name>``):
    endpoint, keys, region and path-style access. Nothing for what the AWS defaults cover (instance profiles,
    ``AWS_*`` variables)."""
    return {name[len("fs.") :]: conf[name] for name in S3A_SETTINGS if conf.get(name)}


def _s3() -> Any:
    o = _options
    kwargs: Dict[str, Any] = {}
    endpoint = o.get("s3a.endpoint")
    if endpoint:
        scheme, _, host = endpoint.rpartition("://")
        kwargs["endpoint_override"] = host or endpoint
        ssl = o.get("s3a.connection.ssl.enabled", "").lower()
        kwargs["scheme"] = scheme or ("http" if ssl == "false" else "https")
    if o.get("s3a.access.key"):
        kwargs.update(access_key=o["s3a.access.key"], secret_key=o.get("s3a.secret.key"),
                      session_token=o.get("s3a.session.token"))
    if o.get("s3a.endpoint.region"):
        kwargs["region"] = o["s3a.endpoint.region"]
    if o.get("s3a.path.style.access", "").lower() == "true":
        kwargs["force_virtual_addressing"] = False
    return pafs.S3FileSystem(**kwargs)


def _hdfs(authority: str) -> Any:
    try:
        from hdfs_native import Client
    except ImportError as exc:
        msg = (
            "a checkpoint on hdfs:// needs the package hdfs-native on the driver and every executor "
            "(pip install 'pyspark_flinkish[hdfs]'): Spark's Python workers write keyed state without a JVM"
        )
        raise UnsupportedFeatureError(msg) from exc
    return Client(f"hdfs://{authority}")


def _client(scheme: str, authority: str) -> Any:
    with _lock:
        client = _clients.get((scheme, authority))
        if client is None:
            if scheme == "hdfs":
                from hdfs_native.fsspec import HdfsFileSystem

                native = _hdfs(authority)
                host, _, port = authority.partition(":")
                fsspec = HdfsFileSystem(host=host, port=int(port) if port else None)
                client = (pafs.PyFileSystem(pafs.FSSpecHandler(fsspec)), native)
            elif scheme in ("s3a", "s3"):
                client = (_s3(), None)
            elif scheme == "gs":
                client = (pafs.GcsFileSystem(), None)
            else:  # abfs, abfss: container@account.dfs.core.windows.net
                account = authority.partition("@")[2].split(".")[0]
                client = (pafs.AzureFileSystem(account_name=account), None)
            _clients[(scheme, authority)] = client
        return client


def resolve(uri: str) -> Tuple[Any, str, Any]:
    """``(pyarrow file system, its path, hdfs-native client or None)`` for a path or URI."""
    scheme = scheme_of(uri)
    if scheme in ("", "file"):
        if scheme == "file":
            uri = uri[len("file:") :]
            if uri.startswith("//"):
                uri = "/" + uri[2:].partition("/")[2]
        return pafs.LocalFileSystem(), uri, None
    rest = uri[len(scheme) + 1 :]
    if scheme == "dbfs":  # Databricks mounts DBFS at /dbfs on the driver and every executor
        path = rest[2:].partition("/")[2] if rest.startswith("//") else rest.lstrip("/")
        return pafs.LocalFileSystem(), "/dbfs/" + path, None
    if scheme not in SCHEMES:
        msg = f"{uri!r}: the {scheme!r} file system is not supported for checkpoints; supported: {', '.join(SCHEMES)}"
        raise UnsupportedFeatureError(msg)
    if not rest.startswith("//"):
        msg = f"{uri!r}: a {scheme}: URI needs an authority ({scheme}://<authority>/<path>)"
        raise UnsupportedFeatureError(msg)
    authority, _, path = rest[2:].partition("/")
    fs, native = _client(scheme, authority)
    if scheme == "hdfs":
        return fs, "/" + path, native
    container = authority.partition("@")[0] if scheme in ("abfs", "abfss") else authority
    return fs, f"{container}/{path}", None


def join(base: str, *parts: str) -> str:
    """``base`` and ``parts`` joined with ``/`` (a URI or a path)."""
    out = base.rstrip("/")
    for part in parts:
        out = f"{out}/{part.strip('/')}"
    return out


def parent(uri: str) -> str:
    return uri.rstrip("/").rsplit("/", 1)[0]


def _missing(uri: str) -> StateError:
    return StateError(f"{uri} is missing: the checkpoint is incomplete (copied partially, or a file deleted by hand?)")


def _unreachable(uri: str, exc: BaseException) -> StateError:
    return StateError(f"cannot reach {uri}: {type(exc).__name__}: {exc}")


# ------------------------------------------------------------------------------------------- bytes


def read_bytes(uri: str) -> bytes:
    """The file's bytes; a missing file is a :class:`StateError` naming it."""
    fs, path, _ = resolve(uri)
    try:
        with fs.open_input_stream(path) as f:
            return bytes(f.read())
    except FileNotFoundError as exc:
        raise _missing(uri) from exc


def write_bytes(uri: str, data: bytes) -> None:
    """Write or replace the file atomically: a reader sees the old bytes or the new ones, never a part (a
    temporary file renamed over it, or on an object store one PUT)."""
    fs, path, native = resolve(uri)
    scheme = scheme_of(uri)
    try:
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        if scheme in OBJECT_STORES:
            with fs.open_output_stream(path) as f:
                f.write(data)
            return
        tmp = f"{path}.{uuid.uuid4().hex}.tmp"
        with fs.open_output_stream(tmp) as f:
            f.write(data)
        if native is not None:
            native.rename(tmp, path, overwrite=True)
        else:
            fs.move(tmp, path)  # a rename: os.replace on a local file system
    except (OSError, RuntimeError) as exc:
        raise _unreachable(uri, exc) from exc


# ------------------------------------------------------------------------------------------- tables


def write_table(uri: str, table: pa.Table) -> int:
    """Write ``table`` as the Parquet file ``uri`` (its directory is created); returns the file's size. The name
    must be new: these files are never replaced, so a reader sees a whole file or none (the state store's
    manifests name only files whose write returned)."""
    fs, path, _ = resolve(uri)
    try:
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        with fs.open_output_stream(path) as out:
            pq.write_table(table, out)
            size = out.tell()
    except (OSError, RuntimeError) as exc:
        raise _unreachable(uri, exc) from exc
    return int(size)


def copy_file(src: str, dst: str) -> None:
    """Copy the file ``src`` as it is, byte for byte, to the new file ``dst`` (its directory is created; the two may
    be on different stores): a copy on the store's side where it has one (an object store's server-side copy, a
    local file copy), else streamed through this process. As with :func:`write_table`, ``dst`` must be a new name
    that nothing names until the copy returned."""
    fs, source, native = resolve(src)
    target_fs, target, _ = resolve(dst)
    try:
        target_fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
        local = isinstance(fs, pafs.LocalFileSystem) and isinstance(target_fs, pafs.LocalFileSystem)
        if local or (fs is target_fs and native is None):  # HDFS's fsspec copy names a relative temporary file
            fs.copy_file(source, target)
            return
        with fs.open_input_stream(source) as reader, target_fs.open_output_stream(target) as writer:
            while chunk := reader.read(1 << 22):
                writer.write(chunk)
    except FileNotFoundError as exc:
        raise _missing(src) from exc
    except (OSError, RuntimeError) as exc:
        raise _unreachable(dst, exc) from exc


def read_table(uri: str, columns: Optional[Sequence[str]] = None) -> pa.Table:
    """The Parquet file (or some of its ``columns``); a missing file is a :class:`StateError` naming it."""
    fs, path, _ = resolve(uri)
    try:
        with fs.open_input_file(path) as f:
            return pq.read_table(f, columns=list(columns) if columns is not None else None)
    except FileNotFoundError as exc:
        raise _missing(uri) from exc


def num_rows(uri: str) -> int:
    """Rows of the Parquet file (from its footer)."""
    fs, path, _ = resolve(uri)
    with fs.open_input_file(path) as f:
        return int(pq.ParquetFile(f).metadata.num_rows)


# ------------------------------------------------------------------------------------------- directories


def _infos(directory: str) -> List[Any]:
    fs, path, _ = resolve(directory)
    try:
        return list(fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)))
    except (OSError, RuntimeError) as exc:
        if isinstance(exc, FileNotFoundError):
            return []
        raise _unreachable(directory, exc) from exc


def list_names(directory: str) -> List[str]:
    """The names of the files in ``directory`` (none when it does not exist)."""
    return sorted(i.base_name for i in _infos(directory) if i.type == pafs.FileType.File)


def list_dirs(directory: str) -> List[str]:
    """The names of the directories in ``directory`` (none when it does not exist)."""
    return sorted(i.base_name for i in _infos(directory) if i.type == pafs.FileType.Directory)


def modified_ms(uri: str) -> int:
    """When the file or directory was last modified (ms since the epoch; 0 when unknown)."""
    fs, path, _ = resolve(uri)
    info = fs.get_file_info(path)
    return int(info.mtime_ns // 1_000_000) if info.mtime_ns is not None else 0


def exists(uri: str) -> bool:
    fs, path, _ = resolve(uri)
    try:
        return bool(fs.get_file_info(path).type != pafs.FileType.NotFound)
    except (OSError, RuntimeError) as exc:
        raise _unreachable(uri, exc) from exc


def is_dir(uri: str) -> bool:
    fs, path, _ = resolve(uri)
    return bool(fs.get_file_info(path).type == pafs.FileType.Directory)


def make_dirs(uri: str) -> None:
    fs, path, _ = resolve(uri)
    try:
        fs.create_dir(path, recursive=True)
    except (OSError, RuntimeError) as exc:
        raise _unreachable(uri, exc) from exc


def delete(uri: str) -> None:
    """Delete the file (nothing when it is gone already)."""
    fs, path, _ = resolve(uri)
    try:
        fs.delete_file(path)
    except FileNotFoundError:
        pass


def delete_tree(uri: str) -> None:
    """Delete the directory and everything in it (nothing when it is gone already)."""
    fs, path, _ = resolve(uri)
    try:
        fs.delete_dir(path)
    except FileNotFoundError:
        pass


def rename_dir(src: str, dst: str) -> None:
    """Rename a directory (a local or HDFS one: object stores have no directory rename)."""
    fs, source, native = resolve(src)
    _, target, _ = resolve(dst)
    if native is not None:
        native.rename(source, target)
    elif isinstance(fs, pafs.LocalFileSystem):
        fs.move(source, target)
    else:
        msg = f"cannot rename the directory {src}: the {scheme_of(src)!r} store has no directory rename"
        raise UnsupportedFeatureError(msg)


def open_output(uri: str) -> Any:
    """A new stream writing the file ``uri`` from its start (its directory created; an existing file is replaced)."""
    fs, path, _ = resolve(uri)
    try:
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        return fs.open_output_stream(path)
    except (OSError, RuntimeError) as exc:
        raise _unreachable(uri, exc) from exc


def replace_file(src: str, dst: str) -> None:
    """Rename the file ``src`` to ``dst``, replacing ``dst`` if it exists, atomically (a local or HDFS file:
    object stores have no rename)."""
    fs, source, native = resolve(src)
    _, target, _ = resolve(dst)
    if native is not None:
        native.rename(source, target, overwrite=True)
    elif isinstance(fs, pafs.LocalFileSystem):
        fs.move(source, target)  # os.replace
    else:
        msg = f"cannot rename the file {src}: the {scheme_of(src)!r} store has no rename"
        raise UnsupportedFeatureError(msg)


def set_modified(uri: str, ms: int) -> None:
    """Set a file's modification time (a local or HDFS file)."""
    fs, path, native = resolve(uri)
    if native is not None:
        native.set_times(path, ms, ms)
    elif isinstance(fs, pafs.LocalFileSystem):
        os.utime(path, (ms / 1000, ms / 1000))
    else:
        msg = f"cannot set the modification time of {uri}: the {scheme_of(uri)!r} store keeps its own"
        raise UnsupportedFeatureError(msg)


def local_path(uri: str) -> Optional[str]:
    """The local path a location names (``file:`` URIs, paths, ``dbfs:`` on Databricks), or None."""
    fs, path, _ = resolve(uri)
    return path if isinstance(fs, pafs.LocalFileSystem) else None


def is_local(uri: str) -> bool:
    return scheme_of(uri) in ("", "file")


def abspath(uri: str) -> str:
    """A local path made absolute; a URI as it is."""
    return os.path.abspath(uri) if scheme_of(uri) == "" else uri


__all__ = [
    "OBJECT_STORES",
    "S3A_SETTINGS",
    "SCHEMES",
    "abspath",
    "configure",
    "copy_file",
    "current_options",
    "delete",
    "delete_tree",
    "exists",
    "is_dir",
    "is_local",
    "join",
    "list_dirs",
    "list_names",
    "local_path",
    "make_dirs",
    "modified_ms",
    "num_rows",
    "open_output",
    "options_from_hadoop",
    "parent",
    "read_bytes",
    "read_table",
    "rename_dir",
    "replace_file",
    "resolve",
    "scheme_of",
    "set_modified",
    "write_bytes",
    "write_table",
]
