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
import re
from typing import Iterator, List, Optional

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


def package_error_from(exc: BaseException) -> Optional[FlinkishError]:
    """The package error a Spark task raised (a :class:`UserFunctionError` or an :class:`UnsupportedFeatureError`),
    rebuilt on the driver; None when ``exc`` carries none."""
    return user_error_from(exc) or unsupported_error_from(exc)


__all__ = [
    "package_error_from",
    "reported_to_driver",
    "unsupported_error_from",
    "user_error_from",
]
