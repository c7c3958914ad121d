"""The same pipeline code on Spark: the README example, typed DataFrame sinks, DataFrame sources with
per-partition watermarks — each compared with the JVM-free engine."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.datastream import MicroBatch, MicroBatchSource, OutputTag, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import KeyedProcessFunction
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]


def test_readme_example_runs_on_spark_with_only_the_environment_line_changed(spark, capsys) -> None:  # type: ignore[no-untyped-def]
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Example", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    expected = re.search(r"```text\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    line = "env = StreamExecutionEnvironment.get_execution_environment()"
    assert code.count(line) == 1
    spark_code = code.replace(line, "env = StreamExecutionEnvironment.get_execution_environment(spark)")
    exec(compile(spark_code, "README.md (on Spark)", "exec"), {"__name__": "readme_on_spark", "spark": spark})
    printed = capsys.readouterr().out
    assert sorted(printed.splitlines()) == sorted(expected.splitlines())
    # rows arrive in Flink's emission order; the late line is delivered with its batch
    rows = [ln for ln in printed.splitlines() if not ln.startswith("late:")]
    assert rows == [ln for ln in expected.splitlines() if not ln.startswith("late:")]


class Alert(KeyedProcessFunction):  # type: ignore[type-arg]
    """Sums values per key and emits the sum 5 ms (event time) after the key's first event."""

    def open(self, runtime_context):  # type: ignore[no-untyped-def]
        from pyspark_flinkish.datastream.state import ValueStateDescriptor

        self.total = runtime_context.get_state(ValueStateDescriptor("total"))

    def process_element(self, value, ctx):  # type: ignore[no-untyped-def]
        if self.total.value() is None:
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 5)
        self.total.update((self.total.value() or 0) + value["v"])
        if value["v"] < 0:
            yield OutputTag("negative"), value

    def on_timer(self, timestamp, ctx):  # type: ignore[no-untyped-def]
        yield {"key": ctx.get_current_key(), "at": timestamp, "total": self.total.value()}
        self.total.clear()


def _pipeline(env):  # type: ignore[no-untyped-def]
    batches = [
        MicroBatch([{"k": "a", "t": 1, "v": 1}, {"k": "b", "t": 2, "v": 2}, {"k": "a", "t": 3, "v": -3}], partitions=[0, 1, 0]),
        MicroBatch([{"k": "a", "t": 9, "v": 4}, {"k": "b", "t": 4, "v": 5}], partitions=[0, 1]),
        MicroBatch([{"k": "c", "t": 30, "v": 6}], partitions=[1]),
    ]
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(2)).with_timestamp_assigner(lambda e, _: e["t"])
    events = env.from_source(MicroBatchSource(batches, partitions=[0, 1]), strategy, "events")
    alerts = events.key_by(lambda e: e["k"]).process(
        Alert(), output_type=Types.ROW_NAMED(["key", "at", "total"], [Types.STRING(), Types.LONG(), Types.LONG()])
    )
    sums = (
        events.key_by(lambda e: e["k"])
        .window(TumblingEventTimeWindows.of(Duration.of_millis(10)))
        .reduce(lambda a, b: {"k": a["k"], "t": a["t"], "v": a["v"] + b["v"]})
        .map(lambda e: (e["k"], e["v"]), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
    )
    return alerts, alerts.get_side_output(OutputTag("negative")), sums


def test_keyed_process_function_timers_side_outputs_and_typed_dataframe_sink(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    local = StreamExecutionEnvironment.get_execution_environment()
    la, ln, ls = _pipeline(local)
    expected_alerts, expected_neg, expected_sums = [], [], []
    la.add_sink(expected_alerts.append)
    ln.add_sink(expected_neg.append)
    ls.add_sink(expected_sums.append)
    local.execute()
    assert expected_alerts and expected_neg and expected_sums

    env = StreamExecutionEnvironment.get_execution_environment(spark)
    alerts, negative, sums = _pipeline(env)
    got_alerts, got_neg, frames = [], [], []
    alerts.foreach_batch(lambda df, batch_id: got_alerts.extend(r.asDict() for r in df.collect()))
    negative.add_sink(got_neg.append)
    sums.foreach_batch(lambda df, batch_id: frames.append((batch_id, df.columns, [tuple(r) for r in df.collect()])))
    env.execute("api", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True}).await_termination()
    assert got_alerts == expected_alerts
    assert got_neg == expected_neg
    assert all(cols == ["f0", "f1"] for _, cols, _ in frames)
    assert [row for _, _, rows in frames for row in rows] == expected_sums


def test_dataframe_source_per_partition_watermarks(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A lagging partition's events are on time in Flink (per-partition watermarks); Spark's global
    watermark would have dropped them. Results equal the JVM-free engine's."""
    src = tmp_path / "in"
    src.mkdir()
    files = [
        [{"p": 0, "off": 0, "k": "x", "t": 100, "v": 1}, {"p": 1, "off": 0, "k": "y", "t": 5, "v": 10}],
        [{"p": 0, "off": 1, "k": "x", "t": 200, "v": 2}, {"p": 1, "off": 1, "k": "y", "t": 8, "v": 20}],
        [{"p": 0, "off": 2, "k": "x", "t": 300, "v": 3}, {"p": 1, "off": 2, "k": "y", "t": 300, "v": 30}],
    ]
    for i, rows in enumerate(files):
        path = src / f"part-{i}.json"
        path.write_text("\n".join(json.dumps(r) for r in rows))
        os.utime(path, (1_000 + i, 1_000 + i))
    df = spark.readStream.schema("p long, off long, k string, t long, v long").option("maxFilesPerTrigger", 1).json(str(src))
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
    stream = env.from_dataframe(
        df, strategy, timestamp_column="t", partition_column="p", order_columns=["p", "off"], partitions=["0", "1"]
    )
    out: list = []
    (
        stream.key_by(lambda r: r.k)
        .window(TumblingEventTimeWindows.of(Duration.of_millis(50)))
        .reduce(lambda a, b: a.__class__(**{**a.asDict(), "v": a.v + b.v}))
        .map(lambda r: (r.k, r.v))
        .add_sink(out.append)
    )
    handle = env.execute("partitions", checkpoint_location=str(tmp_path / "ck"), trigger={"availableNow": True})
    handle.await_termination()
    # partition 1 lags (t=5, 8) while partition 0 is at 100-200: its events are still on time
    assert ("y", 30) in out
    assert ("x", 1) in out and ("x", 2) in out
