"""The Apache Flink side of the suite: run by ``run_all.py`` with PyFlink's own interpreter (``benchmarks/.venv-pyflink``).

    benchmarks/.venv-pyflink/bin/python benchmarks/pyflink_job.py --mode MODE --csv events.csv --out result.json [...]

Modes (the same pipelines as the pyspark_flinkish engines of ``run_all.py``):

* ``tumbling_datastream``: Python DataStream API: the CSV read by the filesystem connector (parsed in the JVM) as a
  DataStream of ``Row``,
  ``WatermarkStrategy.for_bounded_out_of_orderness(B)`` with a Python timestamp assigner, ``key_by`` →
  ``TumblingEventTimeWindows.of(1 min)`` → ``aggregate(<Python AggregateFunction count+sum>, <ProcessWindowFunction
  adding key and window start>)``.
* ``tumbling_sql``: Flink SQL's built-in window aggregate over the same CSV (filesystem connector), ``WATERMARK FOR et
  AS et - INTERVAL 'B+1 ms'`` (the DataStream strategy's ``max - B - 1``), ``TUMBLE(..., INTERVAL '1' MINUTES)``
  with ``COUNT(*)``, ``SUM(value)``; the window start is ``MIN(ts) - MIN(ts) % 60000`` (1-minute windows are
  aligned on the epoch), which keeps every column a BIGINT.
* ``count_window``: ``key_by`` → ``count_window(size, slide)`` → a Python ``ProcessWindowFunction`` emitting
  ``(key, max seq, count, sum)``. PyFlink's Python ``count_window(size, slide)`` (``CountSlidingWindowAssigner``)
  emits only full windows; Java Flink's (``GlobalWindows`` + ``CountEvictor`` + ``CountTrigger``) and this
  package's also emit the first partial windows. ``run_all.py`` compares the full windows.
* ``session``: ``EventTimeSessionWindows.with_gap(gap)`` + a trigger firing on time and early every N elements
  (``EventTimeTrigger`` + ``CountTrigger.of(N)``, merging) + ``allowed_lateness`` → a Python
  ``ProcessWindowFunction`` emitting ``(key, start, end, count, sum)`` per firing.

The CSV is the generated input in arrival (``seq``) order, one file, so that one source reader sees the events
in the order the Spark engines process them. Each mode runs once on a small warm-up file first (JVM classes,
Python workers), then the timed run: wall time and CPU seconds of this process tree (the JVM and Flink's Python
workers) from ``execute`` until the job has finished and its rows are read back. The rows go through Flink's print
sink to a file and are parsed back into this process (see :class:`JvmStdout` for why not ``execute_and_collect``),
as the Spark engines collect theirs to the driver. The result JSON has ``rows``, ``wall_s``, ``cpu_s``, ``flink``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from typing import Any, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_cpu import tree_cpu
from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.functions import AggregateFunction, ProcessWindowFunction
from pyflink.datastream.window import (
    CountTrigger,
    EventTimeSessionWindows,
    EventTimeTrigger,
    Trigger,
    TriggerResult,
    TumblingEventTimeWindows,
)

LONG4 = Types.TUPLE([Types.LONG()] * 4)
LONG5 = Types.TUPLE([Types.LONG()] * 5)


class EventTs(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return value[1]


class CountSum(AggregateFunction):
    def create_accumulator(self) -> Any:
        return (0, 0)

    def add(self, value: Any, accumulator: Any) -> Any:
        return (accumulator[0] + 1, accumulator[1] + value[2])

    def get_result(self, accumulator: Any) -> Any:
        return accumulator

    def merge(self, a: Any, b: Any) -> Any:
        return (a[0] + b[0], a[1] + b[1])


class WithWindow(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        count, total = next(iter(elements))
        yield (key, context.window().start, count, total)


class LastCount(ProcessWindowFunction):
    """(key, max seq, count, sum) of a count window's contents."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        count = total = 0
        last = -1
        for e in elements:
            count += 1
            total += e[2]
            last = max(last, e[3])
        yield (key, last, count, total)


