"""PyFlink's ``pyflink.datastream.connectors.file_system``: ``FileSource`` (text, CSV and Parquet files, bounded or a
monitored directory) and ``FileSink`` (row-encoded or bulk-format part files: Parquet, ORC, Avro, CSV; committed exactly once
per checkpoint).

Flink's file examples run unchanged::

    ds = env.from_source(
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), "/in").process_static_file_set().build(),
        WatermarkStrategy.for_monotonous_timestamps(), "file_source")
    ds.sink_to(FileSink.for_row_format("/out", Encoder.simple_string_encoder())
               .with_output_file_config(OutputFileConfig.builder().with_part_prefix("prefix").build())
               .with_rolling_policy(RollingPolicy.default_rolling_policy()).build())

A part file becomes visible under its final name only when its checkpoint commits: here when its micro-batch
commits (see ``docs/files.md``). This module describes sources and sinks and imports no executor: the local engine
writes with :mod:`pyspark_flinkish.core.file_parts`, the Spark executors with ``pyspark_flinkish.spark.file_sink``.
"""

from __future__ import annotations

import copy
import os
import re
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

from ...common.serialization import BulkWriterFactory, Encoder, checked_charset
from ...core.durations import to_millis
from ...core.errors import InvalidArgumentError, InvalidPipelineError, InvalidTypeError, UnsupportedFeatureError
from ...core.file_parts import PartFileSettings, check_date_time_pattern, is_hidden
from ...core.file_readers import ReaderFormat
from ...core.typeinfo import TypeInformation
from ..plan import FileSinkSpec, Transformation
from ..sources import MicroBatch, MicroBatchSource

if TYPE_CHECKING:
    from ..data_stream import DataStream, DataStreamSink

_MiB = 1024 * 1024


# ------------------------------------------------------------------------------------------------ source
class StreamFormat:
    """How a ``FileSource`` reads records from a file as a stream (PyFlink's ``StreamFormat``):
    :meth:`text_line_format` here, ``CsvReaderFormat.for_schema`` in :mod:`pyspark_flinkish.datastream.formats.csv`.
    The reading rule is :class:`~pyspark_flinkish.core.file_readers.ReaderFormat`, shared by both engines."""

    def __init__(self, charset_name: str = "UTF-8") -> None:
        self.charset_name = checked_charset(charset_name, "StreamFormat.text_line_format")
        self.reader = ReaderFormat("text", charset=self.charset_name)

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> StreamFormat:
        """Each line of the file is a ``str`` element, without its terminator (``\\n``, ``\\r\\n`` or ``\\r``, as
        Java's ``BufferedReader.readLine``)."""
        return StreamFormat(charset_name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StreamFormat) and other.reader == self.reader

    def __hash__(self) -> int:
        return hash(("StreamFormat", self.reader))

    def __repr__(self) -> str:
        return f"StreamFormat.text_line_format({self.charset_name!r})"


class BulkFormat:
    """How a ``FileSource`` reads a file in batches of records (PyFlink's ``BulkFormat``): made by
    ``ParquetColumnarRowInputFormat`` (:mod:`pyspark_flinkish.datastream.formats.parquet`), PyFlink's only one."""

    def __init__(self, reader: ReaderFormat) -> None:
        if not isinstance(reader, ReaderFormat):
            msg = (
                "BulkFormat is made by a format of pyspark_flinkish.datastream.formats (ParquetColumnarRowInputFormat); "
                f"got {type(reader).__name__}"
            )
            raise InvalidTypeError(msg)
        self.reader = reader

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BulkFormat) and other.reader == self.reader

    def __hash__(self) -> int:
        return hash(("BulkFormat", self.reader))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.reader!r})"


