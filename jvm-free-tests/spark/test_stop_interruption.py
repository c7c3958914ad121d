"""A query stopped mid-batch: the batch function's Py4J error becomes a short ``BatchInterruptedError``
(``spark/error_transport.py``), because Spark matches its stop check, a regular expression run recursively per
character, over the whole error text, and a long Py4J traceback overflows the stream thread's stack."""

from __future__ import annotations

from typing import Any, List, Optional

import pytest

from pyspark_flinkish.spark.error_transport import BatchInterruptedError, interruption_from, stops_cleanly


class _JavaClass:
    def __init__(self, name: str) -> None:
        self.name = name

    def getName(self) -> str:  # noqa: N802 (Java's name)
        return self.name


class _JavaThrowable:
    """What Py4J hands Python for a Java exception: ``getClass().getName()`` and ``getCause()``."""

    def __init__(self, name: str, cause: Optional[_JavaThrowable] = None) -> None:
        self.cls, self.cause = _JavaClass(name), cause

    def getClass(self) -> _JavaClass:  # noqa: N802
        return self.cls

    def getCause(self) -> Optional[_JavaThrowable]:  # noqa: N802
        return self.cause


class _Py4JError(Exception):
    def __init__(self, java: _JavaThrowable) -> None:
        super().__init__("An error occurred while calling o1.collect.\n" + "\tat a.b.C.d(C.java:1)\n" * 5_000)
        self.java_exception = java


def test_an_interrupted_job_deep_in_the_chain_becomes_a_short_error_naming_the_interruption() -> None:
    java = _JavaThrowable("org.apache.spark.SparkException", _JavaThrowable("java.lang.InterruptedException"))
    try:
        try:
            raise _Py4JError(java)
        except _Py4JError as inner:
            msg = "while writing the sink"
            raise RuntimeError(msg) from inner
    except RuntimeError as exc:
        stopped = interruption_from(exc)
    assert isinstance(stopped, BatchInterruptedError)
    text = str(stopped)
    assert text.startswith("py4j.protocol.Py4JJavaError: An error occurred while calling")
    assert text.endswith("java.lang.InterruptedException") and len(text) < 120


def test_a_failure_is_not_taken_for_a_stop() -> None:
    failure = _Py4JError(_JavaThrowable("org.apache.spark.SparkException", _JavaThrowable("java.io.IOException")))
    assert interruption_from(failure) is None
    assert interruption_from(ValueError("java.lang.InterruptedException in a user's message")) is None


def test_stops_cleanly_raises_the_short_error_without_its_long_context_and_other_errors_as_they_are() -> None:
    calls: List[Any] = []

    def interrupted(df: Any, batch_id: int) -> None:
        calls.append(batch_id)
        raise _Py4JError(_JavaThrowable("java.nio.channels.ClosedByInterruptException"))

    with pytest.raises(BatchInterruptedError) as info:
        stops_cleanly(interrupted)(None, 7)
    assert calls == [7] and info.value.__suppress_context__ and info.value.__cause__ is None

    def failing(df: Any, batch_id: int) -> None:
        msg = "a bug"
        raise KeyError(msg)

    with pytest.raises(KeyError):
        stops_cleanly(failing)(None, 8)
