"""A checkpoint location read as Spark reads it: a Hadoop ``Path``, i.e. a URI with an optional scheme.

Spark (through Hadoop's ``Path``) takes ``execute(checkpoint_location=...)`` as: ``/x`` (absolute, the default
file system), ``x/y`` (relative to the working directory), ``file:/x`` and ``file:///x`` (the local file system),
or ``<scheme>:/x`` / ``<scheme>://authority/x`` for any other file system (``dbfs:/x``, ``s3a://bucket/x``).
Whatever precedes the first ``:`` that comes before any ``/`` is a scheme, as in Hadoop: ``dbfs:/x`` is never a
relative directory named ``dbfs:``.

This package writes keyed state and its watermark bookkeeping with local file APIs, so a location must name the
local file system: ``file:`` forms map to their local path, paths without a scheme are made absolute on the driver
(and refused when the session's ``fs.defaultFS`` is another file system, where Spark would resolve them)
(executors resolve relative paths against their own working directories); other schemes are refused with an
error naming the location and the alternative (a path every node sees as local, such as ``/dbfs/...``).
"""

from __future__ import annotations

import os

from ..core.errors import UnsupportedFeatureError

LOCAL_AUTHORITIES = ("", "localhost")
"""Authorities of a ``file://authority/x`` URI that name this machine's file system."""


def scheme_of(location: str) -> str:
    """The URI scheme of ``location`` as Hadoop's ``Path`` finds it (lower case; ``""`` for none): the text before
    a ``:`` that comes before any ``/``."""
    colon, slash = location.find(":"), location.find("/")
    if colon > 0 and (slash < 0 or colon < slash):
        return location[:colon].lower()
    return ""


def local_checkpoint_path(location: str, default_fs: str = "file:///") -> str:
    """The absolute local directory that the checkpoint location ``location`` names.

    ``/x`` and ``x`` (made absolute against the working directory), ``file:/x``, ``file:///x`` and
    ``file://localhost/x`` are local; any other scheme (``dbfs:/x``, ``s3a://bucket/x``, ``hdfs://nn/x``), a
    ``file:`` URI of another host and a relative path after a scheme (``file:x``, which Hadoop refuses too) raise
    :class:`UnsupportedFeatureError` naming ``location``. A path without a scheme is resolved by Spark against the
    session's ``default_fs`` (``fs.defaultFS``): when that is not the local file system (``hdfs://`` on YARN/EMR) it
    is refused too, naming both, since Spark's offsets would go there and the package's files to the local disk."""
    scheme = scheme_of(location)
    if not scheme:
        fs_scheme = scheme_of(default_fs) or "file"
        if fs_scheme != "file":
            msg = (
                f"checkpoint_location {location!r} has no scheme, and this session's fs.defaultFS is {default_fs!r}: "
                "Spark would keep its offsets and commits there, while this package keeps keyed state and its "
                f"documents with local file APIs. Give file:{os.path.abspath(location)} (a directory every executor "
                "sees as a local path, e.g. a shared mount); cluster file systems are not supported yet"
            )
            raise UnsupportedFeatureError(msg)
        return os.path.abspath(location)
    rest = location[len(scheme) + 1 :]
    if scheme == "file":
        if rest.startswith("//"):
            authority, slash, path = rest[2:].partition("/")
            if authority.lower() in LOCAL_AUTHORITIES:
                return os.path.abspath("/" + path) if slash else "/"
            msg = (
                f"checkpoint_location {location!r} names the file system of host {authority!r}: keyed state is "
                "written with local file APIs; give a path every executor sees as a local path"
            )
            raise UnsupportedFeatureError(msg)
        if rest.startswith("/"):
            return os.path.abspath(rest)
        msg = (
            f"checkpoint_location {location!r}: a relative path after 'file:' (Hadoop refuses it too); write "
            f"file:/{rest} or {rest}"
        )
        raise UnsupportedFeatureError(msg)
    hint = ""
    if scheme == "dbfs":
        path = rest[2:].partition("/")[2] if rest.startswith("//") else rest.lstrip("/")
        hint = f" (here /dbfs/{path})"
    msg = (
        f"checkpoint_location {location!r} is on the {scheme!r} file system: keyed state is written with local file "
        f"APIs, so give a path every executor sees as a local path (a shared mount such as /dbfs/... on Databricks"
        f"{hint}); cluster file systems are not supported yet"
    )
    raise UnsupportedFeatureError(msg)


__all__ = ["LOCAL_AUTHORITIES", "local_checkpoint_path", "scheme_of"]
