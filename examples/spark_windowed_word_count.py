"""Windowed word count as a ``spark-submit`` job: Flink's event-time windows on a Spark cluster.

Each input line is ``"<epoch milliseconds> <words...>"``. The job reads the text files of ``--input`` as a
streaming source (``maxFilesPerTrigger`` files per micro-batch), takes every line's event time from its
first field (bounded out-of-orderness watermarks), counts words per tumbling event-time window (5 s by default)
and writes every micro-batch's fired windows to the Delta table ``<out>`` (``DeltaSink``: one commit per
micro-batch, skipped when Spark replays a batch after a failure), or with ``--out-format parquet`` to
``<out>/batch_id=<N>`` as Parquet (rewritten, not appended, on a replay). ``--generate N`` first writes N
sample files into an empty ``--input`` folder (bounded input for a try-out). The trigger is ``availableNow``: the
job ends once the files present at its start are processed; a later run with the same ``--checkpoint`` picks up
new files and the open windows.

A window fires when the watermark passes its end: the text source has no end of input, so the newest
windows stay open until a line with a later timestamp arrives (a line holding only a timestamp moves the
watermark without counting anything).

Run it with the package shipped to the executors, e.g.::

    python -m pip wheel --no-deps -w dist .
    cp dist/pyspark_flinkish-0.1.0-py3-none-any.whl dist/pyspark_flinkish-0.1.0-py3-none-any.zip
    spark-submit --master spark://HOST:7077 --py-files dist/pyspark_flinkish-0.1.0-py3-none-any.zip \\
        --jars $(ls .jars/spark/*.jar | paste -sd,) \\
        examples/spark_windowed_word_count.py --input IN --out OUT --checkpoint CK

(``--py-files`` puts ``.py``, ``.zip`` and ``.egg`` files on the executors' ``sys.path``, not ``.whl`` files:
a pure-Python wheel is a zip archive, so the same file renamed ``.zip`` works. Alternatively install the
package, with pandas and pyarrow, in the Python environment of every worker.)

``--checkpoint`` (Spark's offsets plus this package's keyed state and watermarks) and ``--out`` must be
reachable under the same path from the driver and every executor (one machine, or a shared file system).
The master comes from ``spark-submit --master`` (nothing here sets one).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Iterator, List, Optional, Sequence, Tuple

from pyspark_flinkish.common import Duration, Types, WatermarkStrategy
from pyspark_flinkish.datastream import DataStream, StreamExecutionEnvironment
from pyspark_flinkish.datastream.functions import ProcessWindowFunction
from pyspark_flinkish.datastream.window import TumblingEventTimeWindows

COUNT_TYPE = Types.ROW_NAMED(
    ["word", "window_start", "window_end", "count"], [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG()]
)
WORKER_TYPE = Types.ROW_NAMED(["host", "pid", "python", "module"], [Types.STRING(), Types.LONG(), Types.STRING(), Types.STRING()])


# ----------------------------------------------------------------------------- the pipeline (any engine)
def _text(line: Any) -> str:
    """A line as text: a ``Row(value=...)`` of ``spark.readStream.text`` or a plain string."""
    return str(line.value if hasattr(line, "value") else line)


def line_timestamp(line: Any, _record_timestamp: Any) -> int:
    """Event time of a line: its first field, epoch milliseconds."""
    return int(_text(line).split(None, 1)[0])


def words(line: Any) -> Iterator[Tuple[str, int]]:
    """``(word, 1)`` for each word after the timestamp, lower-cased, without surrounding punctuation."""
    for raw in _text(line).split()[1:]:
        word = raw.strip(".,;:!?\"'()[]").lower()
        if word:
            yield word, 1


class WithWindow(ProcessWindowFunction):  # type: ignore[type-arg]
    """Adds the window's bounds to the one reduced ``(word, count)`` of each firing."""

    def process(self, key: Any, context: Any, elements: Any) -> Iterator[Tuple[str, int, int, int]]:
        window = context.window()
        for word, count in elements:
            yield word, window.start, window.end, count


def watermark_strategy(max_out_of_orderness_ms: int) -> WatermarkStrategy:
    return WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(max_out_of_orderness_ms)).with_timestamp_assigner(
        line_timestamp
    )