class FileSource(MicroBatchSource):
    """Files as a source (PyFlink's ``FileSource``) of text lines (``StreamFormat.text_line_format``), CSV records
    (``CsvReaderFormat``) or Parquet rows (``ParquetColumnarRowInputFormat``); built by :class:`FileSourceBuilder`.

    Bounded (``process_static_file_set``, the default): every file under the paths (a file, or a directory read
    recursively; names starting with ``.`` or ``_`` skipped, as Flink's default enumerator does), then end of input.
    On the JVM-free engine the local files are read one after the other in path order, as one micro-batch; on Spark
    the executors read them (any Hadoop path), see ``docs/files.md``.

    Continuous (``monitor_continuously(interval)``): a directory watched for new files, which are read once each
    (Spark's file source, its checkpoint remembers the files read): Spark only.

    Differences from Flink: Flink splits the files among the source's parallel readers; the order of records within
    a file is kept, as in Flink, and the order of files is not defined (nor is it in Flink). The continuous mode
    discovers files at every micro-batch trigger (the job's ``trigger``, else ``enable_checkpointing``'s interval),
    not every ``interval``. The CSV and Parquet formats' records are ``Row``s of the declared columns, printed as Flink
    prints its ``RowData`` (``+I(a,1)``); as in PyFlink 2.3.0, ``execute_and_collect`` refuses them (map them first).
    """

    def __init__(self, stream_format: Any, paths: Sequence[str], monitor_interval_ms: Optional[int]) -> None:
        self.stream_format = stream_format
        self.reader: ReaderFormat = stream_format.reader
        self.paths: Tuple[str, ...] = tuple(paths)
        self.monitor_interval_ms = monitor_interval_ms
        self.end_of_input = True
        self.partitions: List[Any] = [0]
        self.explicit_watermarks = False
        self.executors_read = False
        """True on the copy whose files an executor reads (:meth:`read_elsewhere`)."""
        self._batches: Optional[List[MicroBatch]] = None

    @staticmethod
    def for_record_stream_format(stream_format: StreamFormat, *paths: str) -> FileSourceBuilder:
        """A builder of a source reading ``paths`` (files or directories) with ``stream_format``."""
        if not isinstance(stream_format, StreamFormat):
            msg = f"FileSource.for_record_stream_format needs a StreamFormat; got {type(stream_format).__name__}"
            raise InvalidTypeError(msg)
        return FileSourceBuilder(stream_format, _checked_paths("for_record_stream_format", paths))

    @staticmethod
    def for_bulk_file_format(bulk_format: BulkFormat, *paths: str) -> FileSourceBuilder:
        """A builder of a source reading ``paths`` (files or directories) with ``bulk_format``
        (``ParquetColumnarRowInputFormat``)."""
        if not isinstance(bulk_format, BulkFormat):
            msg = (
                "FileSource.for_bulk_file_format needs a BulkFormat (ParquetColumnarRowInputFormat); "
                f"got {type(bulk_format).__name__}"
            )
            raise InvalidTypeError(msg)
        return FileSourceBuilder(bulk_format, _checked_paths("for_bulk_file_format", paths))

    @property
    def output_type(self) -> Optional[TypeInformation]:
        """The elements' type: ``Types.ROW_NAMED`` of the columns (CSV, Parquet); None for lines (``str``)."""
        return None if self.reader.kind == "text" else self.reader.type_info()

    @property
    def monitored(self) -> bool:
        """True for a continuous source (``monitor_continuously``)."""
        return self.monitor_interval_ms is not None

    @property
    def batches(self) -> List[MicroBatch]:  # type: ignore[override]
        """The bounded source's one micro-batch of elements, read at the first call (JVM-free engine)."""
        if self.monitored:
            msg = (
                f"FileSource({', '.join(self.paths)}).monitor_continuously(...) is unbounded: it needs the Spark "
                "environment (StreamExecutionEnvironment.get_execution_environment(spark)); on the JVM-free engine "
                "read a fixed set of files (process_static_file_set())"
            )
            raise UnsupportedFeatureError(msg)
        if self._batches is None:
            self._batches = [MicroBatch(self.read_elements())]
        return self._batches

    def read_elsewhere(self) -> FileSource:
        """A copy of this bounded source whose files an executor reads itself (Spark's executors,
        ``spark/file_source.py``): here one micro-batch without elements, then end of input; ``executors_read``."""
        shape = copy.copy(self)
        shape.executors_read = True
        shape._batches = [MicroBatch(())]
        return shape

    def files(self) -> List[str]:
        """The local files the bounded source reads, in order (directories recursively, hidden names skipped)."""
        out: List[str] = []
        for p in self.paths:
            path = _local_path(p)
            if os.path.isdir(path):
                for root, dirs, names in os.walk(path):
                    dirs[:] = sorted(d for d in dirs if not is_hidden(d))
                    out.extend(os.path.join(root, n) for n in sorted(names) if not is_hidden(n))
            elif os.path.isfile(path):
                out.append(path)
            else:
                msg = f"FileSource: {p!r} does not exist (a file or directory is needed)"
                raise InvalidArgumentError(msg)
        return out

    def read_elements(self) -> List[Any]:
        """Every element of :meth:`files`, in order (the format's rule: :mod:`pyspark_flinkish.core.file_readers`)."""
        elements: List[Any] = []
        for f in self.files():
            elements.extend(self.reader.read_file(f))
        return elements

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FileSource) and (other.stream_format, other.paths, other.monitor_interval_ms) == (
            self.stream_format,
            self.paths,
            self.monitor_interval_ms,
        )

    def __hash__(self) -> int:
        return hash((self.stream_format, self.paths, self.monitor_interval_ms))

    def __repr__(self) -> str:
        mode = f"monitor_continuously({self.monitor_interval_ms} ms)" if self.monitored else "process_static_file_set()"
        return f"FileSource({self.stream_format!r}, {list(self.paths)!r}, {mode})"


