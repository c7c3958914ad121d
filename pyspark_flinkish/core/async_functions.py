"""What a user gives Flink's async I/O operator: PyFlink 2.3's ``AsyncFunction``, its retry strategies and
retry predicates (``pyflink.datastream.functions`` / ``async_retry_strategies`` / ``async_retry_predicates``),
with PyFlink's names and rules.

A retry strategy decides, after an attempt, whether the request is tried again: PyFlink's operator retries only
when its predicate holds (the result predicate on a result, the exception predicate on an exception), the
request's timeout has not passed and ``can_retry(attempts)`` is true, after ``get_backoff_time_millis(attempts)``;
``attempts`` counts the attempts made so far (1 after the first), so ``max_attempts`` retries can follow the
first attempt. Otherwise the last result is emitted (even one the result predicate still matches) or the last
exception fails the job.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from typing import Any, Callable, Generic, List, Optional, TypeVar

from .functions import Function

IN = TypeVar("IN")
OUT = TypeVar("OUT")


class AsyncFunction(Function, Generic[IN, OUT]):
    """A function that starts an asynchronous request per element (PyFlink's ``AsyncFunction``).

    ``async_invoke`` is a coroutine (``async def``) returning the element's results as a list; raising fails the
    job (or retries, see the retry strategies). ``timeout`` gives the results of a request that did not complete
    in time; by default it raises ``TimeoutError``, which fails the job. ``open``/``close`` run once per operator
    instance (on Spark: per task)."""

    @abstractmethod
    async def async_invoke(self, value: IN) -> List[OUT]:
        """Start the request for ``value`` and return its results (a list)."""

    def timeout(self, value: IN) -> List[OUT]:
        """The results of ``value``'s request when it timed out; by default raises ``TimeoutError``."""
        raise TimeoutError("Async function call has timed out for input: " + str(value))


class AsyncRetryPredicate(ABC, Generic[OUT]):
    """When a request is retried: a predicate on its result and one on its exception (either may be None)."""

    @abstractmethod
    def result_predicate(self) -> Optional[Callable[[List[OUT]], bool]]:
        """A predicate on a request's result list that asks for another attempt."""

    @abstractmethod
    def exception_predicate(self) -> Optional[Callable[[Exception], bool]]:
        """A predicate on a request's exception that asks for another attempt."""


class AsyncRetryStrategy(ABC, Generic[OUT]):
    """How often and after which delay a request is retried (PyFlink's ``AsyncRetryStrategy``)."""

    @abstractmethod
    def can_retry(self, current_attempts: int) -> bool:
        """Whether another attempt may follow ``current_attempts`` attempts."""

    @abstractmethod
    def get_backoff_time_millis(self, current_attempts: int) -> int:
        """The delay before the attempt after ``current_attempts`` attempts."""

    @abstractmethod
    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        """The predicates that ask for a retry."""

    @staticmethod
    def no_restart() -> AsyncRetryStrategy[Any]:
        return NO_RETRY_STRATEGY

    @staticmethod
    def fixed_delay(
        max_attempts: int,
        backoff_time_millis: int,
        result_predicate: Optional[Callable[[List[OUT]], bool]],
        exception_predicate: Optional[Callable[[Exception], bool]],
    ) -> FixedDelayRetryStrategy[OUT]:
        return FixedDelayRetryStrategy(max_attempts, backoff_time_millis, result_predicate, exception_predicate)

    @staticmethod
    def exponential_backoff(
        max_attempts: int,
        initial_delay: int,
        max_retry_delay: int,
        multiplier: float,
        result_predicate: Optional[Callable[[List[OUT]], bool]],
        exception_predicate: Optional[Callable[[Exception], bool]],
    ) -> ExponentialBackoffDelayRetryStrategy[OUT]:
        return ExponentialBackoffDelayRetryStrategy(
            max_attempts, initial_delay, max_retry_delay, multiplier, result_predicate, exception_predicate
        )


class RetryPredicate(AsyncRetryPredicate[OUT]):
    """A result predicate and an exception predicate, as given."""

    def __init__(
        self,
        result_predicate: Optional[Callable[[List[OUT]], bool]],
        exception_predicate: Optional[Callable[[Exception], bool]],
    ) -> None:
        self._result_predicate = result_predicate
        self._exception_predicate = exception_predicate

    def result_predicate(self) -> Optional[Callable[[List[OUT]], bool]]:
        return self._result_predicate

    def exception_predicate(self) -> Optional[Callable[[Exception], bool]]:
        return self._exception_predicate


class NoRetryStrategy(AsyncRetryStrategy[OUT]):
    """Never retry (``async_retry_strategies.NO_RETRY_STRATEGY``: what ``ordered_wait``/``unordered_wait`` use)."""

    def can_retry(self, current_attempts: int) -> bool:
        return False

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        return -1

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return RetryPredicate(None, None)


def _positive(name: str, value: float) -> None:
    if not value > 0:
        msg = f"{name} should be greater than zero."
        raise AssertionError(msg)  # PyFlink asserts these


class FixedDelayRetryStrategy(AsyncRetryStrategy[OUT]):
    """Up to ``max_attempts`` retries, each ``backoff_time_millis`` after the attempt before."""

    def __init__(
        self,
        max_attempts: int,
        backoff_time_millis: int,
        result_predicate: Optional[Callable[[List[OUT]], bool]],
        exception_predicate: Optional[Callable[[Exception], bool]],
    ) -> None:
        _positive("max_attempts", max_attempts)
        _positive("backoff_time_millis", backoff_time_millis)
        self._max_attempts = max_attempts
        self._backoff_time_millis = backoff_time_millis
        self._result_predicate = result_predicate
        self._exception_predicate = exception_predicate

    def can_retry(self, current_attempts: int) -> bool:
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        return self._backoff_time_millis

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return RetryPredicate(self._result_predicate, self._exception_predicate)


class ExponentialBackoffDelayRetryStrategy(AsyncRetryStrategy[OUT]):
    """Up to ``max_attempts`` retries: the first after ``initial_delay``, each next one ``multiplier`` times the
    last delay, at most ``max_retry_delay``. As in PyFlink the last delay is the strategy's own (one strategy
    object per operator instance, shared by its requests)."""

    def __init__(
        self,
        max_attempts: int,
        initial_delay: int,
        max_retry_delay: int,
        multiplier: float,
        result_predicate: Optional[Callable[[List[OUT]], bool]],
        exception_predicate: Optional[Callable[[Exception], bool]],
    ) -> None:
        _positive("max_attempts", max_attempts)
        _positive("initial_delay", initial_delay)
        _positive("max_retry_delay", max_retry_delay)
        _positive("multiplier", multiplier)
        self._max_attempts = max_attempts
        self._max_retry_delay = max_retry_delay
        self._multiplier = multiplier
        self._result_predicate = result_predicate
        self._exception_predicate = exception_predicate
        self._initial_delay = initial_delay
        self._last_retry_delay = initial_delay

    def can_retry(self, current_attempts: int) -> bool:
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        if current_attempts <= 1:
            self._last_retry_delay = self._initial_delay
            return self._last_retry_delay
        backoff = int(min(self._last_retry_delay * self._multiplier, self._max_retry_delay))
        self._last_retry_delay = backoff
        return backoff

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return RetryPredicate(self._result_predicate, self._exception_predicate)


NO_RETRY_STRATEGY: AsyncRetryStrategy[Any] = NoRetryStrategy()


def empty_result_predicate(result: Optional[List[Any]]) -> bool:
    """Retry on an empty (or None) result."""
    return result is None or len(result) == 0


def has_exception_predicate(error: Optional[BaseException]) -> bool:
    """Retry on any exception."""
    return error is not None


def exception_type_predicate(error: Optional[BaseException], expected_error_type: type) -> bool:
    """Retry on an exception of ``expected_error_type`` (bind the type: ``lambda e: exception_type_predicate(e, T)``)."""
    return isinstance(error, expected_error_type)


class AsyncFunctionDescriptor:
    """An async operator's settings as PyFlink's ``AsyncDataStream`` records them: the function, the timeout,
    the capacity, the retry strategy and the output mode."""

    class OutputMode(enum.Enum):
        ORDERED = 0
        UNORDERED = 1

    def __init__(
        self,
        async_function: AsyncFunction[Any, Any],
        timeout: Any,
        capacity: int,
        async_retry_strategy: AsyncRetryStrategy[Any],
        output_mode: AsyncFunctionDescriptor.OutputMode,
    ) -> None:
        self.async_function = async_function
        self.timeout = timeout
        self.capacity = capacity
        self.async_retry_strategy = async_retry_strategy
        self.output_mode = output_mode


__all__ = [
    "AsyncFunction",
    "AsyncFunctionDescriptor",
    "AsyncRetryPredicate",
    "AsyncRetryStrategy",
    "ExponentialBackoffDelayRetryStrategy",
    "FixedDelayRetryStrategy",
    "NO_RETRY_STRATEGY",
    "NoRetryStrategy",
    "RetryPredicate",
    "empty_result_predicate",
    "exception_type_predicate",
    "has_exception_predicate",
]
