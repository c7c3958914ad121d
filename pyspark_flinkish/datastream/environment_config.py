"""The configuration part of PyFlink's ``StreamExecutionEnvironment``: ``get_config``, max parallelism,
checkpointing, Python dependencies, jars, the execution plan, and ``execute_async``.

:class:`EnvironmentConfiguration` is a base class of
:class:`~pyspark_flinkish.datastream.stream_execution_environment.StreamExecutionEnvironment`; what is said here holds
for the JVM-free engine, which runs every job in this Python process. The Spark environment overrides what Spark
does differently (``SparkContext.addPyFile`` / ``addArchive``, the checkpoint interval as the trigger interval, max
parallelism as the number of keyed-state partitions).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Optional

from ..common.configuration import Configuration
from ..common.execution_config import ExecutionConfig
from ..common.job_client import JobClient
from ..core.errors import InvalidArgumentError, InvalidPipelineError, InvalidTypeError, UnsupportedFeatureError
from .checkpointing_mode import CheckpointingMode
from .configuration_keys import read_settings
from .execution_mode import RuntimeExecutionMode
from .plan import StatelessSpec, Transformation, topological
from .runtime_mode import check_mode

MAX_MAX_PARALLELISM = 1 << 15
"""Flink's upper bound for the max parallelism (``KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM``)."""

MIN_CHECKPOINT_INTERVAL_MS = 10
"""Flink refuses shorter checkpoint intervals (``CheckpointConfig.MINIMAL_CHECKPOINT_TIME``)."""


NO_OPERATORS = (
    "No operators defined in streaming topology. Cannot execute. (execute() runs the sinks added since the last "
    "execute(), as in Flink: add_sink(...), print() or execute_and_collect() first)"
)
"""Flink's error for a job without sinks, e.g. a second ``execute()`` with nothing added since the first."""


