"""``FileSink`` on the JVM-free engine: local part files, committed at the end of every micro-batch.

The engine's checkpoint is the end of a micro-batch: :meth:`LocalFileSinkWriter.commit` renames the batch's
in-progress files (hidden) to their final names, as Flink's committer does when a checkpoint completes. As a Flink
subtask, one writer has one ``<uuid>`` for the job's run, and its part counters go on across micro-batches.
"""

from __future__ import annotations

import os
import re
import uuid
from typing import IO, Any, Optional

from ..core.clock import Clock
from ..core.errors import UnsupportedFeatureError
from ..core.file_parts import PartFileWriter
from ..core.typeinfo import TypeInformation


def _open_output(path: str) -> IO[bytes]:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    return open(path, "xb")


class LocalFileSinkWriter:
    """Writes one ``FileSink``'s records on the JVM-free engine (its sink function is :meth:`write`).

    Lifecycle: :meth:`write` per record; :meth:`commit` at the end of every micro-batch and at the end of input."""

    def __init__(self, sink: Any, type_info: Optional[TypeInformation], clock: Clock) -> None:
        base = sink.base_path
        if base.startswith("file:"):
            rest = base[len("file:") :]
            base = "/" + rest[2:].partition("/")[2] if rest.startswith("//") else rest
        elif re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", base):
            msg = f"FileSink({sink.base_path!r}) on the JVM-free engine writes local files only; give a path"
            raise UnsupportedFeatureError(msg)
        self.sink = sink
        self.clock = clock
        settings = sink.part_file_settings(type_info)
        self._uid = str(uuid.uuid4())
        self._writer = PartFileWriter(settings, base, self._uid, str(uuid.uuid4()), _open_output)
        self.committed = 0  # part files committed so far

    def write(self, value: Any) -> None:
        """Append ``value`` to its bucket's in-progress file (the bucket of the clock's time now)."""
        self._writer.write(value, self.sink.bucket_assigner.bucket_id(self.clock.now()))

    def commit(self) -> None:
        """The checkpoint completed: the micro-batch's in-progress files get their final names."""
        for hidden, final in self._writer.finish():
            os.replace(hidden, final)
            self.committed += 1
        self._writer.attempt = str(uuid.uuid4())


__all__ = ["LocalFileSinkWriter"]