def _checked_paths(where: str, paths: Sequence[Any]) -> Tuple[str, ...]:
    if not paths:
        msg = f"FileSource.{where} needs at least one path"
        raise InvalidArgumentError(msg)
    for p in paths:
        if not isinstance(p, str) or not p:
            msg = f"FileSource paths must be non-empty strings; got {p!r}"
            raise InvalidTypeError(msg)
    return tuple(paths)


def _local_path(path: str) -> str:
    if path.startswith("file:"):
        rest = path[len("file:") :]
        return "/" + rest[2:].partition("/")[2] if rest.startswith("//") else rest
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:/", path):
        msg = (
            f"FileSource: the JVM-free engine reads local files; got {path!r}. Read other file systems on Spark "
            "(StreamExecutionEnvironment.get_execution_environment(spark)), whose executors read any Hadoop path"
        )
        raise UnsupportedFeatureError(msg)
    return path


class FileSourceBuilder:
    """Configures a :class:`FileSource` (PyFlink's ``FileSourceBuilder``); each call returns the builder."""

    def __init__(self, stream_format: Any, paths: Sequence[str]) -> None:
        self._format = stream_format
        self._paths = tuple(paths)
        self._interval: Optional[int] = None

    def monitor_continuously(self, discovery_interval: Any) -> FileSourceBuilder:
        """Streaming mode: watch the directory for new files every ``discovery_interval`` (a ``Duration``, a
        ``timedelta`` or milliseconds); Spark only."""
        interval = to_millis("monitor_continuously(discovery_interval)", discovery_interval)
        if interval <= 0:
            msg = f"monitor_continuously needs a positive discovery interval; got {discovery_interval!r}"
            raise InvalidArgumentError(msg)
        self._interval = interval
        return self

    def process_static_file_set(self) -> FileSourceBuilder:
        """Bounded mode (the default): read the files there are, then end."""
        self._interval = None
        return self

    def set_file_enumerator(self, file_enumerator: Any) -> FileSourceBuilder:
        """Refused: the files are enumerated as Flink's default enumerator does (directories recursively)."""
        msg = "FileSourceBuilder.set_file_enumerator is not supported: files are enumerated as Flink's default does"
        raise UnsupportedFeatureError(msg)

    def set_split_assigner(self, split_assigner: Any) -> FileSourceBuilder:
        """Refused: each file is read whole by one reader (there are no splits to assign)."""
        msg = "FileSourceBuilder.set_split_assigner is not supported: each file is read whole by one reader (no splits)"
        raise UnsupportedFeatureError(msg)

    def build(self) -> FileSource:
        return FileSource(self._format, self._paths, self._interval)


