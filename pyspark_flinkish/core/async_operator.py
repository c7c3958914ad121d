"""Flink's async wait operator (``AsyncDataStream.ordered_wait`` / ``unordered_wait``), engine-independent.

The operator keeps the elements it receives and runs their requests when the micro-batch's element phase ends:
before it forwards a watermark, at the end of the micro-batch (:meth:`AsyncWaitOperator.on_periodic_emit`) and at
the end of input. Requests run concurrently on the operator's own asyncio event loop (a thread, so that a caller
inside a running loop, such as a notebook, can wait for them), with PyFlink's rules:

* **capacity**: at most ``capacity`` elements are in the queue; a new request starts only when an element leaves
  it (ordered: the head, once completed; unordered: any completed element).
* **emission**: ordered mode emits results in input order, unordered mode in completion order. Each result carries
  its input element's timestamp. Nothing is emitted across a watermark: every pending request completes before
  the operator forwards a watermark, so unordered mode reorders only between two watermarks, as Flink's.
* **timeout** (if > 0): counted from the request's first attempt; when it passes, the function's ``timeout(value)``
  gives the results (by default it raises ``TimeoutError``, failing the job) and a later result is ignored. As in
  PyFlink, the timed-out attempt is not cancelled: it runs on and its result is dropped (requests still running
  when the operator closes are cancelled then).
* **retries** (``*_with_retry``): see :mod:`.async_functions`; a retry happens only before the timeout.
  Timeouts and backoffs are measured on the event loop's clock (real time: requests are real I/O), never on the
  pipeline's processing-time clock (a ``ManualClock`` does not move them).
* **failures**: an exception from ``async_invoke`` (not retried), from ``timeout``, or a result that is None or
  not iterable fails the job (with the last such failure when several requests failed before the operator looked,
  as in PyFlink) with a :class:`UserFunctionError` naming the operator, the function's class and the
  element (PyFlink: ``Error happens inside the class ... during handling input ...``).

A micro-batch therefore ends with no request in flight: the Spark executors commit a batch only after all its
requests completed, and the operator has no state to checkpoint.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import traceback
from typing import Any, Callable, Deque, Iterable, List, Optional

from .async_functions import AsyncFunction, AsyncRetryStrategy
from .clock import Clock
from .errors import UserFunctionError
from .operators import StreamOperator, call_user, close_function, open_function, short
from .records import Output, StreamRecord


class AsyncLoop:
    """An asyncio event loop running in a daemon thread: one per async operator instance, for its lifetime (so that
    clients a function creates on it, such as HTTP sessions, stay usable across micro-batches)."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=f"async-io {name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coroutine: Any) -> Any:
        """Run ``coroutine`` on the loop and wait for its result in the calling thread."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def stop(self) -> None:
        """Cancel what still runs on the loop (timed-out requests), then stop and close it."""
        if self.loop.is_closed():
            return

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=1.0)

        try:
            asyncio.run_coroutine_threadsafe(cancel_all(), self.loop).result(timeout=5.0)
        except TimeoutError:
            pass  # a request blocks the loop's thread (synchronous code in async_invoke): leave the daemon thread
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=5.0)
            if not self._thread.is_alive():
                self.loop.close()


class _Entry:
    """One element in the queue: its record, its results once completed, and whether it completed."""

    __slots__ = ("done", "record", "results", "started")

    def __init__(self, record: StreamRecord) -> None:
        self.record = record
        self.results: List[Any] = []
        self.done = False
        self.started = 0.0


class AsyncWaitOperator(StreamOperator):
    """PyFlink's async wait operator: ``function.async_invoke`` per element, at most ``capacity`` in flight, results
    in input order (``ordered``) or completion order, with ``timeout_ms`` (<= 0: none) and ``retry_strategy``."""

    def __init__(
        self,
        name: str,
        function: AsyncFunction[Any, Any],
        timeout_ms: int,
        capacity: int,
        retry_strategy: AsyncRetryStrategy[Any],
        ordered: bool,
    ) -> None:
        super().__init__(name)
        self.function = function
        self.timeout = timeout_ms / 1000
        self.capacity = capacity
        self.retry_strategy = retry_strategy
        self.ordered = ordered
        predicate = retry_strategy.get_retry_predicate()
        self._result_predicate = predicate.result_predicate()
        self._exception_predicate = predicate.exception_predicate()
        self.retry_enabled = self._result_predicate is not None or self._exception_predicate is not None
        self._buffer: List[StreamRecord] = []
        self._loop: Optional[AsyncLoop] = None
        self._class_name = str(type(function))
        for metric in ("async_requests", "async_retries", "async_timeouts", "async_in_flight_max"):
            self.metrics.setdefault(metric, 0)

    # ------------------------------------------------------------------ the operator protocol
    def open(self, output: Output, clock: Clock) -> None:
        super().open(output, clock)
        open_function(self.function, self.name, subtasks=self.subtasks)

    def process_element(self, record: StreamRecord) -> None:
        self._buffer.append(record)

    def process_watermark(self, watermark: int) -> None:
        self.flush()
        super().process_watermark(watermark)

    def on_periodic_emit(self) -> None:
        self.flush()

    def end_input(self) -> None:
        self.flush()

    def close(self) -> None:
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.stop()
        close_function(self.function, self.name)

    @property
    def pending(self) -> int:
        """Elements received and not yet requested (0 after every flush)."""
        return len(self._buffer)

    def flush(self) -> None:
        """Run the requests of every element received so far and emit their results, in the mode's order."""
        if not self._buffer:
            return
        records, self._buffer = self._buffer, []
        if self._loop is None:
            self._loop = AsyncLoop(self.name)
        emitted = self._loop.run(self._run(records))
        for entry in emitted:
            for value in entry.results:
                self.output.collect(StreamRecord(value, entry.record.timestamp))

    # ------------------------------------------------------------------ the queue (on the event loop)
    async def _run(self, records: List[StreamRecord]) -> List[_Entry]:
        """Start the records' requests, at most ``capacity`` in the queue; return the entries in emission order."""
        entries: Deque[_Entry] = collections.deque()  # ordered: in input order, until emitted
        completed: Deque[_Entry] = collections.deque()  # unordered: in completion order, until emitted
        emitted: List[_Entry] = []
        changed = asyncio.Event()
        failure: List[BaseException] = []
        tasks: List[asyncio.Task[None]] = []
        in_queue = 0

        def on_done(entry: _Entry) -> None:
            if not self.ordered:
                completed.append(entry)
            changed.set()

        def on_failure(error: BaseException) -> None:
            failure[:] = [error]  # PyFlink keeps the last failure before the operator looks
            changed.set()

        def emit_completed() -> int:
            n = 0
            if self.ordered:
                while entries and entries[0].done:
                    emitted.append(entries.popleft())
                    n += 1
            else:
                while completed:
                    emitted.append(completed.popleft())
                    n += 1
            return n

        async def wait_for_change() -> None:
            changed.clear()
            await changed.wait()
            if failure:
                for t in tasks:
                    t.cancel()
                raise failure[0]

        loop = asyncio.get_running_loop()
        for record in records:
            in_queue -= emit_completed()
            while in_queue >= self.capacity:
                await wait_for_change()
                in_queue -= emit_completed()
            entry = _Entry(record)
            if self.ordered:
                entries.append(entry)
            in_queue += 1
            self.metrics["async_in_flight_max"] = max(self.metrics["async_in_flight_max"], in_queue)
            tasks.append(loop.create_task(self._request(entry, on_done, on_failure)))
        in_queue -= emit_completed()
        while in_queue > 0:
            await wait_for_change()
            in_queue -= emit_completed()
        if failure:
            raise failure[0]
        return emitted

    async def _request(
        self, entry: _Entry, on_done: Callable[[_Entry], None], on_failure: Callable[[BaseException], None]
    ) -> None:
        """One element's request: its attempts, then its timeout if they did not finish in time."""
        self._count("async_requests")
        value = entry.record.value
        entry.started = asyncio.get_running_loop().time()
        attempts = asyncio.get_running_loop().create_task(self._attempts(entry, on_done, on_failure))
        await asyncio.wait({attempts}, timeout=self.timeout if self.timeout > 0 else None)
        if attempts.done() and not entry.done:  # the attempts ended without completing: a BaseException
            entry.done = True
            error = asyncio.CancelledError() if attempts.cancelled() else attempts.exception()
            on_failure(self._failure(value, error or RuntimeError("the request ended without a result")))
            return
        if entry.done:
            return
        entry.done = True  # the attempts go on; whatever they give now is ignored, as in PyFlink
        self._count("async_timeouts")
        try:
            results = call_user(self.function.timeout, lambda: self._where(value, "timeout"), value)
        except UserFunctionError as error:
            on_failure(error)
            return
        self._complete(entry, results, on_done, on_failure)

    async def _attempts(
        self, entry: _Entry, on_done: Callable[[_Entry], None], on_failure: Callable[[BaseException], None]
    ) -> None:
        value = entry.record.value
        attempt = 1
        while True:
            result: Any = None
            error: Optional[BaseException] = None
            try:
                result = await self.function.async_invoke(value)
            except Exception as exc:  # the function's failure (PyFlink catches Exception, not BaseException)
                error = exc
            if entry.done:
                return  # timed out meanwhile
            if self.retry_enabled and self._wants_retry(value, result, error, on_failure):
                if entry.done or not self.retry_strategy.can_retry(attempt):
                    pass
                elif asyncio.get_running_loop().time() - entry.started <= self.timeout:
                    backoff = self.retry_strategy.get_backoff_time_millis(attempt) / 1000
                    self._count("async_retries")
                    await asyncio.sleep(backoff)
                    if entry.done:
                        return
                    attempt += 1
                    continue
            if entry.done:
                return
            entry.done = True
            if error is not None:
                on_failure(self._failure(value, error))
                return
            self._complete(entry, result, on_done, on_failure)
            return

    def _wants_retry(
        self, value: Any, result: Any, error: Optional[BaseException], on_failure: Callable[[BaseException], None]
    ) -> bool:
        """Whether the strategy's predicates ask for another attempt after this one (PyFlink's rule)."""
        try:
            if result is not None and self._result_predicate is not None:
                return bool(call_user(self._result_predicate, lambda: self._where(value, "retry result predicate"), result))
            if error is not None and self._exception_predicate is not None:
                return bool(
                    call_user(self._exception_predicate, lambda: self._where(value, "retry exception predicate"), error)
                )
        except UserFunctionError as exc:
            on_failure(exc)
            return False
        return False

    def _complete(
        self, entry: _Entry, results: Any, on_done: Callable[[_Entry], None], on_failure: Callable[[BaseException], None]
    ) -> None:
        entry.done = True
        if results is None or not isinstance(results, Iterable):
            what = "cannot be none" if results is None else "should be of list type"
            error = RuntimeError(
                f"The result of AsyncFunction {what}, please check the methods 'async_invoke' and 'timeout' of "
                f"class '{self._class_name}'."
            )
            on_failure(self._failure(entry.record.value, error))
            return
        entry.results = list(results)
        on_done(entry)

    def _where(self, value: Any, method: str) -> str:
        return f"{self.name}: {method} of class {self._class_name} during handling input {short(value)}"

    def _failure(self, value: Any, error: BaseException) -> UserFunctionError:
        """The job's failure for ``value``'s request: PyFlink's message, the operator, the class and the element."""
        text = str(error)
        text = text if len(text) <= 500 else f"{text[:500]}... ({len(text)} characters)"
        trace = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        msg = (
            f"{self.name}: error happens inside the class '{self._class_name}' during handling input "
            f"{short(value)}: {type(error).__name__}: {text}\n{trace}"
        )
        failure = UserFunctionError(msg)
        failure.__cause__ = error
        return failure


def async_operators(operators: Iterable[Any]) -> List[AsyncWaitOperator]:
    """The async wait operators among ``operators``, in their order."""
    return [op for op in operators if isinstance(op, AsyncWaitOperator)]


__all__ = [
    "AsyncLoop",
    "AsyncWaitOperator",
    "async_operators",
]
