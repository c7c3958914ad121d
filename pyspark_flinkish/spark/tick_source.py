"""The tick source's Python data source (``spark/ticks.py``): the classes Spark's Python processes unpickle.

Spark runs a Python data source's stream reader in a Python process of its own per query (its streaming-source
runner; the schema lookup at ``load()`` is another), which unpickles the registered :class:`TickSource`. A class
pickled by reference makes that process import its module, and importing any ``pyspark_flinkish`` module runs the
package's ``__init__`` (``datastream``, ``core``, the executors: about 0.2 s, 76 modules). So this module imports
only ``json``, ``time`` and PySpark's data source classes, and :func:`ship_by_value` has cloudpickle ship its
classes by value: the process imports nothing of the package. A tick file on the local file system (the driver
resolves it, :func:`pyspark_flinkish.spark.storage.local_path`) is read with ``open``; any other location through
``spark/storage.py``, imported when the reader first reads (its file system clients need the package).
"""

from __future__ import annotations

import json
import time
from typing import Any, Dict, Iterator, Optional, Tuple

from pyspark import cloudpickle
from pyspark.sql.datasource import DataSource, SimpleDataSourceStreamReader

FORMAT_NAME = "flinkish_ticks"
"""The name :class:`TickSource` is registered under (``spark.readStream.format``)."""


def parse_due(data: Optional[bytes]) -> Tuple[int, Optional[int]]:
    """``(batch, due)`` from a tick file's bytes (``{"batch": id, "due": ms or null}``); ``(-1, None)`` for no file
    (None) or one that does not parse (not written yet)."""
    if data is None:
        return -1, None
    try:
        doc = json.loads(data)
    except ValueError:
        return -1, None
    return int(doc["batch"]), None if doc["due"] is None else int(doc["due"])


def due_batch(recorded: Tuple[int, Optional[int]], after_batch: int, now_ms: int) -> Optional[int]:
    """The recorded batch whose timer needs a tick now, if any: recorded after ``after_batch`` (the last tick's)
    and overdue (``due < now``: a timer fires when the clock has passed it)."""
    batch, due = recorded
    if batch > after_batch and due is not None and due < now_ms:
        return batch
    return None


class TickReader(SimpleDataSourceStreamReader):
    """Reads the tick file whenever Spark polls its sources (``latestOffset``, once per trigger): its offset is the
    last ticked batch id; a tick is one row, the batch id."""

    def __init__(self, options: Dict[str, str]) -> None:
        self.uri = options["uri"]
        self.local = options.get("local") or None
        self.storage_options: Dict[str, str] = json.loads(options.get("storage") or "{}")

    def _read_bytes(self) -> Optional[bytes]:
        if self.local is not None:
            try:
                with open(self.local, "rb") as f:
                    return f.read()
            except FileNotFoundError:  # not written yet
                return None
        from pyspark_flinkish.core.errors import StateError  # a remote file system's client needs the package
        from pyspark_flinkish.spark import storage

        storage.configure(self.storage_options)
        try:
            return storage.read_bytes(self.uri)
        except StateError:  # not written yet
            return None

    def initialOffset(self) -> Dict[str, int]:  # noqa: N802 (Spark's name)
        return {"batch": parse_due(self._read_bytes())[0]}

    def read(self, start: Dict[str, int]) -> Tuple[Iterator[Tuple[Any, ...]], Dict[str, int]]:
        batch = due_batch(parse_due(self._read_bytes()), int(start["batch"]), int(time.time() * 1000))
        if batch is None:
            return iter([]), start
        return iter([(batch,)]), {"batch": batch}

    def readBetweenOffsets(self, start: Dict[str, int], end: Dict[str, int]) -> Iterator[Tuple[Any, ...]]:  # noqa: N802
        return iter([(int(end["batch"]),)]) if int(end["batch"]) > int(start["batch"]) else iter([])


class TickSource(DataSource):
    """The tick source: options ``uri`` (the tick file), ``local`` (its local path, or empty) and ``storage`` (the
    JSON of :func:`pyspark_flinkish.spark.storage.current_options`); schema ``tick long``."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> str:
        return "tick long"

    def simpleStreamReader(self, schema: Any) -> SimpleDataSourceStreamReader:  # noqa: N802 (Spark's name)
        return TickReader(dict(self.options))


def ship_by_value() -> None:
    """Have cloudpickle pickle this module's classes and functions by value (before ``spark.dataSource.register``)."""
    import sys

    cloudpickle.register_pickle_by_value(sys.modules[__name__])


__all__ = ["FORMAT_NAME", "TickReader", "TickSource", "due_batch", "parse_due", "ship_by_value"]
