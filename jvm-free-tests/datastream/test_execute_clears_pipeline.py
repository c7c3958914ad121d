"""``execute()`` clears the pipeline, as PyFlink's does (``getStreamGraph(clearTransformations=true)``): a second
``execute()`` runs only the sinks added since the first, and with none raises Flink's "No operators defined in
streaming topology. Cannot execute." Checked against PyFlink 2.3.0 by hand: ``execute``, ``execute_async`` and
``execute_and_collect`` (Java's ``executeAsync``: the pending sinks and the collect sink, as one job) clear;
``get_execution_plan`` does not, and raises the same error on an empty environment."""

from __future__ import annotations

from typing import Any, List

import pytest

from pyspark_flinkish.common import JobID
from pyspark_flinkish.core.errors import InvalidPipelineError
from pyspark_flinkish.datastream import StreamExecutionEnvironment
from pyspark_flinkish.spark.environment import SparkStreamExecutionEnvironment

NO_OPERATORS = r"^No operators defined in streaming topology\. Cannot execute\."


def test_a_second_execute_runs_only_the_sinks_added_since_the_first() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    out: List[Any] = []
    env.from_collection([1, 2]).add_sink(out.append)
    env.execute("first")
    assert out == [1, 2]
    env.from_collection([3]).map(lambda x: x * 10).add_sink(out.append)
    env.execute("second")
    assert out == [1, 2, 30]
    with pytest.raises(InvalidPipelineError, match=NO_OPERATORS):
        env.execute("third")
    assert out == [1, 2, 30]


def test_execute_and_collect_runs_the_pending_sinks_with_it_and_clears_them() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    out: List[Any] = []
    env.from_collection([1]).add_sink(out.append)
    with env.from_collection([9]).execute_and_collect() as collected:
        assert list(collected) == [9]
    assert out == [1]
    with pytest.raises(InvalidPipelineError, match=NO_OPERATORS):
        env.execute()


def test_get_execution_plan_does_not_clear_and_refuses_an_empty_environment() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(InvalidPipelineError, match=NO_OPERATORS):
        env.get_execution_plan()
    out: List[Any] = []
    env.from_collection([1]).add_sink(out.append)
    assert env.get_execution_plan() == env.get_execution_plan()
    env.execute()
    assert out == [1]


def test_execute_async_clears_at_submission_and_reports_its_job_id() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    out: List[Any] = []
    env.from_collection([1, 2]).add_sink(out.append)
    client = env.execute_async("async")
    with pytest.raises(InvalidPipelineError, match=NO_OPERATORS):
        env.execute()  # the sinks went with the submitted job, before execute_async returned
    result = client.get_job_execution_result().result()
    assert out == [1, 2]
    assert result.get_job_id() == client.get_job_id()


def test_job_execution_result_has_job_id_and_net_runtime() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_manual_clock(1000)
    env.from_collection([1]).add_sink(lambda _: None)
    first = env.execute("a")
    env.from_collection([1]).add_sink(lambda _: None)
    second = env.execute("b")
    assert isinstance(first.get_job_id(), JobID) and first.get_job_id() != second.get_job_id()
    assert first.get_net_runtime() == 0  # the environment's (manual) processing-time clock did not move


def test_a_failed_execute_clears_too() -> None:
    """Flink takes the stream graph before the job runs: a failing job's sinks are gone as well."""
    env = StreamExecutionEnvironment.get_execution_environment()

    def boom(x: int) -> int:
        raise ValueError("boom")  # noqa: EM101 (the user function under test)

    env.from_collection([1]).map(boom).add_sink(lambda _: None)
    with pytest.raises(Exception, match="boom"):
        env.execute()
    with pytest.raises(InvalidPipelineError, match=NO_OPERATORS):
        env.execute()


def test_spark_execute_clears_the_pipeline_in_every_form() -> None:
    """On Spark (its query start replaced, so no JVM): ``execute("name")`` and ``execute_async`` (PyFlink's forms) take
    the pending sinks; the package's restartable ``execute(checkpoint_location=...)`` keeps them, so that the same job
    restarts from its checkpoint."""
    env = SparkStreamExecutionEnvironment(spark=None, state_partitions=2)
    started: List[int] = []
    env._start = lambda job_name, sinks, *rest: started.append(len(sinks))  # type: ignore[method-assign,misc,assignment]
    with pytest.raises(InvalidPipelineError, match=NO_OPERATORS):
        env.execute("job", checkpoint_location="/tmp/flinkish-clears-ck")
    env.from_collection([1]).add_sink(lambda v: None)
    env.from_collection([2]).add_sink(lambda v: None)
    env.execute("job", checkpoint_location="/tmp/flinkish-clears-ck")
    env.execute("job", checkpoint_location="/tmp/flinkish-clears-ck")  # a restart of the same job
    assert started == [2, 2]
    assert len(env._take_sinks()) == 2  # what execute("name") / execute_async take (they need a session to start)
    with pytest.raises(InvalidPipelineError, match=NO_OPERATORS):
        env.execute_async("job")
    env.from_collection([3]).add_sink(lambda v: None)
    sinks = env._take_sinks()
    assert len(sinks) == 1 and env._sinks == []
