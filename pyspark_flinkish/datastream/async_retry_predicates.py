"""PyFlink's ``pyflink.datastream.async_retry_predicates``: ready-made retry predicates of async I/O
(``exception_type_predicate`` takes the type as its second argument: bind it with a lambda)."""

from __future__ import annotations

from ..core.async_functions import empty_result_predicate, exception_type_predicate, has_exception_predicate

__all__ = [
    "empty_result_predicate",
    "exception_type_predicate",
    "has_exception_predicate",
]
