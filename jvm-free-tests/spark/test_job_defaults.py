"""``execute("name")`` on Spark without ``checkpoint_location=``: the default checkpoint location and trigger
(the functions the Spark environment calls, with a stand-in for the session's configuration: no JVM)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Dict, Optional

import pytest

from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, StreamExecutionEnvironment
from pyspark_flinkish.datastream.plan import Transformation
from pyspark_flinkish.datastream.runtime_mode import unbounded_sources
from pyspark_flinkish.spark.job_defaults import default_checkpoint_location, default_trigger, job_directory_name


class _Conf:
    def __init__(self, values: Dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: Optional[str] = None) -> Optional[str]:
        return self.values.get(key, default)


class _Session:
    def __init__(self, values: Dict[str, str]) -> None:
        self.conf = _Conf(values)


def test_checkpoint_root_plus_job_name(tmp_path: Path) -> None:
    spark: Any = _Session({"spark.sql.streaming.checkpointLocation": f"file:{tmp_path}/"})
    assert default_checkpoint_location(spark, "word count/v2") == os.path.join(str(tmp_path), "word_count_v2")
    assert job_directory_name("..") == "job"


def test_temporary_directory_is_logged_without_a_root(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pyspark_flinkish.spark"):
        location = default_checkpoint_location(_Session({}), "my job")
    assert os.path.isdir(location) and "flinkish-my_job-" in location
    assert location in caplog.text and "temporary directory" in caplog.text


def _sinks(end_of_input: bool) -> Any:
    env = StreamExecutionEnvironment.get_execution_environment()
    source = MicroBatchSource([MicroBatch([1])], end_of_input=end_of_input)
    from pyspark_flinkish.common import WatermarkStrategy

    env.from_source(source, WatermarkStrategy.no_watermarks(), "s").map(lambda x: x).add_sink(lambda v: None)
    return list(env._sinks)


def test_bounded_jobs_run_available_now_unbounded_ones_at_the_checkpoint_interval() -> None:
    bounded: Any = _sinks(True)
    unbounded: Any = _sinks(False)
    assert unbounded_sources(bounded) == [] and unbounded_sources(unbounded) == ["s"]
    assert default_trigger(bounded, -1) == {"availableNow": True}
    assert default_trigger(bounded, 5000) == {"availableNow": True}
    assert default_trigger(unbounded, 5000) == {"processingTime": "5000 milliseconds"}
    assert default_trigger(unbounded, -1) is None
    assert isinstance(bounded[0], Transformation)
