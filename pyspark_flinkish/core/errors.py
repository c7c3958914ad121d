"""The package's exception hierarchy.

Every error raised by pyspark_flinkish derives from :class:`FlinkishError` and from the builtin
exception a Python user would expect (``ValueError``, ``TypeError``, ...), so both
``except FlinkishError`` and ``except ValueError`` work.
"""

from __future__ import annotations

from typing import Optional


class FlinkishError(Exception):
    """Base class of all errors raised by pyspark_flinkish."""


class InvalidArgumentError(FlinkishError, ValueError):
    """An argument is outside what Flink accepts (e.g. a window size <= 0)."""


class InvalidTypeError(FlinkishError, TypeError):
    """An argument has the wrong type (e.g. a trigger where an assigner was expected)."""


class InvalidPipelineError(FlinkishError, ValueError):
    """The pipeline cannot be built as written (e.g. a non-mergeable trigger on session windows)."""


class UnsupportedFeatureError(FlinkishError, NotImplementedError):
    """A Flink feature the chosen engine or backend cannot express; the message names the alternative."""


class StateError(FlinkishError, RuntimeError):
    """Keyed state was used wrongly (outside a keyed context, incompatible snapshot, ...)."""


class BadInputError(FlinkishError, ValueError):
    """Input data the pipeline cannot take, under a policy that says to fail (e.g. a malformed Kafka record).

    Raised by the package's own steps, never by user code: it passes through unchanged where user functions'
    errors are wrapped in a :class:`UserFunctionError` (whose message would quote the element)."""


class UserFunctionError(FlinkishError, RuntimeError):
    """A user function raised; the message names the operator (name and uid), the function, the key and the
    window (where there are ones) and ends with the original traceback; the original exception is the cause
    (on Spark, where it was raised on an executor, the cause is Spark's exception that carries its text)."""

    operator: Optional[str] = None
    """The name of the plan node (operator, source or sink) whose user function raised, once known."""
    uid: Optional[str] = None
    """That node's uid (the one given with ``.uid(...)``, else the generated one that names its state)."""


__all__ = [
    "FlinkishError",
    "InvalidArgumentError",
    "InvalidTypeError",
    "InvalidPipelineError",
    "UnsupportedFeatureError",
    "StateError",
    "BadInputError",
    "UserFunctionError",
]
