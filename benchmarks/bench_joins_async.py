"""The pieces of the suite's part 6 (``run_all.py --parts 6``): an interval join of two keyed streams and an async
enrichment against a local HTTP lookup server.

* :func:`generate_join` writes two streams (left and right), each ``(key, ts, value, seq)`` as Parquet, one file per
  micro-batch on each side, and computes the expected join pairs ``(left seq, right seq)`` with numpy.
* :class:`LookupServer` is an HTTP/1.1 server (asyncio streams, keep-alive) on 127.0.0.1 in a thread of the
  benchmark's process: ``GET /lookup/<key>`` answers :func:`lookup_value` of the key after ``latency_ms``, with
  requests served concurrently. It measures per client (an ``X-Client`` header: one per operator instance, i.e. per
  Spark task) the requests, the peak in flight and the time from its first request to its last response.
* :class:`HttpLookup` is the ``AsyncFunction`` the executors run: one request per element over a pool of keep-alive
  connections (asyncio streams, no HTTP library), returning ``(seq, key, looked-up value)``.
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from bench_common import write_batch

from pyspark_flinkish.datastream.functions import AsyncFunction, ProcessJoinFunction

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
SPAN_MS = 3_600_000  # one hour of event time per stream


# ----------------------------------------------------------------------------------------------- the interval join
def generate_join(
    directory: str, events: int, keys: int, batch_rows: int, disorder_ms: int, lower_ms: int, upper_ms: int, seed: int
) -> Dict[str, Any]:
    """Two streams of ``events`` events each over the same hour (bounded disorder ``disorder_ms``, so no event is late
    for a watermark ``max - disorder_ms - 1``), in ``<directory>/left`` and ``<directory>/right`` with the same number
    of files, and the expected interval-join pairs: ``(left seq, right seq)`` for every left ``l`` and right ``r`` of
    the same key with ``l.ts + lower_ms <= r.ts <= l.ts + upper_ms``, sorted."""
    rng = np.random.default_rng(seed + 11)
    sides = {}
    for side in ("left", "right"):
        base = T0 + np.sort(rng.integers(0, SPAN_MS, events, dtype=np.int64))
        ts = base - rng.integers(0, disorder_ms + 1, events, dtype=np.int64)
        key = rng.integers(0, keys, events, dtype=np.int64)
        value = rng.integers(0, 1000, events, dtype=np.int64)
        seq = np.arange(events, dtype=np.int64)
        d = os.path.join(directory, side)
        os.makedirs(d, exist_ok=True)
        files = 0
        for start in range(0, events, batch_rows):
            sl = slice(start, start + batch_rows)
            write_batch(d, files, {"key": key[sl], "ts": ts[sl], "value": value[sl], "seq": seq[sl]})
            files += 1
        sides[side] = (key, ts, seq, d, files)
    lk, lts, lseq, ldir, files = sides["left"]
    rk, rts, rseq, rdir, _ = sides["right"]
    # right sorted by (key, ts); each left event's matches are one contiguous run of it
    span = np.int64(1 << 40)
    order = np.lexsort((rts, rk))
    rpos = rk[order] * span + (rts[order] - T0)
    lo = np.searchsorted(rpos, lk * span + (lts - T0 + lower_ms), side="left")
    hi = np.searchsorted(rpos, lk * span + (lts - T0 + upper_ms), side="right")
    counts = hi - lo
    left_of_pair = np.repeat(lseq, counts)
    starts = np.repeat(lo - np.cumsum(counts) + counts, counts)  # each pair's run start, minus its offset in the output
    right_of_pair = rseq[order][np.arange(int(counts.sum())) + starts]
    pairs = sorted(zip(left_of_pair.tolist(), right_of_pair.tolist()))
    return {"left": ldir, "right": rdir, "events": events, "files": files, "pairs": pairs}


class SeqPair(ProcessJoinFunction):  # type: ignore[type-arg]
    """A join pair as ``(left seq, right seq)``."""

    def process_element(self, left, right, ctx):  # type: ignore[no-untyped-def]
        yield (left.seq, right.seq)


# ----------------------------------------------------------------------------------------------- the async lookup
def lookup_value(key: int) -> int:
    """What the lookup server answers for ``key`` (and so what the expected output holds)."""
    return (key * 7919 + 17) % 100_003


class ClientStats:
    """One client's requests at the server: count, in flight now and at most, first start and last end (s)."""

    __slots__ = ("first", "in_flight", "last", "peak", "requests")

    def __init__(self, now: float) -> None:
        self.requests = self.in_flight = self.peak = 0
        self.first = self.last = now

    def rate(self) -> Optional[float]:
        """Requests per second from its first request's start to its last response."""
        return self.requests / (self.last - self.first) if self.last > self.first else None


