"""PyFlink's ``pyflink.datastream.async_data_stream``: ``AsyncDataStream`` applies an ``AsyncFunction`` to a stream.

``ordered_wait`` emits results in input order, ``unordered_wait`` in completion order (never across a
watermark); the ``*_with_retry`` variants retry a request by an ``AsyncRetryStrategy``. The operator's rules are
in :mod:`pyspark_flinkish.core.async_operator`. On Spark the foreachBatch executor runs the requests of each
partition on its executor, and a micro-batch commits only after all of them completed.
"""

from __future__ import annotations

import inspect
from typing import Any, Optional

from ..core.async_functions import NO_RETRY_STRATEGY, AsyncFunction, AsyncFunctionDescriptor, AsyncRetryStrategy
from ..core.async_operator import AsyncWaitOperator
from ..core.durations import TimeLike, to_millis
from ..core.errors import InvalidArgumentError, InvalidTypeError
from ..core.typeinfo import TypeInformation
from .data_stream import DataStream, refuse_after_broadcast
from .plan import AsyncWaitSpec, Transformation, made_with_parallelism

OPERATOR_NAME = "async wait operator"
"""The name PyFlink gives the async operator (and this package its plan node)."""


class AsyncDataStream:
    """A helper class to apply an :class:`AsyncFunction` to a data stream."""

    @staticmethod
    def unordered_wait(
        data_stream: DataStream,
        async_function: AsyncFunction[Any, Any],
        timeout: TimeLike,
        capacity: int = 100,
        output_type: Optional[TypeInformation] = None,
    ) -> DataStream:
        """Apply ``async_function``; results may be emitted out of input order (never across a watermark)."""
        return AsyncDataStream.unordered_wait_with_retry(
            data_stream, async_function, timeout, NO_RETRY_STRATEGY, capacity, output_type
        )

    @staticmethod
    def unordered_wait_with_retry(
        data_stream: DataStream,
        async_function: AsyncFunction[Any, Any],
        timeout: TimeLike,
        async_retry_strategy: AsyncRetryStrategy[Any],
        capacity: int = 100,
        output_type: Optional[TypeInformation] = None,
    ) -> DataStream:
        """:meth:`unordered_wait` with requests retried by ``async_retry_strategy``."""
        return _apply(
            data_stream, async_function, timeout, async_retry_strategy, capacity, output_type,
            AsyncFunctionDescriptor.OutputMode.UNORDERED,
        )

    @staticmethod
    def ordered_wait(
        data_stream: DataStream,
        async_function: AsyncFunction[Any, Any],
        timeout: TimeLike,
        capacity: int = 100,
        output_type: Optional[TypeInformation] = None,
    ) -> DataStream:
        """Apply ``async_function``; results are emitted in input order."""
        return AsyncDataStream.ordered_wait_with_retry(
            data_stream, async_function, timeout, NO_RETRY_STRATEGY, capacity, output_type
        )

    @staticmethod
    def ordered_wait_with_retry(
        data_stream: DataStream,
        async_function: AsyncFunction[Any, Any],
        timeout: TimeLike,
        async_retry_strategy: AsyncRetryStrategy[Any],
        capacity: int = 100,
        output_type: Optional[TypeInformation] = None,
    ) -> DataStream:
        """:meth:`ordered_wait` with requests retried by ``async_retry_strategy``."""
        return _apply(
            data_stream, async_function, timeout, async_retry_strategy, capacity, output_type,
            AsyncFunctionDescriptor.OutputMode.ORDERED,
        )


def _apply(
    data_stream: DataStream,
    async_function: AsyncFunction[Any, Any],
    timeout: TimeLike,
    strategy: AsyncRetryStrategy[Any],
    capacity: int,
    output_type: Optional[TypeInformation],
    mode: AsyncFunctionDescriptor.OutputMode,
) -> DataStream:
    """Validate as PyFlink does (with this package's error types) and add the operator to the plan."""
    if not isinstance(data_stream, DataStream):
        msg = f"AsyncDataStream needs a DataStream; got {type(data_stream).__name__}"
        raise InvalidTypeError(msg)
    if not inspect.iscoroutinefunction(getattr(async_function, "async_invoke", None)):
        msg = f"Method 'async_invoke' of class '{type(async_function)}' should be declared as 'async def'."
        raise InvalidTypeError(msg)
    refuse_after_broadcast([data_stream], "async I/O", "put a map after broadcast() and async I/O after it")
    timeout_ms = to_millis("timeout", timeout)
    if strategy is None:
        msg = "Async retry strategy should not be None."
        raise InvalidArgumentError(msg)
    if strategy is not NO_RETRY_STRATEGY and timeout_ms <= 0:
        msg = "Timeout should be configured when do async with retry."
        raise InvalidArgumentError(msg)
    if strategy.get_retry_predicate() is None:
        msg = f"Retry predicate of the async retry strategy '{type(strategy)}' is None."
        raise InvalidArgumentError(msg)
    if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity <= 0:
        msg = f"The capacity must be positive (Flink's AsyncWaitOperator); got {capacity!r}"
        raise InvalidArgumentError(msg)
    descriptor = AsyncFunctionDescriptor(async_function, timeout, capacity, strategy, mode)
    ordered = mode is AsyncFunctionDescriptor.OutputMode.ORDERED

    def factory() -> AsyncWaitOperator:
        return AsyncWaitOperator(OPERATOR_NAME, async_function, timeout_ms, capacity, strategy, ordered)

    t = Transformation(
        "operator", OPERATOR_NAME, [data_stream._t], factory=factory, output_type=output_type,
        spec=AsyncWaitSpec(descriptor),
    )
    made_with_parallelism(t, data_stream.get_execution_environment())
    return DataStream(data_stream.get_execution_environment(), t)


__all__ = [
    "AsyncDataStream",
    "OPERATOR_NAME",
]