class SessionTotals(ProcessWindowFunction):
    """(key, start, end, count, sum) at every firing of a session window."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        count = total = 0
        for e in elements:
            count += 1
            total += e[2]
        window = context.window()
        yield (key, window.start, window.end, count, total)


class EarlyCountEventTimeTrigger(Trigger):
    """``EventTimeTrigger`` plus ``CountTrigger.of(n)``'s early firings (neither purges); merges for sessions."""

    def __init__(self, count: int) -> None:
        self.counter = CountTrigger.of(count)
        self.time = EventTimeTrigger()

    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> Any:
        by_count = self.counter.on_element(element, timestamp, window, ctx)
        by_time = self.time.on_element(element, timestamp, window, ctx)
        fire = by_count in (TriggerResult.FIRE, TriggerResult.FIRE_AND_PURGE) or by_time == TriggerResult.FIRE
        return TriggerResult.FIRE if fire else TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> Any:
        return self.time.on_event_time(time, window, ctx)

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> Any:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Any) -> None:
        self.counter.on_merge(window, ctx)
        self.time.on_merge(window, ctx)

    def clear(self, window: Any, ctx: Any) -> None:
        self.counter.clear(window, ctx)
        self.time.clear(window, ctx)


def _configuration(pairs: List[str]) -> Any:
    from pyflink.common import Configuration

    conf = Configuration()
    for pair in pairs:
        k, _, v = pair.partition("=")
        conf.set_string(k, v)
    return conf


def _env(args: argparse.Namespace) -> Any:
    env = StreamExecutionEnvironment.get_execution_environment(_configuration(args.conf))
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(args.parallelism)
    return env


def _csv_table(t_env: Any, csv: str, watermark: str = "") -> None:
    t_env.execute_sql(
        f"""
        CREATE TEMPORARY TABLE events (
            `key` BIGINT, `ts` BIGINT, `value` BIGINT, `seq` BIGINT{watermark}
        ) WITH ('connector' = 'filesystem', 'path' = 'file://{csv}', 'format' = 'csv')
        """
    )


def _source(env: Any, csv: str, disorder_ms: int) -> Any:
    """The CSV through the filesystem connector (parsed in the JVM; PyFlink's ``CsvReaderFormat`` yields ``RowData``,
    which its DataStream API cannot type), as a DataStream of ``Row``, then the bounded out-of-orderness strategy."""
    from pyflink.table import StreamTableEnvironment

    t_env = StreamTableEnvironment.create(env)
    _csv_table(t_env, csv)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(disorder_ms)).with_timestamp_assigner(
        EventTs()
    )
    return t_env.to_data_stream(t_env.from_path("events")).assign_timestamps_and_watermarks(strategy)


class JvmStdout:
    """Results through Flink's print sink, read back from the JVM's standard output.

    Collecting through ``execute_and_collect`` / ``TableResult.collect`` fetches every row over py4j, one call per
    row, in this process, which in a local mini-cluster also runs the Python UDF worker (loopback mode): 600k
    result rows cost more than the job itself (the first full-size run had not finished after 11 min). The print
    sink writes rows in the JVM instead. The JVM that PyFlink starts inherits this process's file descriptor 1, so
    :meth:`redirect` points it at a file before the gateway starts; each run reads the lines it added.
    """

    ROW = re.compile(r"^(?:\d+> )?(?:\+I\[|\()([-\d, ]+)[\])]\s*$")

    def __init__(self, path: str) -> None:
        self.path = path
        self.console = os.fdopen(os.dup(1), "w")  # this script's own messages
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.close(fd)
        sys.stdout = self.console

    def mark(self) -> int:
        return os.path.getsize(self.path)

    def rows_since(self, offset: int) -> List[Any]:
        rows, other = [], 0
        with open(self.path) as f:
            f.seek(offset)
            for line in f:
                m = self.ROW.match(line)
                if m:
                    rows.append(tuple(int(x) for x in m.group(1).split(",")))
                elif line.strip():
                    other += 1
        if other:
            print(f"note: {other} other lines on the JVM's stdout", file=sys.stderr)
        return rows


STDOUT: JvmStdout


def _collect(env: Any, stream: Any) -> List[Any]:
    offset = STDOUT.mark()
    stream.print()
    env.execute("bench")
    return STDOUT.rows_since(offset)


