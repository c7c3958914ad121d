"""Flink's file sink rules, engine-free: part file names, the bytes of a record, buckets, when a part file rolls.

Flink's ``FileSink`` writes each subtask's records of a bucket into an *in-progress* part file, a hidden
``.<prefix>-<uuid>-<n><suffix>.inprogress.<uuid>``; when the file rolls it becomes *pending*, and the committer
renames it to its final name ``<prefix>-<uuid>-<n><suffix>`` only after the checkpoint that holds it completes. A
reader of the directory (and Flink's and Spark's file sources, which skip names starting with ``.`` or ``_``)
never sees a part file whose checkpoint did not commit.

:class:`PartFileWriter` writes one subtask's records of one checkpoint (here: one micro-batch) into hidden
in-progress files and returns them as pending files; the engines rename them (:func:`pending_name`,
:func:`part_name`). The local engine writes local files; the Spark executors write through
``spark/storage.py``'s clients (``spark/file_sink.py``).
"""

from __future__ import annotations

import datetime as _dt
import re
import zoneinfo
from dataclasses import dataclass
from typing import IO, Any, Callable, Dict, List, Optional, Tuple

from .bulk_writers import BulkEncoding, BulkPartWriter
from .display import java_string
from .errors import InvalidArgumentError
from .typeinfo import TypeInformation

IN_PROGRESS = ".inprogress."
"""What separates an in-progress file's name from its attempt's uuid (Flink's ``.inprogress.<uuid>``)."""


def part_name(prefix: str, uid: str, counter: int, suffix: str) -> str:
    """A finished part file's name, as Flink's: ``<prefix>-<uid>-<counter><suffix>``."""
    return f"{prefix}-{uid}-{counter}{suffix}"


def in_progress_name(final_name: str, attempt: str) -> str:
    """The hidden name of the in-progress file that becomes ``final_name``: ``.<final_name>.inprogress.<attempt>``."""
    return f".{final_name}{IN_PROGRESS}{attempt}"


def is_hidden(name: str) -> bool:
    """True for a name a reader of the directory skips (in-progress files, Hadoop's ``_SUCCESS`` and the like)."""
    return name.startswith((".", "_"))


# ------------------------------------------------------------------------------------------------ buckets
_JAVA_FIELDS = {
    "yyyy": "%Y",
    "uuuu": "%Y",
    "yy": "%y",
    "MM": "%m",
    "dd": "%d",
    "HH": "%H",
    "hh": "%I",
    "mm": "%M",
    "ss": "%S",
    "a": "%p",
}
_TOKEN = re.compile(r"'(?:[^']|'')*'|([A-Za-z])\1*|[^A-Za-z']+")


def java_date_time(pattern: str, epoch_ms: int, zone: Optional[str]) -> str:
    """``DateTimeFormatter.ofPattern(pattern).withZone(zone).format(Instant.ofEpochMilli(epoch_ms))`` for the
    pattern letters bucket paths use (``yyyy yy MM dd HH hh mm ss SSS a`` and quoted text); ``zone`` None is the
    machine's time zone (Java's ``ZoneId.systemDefault()``)."""
    tz: Any = zoneinfo.ZoneInfo(zone) if zone is not None else None
    moment = _dt.datetime.fromtimestamp(epoch_ms / 1000, tz=tz or _dt.UTC)
    if tz is None:
        moment = moment.astimezone()
    out = []
    for match in _TOKEN.finditer(pattern):
        token = match.group(0)
        if token.startswith("'"):
            out.append(token[1:-1].replace("''", "'") if token != "''" else "'")
        elif match.group(1) is None:
            out.append(token)
        elif token in _JAVA_FIELDS:
            out.append(moment.strftime(_JAVA_FIELDS[token]))
        elif set(token) == {"S"}:
            out.append(f"{moment.microsecond // 1000:03d}"[: len(token)].ljust(len(token), "0"))
        else:
            msg = (
                f"date_time_bucket_assigner: the pattern letters {token!r} of {pattern!r} are not supported here; "
                f"use {' '.join(sorted(_JAVA_FIELDS))} SSS and quoted text"
            )
            raise InvalidArgumentError(msg)
    return "".join(out)


