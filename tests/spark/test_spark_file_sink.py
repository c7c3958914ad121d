"""``FileSink`` on both Spark executors (foreachBatch and applyInPandasWithState): an event-time window's results over
two micro-batches, committed as part files whose lines equal the JVM-free engine's, nothing left in progress; and the
same into a directory of the test HDFS (``hdfs://``: the executors write through ``spark/storage.py``)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, List, Union

import pytest

from pyspark_flinkish.common import Encoder, Time, Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, StreamExecutionEnvironment
from pyspark_flinkish.datastream.connectors.file_system import BucketAssigner, FileSink, OutputFileConfig
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

pytestmark = pytest.mark.spark


def _pipeline(env: Any, out: Union[Path, str]) -> None:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, ts: v[1])
    batches = [MicroBatch([("a", 1), ("b", 2), ("a", 6)]), MicroBatch([("b", 7), ("a", 12)])]
    (
        env.from_micro_batches(batches, strategy)
        .key_by(lambda v: v[0], key_type=Types.STRING())
        .window(TumblingEventTimeWindows.of(Time.milliseconds(5)))
        .reduce(lambda x, y: (x[0], x[1] + y[1]), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .sink_to(
            FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
            .with_output_file_config(OutputFileConfig.builder().with_part_prefix("w").with_part_suffix(".txt").build())
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
            .build()
        )
    )


def _lines(out: Path) -> List[str]:
    assert [p for p in out.rglob(".*")] == [], "no in-progress file is left"
    return sorted(line for p in out.rglob("w-*.txt") for line in p.read_text().splitlines())


def _hdfs_lines(client: Any, directory: str) -> List[str]:
    """The lines of the committed part files under an HDFS ``directory`` (its path), none left in progress."""
    lines, names = [], []
    pending = [directory]
    while pending:
        for status in client.list_status(pending.pop()):
            name = status.path.rstrip("/").rsplit("/", 1)[-1]
            if status.isdir:
                pending.append(status.path)
                continue
            names.append(name)
            if name.startswith("w-") and name.endswith(".txt"):
                with client.read(status.path) as f:
                    lines.extend(f.read().decode("utf-8").splitlines())
    assert [n for n in names if n.startswith(".")] == [], "no in-progress file is left"
    return sorted(lines)


@pytest.mark.parametrize("backend", ["foreach_batch", "apply_in_pandas_with_state"])
def test_file_sink_on_spark_writes_the_jvm_free_engines_lines(spark: Any, tmp_path: Path, backend: str) -> None:
    local = StreamExecutionEnvironment.get_execution_environment()
    _pipeline(local, tmp_path / "local")
    local.execute()
    expected = _lines(tmp_path / "local")
    assert expected == ["(a,1)", "(a,12)", "(a,6)", "(b,2)", "(b,7)"]
    options = {} if backend == "foreach_batch" else {"backend": backend}
    env = StreamExecutionEnvironment.get_execution_environment(spark, **options)
    _pipeline(env, tmp_path / "spark")
    env.execute("file-sink-" + backend)
    assert _lines(tmp_path / "spark") == expected


@pytest.mark.hdfs
def test_file_sink_on_spark_writes_into_hdfs(spark: Any, hdfs_cluster: Any) -> None:
    """The part files in an ``hdfs://`` directory: written and committed by the executors, as on a local disk."""
    directory = f"/file-sink-{uuid.uuid4().hex[:8]}"
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    _pipeline(env, hdfs_cluster.uri + directory)
    env.execute("file-sink-hdfs")
    assert _hdfs_lines(hdfs_cluster.client(), directory) == ["(a,1)", "(a,12)", "(a,6)", "(b,2)", "(b,7)"]
