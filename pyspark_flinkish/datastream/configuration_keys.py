"""What the keys of a PyFlink :class:`~pyspark_flinkish.common.Configuration` mean to an environment.

``StreamExecutionEnvironment.get_execution_environment(configuration)`` and ``env.configure(configuration)`` read a
configuration here (:func:`read_settings`) and apply what it sets, as Flink's ``StreamExecutionEnvironment.configure``
does: a key that is not set leaves the environment's setting as it is. The keys in :data:`APPLIED_KEYS` set what the
environment method named there sets (checked against PyFlink 2.3.0, whose getters return the same values afterwards:
``jvm-free-tests/datastream/pyflink_configuration.json``); a value Flink cannot parse raises Flink's "Could not parse
value '...' for key '...'". Every other key is accepted and ignored: it configures Flink's own runtime (state
backends, checkpoint storage, restart strategies, memory, network, ...), which this package does not have (see the
key table in ``docs/migrating-from-pyflink.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Dict, List, Optional, Type

from ..common.configuration import Configuration
from ..core.durations import parse_duration
from ..core.errors import InvalidArgumentError, InvalidTypeError
from .checkpointing_mode import CheckpointingMode
from .execution_mode import RuntimeExecutionMode

PARALLELISM_DEFAULT = -1
"""Flink's ``ExecutionConfig.PARALLELISM_DEFAULT``: ``parallelism.default: -1`` means "the system's default"."""

APPLIED_KEYS: Dict[str, str] = {
    "parallelism.default": "set_parallelism",
    "pipeline.max-parallelism": "set_max_parallelism",
    "pipeline.auto-watermark-interval": "get_config().set_auto_watermark_interval",
    "execution.runtime-mode": "set_runtime_mode",
    "execution.checkpointing.interval": "enable_checkpointing",
    "execution.checkpointing.mode": "enable_checkpointing's mode",
    "pipeline.jars": "add_jars",
    "pipeline.classpaths": "add_classpaths",
    "python.files": "add_python_file",
    "python.archives": "add_python_archive",
    "python.requirements": "set_python_requirements",
    "python.executable": "set_python_executable",
}
"""Every key an environment applies, and the environment method whose effect (or refusal) it has."""


@dataclass
class EnvironmentSettings:
    """The settings a configuration gives an environment, parsed; ``None`` (or empty): the key is not set."""

    parallelism: Optional[int] = None
    max_parallelism: Optional[int] = None
    auto_watermark_interval: Optional[int] = None
    runtime_mode: Optional[RuntimeExecutionMode] = None
    checkpoint_interval: Optional[int] = None
    checkpointing_mode: Optional[CheckpointingMode] = None
    jars: Optional[List[str]] = None
    classpaths: Optional[List[str]] = None
    python_files: Optional[List[str]] = None
    python_archives: Optional[List[str]] = None
    python_requirements: Optional[str] = None
    python_executable: Optional[str] = None


def _unparsable(configuration: Configuration, key: str, hint: str) -> InvalidArgumentError:
    msg = f"Could not parse value '{configuration.get_string(key, '')}' for key '{key}'. ({hint})"
    return InvalidArgumentError(msg)


def _duration_ms(configuration: Configuration, key: str) -> Optional[int]:
    if not configuration.contains_key(key):
        return None
    try:
        return parse_duration(configuration.get_string(key, "") or "")
    except InvalidArgumentError as exc:
        raise _unparsable(configuration, key, f"a duration such as '500 ms', '5 s' or a number of ms: {exc}") from None


def _enum(configuration: Configuration, key: str, enum: Type[Enum]) -> Optional[Enum]:
    if not configuration.contains_key(key):
        return None
    name = (configuration.get_string(key, "") or "").strip().upper()
    if name not in enum.__members__:
        raise _unparsable(configuration, key, f"one of {', '.join(enum.__members__)}, in any case")
    return enum[name]


def _split(configuration: Configuration, key: str, separator: str) -> Optional[List[str]]:
    if not configuration.contains_key(key):
        return None
    value = configuration.get_string(key, "") or ""
    if separator == ";":
        return [str(item) for item in Configuration.parse_list_value(value)]
    return [item for item in value.split(separator) if item]


def read_settings(configuration: Configuration) -> EnvironmentSettings:
    """The settings of the keys of :data:`APPLIED_KEYS` that ``configuration`` sets, every value parsed (and refused
    as Flink refuses it) before any is applied."""
    if not isinstance(configuration, Configuration):
        msg = (
            f"the environment's configuration must be a pyspark_flinkish.common.Configuration; got "
            f"{type(configuration).__name__} {configuration!r} (a dict of settings: Configuration.from_dict(d))"
        )
        raise InvalidTypeError(msg)
    settings = EnvironmentSettings()
    if configuration.contains_key("parallelism.default"):
        parallelism = configuration.get_integer("parallelism.default", PARALLELISM_DEFAULT)
        if parallelism < 1 and parallelism != PARALLELISM_DEFAULT:
            msg = (
                "Parallelism must be at least one, or ExecutionConfig.PARALLELISM_DEFAULT (use system default). "
                f"(parallelism.default: got {parallelism}; -1 is the default)"
            )
            raise InvalidArgumentError(msg)
        settings.parallelism = parallelism
    if configuration.contains_key("pipeline.max-parallelism"):
        settings.max_parallelism = configuration.get_integer("pipeline.max-parallelism", 0)
    settings.auto_watermark_interval = _duration_ms(configuration, "pipeline.auto-watermark-interval")
    settings.runtime_mode = _enum(configuration, "execution.runtime-mode", RuntimeExecutionMode)  # type: ignore[assignment]
    settings.checkpoint_interval = _duration_ms(configuration, "execution.checkpointing.interval")
    settings.checkpointing_mode = _enum(configuration, "execution.checkpointing.mode", CheckpointingMode)  # type: ignore[assignment]
    settings.jars = _split(configuration, "pipeline.jars", ";")
    settings.classpaths = _split(configuration, "pipeline.classpaths", ";")
    settings.python_files = _split(configuration, "python.files", ",")
    settings.python_archives = _split(configuration, "python.archives", ",")
    settings.python_requirements = configuration.get_string("python.requirements", None)
    settings.python_executable = configuration.get_string("python.executable", None)
    return settings


__all__ = ["APPLIED_KEYS", "EnvironmentSettings", "PARALLELISM_DEFAULT", "read_settings"]
