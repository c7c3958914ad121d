"""A checkpoint location read as Spark reads it: a Hadoop ``Path``, i.e. a URI with an optional scheme.

Spark (through Hadoop's ``Path``) takes ``execute(checkpoint_location=...)`` as: ``/x`` (absolute, on the default
file system ``fs.defaultFS``), ``x/y`` (relative to the working directory), ``file:/x`` and ``file:///x`` (the
local file system), or ``<scheme>:/x`` / ``<scheme>://authority/x`` for any other file system (``hdfs://nn/x``,
``s3a://bucket/x``, ``dbfs:/x``). Whatever precedes the first ``:`` that comes before any ``/`` is a scheme, as in
Hadoop: ``dbfs:/x`` is never a relative directory named ``dbfs:``.

:func:`resolve_checkpoint` qualifies a location once, on the driver, so that Spark's own checkpoint and every file
of the package (``spark/storage.py``) name the same directory: a path without a scheme goes to ``fs.defaultFS``
(``hdfs://`` on YARN/EMR) as Spark would put it, local forms map to absolute local paths, and the file systems
``storage`` reaches are kept as URIs; any other scheme is refused up front, naming the location.
"""

from __future__ import annotations

import os

from ..core.errors import UnsupportedFeatureError
from .storage import SCHEMES, scheme_of

LOCAL_AUTHORITIES = ("", "localhost")
"""Authorities of a ``file://authority/x`` URI that name this machine's file system."""


def resolve_checkpoint(location: str, default_fs: str = "file:///") -> str:
    """The checkpoint location ``location`` as Spark resolves it with the session's ``default_fs``: an absolute
    local path for the local file system, else a URI with its scheme and authority (``hdfs://nn:8020/x``).

    Raises:
        UnsupportedFeatureError: a scheme ``spark/storage.py`` cannot reach, a ``file:`` URI of another host, a
            relative path after a scheme, or a relative path on a default file system other than the local one
            (Hadoop would put it under the user's home directory there), each naming ``location``.
    """
    scheme = scheme_of(location)
    if not scheme:
        fs_scheme = scheme_of(default_fs) or "file"
        if fs_scheme == "file":
            return os.path.abspath(location)
        if not location.startswith("/"):
            msg = (
                f"checkpoint_location {location!r} is a relative path, and this session's fs.defaultFS is "
                f"{default_fs!r}: give an absolute path or a URI ({default_fs.rstrip('/')}/path/to/checkpoint)"
            )
            raise UnsupportedFeatureError(msg)
        return resolve_checkpoint(default_fs.rstrip("/") + os.path.normpath(location), default_fs)
    rest = location[len(scheme) + 1 :]
    if scheme == "file":
        if rest.startswith("//"):
            authority, slash, path = rest[2:].partition("/")
            if authority.lower() in LOCAL_AUTHORITIES:
                return os.path.abspath("/" + path) if slash else "/"
            msg = (
                f"checkpoint_location {location!r} names the file system of host {authority!r}: give a path of this "
                "machine's file system, or a cluster file system's URI (hdfs://, s3a://, ...)"
            )
            raise UnsupportedFeatureError(msg)
        if rest.startswith("/"):
            return os.path.abspath(rest)
        msg = (
            f"checkpoint_location {location!r}: a relative path after 'file:' (Hadoop refuses it too); write "
            f"file:/{rest} or {rest}"
        )
        raise UnsupportedFeatureError(msg)
    if scheme not in SCHEMES:
        msg = (
            f"checkpoint_location {location!r} is on the {scheme!r} file system, which this package cannot reach "
            f"from Spark's Python workers; supported: a local path, {', '.join(s + ':' for s in SCHEMES)}"
        )
        raise UnsupportedFeatureError(msg)
    if scheme == "dbfs":
        path = rest[2:].partition("/")[2] if rest.startswith("//") else rest.lstrip("/")
        return "dbfs:/" + os.path.normpath("/" + path).lstrip("/")
    if not rest.startswith("//") or not rest[2:].partition("/")[0]:
        msg = f"checkpoint_location {location!r}: a {scheme}: location needs an authority ({scheme}://<authority>/<path>)"
        raise UnsupportedFeatureError(msg)
    authority, _, path = rest[2:].partition("/")
    return f"{scheme}://{authority}{os.path.normpath('/' + path)}".rstrip("/")


__all__ = ["LOCAL_AUTHORITIES", "resolve_checkpoint", "scheme_of"]
