"""A TCP proxy that puts the API server at a distance: each direction delayed by RTT/2, and the round trips counted.

The measured tools reach the local control plane through it (their kubeconfig's server names the proxy's port; TLS
passes through untouched, and the server's certificate for 127.0.0.1 still matches). Each direction of each
connection is a queue of (delivery time, bytes): a reader takes bytes as soon as they come and stamps them, a writer
hands them on at their time, so bytes keep their order and a bulk transfer is delayed once, not once per chunk. A
new connection's first bytes to the server are held one RTT longer, for the TCP handshake the local accept did not
cost.

The proxy also records every chunk it passes (connection, direction, when the client sent or received it, size):
`critical_path` derives from them the round trips one after another (bench/why.md, "Round trips on the critical
path").
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

UP = "up"  # client -> server
DOWN = "down"  # server -> client
CHUNK = 65536
# A client flight smaller than this is taken for HTTP/2 flow control, not a request: a TLS 1.3 record adds 22 bytes,
# so a WINDOW_UPDATE for the connection and the stream together is 48 bytes, a PING or SETTINGS acknowledgement 39
# and 31. HTTP/1.1 requests (kapply's) are hundreds of bytes.
CONTROL_BYTES = 50


@dataclass(frozen=True)
class Chunk:
    """Bytes the proxy passed: `t` is when the client sent them (UP) or received them (DOWN), in seconds of the
    proxy's clock."""

    conn: int
    direction: str
    t: float
    size: int


@dataclass(frozen=True)
class PathCount:
    """What `critical_path` found: the longest chain of round trips, the client's flights (requests and TLS
    handshake flights) and the connections opened."""

    round_trips: int
    flights: int
    connections: int


def _flights(chunks: Sequence[Chunk], min_bytes: int) -> list[list[Chunk]]:
    """The chunks grouped, per connection, into flights: runs in one direction. Client flights of fewer than
    min_bytes in all (flow control) are dropped, and the server chunks around them become one flight."""
    by_conn: dict[int, list[Chunk]] = {}
    for c in sorted(chunks, key=lambda c: c.t):
        by_conn.setdefault(c.conn, []).append(c)
    flights: list[list[Chunk]] = []
    for conn_chunks in by_conn.values():
        runs: list[list[Chunk]] = []
        for c in conn_chunks:
            if runs and runs[-1][0].direction == c.direction:
                runs[-1].append(c)
            else:
                runs.append([c])
        kept: list[list[Chunk]] = []
        for run in runs:
            if run[0].direction == UP and sum(c.size for c in run) < min_bytes:
                continue
            if kept and kept[-1][0].direction == run[0].direction:
                kept[-1].extend(run)
            else:
                kept.append(run)
        flights += kept
    return flights


def critical_path(chunks: Sequence[Chunk], min_bytes: int = CONTROL_BYTES) -> PathCount:
    """The longest chain of client flights each sent after an answer to the one before it had reached the client,
    on any connection. A flight's depth is one more than the deepest flight answered so far (two more for a
    connection's first flight: the TCP handshake); server bytes delivered on a connection answer that connection's
    latest client flight. An upper bound of the dependencies: a flight sent after an unrelated answer counts as
    waiting for it."""
    starts: list[tuple[float, int, int]] = []  # (time, 0 for a client flight's start / 1 for server bytes, index)
    flights = _flights(chunks, min_bytes)
    for i, flight in enumerate(flights):
        if flight[0].direction == UP:
            starts.append((flight[0].t, 1, i))
        else:
            starts += [(c.t, 0, i) for c in flight]  # server bytes first at the same instant
    answered = 0
    latest: dict[int, int] = {}  # connection -> depth of its latest client flight
    longest = 0
    count = 0
    for _, kind, i in sorted(starts):
        conn = flights[i][0].conn
        if kind == 0:
            answered = max(answered, latest.get(conn, 0))
            continue
        depth = answered + (1 if conn in latest else 2)
        latest[conn] = depth
        longest = max(longest, depth)
        count += 1
    return PathCount(round_trips=longest, flights=count, connections=len({c.conn for c in chunks}))


class DelayProxy:
    """The proxy on 127.0.0.1 (a free port), on an event loop of its own thread: `start`, then `take` the chunks of
    a step, `stop` at the end. Every connection goes to upstream_host:upstream_port."""

    def __init__(self, upstream_host: str, upstream_port: int, rtt_s: float, connect_rtt: bool = True) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.rtt_s = rtt_s
        self.connect_rtt = connect_rtt
        self.port = 0
        self._chunks: list[Chunk] = []
        self._lock = threading.Lock()
        self._next_conn = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self) -> int:
        """Listen and serve on a thread; returns the port."""
        ready = threading.Event()
        loop = asyncio.new_event_loop()
        self._loop = loop

        async def listen() -> None:
            self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(listen())
            loop.run_forever()

        self._thread = threading.Thread(target=run, name="delay-proxy", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("delay proxy did not start listening within 10 s")
        return self.port

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
        self._loop = self._thread = None

    def take(self) -> list[Chunk]:
        """The chunks passed since the last `take` (or `start`)."""
        with self._lock:
            chunks, self._chunks = self._chunks, []
        return chunks

    def _record(self, conn: int, direction: str, t: float, size: int) -> None:
        with self._lock:
            self._chunks.append(Chunk(conn, direction, t, size))

    async def _accept(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        conn = self._next_conn
        self._next_conn += 1
        accepted = time.monotonic()
        try:
            server_r, server_w = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_w.close()
            self._tasks.discard(task)
            return
        half = self.rtt_s / 2
        first_up = accepted + (self.rtt_s + half if self.connect_rtt else half)
        try:
            await asyncio.gather(
                self._pipe(conn, UP, client_r, server_w, half, first_up),
                self._pipe(conn, DOWN, server_r, client_w, half, 0.0),
            )
        except (OSError, asyncio.CancelledError):  # a peer gone, or `stop`: the task ends quietly
            pass
        finally:
            for w in (client_w, server_w):
                w.close()
            self._tasks.discard(task)

    async def _pipe(
        self,
        conn: int,
        direction: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        delay: float,
        not_before: float,
    ) -> None:
        """Read as fast as the sender sends, stamp each chunk with its delivery time, deliver in order at that time.
        An end of stream is passed on (half-close) at its own delivery time."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def read() -> None:
            while True:
                try:
                    data = await reader.read(CHUNK)
                except OSError:
                    data = b""
                now = time.monotonic()
                if data and direction == UP:
                    self._record(conn, UP, now, len(data))
                await queue.put((max(now + delay, not_before), data))
                if not data:
                    return

        async def write() -> None:
            while True:
                at, data = await queue.get()
                wait = at - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    with contextlib.suppress(OSError):
                        if writer.can_write_eof():
                            writer.write_eof()
                    return
                writer.write(data)
                if direction == DOWN:
                    self._record(conn, DOWN, time.monotonic(), len(data))
                await writer.drain()

        await asyncio.gather(read(), write())