class EnvironmentConfiguration:
    """PyFlink's environment settings. Attributes are created on first use, so subclasses need no set-up call."""

    # -------------------------------------------------------------------- config, parallelism
    def get_config(self) -> ExecutionConfig:
        """The :class:`~pyspark_flinkish.common.ExecutionConfig` of this environment (one object, shared)."""
        config = self.__dict__.get("_execution_config")
        if config is None:
            config = self.__dict__["_execution_config"] = ExecutionConfig(self)
        return config  # type: ignore[no-any-return]

    def set_max_parallelism(self, max_parallelism: int) -> EnvironmentConfiguration:
        """Flink's max parallelism: the number of key groups keyed state is split into (1 … 32768). The operators
        made from now on assign their keys' subtasks by it (``core/subtasks.py``); the JVM-free engine runs every
        operator as one instance; on Spark it is also the number of keyed-state partitions (see the Spark
        environment)."""
        if not isinstance(max_parallelism, int) or not 0 < max_parallelism <= MAX_MAX_PARALLELISM:
            msg = f"max parallelism must be an int in 1..{MAX_MAX_PARALLELISM} (Flink's bound); got {max_parallelism!r}"
            raise InvalidArgumentError(msg)
        self.__dict__["_max_parallelism"] = max_parallelism
        return self

    def get_max_parallelism(self) -> int:
        """The max parallelism set, else -1 (Flink: not set, derived at job start)."""
        return int(self.__dict__.get("_max_parallelism", -1))

    # -------------------------------------------------------------------- runtime mode
    def set_runtime_mode(self, execution_mode: RuntimeExecutionMode) -> EnvironmentConfiguration:
        """``STREAMING`` (default), ``BATCH`` or ``AUTOMATIC`` (:class:`RuntimeExecutionMode`). BATCH runs as Flink's
        batch execution (:mod:`~pyspark_flinkish.datastream.runtime_mode`): every source must be bounded (else the
        job is refused when it starts, as Flink refuses it), nothing is late, each key's input is processed in
        timestamp order, event time jumps to the end, then each key's processing-time timers fire, and a rolling
        ``KeyedStream.reduce`` emits each key's final value only. On Spark the bounded input is read in one
        micro-batch (``availableNow``)."""
        self.__dict__["_runtime_mode"] = check_mode(execution_mode)
        return self

    def get_runtime_mode(self) -> RuntimeExecutionMode:
        """The mode of :meth:`set_runtime_mode` (``STREAMING`` unless set; Java Flink reads it from the configuration)."""
        return self.__dict__.get("_runtime_mode", RuntimeExecutionMode.STREAMING)  # type: ignore[no-any-return]

    # -------------------------------------------------------------------- checkpointing
    def enable_checkpointing(self, interval: int, mode: Optional[CheckpointingMode] = None) -> EnvironmentConfiguration:
        """Checkpoint every ``interval`` ms. On the JVM-free engine a job runs in this process from start to end and
        is never restored, so checkpoints change nothing there (the setting is recorded). On Spark a checkpoint is
        taken at the end of every micro-batch: the interval becomes the trigger interval
        (``{"processingTime": "<interval> milliseconds"}``) of a job started without ``trigger=``. ``mode``:
        results are always exactly-once, which meets both :class:`CheckpointingMode` values; without one, the mode
        set before (``execution.checkpointing.mode``) stays, else ``EXACTLY_ONCE``, as in Flink."""
        if not isinstance(interval, int) or interval < MIN_CHECKPOINT_INTERVAL_MS:
            msg = f"enable_checkpointing needs an interval >= {MIN_CHECKPOINT_INTERVAL_MS} ms (as Flink); got {interval!r}"
            raise InvalidArgumentError(msg)
        if mode is not None and not isinstance(mode, CheckpointingMode):
            msg = f"enable_checkpointing's mode must be a CheckpointingMode; got {type(mode).__name__} {mode!r}"
            raise InvalidTypeError(msg)
        self.__dict__["_checkpoint_interval"] = interval
        if mode is not None:
            self.__dict__["_checkpointing_mode"] = mode
        return self

    def get_checkpoint_interval(self) -> int:
        """The interval of :meth:`enable_checkpointing`, else -1 (Flink: checkpointing disabled)."""
        return int(self.__dict__.get("_checkpoint_interval", -1))

    def get_checkpointing_mode(self) -> CheckpointingMode:
        """The checkpointing mode: as Flink 2.3's, ``AT_LEAST_ONCE`` while checkpointing is disabled (no interval),
        else the mode set (``EXACTLY_ONCE`` unless set otherwise)."""
        if self.get_checkpoint_interval() == -1:
            return CheckpointingMode.AT_LEAST_ONCE
        return self.__dict__.get("_checkpointing_mode", CheckpointingMode.EXACTLY_ONCE)  # type: ignore[no-any-return]

    # -------------------------------------------------------------------- Flink's Configuration
    def configure(self, configuration: Configuration) -> None:
        """Apply the settings of ``configuration`` (PyFlink's ``configure``, Flink's
        ``StreamExecutionEnvironment.configure``): each key of
        :data:`~pyspark_flinkish.datastream.configuration_keys.APPLIED_KEYS` that it sets does what its environment
        method does (``parallelism.default``: :meth:`set_parallelism`, ``execution.runtime-mode``:
        :meth:`set_runtime_mode`, ``pipeline.auto-watermark-interval``: the ``ExecutionConfig``'s, whose ``0`` is
        refused, ``execution.checkpointing.interval`` / ``.mode``: :meth:`enable_checkpointing`, ``pipeline.jars``:
        refused as :meth:`add_jars`, ...); a key it does not set leaves that setting as it is. A value that does not
        parse is refused before anything is applied. Other keys configure Flink's own runtime and are ignored (the
        table in ``docs/migrating-from-pyflink.md``)."""
        settings = read_settings(configuration)
        # first what may be refused, then what cannot fail
        if settings.jars is not None:
            self.add_jars(*settings.jars)
        if settings.classpaths is not None:
            self.add_classpaths(*settings.classpaths)
        if settings.python_requirements is not None:
            requirements, _, cache_dir = settings.python_requirements.partition("#")
            self.set_python_requirements(requirements, cache_dir or None)
        if settings.python_executable is not None:
            self.set_python_executable(settings.python_executable)
        if settings.auto_watermark_interval is not None:
            self.get_config().set_auto_watermark_interval(settings.auto_watermark_interval)
        if settings.max_parallelism is not None:
            self.set_max_parallelism(settings.max_parallelism)
        if settings.checkpoint_interval is not None:
            self.enable_checkpointing(settings.checkpoint_interval)
        for archive in settings.python_archives or ():
            path, _, target_dir = archive.partition("#")
            self.add_python_archive(path, target_dir or None)
        for file_path in settings.python_files or ():
            self.add_python_file(file_path)
        if settings.checkpointing_mode is not None:
            self.__dict__["_checkpointing_mode"] = settings.checkpointing_mode
        if settings.parallelism is not None:
            self.set_parallelism(settings.parallelism)  # type: ignore[attr-defined]
        if settings.runtime_mode is not None:
            self.set_runtime_mode(settings.runtime_mode)

    # -------------------------------------------------------------------- Python dependencies, jars
    def add_python_file(self, file_path: str) -> None:
        """Make a Python file, package directory or archive (``.zip``/``.egg``/``.whl``) importable by the job's
        functions, as PyFlink's does for its Python workers. The JVM-free engine runs them in this process: the
        file's directory (a ``.py`` file or a package directory) or the archive itself goes on ``sys.path``."""
        _add_to_sys_path(file_path)

    def add_python_archive(self, archive_path: str, target_dir: Optional[str] = None) -> None:
        """PyFlink extracts the archive into each Python worker's working directory. The JVM-free engine has no
        workers and does not change this process's working directory: refused; extract it yourself and use its
        path, or run on Spark (``SparkContext.addArchive``)."""
        msg = (
            f"add_python_archive({archive_path!r}): the JVM-free engine runs the job in this process and has no worker "
            "directory to extract it into; extract the archive and use its path (or add_python_file for code), or use "
            "the Spark environment, where it is SparkContext.addArchive"
        )
        raise UnsupportedFeatureError(msg)

    def set_python_requirements(self, requirements_file_path: str, requirements_cache_dir: Optional[str] = None) -> None:
        """Refused: PyFlink pip-installs the requirements for its workers; this package never installs packages.
        Install them into the interpreter that runs the job (on Spark: into every node's environment, e.g. a
        cluster library on Databricks)."""
        msg = (
            f"set_python_requirements({requirements_file_path!r}): packages are not installed by the job here; install "
            "them into the Python environment that runs it (pip install -r <file>; on a Spark cluster into every "
            "node's environment, e.g. as cluster libraries)"
        )
        raise UnsupportedFeatureError(msg)

    def set_python_executable(self, python_exec: str) -> None:
        """PyFlink's Python worker interpreter. Accepted when it is this interpreter (``sys.executable``), which runs
        the job's functions here; another one is refused (on Spark set ``PYSPARK_PYTHON`` before the session
        starts)."""
        if os.path.realpath(python_exec) != os.path.realpath(sys.executable):
            msg = (
                f"set_python_executable({python_exec!r}): the job's functions run in this interpreter "
                f"({sys.executable}); run the program with that interpreter instead (on Spark: PYSPARK_PYTHON)"
            )
            raise UnsupportedFeatureError(msg)

    def add_jars(self, *jars_path: str) -> None:
        """Refused: Flink jars (connectors, formats) have no use here. The JVM-free engine has no JVM; on Spark,
        jars are the session's (``spark.jars`` / ``--jars`` when it starts)."""
        msg = (
            f"add_jars{jars_path!r}: Flink jars have no use here; the Kafka and Delta connectors are Spark's, on the "
            "session's classpath (spark.jars or --jars when the SparkSession starts; see docs/operations.md)"
        )
        raise UnsupportedFeatureError(msg)

    def add_classpaths(self, *classpaths: str) -> None:
        """Refused, as :meth:`add_jars`."""
        msg = (
            f"add_classpaths{classpaths!r}: Flink classpaths have no use here; on Spark set spark.driver.extraClassPath "
            "/ spark.executor.extraClassPath when the session starts"
        )
        raise UnsupportedFeatureError(msg)

    # -------------------------------------------------------------------- plan, async execution
    def get_execution_plan(self) -> str:
        """The job's plan as JSON in Flink's shape (``{"nodes": [{"id", "type", "pact", "contents", "parallelism",
        "predecessors": [{"id", "ship_strategy", "side"}]}]}``): sources, operators and sinks of every sink added so
        far (since the last ``execute``; as Flink's, it does not clear them, and raises when there are none); an edge into
        a keyed operator is ``HASH``, others ``FORWARD``."""
        sinks: List[Transformation] = list(getattr(self, "_sinks", []))
        if not sinks:  # Flink: the stream graph of an empty environment
            raise InvalidPipelineError(NO_OPERATORS)
        nodes: List[Dict[str, Any]] = []
        shown: Dict[int, int] = {}  # a print sink's lines operator is part of the sink, as in Flink: its input's id
        for t in topological(sinks):
            if isinstance(t.spec, StatelessSpec) and t.spec.op == "print":
                shown[t.id] = shown.get(t.inputs[0].id, t.inputs[0].id)
                continue
            pact = {"source": "Data Source", "sink": "Data Sink"}.get(t.kind, "Operator")
            name = f"Source: {t.name}" if t.kind == "source" else (f"Sink: {t.name}" if t.kind == "sink" else t.name)
            node: Dict[str, Any] = {"id": t.id, "type": name, "pact": pact, "contents": name, "parallelism": 1}
            if t.inputs:
                ship = "HASH" if t.keyed else "FORWARD"
                node["predecessors"] = [
                    {"id": shown.get(i.id, i.id), "ship_strategy": ship, "side": "second"} for i in t.inputs
                ]
            nodes.append(node)
        return json.dumps({"nodes": nodes}, indent=2)

    def execute_async(self, job_name: str = "pyspark_flinkish job") -> JobClient:
        """Start the job and return at once with a :class:`~pyspark_flinkish.common.JobClient` to watch, wait for or
        cancel it. The JVM-free engine runs it in a background thread (cancel stops it after the current
        micro-batch)."""
        from .job_client import LocalJobClient

        return LocalJobClient.start(self, job_name)


def _add_to_sys_path(file_path: str) -> None:
    path = os.path.abspath(file_path)
    if not os.path.exists(path):
        msg = f"add_python_file: {file_path!r} does not exist"
        raise InvalidArgumentError(msg)
    entry = path if os.path.isfile(path) and not path.endswith(".py") else os.path.dirname(path)
    if entry not in sys.path:
        sys.path.insert(0, entry)


__all__ = ["EnvironmentConfiguration", "NO_OPERATORS", "MAX_MAX_PARALLELISM", "MIN_CHECKPOINT_INTERVAL_MS"]
