"""The tick source's classes as Spark's Python process for the reader gets them (``spark/tick_source.py``): pickled
by value, they unpickle and read the tick file without importing ``pyspark_flinkish`` (whose package import costs
that process about 0.2 s, ``docs/benchmarks.md``) or pandas."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pyspark import cloudpickle

from pyspark_flinkish.spark import storage
from pyspark_flinkish.spark.tick_source import TickSource, ship_by_value
from pyspark_flinkish.spark.ticks import TICKS_FILE, write_due

CHILD = r"""
import json, sys
from pyspark import cloudpickle
import pyspark.sql.datasource  # noqa: F401 (Spark's runner has it)
before = set(sys.modules)
source = cloudpickle.loads(open(sys.argv[1], "rb").read())
reader = source(json.loads(sys.argv[2])).simpleStreamReader(None)
initial = reader.initialOffset()
rows, end = reader.read(initial)
print(json.dumps({"initial": initial, "end": end, "rows": list(rows), "name": source.name(),
                  "imported": sorted(m for m in set(sys.modules) - before if m.split(".")[0] in
                                     ("pyspark_flinkish", "pandas"))}))
"""


def _read_in_a_fresh_process(tmp_path: Path, options: dict) -> dict:  # type: ignore[type-arg]
    ship_by_value()
    pickled = tmp_path / "source.pkl"
    pickled.write_bytes(cloudpickle.dumps(TickSource))
    out = subprocess.run([sys.executable, "-c", CHILD, str(pickled), json.dumps(options)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])  # type: ignore[no-any-return]


def test_the_reader_unpickles_and_reads_a_local_tick_file_without_importing_the_package(tmp_path: Path) -> None:
    flinkish = str(tmp_path / "ck" / "flinkish")
    write_due(flinkish, 4, 1_000)  # batch 4's earliest timer is overdue
    uri = storage.join(flinkish, TICKS_FILE)
    got = _read_in_a_fresh_process(tmp_path, {"uri": uri, "local": storage.local_path(uri), "storage": "{}"})
    assert got["name"] == "flinkish_ticks"
    assert (got["initial"], got["end"], got["rows"]) == ({"batch": 4}, {"batch": 4}, [])  # ticked at most once
    assert got["imported"] == []


def test_without_a_tick_file_the_offset_is_before_the_first_batch(tmp_path: Path) -> None:
    uri = storage.join(str(tmp_path / "ck" / "flinkish"), TICKS_FILE)
    got = _read_in_a_fresh_process(tmp_path, {"uri": uri, "local": storage.local_path(uri), "storage": "{}"})
    assert (got["initial"], got["end"], got["rows"], got["imported"]) == ({"batch": -1}, {"batch": -1}, [], [])


def test_a_location_off_the_local_file_system_is_read_through_the_storage_layer(tmp_path: Path) -> None:
    flinkish = "file://" + str(tmp_path / "ck" / "flinkish")  # no local path given: the storage layer's client
    reader = TickSource({"uri": storage.join(flinkish, TICKS_FILE), "local": "", "storage": "{}"}).simpleStreamReader(None)
    assert reader.initialOffset() == {"batch": -1}
    write_due(flinkish, 2, 500)
    rows, end = reader.read({"batch": -1})
    assert (list(rows), end) == ([(2,)], {"batch": 2})
    assert list(reader.readBetweenOffsets({"batch": -1}, end)) == [(2,)]
    write_due(flinkish, 3, None)  # nothing pending after batch 3: no tick
    rows, end = reader.read({"batch": 2})
    assert (list(rows), end) == ([], {"batch": 2})