# ------------------------------------------------------------------------------------------------ sink
class OutputFileConfig:
    """Part file names' prefix and suffix (PyFlink's ``OutputFileConfig``; Flink's defaults ``part`` and ``""``)."""

    def __init__(self, part_prefix: str = "part", part_suffix: str = "") -> None:
        for what, value in (("prefix", part_prefix), ("suffix", part_suffix)):
            if not isinstance(value, str) or "/" in value:
                msg = f"OutputFileConfig part {what} must be a string without '/'; got {value!r}"
                raise InvalidArgumentError(msg)
        self.part_prefix = part_prefix
        self.part_suffix = part_suffix

    @staticmethod
    def builder() -> OutputFileConfig.OutputFileConfigBuilder:
        return OutputFileConfig.OutputFileConfigBuilder()

    def get_part_prefix(self) -> str:
        return self.part_prefix

    def get_part_suffix(self) -> str:
        return self.part_suffix

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutputFileConfig) and (other.part_prefix, other.part_suffix) == (
            self.part_prefix,
            self.part_suffix,
        )

    def __hash__(self) -> int:
        return hash((self.part_prefix, self.part_suffix))

    def __repr__(self) -> str:
        return f"OutputFileConfig({self.part_prefix!r}, {self.part_suffix!r})"

    class OutputFileConfigBuilder:
        """Builds an :class:`OutputFileConfig`."""

        def __init__(self) -> None:
            self.part_prefix = "part"
            self.part_suffix = ""

        def with_part_prefix(self, prefix: str) -> OutputFileConfig.OutputFileConfigBuilder:
            self.part_prefix = prefix
            return self

        def with_part_suffix(self, suffix: str) -> OutputFileConfig.OutputFileConfigBuilder:
            self.part_suffix = suffix
            return self

        def build(self) -> OutputFileConfig:
            return OutputFileConfig(self.part_prefix, self.part_suffix)


class RollingPolicy:
    """When a bucket's open part file rolls (PyFlink's ``RollingPolicy``).

    Differences from Flink: every micro-batch is a checkpoint, and every part file rolls and is committed with its
    micro-batch (Flink's ``DefaultRollingPolicy`` keeps a file open across checkpoints until its size, rollover or
    inactivity limit). The records and their order within a subtask are the same; there may be more, smaller files.
    A part size is honoured inside a micro-batch; the rollover and inactivity intervals cannot roll a file before its
    micro-batch ends, and are refused when shorter than one second (a file per record is not what they mean here).
    """

    def __init__(self, part_size: Optional[int], rollover_interval_ms: Optional[int], inactivity_interval_ms: Optional[int]):
        self.part_size = part_size
        self.rollover_interval_ms = rollover_interval_ms
        self.inactivity_interval_ms = inactivity_interval_ms

    @staticmethod
    def default_rolling_policy(
        part_size: int = 128 * _MiB, rollover_interval: int = 60 * 1000, inactivity_interval: int = 60 * 1000
    ) -> DefaultRollingPolicy:
        """Roll a part file when it holds more than ``part_size`` bytes, and at every checkpoint (micro-batch)."""
        return DefaultRollingPolicy(part_size, rollover_interval, inactivity_interval)

    @staticmethod
    def on_checkpoint_rolling_policy() -> OnCheckpointRollingPolicy:
        """Roll part files only at checkpoints (micro-batches)."""
        return OnCheckpointRollingPolicy()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.part_size, self.rollover_interval_ms, self.inactivity_interval_ms))


class DefaultRollingPolicy(RollingPolicy):
    """Flink's ``DefaultRollingPolicy``: size, rollover and inactivity limits (see :class:`RollingPolicy`)."""

    def __init__(self, part_size: int, rollover_interval: Any, inactivity_interval: Any) -> None:
        if not isinstance(part_size, int) or part_size <= 0:
            msg = f"default_rolling_policy: part_size must be a positive number of bytes; got {part_size!r}"
            raise InvalidArgumentError(msg)
        rollover = to_millis("default_rolling_policy(rollover_interval)", rollover_interval)
        inactivity = to_millis("default_rolling_policy(inactivity_interval)", inactivity_interval)
        for what, ms in (("rollover_interval", rollover), ("inactivity_interval", inactivity)):
            if ms < 1000:
                msg = (
                    f"default_rolling_policy({what}={ms} ms): a part file rolls at the end of its micro-batch here, "
                    "not in it; give at least 1000 ms, or roll by size (part_size) or on_checkpoint_rolling_policy()"
                )
                raise UnsupportedFeatureError(msg)
        super().__init__(part_size, rollover, inactivity)

    def __repr__(self) -> str:
        return (
            f"RollingPolicy.default_rolling_policy({self.part_size}, {self.rollover_interval_ms}, "
            f"{self.inactivity_interval_ms})"
        )