def windowed_word_counts(lines: DataStream, window_seconds: int) -> DataStream:
    """``(word, window_start, window_end, count)`` per word and tumbling event-time window of ``lines``."""
    return (
        lines.flat_map(words, output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
        .key_by(lambda word_count: word_count[0])
        .window(TumblingEventTimeWindows.of(Duration.of_seconds(window_seconds)))
        .reduce(lambda a, b: (a[0], a[1] + b[1]), window_function=WithWindow(), output_type=COUNT_TYPE)
    )


def where_it_ran(_value: Any) -> Tuple[str, int, str, str]:
    """Where a record was processed: host, process id, interpreter and the ``pyspark_flinkish`` imported there."""
    import socket

    import pyspark_flinkish

    return socket.gethostname(), os.getpid(), sys.executable, os.path.abspath(pyspark_flinkish.__file__)


def generate_input(directory: str, files: int, lines_per_file: int = 50, seed: int = 1) -> None:
    """Write ``files`` files of ``"<epoch_ms> <words>"`` lines into ``directory`` (which must be empty or missing),
    slightly out of order; the last file ends with a line holding only a later timestamp, so every window fires."""
    import random

    os.makedirs(directory, exist_ok=True)
    if os.listdir(directory):
        msg = f"--generate writes into an empty --input folder; {directory} is not empty"
        raise SystemExit(msg)
    rng = random.Random(seed)
    vocabulary = "the quick brown fox jumps over the lazy dog flink spark window watermark".split()
    t = 1_700_000_000_000
    for i in range(files):
        lines = []
        for _ in range(lines_per_file):
            t += rng.randint(50, 400)
            lines.append(f"{t - rng.randint(0, 500)} " + " ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 6))))
        if i == files - 1:
            lines.append(str(t + 60_000))
        path = os.path.join(directory, f"lines-{i:04d}.txt")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.utime(path, (1_000_000 + i, 1_000_000 + i))  # one file per micro-batch, in this order


# ----------------------------------------------------------------------------- Spark job
class ParquetPerBatch:
    """A ``foreach_batch`` function: batch ``N``'s rows replace ``<path>/batch_id=N`` (idempotent on replay)."""

    def __init__(self, path: str, distinct: bool = False) -> None:
        self.path = path
        self.distinct = distinct

    def __call__(self, df: Any, batch_id: int) -> None:
        if self.distinct:
            df = df.distinct()
        df.coalesce(1).write.mode("overwrite").parquet(os.path.join(self.path, f"batch_id={batch_id}"))


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(
            "Windowed word count with pyspark_flinkish on Spark Structured Streaming. Input lines are "
            "'<epoch_ms> <words...>'; results (word, window_start, window_end, count) go to the Delta table --out "
            "(or Parquet under --out/batch_id=N). Submit with spark-submit (--master, --py-files <pyspark_flinkish "
            "wheel renamed .zip>, --jars <Delta jars>); see docs/examples.md."
        )
    )
    parser.add_argument("--input", required=True, help="directory of text files, one '<epoch_ms> <words...>' per line")
    parser.add_argument(
        "--out", required=True, help="output: a Delta table (or Parquet, one batch_id=N directory per micro-batch)"
    )
    parser.add_argument(
        "--out-format", choices=["delta", "parquet"], default="delta", help="output format (default delta, exactly-once)"
    )
    parser.add_argument(
        "--generate", type=int, default=0, metavar="N", help="first write N generated files into an empty --input (default 0)"
    )
    parser.add_argument("--checkpoint", required=True, help="checkpoint directory (offsets, keyed state, watermarks)")
    parser.add_argument("--window-seconds", type=int, default=5, help="tumbling window size in seconds (default 5)")
    parser.add_argument(
        "--max-out-of-orderness-ms", type=int, default=1000, help="watermark delay behind the largest timestamp (default 1000)"
    )
    parser.add_argument("--files-per-trigger", type=int, default=1, help="input files per micro-batch (default 1)")
    parser.add_argument("--shuffle-partitions", type=int, default=4, help="spark.sql.shuffle.partitions (default 4)")
    parser.add_argument(
        "--workers-out",
        default=None,
        help="optional directory: where each result was computed (host, pid, python, pyspark_flinkish module file)",
    )
    parser.add_argument("--app-name", default="flinkish-windowed-word-count", help="Spark application name")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    from pyspark.sql import SparkSession

    import pyspark_flinkish
    from pyspark_flinkish.spark import configure

    # executors resolve relative paths against their own working directories: use absolute ones (a URI, e.g. the
    # checkpoint on hdfs://, as it is: execute() qualifies the checkpoint location as Spark does)
    input_dir, out = (os.path.abspath(p) for p in (args.input, args.out))
    checkpoint = args.checkpoint
    if args.generate:
        generate_input(input_dir, args.generate)
    module_file = os.path.abspath(pyspark_flinkish.__file__)
    print(f"driver: pyspark_flinkish {pyspark_flinkish.__version__} from {module_file}", flush=True)

    # no master here: spark-submit's --master (or spark.master in spark-defaults.conf) applies
    spark = configure(SparkSession.builder.appName(args.app_name), shuffle_partitions=args.shuffle_partitions).getOrCreate()
    try:
        env: Any = StreamExecutionEnvironment.get_execution_environment(spark)  # a SparkStreamExecutionEnvironment
        text = spark.readStream.option("maxFilesPerTrigger", args.files_per_trigger).text(input_dir)
        lines = env.from_dataframe(text, watermark_strategy(args.max_out_of_orderness_ms), source_name="lines")
        counts = windowed_word_counts(lines, args.window_seconds)
        if args.out_format == "delta":
            from pyspark_flinkish.datastream.connectors.delta import DeltaSink

            counts.sink_to(DeltaSink.for_path(out)).uid("word-counts")
        else:
            counts.foreach_batch(ParquetPerBatch(out)).name("parquet")
        if args.workers_out:
            counts.map(where_it_ran, output_type=WORKER_TYPE).foreach_batch(
                ParquetPerBatch(os.path.abspath(args.workers_out), distinct=True)
            )

        batches: List[int] = []

        def progress(p: Any) -> None:
            batches.append(p["batch_id"])
            print(f"batch {p['batch_id']} done; watermarks {p['watermarks']}", flush=True)

        handle = env.execute(args.app_name, checkpoint_location=checkpoint, trigger={"availableNow": True}, progress=progress)
        handle.await_termination()
        print(f"done: {len(batches)} micro-batches, results under {out}", flush=True)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
