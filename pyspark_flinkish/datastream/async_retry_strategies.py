"""PyFlink's ``pyflink.datastream.async_retry_strategies``: the built-in retry strategies of async I/O
(rules in :mod:`pyspark_flinkish.core.async_functions`)."""

from __future__ import annotations

from ..core.async_functions import (
    NO_RETRY_STRATEGY,
    ExponentialBackoffDelayRetryStrategy,
    FixedDelayRetryStrategy,
    NoRetryStrategy,
    RetryPredicate,
)

__all__ = [
    "RetryPredicate",
    "NoRetryStrategy",
    "FixedDelayRetryStrategy",
    "ExponentialBackoffDelayRetryStrategy",
    "NO_RETRY_STRATEGY",
]