class OnCheckpointRollingPolicy(RollingPolicy):
    """Flink's ``OnCheckpointRollingPolicy``: a part file per bucket and subtask per checkpoint (micro-batch)."""

    def __init__(self) -> None:
        super().__init__(None, None, None)

    def __repr__(self) -> str:
        return "RollingPolicy.on_checkpoint_rolling_policy()"


class BucketAssigner:
    """Which directory under the base path a record's part file is in (PyFlink's ``BucketAssigner``).

    ``format_str`` None is the base path itself (``base_path_bucket_assigner``); else the processing time formatted
    with Java's ``DateTimeFormatter`` pattern ``format_str`` in ``timezone_id`` (None: the machine's time zone).

    The processing time is the environment's clock (a ``ManualClock`` makes it deterministic), read per record on the
    JVM-free engine as Flink does. Differences from Flink: on Spark the driver reads it once per micro-batch, and
    every record of the micro-batch gets that bucket.
    """

    def __init__(self, format_str: Optional[str], timezone_id: Optional[str]) -> None:
        if format_str is not None:
            if not isinstance(format_str, str) or not format_str:
                msg = f"date_time_bucket_assigner needs a non-empty format string; got {format_str!r}"
                raise InvalidArgumentError(msg)
            check_date_time_pattern(format_str, timezone_id)
        self.format_str = format_str
        self.timezone_id = timezone_id

    @staticmethod
    def base_path_bucket_assigner() -> BucketAssigner:
        """Every part file directly under the base path."""
        return BucketAssigner(None, None)

    @staticmethod
    def date_time_bucket_assigner(format_str: str = "yyyy-MM-dd--HH", timezone_id: Optional[str] = None) -> BucketAssigner:
        """A directory per processing-time period: ``<base>/<now formatted with format_str>`` (Flink's default
        assigner, hourly)."""
        return BucketAssigner(format_str, timezone_id)

    def bucket_id(self, now_ms: int) -> str:
        """The bucket of a record written at processing time ``now_ms`` ("" is the base path)."""
        from ...core.file_parts import java_date_time

        return "" if self.format_str is None else java_date_time(self.format_str, now_ms, self.timezone_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BucketAssigner) and (other.format_str, other.timezone_id) == (
            self.format_str,
            self.timezone_id,
        )

    def __hash__(self) -> int:
        return hash((self.format_str, self.timezone_id))

    def __repr__(self) -> str:
        if self.format_str is None:
            return "BucketAssigner.base_path_bucket_assigner()"
        return f"BucketAssigner.date_time_bucket_assigner({self.format_str!r}, {self.timezone_id!r})"