def check_date_time_pattern(pattern: str, zone: Optional[str]) -> None:
    """Refuse a pattern or a time zone :func:`java_date_time` cannot honour, at construction."""
    if zone is not None:
        try:
            zoneinfo.ZoneInfo(zone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            msg = f"date_time_bucket_assigner: unknown time zone {zone!r} (give an IANA name such as 'Europe/Berlin')"
            raise InvalidArgumentError(msg) from None
    java_date_time(pattern, 0, zone)


# ------------------------------------------------------------------------------------------------ writer
@dataclass(frozen=True)
class PartFileSettings:
    """What a :class:`PartFileWriter` needs of its sink: the output file config (``prefix``, ``suffix``), the
    encoder's ``charset``, the rolling policy's ``part_size`` (bytes; None: roll on checkpoints only) and the
    stream's type (what ``toString()`` of an element is); for a bulk format (``FileSink.for_bulk_format``) its
    ``bulk`` encoding, which writes whole part files (they roll on checkpoints only)."""

    prefix: str
    suffix: str
    charset: str
    part_size: Optional[int]
    type_info: Optional[TypeInformation]
    bulk: Optional[BulkEncoding] = None

    def encode(self, value: Any) -> bytes:
        """The bytes ``SimpleStringEncoder`` writes for ``value``: Java's ``toString()`` of it and ``"\\n"``."""
        return (java_string(value, self.type_info) + "\n").encode(self.charset)


@dataclass
class _OpenPart:
    final: str
    hidden: str
    out: IO[bytes]
    size: int = 0
    bulk: Optional[BulkPartWriter] = None


class PartFileWriter:
    """Writes one subtask's records of one checkpoint into hidden in-progress part files, one open file per bucket.

    Lifecycle: :meth:`write` for each record in order, then :meth:`finish`, which closes the files and returns the
    pending ones as ``(in-progress path, final path)`` pairs, for the committer to rename once the checkpoint
    commits. A file rolls (a new counter) before a record when it holds more than ``part_size`` bytes (Flink's
    ``DefaultRollingPolicy.shouldRollOnEvent``); every file rolls at :meth:`finish` (the checkpoint), and a bulk
    format's only then (Flink's ``OnCheckpointRollingPolicy``): its writer finishes the file (footer) first.

    Args:
        settings: the sink's :class:`PartFileSettings`.
        base: the sink's base path; a bucket is a directory under it ("" is the base path).
        uid: the ``<uuid>`` of the part names.
        attempt: the uuid of the in-progress names (this attempt's).
        open_output: opens a new file at a path for writing bytes (creating its directory).
        counters: the next counter per bucket (kept by the caller across checkpoints; updated here).
    """

    def __init__(
        self,
        settings: PartFileSettings,
        base: str,
        uid: str,
        attempt: str,
        open_output: Callable[[str], IO[bytes]],
        counters: Optional[Dict[str, int]] = None,
    ) -> None:
        self.settings = settings
        self.base = base.rstrip("/")
        self.uid = uid
        self.attempt = attempt
        self.open_output = open_output
        self.counters: Dict[str, int] = counters if counters is not None else {}
        self._open: Dict[str, _OpenPart] = {}
        self._pending: List[Tuple[str, str]] = []

    def _directory(self, bucket: str) -> str:
        return f"{self.base}/{bucket.strip('/')}" if bucket else self.base

    def _roll(self, bucket: str) -> None:
        part = self._open.pop(bucket, None)
        if part is not None:
            if part.bulk is not None:
                part.bulk.finish()
            part.out.close()
            self._pending.append((part.hidden, part.final))

    def write(self, value: Any, bucket: str = "") -> None:
        """Append ``value``'s bytes to the bucket's in-progress file (opening or rolling one first if needed); a
        bulk format's writer takes the value itself."""
        bulk = self.settings.bulk
        data = self.settings.encode(value) if bulk is None else b""
        part = self._open.get(bucket)
        if part is not None and self.settings.part_size is not None and part.size > self.settings.part_size:
            self._roll(bucket)
            part = None
        if part is None:
            counter = self.counters.get(bucket, 0)
            self.counters[bucket] = counter + 1
            directory = self._directory(bucket)
            final = part_name(self.settings.prefix, self.uid, counter, self.settings.suffix)
            hidden = f"{directory}/{in_progress_name(final, self.attempt)}"
            part = _OpenPart(f"{directory}/{final}", hidden, self.open_output(hidden))
            if bulk is not None:
                part.bulk = bulk.open(part.out)
            self._open[bucket] = part
        if part.bulk is not None:
            part.bulk.add(value)
            return
        part.out.write(data)
        part.size += len(data)

    def finish(self) -> List[Tuple[str, str]]:
        """Close every open file; the pending files of this checkpoint as ``(in-progress path, final path)``."""
        for bucket in list(self._open):
            self._roll(bucket)
        pending, self._pending = self._pending, []
        return pending


__all__ = [
    "IN_PROGRESS",
    "PartFileSettings",
    "PartFileWriter",
    "check_date_time_pattern",
    "in_progress_name",
    "is_hidden",
    "java_date_time",
    "part_name",
]
