"""How a user function's error on an executor reaches the driver intact.

A :class:`UserFunctionError` raised in a Spark task leaves it with its message between markers
(:func:`reported_to_driver`); the driver finds the markers in Spark's and Py4J's exception text and raises the
package error again (:func:`user_error_from`), naming operator, uid, key and window as the local engine does.
"""

from __future__ import annotations

import contextlib
import re
from typing import Iterator, List, Optional

from ..core.errors import UserFunctionError
from ..core.operators import in_node
from .plan import Node

_ERROR_BEGIN, _ERROR_END = "<<pyspark_flinkish error>>", "<</pyspark_flinkish error>>"


@contextlib.contextmanager
def reported_to_driver(node: Optional[Node] = None) -> Iterator[None]:
    """Around the body of a Spark task: a :class:`UserFunctionError` leaves it with the plan ``node`` named
    (unless an inner node named itself) and its message between markers, so that the driver can raise it
    again without Spark's and Py4J's stack traces around it (:func:`user_error_from`)."""
    try:
        yield
    except UserFunctionError as exc:
        if _ERROR_BEGIN in str(exc):
            raise
        if node is not None:
            exc = in_node(exc, node.name, node.uid)
        msg = f"{_ERROR_BEGIN}{exc}{_ERROR_END}"
        raise UserFunctionError(msg) from exc


def user_error_from(exc: BaseException) -> Optional[UserFunctionError]:
    """The :class:`UserFunctionError` a Spark task raised, rebuilt on the driver from the text of the Spark /
    Py4J exception that carries it (its cause is ``exc``); None when ``exc`` carries none."""
    seen: List[BaseException] = []
    current: Optional[BaseException] = exc
    while current is not None and current not in seen:
        if isinstance(current, UserFunctionError) and _ERROR_BEGIN not in str(current):
            return current
        match = re.search(re.escape(_ERROR_BEGIN) + "(.*?)" + re.escape(_ERROR_END), str(current), re.S)
        if match:
            error = UserFunctionError(match.group(1))
            names = re.match(r"operator '(.*?)' \(uid '(.*?)'\)", match.group(1))
            if names:
                error.operator, error.uid = names.group(1), names.group(2)
            error.__cause__ = exc
            return error
        seen.append(current)
        current = current.__cause__ or current.__context__
    return None


__all__ = [
    "reported_to_driver",
    "user_error_from",
]