def run_datastream(args: argparse.Namespace, csv: str) -> List[Any]:
    env = _env(args)
    events = _source(env, csv, args.disorder_ms)
    keyed = events.key_by(lambda r: r[0], key_type=Types.LONG())
    if args.mode == "tumbling_datastream":
        out = keyed.window(TumblingEventTimeWindows.of(Time.minutes(1))).aggregate(
            CountSum(), WithWindow(), accumulator_type=Types.TUPLE([Types.LONG(), Types.LONG()]), output_type=LONG4
        )
    elif args.mode == "count_window":
        out = keyed.count_window(args.size, args.slide).process(LastCount(), output_type=LONG4)
    else:
        out = (
            keyed.window(EventTimeSessionWindows.with_gap(Time.milliseconds(args.gap_ms)))
            .trigger(EarlyCountEventTimeTrigger(args.count))
            .allowed_lateness(args.lateness_ms)
            .process(SessionTotals(), output_type=LONG5)
        )
    return _collect(env, out)


def run_sql(args: argparse.Namespace, csv: str) -> List[Any]:
    from pyflink.table import EnvironmentSettings, TableEnvironment

    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = t_env.get_config()
    conf.set("parallelism.default", str(args.parallelism))
    conf.add_configuration(_configuration(args.conf))
    conf.set("table.local-time-zone", "UTC")
    delay = f"{(args.disorder_ms + 1) / 1000:.3f}"
    _csv_table(
        t_env, csv, f",\n            `et` AS TO_TIMESTAMP_LTZ(`ts`, 3), WATERMARK FOR `et` AS `et` - INTERVAL '{delay}' SECOND"
    )
    table = t_env.sql_query(
        """
        SELECT `key`, MIN(`ts`) - MOD(MIN(`ts`), 60000) AS `start`, COUNT(*) AS `cnt`, SUM(`value`) AS `total`
        FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(`et`), INTERVAL '1' MINUTES))
        GROUP BY `key`, `window_start`, `window_end`
        """
    )
    t_env.execute_sql(
        "CREATE TEMPORARY TABLE results (`key` BIGINT, `start` BIGINT, `cnt` BIGINT, `total` BIGINT) "
        "WITH ('connector' = 'print')"
    )
    offset = STDOUT.mark()
    table.execute_insert("results").wait()
    return STDOUT.rows_since(offset)


def _warmup_file(csv: str, rows: int) -> str:
    path = csv + ".warmup.csv"
    with open(csv) as src, open(path, "w") as dst:
        for i, line in enumerate(src):
            if i >= rows:
                break
            dst.write(line)
    return path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", required=True, choices=["tumbling_datastream", "tumbling_sql", "count_window", "session"])
    p.add_argument("--csv", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--disorder-ms", type=int, default=5000)
    p.add_argument("--parallelism", type=int, default=2)
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--slide", type=int, default=10)
    p.add_argument("--gap-ms", type=int, default=30_000)
    p.add_argument("--count", type=int, default=10)
    p.add_argument("--lateness-ms", type=int, default=60_000)
    p.add_argument("--warmup-rows", type=int, default=2000)
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Flink option (repeatable)")
    args = p.parse_args()
    global STDOUT
    STDOUT = JvmStdout(args.out + ".stdout")
    csv = os.path.abspath(args.csv)
    run = run_sql if args.mode == "tumbling_sql" else run_datastream
    t = time.perf_counter()
    run(args, _warmup_file(csv, args.warmup_rows))
    warmup = time.perf_counter() - t
    cpu0 = tree_cpu()
    t = time.perf_counter()
    rows = run(args, csv)
    wall = time.perf_counter() - t
    cpu = tree_cpu() - cpu0
    import pyflink.version

    with open(args.out, "w") as f:
        json.dump({"mode": args.mode, "rows": rows, "wall_s": wall, "cpu_s": cpu, "warmup_s": warmup,
                   "flink": pyflink.version.__version__}, f)
    print(f"{args.mode}: {len(rows)} rows, wall {wall:.1f} s, cpu {cpu:.1f} s (warm-up {warmup:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