class FileSink:
    """Part files under a base path (PyFlink's ``FileSink``): row-encoded (``for_row_format(...)...build()``) or in a
    bulk format (``for_bulk_format(path, ParquetBulkWriters.for_row_type(...))...build()``: Parquet, ORC, Avro, CSV).

    Exactly once, as Flink's: records go to hidden in-progress files (``.<prefix>-<uuid>-<n><suffix>.inprogress.<id>``)
    that are renamed to ``<prefix>-<uuid>-<n><suffix>`` only when their checkpoint commits; here a checkpoint is a
    micro-batch. On Spark the executors write the files and the driver commits them, recording the commit in the
    job's checkpoint: a batch replayed after a crash is not written twice, and a commit cut short is finished.

    Differences from Flink: see :class:`RollingPolicy` (files roll with every micro-batch) and
    :class:`BucketAssigner` (one processing time per micro-batch); on Spark the ``<uuid>`` is derived from the
    query, the micro-batch and the writing task, so that each micro-batch's files have new names. Bulk formats roll
    on checkpoints only, as in Flink: a part file per bucket and writing task per micro-batch (see
    :mod:`pyspark_flinkish.core.bulk_writers` for what each writes). Compaction is refused.
    """

    def __init__(
        self,
        base_path: str,
        encoder: Optional[Encoder],
        output_file_config: OutputFileConfig,
        rolling_policy: RollingPolicy,
        bucket_assigner: BucketAssigner,
        writer_factory: Optional[BulkWriterFactory] = None,
    ) -> None:
        if not isinstance(base_path, str) or not base_path:
            msg = f"FileSink needs a base path; got {base_path!r}"
            raise InvalidArgumentError(msg)
        if writer_factory is None and not isinstance(encoder, Encoder):
            msg = f"FileSink.for_row_format needs an Encoder (Encoder.simple_string_encoder()); got {type(encoder).__name__}"
            raise InvalidTypeError(msg)
        if writer_factory is not None and not isinstance(writer_factory, BulkWriterFactory):
            msg = f"FileSink.for_bulk_format needs a BulkWriterFactory; got {type(writer_factory).__name__}"
            raise InvalidTypeError(msg)
        self.base_path = base_path
        self.encoder = encoder
        self.writer_factory = writer_factory
        self.output_file_config = output_file_config
        self.rolling_policy = rolling_policy
        self.bucket_assigner = bucket_assigner

    @staticmethod
    def for_row_format(base_path: str, encoder: Encoder) -> FileSink.RowFormatBuilder:
        """A builder of a sink writing each record with ``encoder`` under ``base_path``."""
        return FileSink.RowFormatBuilder(base_path, encoder)

    @staticmethod
    def for_bulk_format(base_path: str, writer_factory: BulkWriterFactory) -> FileSink.BulkFormatBuilder:
        """A builder of a sink writing part files with ``writer_factory`` (``ParquetBulkWriters.for_row_type``,
        ``OrcBulkWriters.for_row_type``, ``AvroBulkWriters.for_generic_record``, ``CsvBulkWriters.for_schema`` of
        ``pyspark_flinkish.datastream.formats``) under ``base_path``."""
        return FileSink.BulkFormatBuilder(base_path, writer_factory)

    def part_file_settings(self, type_info: Optional[TypeInformation]) -> PartFileSettings:
        """What the engines' part-file writers need of this sink, for a stream of type ``type_info``."""
        bulk = self.writer_factory.encoding if self.writer_factory is not None else None
        return PartFileSettings(
            self.output_file_config.part_prefix,
            self.output_file_config.part_suffix,
            self.encoder.charset_name if self.encoder is not None else "UTF-8",
            self.rolling_policy.part_size,
            type_info,
            bulk,
        )

    def _attach(self, stream: DataStream) -> DataStreamSink:
        """``DataStream.sink_to`` calls this: adds the sink to the stream's environment."""
        from ..data_stream import DataStreamSink

        env = stream.get_execution_environment()
        output_type = stream.get_type()
        if self.writer_factory is not None:
            self.writer_factory.encoding.check_stream_type(output_type, f"FileSink.for_bulk_format({self.base_path!r})")
        elif output_type is None or output_type.name == "PICKLED_BYTE_ARRAY":
            msg = (
                f"FileSink({self.base_path!r}) needs the stream's declared type: Flink writes Java's toString() of each "
                "record, and of an undeclared (pickled) one that is its bytes' identity ('[B@5b7a603b'); give "
                "output_type=Types.STRING() (or another type) to the map/process/window function producing it"
            )
            raise InvalidPipelineError(msg)
        t = Transformation("sink", "FileSink", [stream._t], sink=None, spec=FileSinkSpec(sink=self))
        env._add_sink(t)
        return DataStreamSink(t)

    def __repr__(self) -> str:
        head = (
            f"FileSink.for_row_format({self.base_path!r}, {self.encoder!r})"
            if self.writer_factory is None
            else f"FileSink.for_bulk_format({self.base_path!r}, {self.writer_factory!r})"
        )
        return (
            f"{head}.with_output_file_config({self.output_file_config!r}).with_rolling_policy("
            f"{self.rolling_policy!r}).with_bucket_assigner({self.bucket_assigner!r})"
        )

    class BaseBuilder:
        """What both builders configure: buckets, part file names, compaction (refused)."""

        def __init__(self, base_path: str) -> None:
            self._base_path = base_path
            self._config = OutputFileConfig()
            self._assigner = BucketAssigner.date_time_bucket_assigner()

        def with_bucket_assigner(self, bucket_assigner: BucketAssigner) -> Any:
            if not isinstance(bucket_assigner, BucketAssigner):
                msg = f"with_bucket_assigner needs a BucketAssigner; got {type(bucket_assigner).__name__}"
                raise InvalidTypeError(msg)
            self._assigner = bucket_assigner
            return self

        def with_output_file_config(self, output_file_config: OutputFileConfig) -> Any:
            if not isinstance(output_file_config, OutputFileConfig):
                msg = f"with_output_file_config needs an OutputFileConfig; got {type(output_file_config).__name__}"
                raise InvalidTypeError(msg)
            self._config = output_file_config
            return self

        def with_bucket_check_interval(self, interval: int) -> Any:
            """Accepted: how often Flink checks time-based rolling; here files roll with every micro-batch."""
            to_millis("with_bucket_check_interval(interval)", interval)
            return self

        def enable_compact(self, strategy: Any, compactor: Any) -> Any:
            """Refused: Flink's small-file compaction is not offered."""
            msg = "FileSink compaction (enable_compact) is not offered: every micro-batch commits its own part files"
            raise UnsupportedFeatureError(msg)

        def disable_compact(self) -> Any:
            return self

    class RowFormatBuilder(BaseBuilder):
        """Configures a row-format :class:`FileSink` (PyFlink's ``FileSink.RowFormatBuilder``)."""

        def __init__(self, base_path: str, encoder: Encoder) -> None:
            super().__init__(base_path)
            self._encoder = encoder
            self._policy: RollingPolicy = RollingPolicy.default_rolling_policy()

        def with_rolling_policy(self, rolling_policy: RollingPolicy) -> FileSink.RowFormatBuilder:
            if not isinstance(rolling_policy, RollingPolicy):
                msg = f"with_rolling_policy needs a RollingPolicy; got {type(rolling_policy).__name__}"
                raise InvalidTypeError(msg)
            self._policy = rolling_policy
            return self

        def build(self) -> FileSink:
            return FileSink(self._base_path, self._encoder, self._config, self._policy, self._assigner)

    class BulkFormatBuilder(BaseBuilder):
        """Configures a bulk-format :class:`FileSink` (PyFlink's ``FileSink.BulkFormatBuilder``): part files roll on
        checkpoints only (``OnCheckpointRollingPolicy``, the only policy Flink accepts for bulk formats)."""

        def __init__(self, base_path: str, writer_factory: BulkWriterFactory) -> None:
            super().__init__(base_path)
            if not isinstance(writer_factory, BulkWriterFactory):
                msg = (
                    "FileSink.for_bulk_format needs a BulkWriterFactory (ParquetBulkWriters.for_row_type, "
                    "OrcBulkWriters.for_row_type, AvroBulkWriters.for_generic_record, CsvBulkWriters.for_schema); got "
                    f"{type(writer_factory).__name__}"
                )
                raise InvalidTypeError(msg)
            FileSink(base_path, None, self._config, OnCheckpointRollingPolicy(), self._assigner, writer_factory)
            self._factory = writer_factory

        def with_rolling_policy(self, rolling_policy: OnCheckpointRollingPolicy) -> FileSink.BulkFormatBuilder:
            """Only ``RollingPolicy.on_checkpoint_rolling_policy()``; another policy raises, as in PyFlink."""
            if not isinstance(rolling_policy, OnCheckpointRollingPolicy):
                msg = "rolling_policy must be OnCheckpointRollingPolicy for bulk format"
                raise InvalidArgumentError(msg)
            return self

        def build(self) -> FileSink:
            return FileSink(
                self._base_path, None, self._config, OnCheckpointRollingPolicy(), self._assigner, self._factory
            )


__all__ = [
    "BucketAssigner",
    "BulkFormat",
    "DefaultRollingPolicy",
    "FileSink",
    "FileSource",
    "FileSourceBuilder",
    "OnCheckpointRollingPolicy",
    "OutputFileConfig",
    "RollingPolicy",
    "StreamFormat",
]