class LookupServer:
    """``GET /lookup/<key>`` after ``latency_ms`` on 127.0.0.1 (a free port), HTTP/1.1 with keep-alive; requests run
    concurrently on the server's event loop (its own thread). ``requests``, ``peak_in_flight``,
    ``peak_clients_in_flight`` (clients with a request in flight at once) and ``clients`` (per ``X-Client`` header)
    describe what it served since :meth:`reset`."""

    def __init__(self, latency_ms: float) -> None:
        self.latency = latency_ms / 1000
        self.port = 0
        self.reset()
        self._loop = asyncio.new_event_loop()
        self._server: Optional[asyncio.base_events.Server] = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="lookup-server", daemon=True)

    def start(self) -> LookupServer:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=1024), self._loop)
        self._server = future.result(timeout=30)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def reset(self) -> None:
        self.requests = self.in_flight = self.peak_in_flight = 0
        self.clients_in_flight = self.peak_clients_in_flight = 0
        self.clients: Dict[str, ClientStats] = {}

    def stop(self) -> None:
        async def close() -> None:
            assert self._server is not None
            self._server.close()
            for t in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
                t.cancel()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await reader.readline()
                if not request:
                    return
                client = ""
                while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    if header.lower().startswith(b"x-client:"):
                        client = header.split(b":", 1)[1].strip().decode()
                key = int(request.split()[1].rsplit(b"/", 1)[1])
                loop = asyncio.get_running_loop()
                stats = self.clients.get(client)
                if stats is None:
                    stats = self.clients[client] = ClientStats(loop.time())
                self.requests += 1
                stats.requests += 1
                self.in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
                stats.in_flight += 1
                stats.peak = max(stats.peak, stats.in_flight)
                if stats.in_flight == 1:
                    self.clients_in_flight += 1
                    self.peak_clients_in_flight = max(self.peak_clients_in_flight, self.clients_in_flight)
                try:
                    await asyncio.sleep(self.latency)
                finally:
                    self.in_flight -= 1
                    stats.in_flight -= 1
                    if stats.in_flight == 0:
                        self.clients_in_flight -= 1
                    stats.last = loop.time()
                body = str(lookup_value(key)).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return  # the client went away, or the server stops (a keep-alive connection still open)
        finally:
            writer.close()


class HttpLookup(AsyncFunction):  # type: ignore[type-arg]
    """Looks each element's key up on a :class:`LookupServer`: ``(seq, key, value)``. Connections are opened on
    demand and reused (at most as many as the operator's capacity are busy at once)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._idle: List[Tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._client = b""

    def open(self, runtime_context: Any) -> None:
        self._idle = []
        self._client = uuid.uuid4().hex.encode()  # this operator instance (one per Spark task)

    async def async_invoke(self, value):  # type: ignore[no-untyped-def]
        if self._idle:
            reader, writer = self._idle.pop()
        else:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        writer.write(b"GET /lookup/%d HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Client: %s\r\n\r\n" % (value.key, self._client))
        await writer.drain()
        status = await reader.readline()
        if not status.startswith(b"HTTP/1.1 200"):
            msg = f"lookup of key {value.key}: {status!r}"
            raise OSError(msg)
        length = 0
        while True:
            header = await reader.readline()
            if header in (b"\r\n", b"\n", b""):
                break
            if header.lower().startswith(b"content-length:"):
                length = int(header.split(b":", 1)[1])
        body = await reader.readexactly(length)
        self._idle.append((reader, writer))
        return [(value.seq, value.key, int(body))]

    def close(self) -> None:
        idle, self._idle = self._idle, []
        for _, writer in idle:
            try:
                writer.close()
            except RuntimeError:
                pass  # the operator's event loop is already closed: the sockets go with the transports

    def __getstate__(self) -> Dict[str, Any]:
        return {"port": self.port, "_idle": [], "_client": b""}


import sys  # noqa: E402

from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # ship this module's classes to workers by value
