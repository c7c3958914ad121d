"""How a user function's error on an executor reaches the driver intact.

A :class:`UserFunctionError` raised in a Spark task leaves it with its message between markers
(:func:`reported_to_driver`); the driver finds the markers in Spark's and Py4J's exception text and raises the
package error again (:func:`user_error_from`), naming operator, uid, key and window as the local engine does.
An :class:`UnsupportedFeatureError` that can only be found while the job runs (a user function doing what the
executor cannot express, e.g. registering a processing-time timer on the applyInPandasWithState executor) crosses
the same way between markers of its own (:func:`package_error_from` finds either).
"""

from __future__ import annotations

import contextlib
import functools
import re
from typing import Any, Callable, Iterator, List, Optional

from ..core.errors import FlinkishError, UnsupportedFeatureError, UserFunctionError
from ..core.operators import in_node
from .plan import Node

_ERROR_BEGIN, _ERROR_END = "<<pyspark_flinkish error>>", "<</pyspark_flinkish error>>"
_UNSUPPORTED_BEGIN, _UNSUPPORTED_END = "<<pyspark_flinkish unsupported>>", "<</pyspark_flinkish unsupported>>"


@contextlib.contextmanager
def reported_to_driver(node: Optional[Node] = None) -> Iterator[None]:
    """Around the body of a Spark task: a :class:`UserFunctionError` leaves it with the plan ``node`` named
    (unless an inner node named itself) and its message between markers, so that the driver can raise it
    again without Spark's and Py4J's stack traces around it (:func:`user_error_from`)."""
    try:
        yield
    except UnsupportedFeatureError as exc:
        if _UNSUPPORTED_BEGIN in str(exc):
            raise
        msg = f"{_UNSUPPORTED_BEGIN}{exc}{_UNSUPPORTED_END}"
        raise UnsupportedFeatureError(msg) from exc
    except UserFunctionError as exc:
        if _ERROR_BEGIN in str(exc):
            raise
        if node is not None:
            exc = in_node(exc, node.name, node.uid)
        msg = f"{_ERROR_BEGIN}{exc}{_ERROR_END}"
        raise UserFunctionError(msg) from exc


def _carried(exc: BaseException, cls: type, begin: str, end: str) -> Optional[FlinkishError]:
    """The ``cls`` error that ``exc``'s chain of causes holds, itself or as the text between ``begin`` and ``end``
    in a Spark / Py4J exception's message (rebuilt, its cause ``exc``); None when the chain holds none."""
    seen: List[BaseException] = []
    current: Optional[BaseException] = exc
    while current is not None and current not in seen:
        if isinstance(current, cls) and begin not in str(current):
            return current  # type: ignore[return-value]
        match = re.search(re.escape(begin) + "(.*?)" + re.escape(end), str(current), re.S)
        if match:
            error = cls(match.group(1))
            error.__cause__ = exc
            return error  # type: ignore[no-any-return]
        seen.append(current)
        current = current.__cause__ or current.__context__
    return None


def user_error_from(exc: BaseException) -> Optional[UserFunctionError]:
    """The :class:`UserFunctionError` a Spark task raised, rebuilt on the driver from the text of the Spark /
    Py4J exception that carries it (its cause is ``exc``); None when ``exc`` carries none."""
    error = _carried(exc, UserFunctionError, _ERROR_BEGIN, _ERROR_END)
    if error is not None and error.__cause__ is exc:  # rebuilt from text: operator and uid from its message
        names = re.match(r"operator '(.*?)' \(uid '(.*?)'\)", str(error))
        if names:
            error.operator, error.uid = names.group(1), names.group(2)  # type: ignore[attr-defined]
    return error  # type: ignore[return-value]


def unsupported_error_from(exc: BaseException) -> Optional[UnsupportedFeatureError]:
    """The :class:`UnsupportedFeatureError` a Spark task raised while the job ran, rebuilt on the driver from the text
    of the Spark / Py4J exception that carries it (its cause is ``exc``); None when ``exc`` carries none."""
    return _carried(exc, UnsupportedFeatureError, _UNSUPPORTED_BEGIN, _UNSUPPORTED_END)  # type: ignore[return-value]


# the Java exceptions Spark takes for "the query was stopped" (``StreamExecution.IO_EXCEPTION_NAMES``)
_INTERRUPTIONS = frozenset(
    {"java.lang.InterruptedException", "java.io.InterruptedIOException", "java.nio.channels.ClosedByInterruptException"}
)


class BatchInterruptedError(Exception):
    """A micro-batch's Spark job was interrupted: the query is being stopped (``handle.stop()``, ``query.stop()``).

    Spark tells a stop from a failure of the Python batch function by matching a regular expression over the whole
    text of the Python error (``StreamExecution.PROXY_ERROR``: Py4J's phrase, anything, then an interruption's class
    name). Java runs that expression recursively, one level per character, so a long Py4J traceback overflows the
    stream thread's stack (``StackOverflowError``, printed as an uncaught error). This error carries the same two
    markers in a few characters, so Spark recognises the stop at once."""


def interruption_from(exc: BaseException) -> Optional[BatchInterruptedError]:
    """A short :class:`BatchInterruptedError` when ``exc``'s chain holds a Py4J error whose Java exception, or one of its
    Java causes, is an interruption; None otherwise (a failure, reported as it is)."""
    seen: List[BaseException] = []
    current: Optional[BaseException] = exc
    while current is not None and current not in seen:
        java = getattr(current, "java_exception", None)
        for _ in range(16):  # Java's chain of causes, bounded
            if java is None:
                break
            try:
                name = java.getClass().getName()
                java = java.getCause()
            except Exception:
                break
            if name in _INTERRUPTIONS:
                return BatchInterruptedError(f"py4j.protocol.Py4JJavaError: An error occurred while calling the batch: {name}")
        seen.append(current)
        current = current.__cause__ or current.__context__
    return None


def stops_cleanly(batch_function: Callable[[Any, int], None]) -> Callable[[Any, int], None]:
    """``batch_function`` (a ``foreachBatch`` function) raising a short :class:`BatchInterruptedError` when the query's
    stop interrupts it (:func:`interruption_from`), and any other error as it is."""

    @functools.wraps(batch_function)
    def run(df: Any, batch_id: int) -> None:
        try:
            batch_function(df, batch_id)
        except Exception as exc:
            stopped = interruption_from(exc)
            if stopped is not None:
                raise stopped from None
            raise

    return run


def package_error_from(exc: BaseException) -> Optional[FlinkishError]:
    """The package error a Spark task raised (a :class:`UserFunctionError` or an :class:`UnsupportedFeatureError`),
    rebuilt on the driver; None when ``exc`` carries none."""
    return user_error_from(exc) or unsupported_error_from(exc)



def reported_steps(steps: Iterator[Any], node: Optional[Node] = None) -> Iterator[None]:
    """Run a task body that pauses whenever it has output to hand on (``steps``, a generator), each step inside
    :func:`reported_to_driver`; yields after each step that paused (the caller hands the output on outside it)."""
    while True:
        with reported_to_driver(node):
            if next(steps, None) is None:
                return
        yield

__all__ = [
    "BatchInterruptedError",
    "interruption_from",
    "package_error_from",
    "reported_steps",
    "reported_to_driver",
    "stops_cleanly",
    "unsupported_error_from",
    "user_error_from",
]
