"""HTTP/1.1 for the cluster client: h11 over asyncio streams, ~10 ms to import where aiohttp takes ~90 (bench/why.md,
"Start-up: the HTTP transport").

What kapply's requests to the API server need and nothing more: a pool of keep-alive connections (at most `limit` in
use at once), GETs pipelined on them (below), a connection of its own per streamed answer (a watch, a followed log),
TLS with the kubeconfig's context, an HTTP proxy (CONNECT tunnelling for https, the absolute URL for http),
`Content-Length` and chunked bodies, gzip, and a request on a kept-alive connection that the server had closed
meanwhile sent once more on a new one when it is idempotent (as aiohttp and urllib3 do). Every failure is a
TransportError, which `failure_of` classifies. A request sent once more says so and why in a debug line (`--debug`),
beside the cluster client's line for its answer.

Pipelining (issue 33, bench/why.md "Pipelined GETs"): a GET that finds no idle connection is written at once on a
connection busy with GETs only, the one with the shortest queue, up to DEPTH requests on one connection, rather than
opening a connection (TCP and TLS: 2 round trips on the way) or waiting for one: the API server (Go's net/http over
HTTP/1.1) reads pipelined requests in turn and answers them in order, so a burst of LISTs (a delete's ~55, one per
listable type) goes out in one wave on the connections already open. Each request on a connection reads its own answer
in turn (`_Turn`: the request before it passes the turn on when its answer was read whole), through the connection's
one h11 state machine, which keeps the bytes of the answers after the current one until its next cycle; the later
requests' bytes were written early, serialized by a state machine of their own. Only GETs are pipelined, and only
behind GETs: a write, a HEAD or a stream never waits behind another request's answer, nor does a GET queue behind a
write; GETs do not pipeline through an HTTP proxy (plain http: a proxy may not keep the order), nor while a request
waits for a connection (which it would then wait for longer). A connection that fails or times out, or on which a
request was cancelled after its bytes were written, is out of step: closed once its queue is empty; the requests queued
behind the failure are sent once more on another connection (they are GETs; a request is sent again at most once,
whatever the reason), the one whose answer was being read fails as it would alone (a stale kept-alive connection
aside, retried as before), and no request ever reads an answer that is not its own.
"""

from __future__ import annotations

import asyncio
import base64
import enum
import errno
import logging
import socket
import ssl
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

import h11

READ_SIZE = 256 * 1024
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
# requests on one connection at once (the one being answered included): GETs pipelined behind GETs; a delete's ~55
# LISTs fit on the 5 connections of a command's first wave (bench/why.md, "Pipelined GETs")
DEPTH = 12

_log = logging.getLogger(__name__)
_STALE = "the server had closed the kept-alive connection it was sent on"  # why a request is sent again


class TransportError(Exception):
    """A request that got no complete answer."""


class ConnectError(TransportError):
    """No connection to `host:port`: `os_error` says why (refused, unknown host, TLS, a timeout). Nothing was sent."""

    def __init__(self, host: str, port: int, os_error: BaseException) -> None:
        self.host, self.port, self.os_error = host, port, os_error
        super().__init__(f"Cannot connect to host {host}:{port} [{os_error or type(os_error).__name__}]")


class Disconnected(TransportError):
    """The connection was closed or reset before the answer was complete."""

    def __init__(self, message: str = "Server disconnected") -> None:
        super().__init__(message)


class ReadTimeout(TransportError, TimeoutError):
    """No answer (or no more of it) within the read timeout: the request may have been processed."""


class ProxyError(TransportError):
    """The proxy would not open a tunnel to the server."""


class ProtocolError(TransportError):
    """An answer that is not HTTP/1.1."""


class Failure(enum.Enum):
    """Why a request got no answer, as far as a client can tell; which of them is worth trying again is the
    caller's policy (kapply.resources.cluster.retry_delay)."""

    REFUSED = "refused"  # nothing listens at the address: the request was never sent
    UNKNOWN_HOST = "unknown host"  # the name does not resolve: never sent
    TLS = "TLS"  # the handshake failed: a certificate not trusted, a name it does not carry; never sent
    TIMEOUT = "timeout"  # no connection, or no answer, in time: it may have been processed
    RESET = "reset"  # the connection was reset or closed before the answer was complete (Go's "EOF")
    OTHER = "other"  # anything else (an unreachable network, a proxy that failed)


_RESET_ERRNOS = frozenset({errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED})
# OpenSSL's verify codes for a chain that does not lead to a trusted CA (self-signed: 18, 19; issuer not found: 20,
# 21), which Go's x509 calls one thing
_ISSUER_UNKNOWN = frozenset({18, 19, 20, 21})
_UNKNOWN_AUTHORITY = "x509: certificate signed by unknown authority"


def failure_of(error: BaseException) -> Failure:
    """Which failure a transport error (or a timeout) is."""
    cause = error.os_error if isinstance(error, ConnectError) else error
    if isinstance(cause, ssl.SSLError):
        return Failure.TLS
    if isinstance(cause, socket.gaierror):
        return Failure.UNKNOWN_HOST
    if isinstance(cause, TimeoutError):
        return Failure.TIMEOUT
    if isinstance(error, Disconnected):
        return Failure.RESET
    if isinstance(cause, ConnectionRefusedError):
        return Failure.REFUSED
    if isinstance(cause, ConnectionResetError | BrokenPipeError | ConnectionAbortedError) or (
        isinstance(cause, OSError) and cause.errno in _RESET_ERRNOS
    ):
        return Failure.RESET
    return Failure.OTHER


def in_words(error: BaseException, host: str, port: int | None) -> str:
    """A request's failure to connect to `host:port` in the words of Go's net/http, as kapp and kubectl say it
    (`dial tcp 127.0.0.1:1: connect: connection refused`); any other failure named by its type (a timeout's own
    message is empty)."""
    if isinstance(error, ConnectError):
        host, port = error.host, error.port
    address = f"{host}:{port}" if port is not None else host
    failure = failure_of(error)
    cause = error.os_error if isinstance(error, ConnectError) else error
    if failure is Failure.REFUSED:
        return f"dial tcp {address}: connect: connection refused"
    if failure is Failure.UNKNOWN_HOST:
        code = cause.errno if isinstance(cause, OSError) else None
        unknown = code in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME))
        why = "no such host" if unknown else (cause.strerror if isinstance(cause, OSError) else "") or str(cause)
        return f"dial tcp: lookup {host}: {why[:1].lower()}{why[1:]}"
    if failure is Failure.TLS:
        if isinstance(cause, ssl.SSLCertVerificationError):
            why = _UNKNOWN_AUTHORITY if cause.verify_code in _ISSUER_UNKNOWN else cause.verify_message or cause.reason
            return f"tls: failed to verify certificate: {why}"
        reason = cause.reason if isinstance(cause, ssl.SSLError) else None
        return f"tls: handshake failed: {reason or str(cause) or type(cause).__name__}"
    if failure is Failure.TIMEOUT and isinstance(error, ConnectError):
        return f"dial tcp {address}: i/o timeout"
    text = str(error).strip()
    name = type(error).__name__
    return f"{name}: {text}" if text else f"{name} (no answer from the server)"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where requests go: the server's `scheme://host:port`, TLS, and the proxy in between (None: direct)."""

    host: str
    port: int
    tls: ssl.SSLContext | None
    server_hostname: str | None = None  # the name the certificate must carry, when not `host`
    proxy: str | None = None  # http://[user:password@]host:port

    @classmethod
    def of(cls, server: str, tls: ssl.SSLContext | None, *, server_hostname: str | None, proxy: str | None) -> Endpoint:
        url = urlsplit(server)
        port = url.port or (443 if url.scheme == "https" else 80)
        return cls(url.hostname or "", port, tls if url.scheme == "https" else None, server_hostname, proxy)

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.tls is not None else 80
        return host if self.port == default else f"{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    reason: str
    headers: list[tuple[bytes, bytes]]  # names in lower case, in order
    body: bytes = b""

    def header(self, name: str) -> str | None:
        return next(iter(self.header_values(name)), None)

    def header_values(self, name: str) -> list[str]:
        key = name.lower().encode()
        return [value.decode("latin-1") for found, value in self.headers if found == key]


@dataclass(eq=False, slots=True)
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    protocol: h11.Connection = field(default_factory=lambda: h11.Connection(h11.CLIENT))
    used: bool = False  # has answered a request already: the server may have closed it since
    queued: int = 0  # requests written on it whose answers were not read yet (or given up): 0 when idle
    pipelining: bool = False  # every request queued is a GET: more GETs may be written behind them
    in_step: bool = True  # False: an answer on it will be read by no request: closed once its queue is empty
    last: asyncio.Future[bool] | None = None  # the `done` of the last request queued (`_Turn`)

    def reusable(self) -> bool:
        return self.protocol.our_state is h11.IDLE and self.open()

    def open(self) -> bool:
        return not self.reader.at_eof() and not self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()


@dataclass(eq=False, slots=True)
class _Turn:
    """A request's place in its connection's queue: it reads its answer once `before` (the `done` of the request
    before it, None for the first) is True; False: the connection went out of step first, and the request's answer
    will not be read there. Its own `done` is set the same way when it leaves the connection."""

    before: asyncio.Future[bool] | None
    done: asyncio.Future[bool]


class _Behind(Exception):
    """A request queued behind one whose answer was not read (a failure, a cancellation): never answered there."""


class _Resend(Exception):
    """An idempotent request sent on a connection that went away before its answer came: once more on another. Its
    argument says why, for the debug line."""


def _serialized(protocol: h11.Connection, request: h11.Request, body: bytes | None) -> bytes:
    data = protocol.send(request)
    if body:
        data += protocol.send(h11.Data(data=body))
    return data + protocol.send(h11.EndOfMessage())


async def _open(endpoint: Endpoint, timeout: float | None) -> _Connection:
    """A connection to the endpoint, through its proxy, TLS done; ConnectError when there is none."""
    target = urlsplit(endpoint.proxy) if endpoint.proxy else None
    host = (target.hostname or "") if target else endpoint.host
    port = (target.port or 80) if target else endpoint.port
    tunnel = target is not None and endpoint.tls is not None
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await _dial(host, port, None if target else endpoint, timeout)
            if tunnel:
                await _tunnel(reader, writer, endpoint)
                await writer.start_tls(endpoint.tls, server_hostname=endpoint.server_hostname or endpoint.host)  # type: ignore[arg-type]
    except TransportError:
        raise
    except (OSError, TimeoutError) as e:  # ssl.SSLError and socket.gaierror are OSErrors
        raise ConnectError(host, port, e) from e
    return _Connection(reader, writer)


async def _dial(
    host: str, port: int, endpoint: Endpoint | None, timeout: float | None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A TCP connection to the first of `host`'s addresses that takes it (the first one's error when none does), with
    the endpoint's TLS when `endpoint` is given. Each address is tried in turn rather than by asyncio, which joins
    different errors into one plain OSError ("Multiple exceptions") and loses a refusal's errno."""
    loop = asyncio.get_running_loop()
    addresses = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    first: OSError | None = None
    for family, _, proto, _, address in addresses:
        tls = endpoint.tls if endpoint else None
        try:
            return await asyncio.open_connection(
                str(address[0]),
                int(address[1]),
                family=family,
                proto=proto,
                ssl=tls,
                server_hostname=(endpoint.server_hostname or endpoint.host) if endpoint and tls else None,
                ssl_handshake_timeout=timeout if tls else None,
            )
        except ssl.SSLError:
            raise  # the server answered: another address of it would not trust us more
        except OSError as e:
            first = first or e
    raise first or OSError(f"{host} has no address")


async def _tunnel(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, endpoint: Endpoint) -> None:
    """Ask the proxy for a tunnel to the endpoint (CONNECT)."""
    headers = [("Host", endpoint.authority)] + _proxy_authorization(endpoint.proxy)
    protocol = h11.Connection(h11.CLIENT)
    writer.write(
        protocol.send(h11.Request(method="CONNECT", target=f"{endpoint.host}:{endpoint.port}", headers=headers))
    )
    await writer.drain()
    while True:
        event = protocol.next_event()
        if event is h11.NEED_DATA:
            data = await reader.read(READ_SIZE)
            if not data:
                raise ProxyError(f"the proxy closed the connection before answering CONNECT {endpoint.authority}")
            protocol.receive_data(data)
            continue
        if isinstance(event, h11.Response | h11.InformationalResponse) and event.status_code == 200:
            return
        status = getattr(event, "status_code", "?")
        raise ProxyError(f"the proxy answered {status} to CONNECT {endpoint.authority}")


def _proxy_authorization(proxy: str | None) -> list[tuple[str, str]]:
    url = urlsplit(proxy or "")
    if url.username is None:
        return []
    login = f"{unquote(url.username)}:{unquote(url.password or '')}".encode()
    return [("Proxy-Authorization", f"Basic {base64.b64encode(login).decode()}")]


async def _send(connection: _Connection, request: h11.Request, body: bytes | None) -> None:
    connection.writer.write(_serialized(connection.protocol, request, body))
    await _drain(connection)


async def _drain(connection: _Connection) -> None:
    try:
        await connection.writer.drain()
    except OSError as e:
        raise Disconnected(f"Connection lost: {e}") from e


async def _event(connection: _Connection, timeout: float | None) -> object:
    """The next event of the answer, reading as needed, each read within `timeout`."""
    protocol = connection.protocol
    while True:
        try:
            event = protocol.next_event()
        except h11.RemoteProtocolError as e:
            if protocol.their_state is h11.ERROR and connection.reader.at_eof():
                raise Disconnected() from e
            raise ProtocolError(str(e)) from e
        if event is not h11.NEED_DATA:
            if isinstance(event, h11.ConnectionClosed):
                raise Disconnected()
            return event
        try:
            async with asyncio.timeout(timeout):
                data = await connection.reader.read(READ_SIZE)
        except TimeoutError as e:
            raise ReadTimeout() from e
        except OSError as e:  # a reset
            raise Disconnected(f"Connection lost: {e}") from e
        protocol.receive_data(data)


async def _head(connection: _Connection, timeout: float | None) -> h11.Response:
    while True:
        event = await _event(connection, timeout)
        if isinstance(event, h11.Response):
            return event
        if not isinstance(event, h11.InformationalResponse):
            raise ProtocolError(f"an answer that starts with {type(event).__name__}")


def _decoder(head: h11.Response) -> zlib._Decompress | None:
    encoding = next((v for k, v in head.headers if k == b"content-encoding"), b"identity").strip().lower()
    if encoding == b"gzip":
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding in (b"identity", b""):
        return None
    raise ProtocolError(f"an answer in an encoding not asked for: {encoding.decode('latin-1')}")


async def _chunks(connection: _Connection, head: h11.Response, timeout: float | None) -> AsyncIterator[bytes]:
    """The answer's body as it comes (decompressed); the connection is ready for the next request after the last."""
    decoder = _decoder(head)
    while True:
        event = await _event(connection, timeout)
        if isinstance(event, h11.Data):
            chunk = bytes(event.data) if decoder is None else decoder.decompress(event.data)
            if chunk:
                yield chunk
        elif isinstance(event, h11.EndOfMessage):
            if decoder is not None and (rest := decoder.flush()):
                yield rest
            return


class Pool:
    """Keep-alive connections to one endpoint: at most `limit` of them in use at once (`_slots`), each with one request
    or with GETs pipelined (the module's docstring); streams on connections of their own. Made and used in one event
    loop.

    A slot is a connection in use, from the first request placed on it until its queue is empty: a GET pipelined on
    a busy connection takes none, so the GETs of a burst need no more connections than `limit`, and no more slots than
    the connections they are on; a write waits for a slot only when `limit` connections are busy, as it waited for
    `limit` requests before, and no GET joins a queue while a request waits for a slot."""

    def __init__(
        self, endpoint: Endpoint, *, limit: int, headers: dict[str, str], connect_timeout: float, read_timeout: float
    ) -> None:
        self.endpoint = endpoint
        self.headers = [("Host", endpoint.authority), *headers.items()]
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.limit = limit
        self._slots = asyncio.Semaphore(limit)
        self._idle: list[_Connection] = []
        self._busy: set[_Connection] = set()  # the pool's connections with requests queued, each holding a slot
        self._waiting = 0  # requests waiting for a slot
        self._open: set[_Connection] = set()  # the pool's, idle or in use, and the streams'
        self._streams = 0  # of `_open`, the connections streams hold
        self._opening = 0  # connections a request is opening
        self._warming: list[asyncio.Task[_Connection]] = []  # opened ahead of requests (`warm`), not yet idle
        self._absolute = endpoint.proxy is not None and endpoint.tls is None  # http through a proxy: absolute URLs

    def _target(self, target: str) -> str:
        return f"http://{self.endpoint.authority}{target}" if self._absolute else target

    async def _connect(self) -> _Connection:
        connection = await _open(self.endpoint, self.connect_timeout)
        self._open.add(connection)
        return connection

    def warm(self, requests: int, gets: int = 0) -> None:
        """Open connections now, in the background, until the pool has enough (at most `limit`), idle, in use or
        being opened, for `requests` requests of a connection each and `gets` GETs pipelined DEPTH to one, about to
        be sent together: each would otherwise open one when sent, their TCP and TLS handshakes (2 round trips) then
        on the way of every request after them (bench/why.md). A connection that fails to open is dropped; a request
        opens its own and reports why."""
        count = requests + -(-gets // DEPTH)
        pooled = len(self._open) - self._streams + self._opening + len(self._warming)
        for _ in range(min(count, self.limit) - pooled):
            task = asyncio.ensure_future(self._connect())
            self._warming.append(task)
            task.add_done_callback(self._warmed)

    def _warmed(self, task: asyncio.Task[_Connection]) -> None:
        if task not in self._warming:  # taken by a request, which has it
            return
        self._warming.remove(task)
        if not task.cancelled() and task.exception() is None:
            self._idle.append(task.result())

    async def _connection(self) -> _Connection:
        """An idle connection of the pool, else one being opened ahead (`warm`), else a new one (at most `limit`
        requests are under way)."""
        while self._idle:
            connection = self._idle.pop()
            if connection.reusable():
                return connection
            self._discard(connection)
        while self._warming:
            try:
                return await self._warming.pop(0)
            except TransportError:
                continue  # one of its own, below
        self._opening += 1
        try:
            return await self._connect()
        finally:
            self._opening -= 1

    def _discard(self, connection: _Connection) -> None:
        self._open.discard(connection)
        connection.close()

    async def request(self, method: str, target: str, headers: dict[str, str], body: bytes | None) -> Response:
        """One request on a connection of the pool, its whole answer read."""
        all_headers = [*self.headers, *headers.items()]
        if body is not None:
            all_headers.append(("Content-Length", str(len(body))))
        request = h11.Request(method=method, target=self._target(target), headers=all_headers)
        resend = method in IDEMPOTENT
        while True:
            try:
                return await self._attempt(method, request, body, resend=resend)
            except _Resend as e:
                resend = False  # once
                _log.debug("%s %s: sent again on another connection (%s)", method, target, e)

    async def _attempt(self, method: str, request: h11.Request, body: bytes | None, *, resend: bool) -> Response:
        """The request sent once; _Resend when it may be sent again (`resend`) and the connection went away before its
        answer: a kept-alive connection the server had closed, or a queue broken before the request's turn."""
        connection, turn = await self._place(method, request, body)
        try:
            response = await self._answer(connection, turn, request)
        except _Behind as e:
            self._leave(connection, turn, answered=False)
            if resend:
                raise _Resend("a request before it on its connection got no answer there") from e
            raise Disconnected() from e
        except Disconnected as e:
            self._leave(connection, turn, answered=False)
            if resend and connection.used:
                # a kept-alive connection the server had closed (a restart, an idle timeout): so may the other idle
                # ones be; once more on a new connection
                for idle in self._idle:
                    self._discard(idle)
                self._idle.clear()
                raise _Resend(_STALE) from e
            raise
        except BaseException:
            self._leave(connection, turn, answered=False)
            raise
        self._leave(connection, turn, answered=True)
        return response

    async def _place(self, method: str, request: h11.Request, body: bytes | None) -> tuple[_Connection, _Turn]:
        """The request written on a connection and queued there: a GET behind the GETs of a busy connection
        (`_pipeline`), else on a connection of its own, which takes a slot."""
        connection = self._pipeline() if method == "GET" else None
        if connection is not None:
            data = _serialized(h11.Connection(h11.CLIENT), request, body)  # the connection's own state is the first's
            turn = self._queue(connection)
            connection.writer.write(data)  # small: drained with the first's, or failing in the reads of the queue
            return connection, turn
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
        try:
            connection = await self._connection()
        except BaseException:
            self._slots.release()
            raise
        connection.pipelining = method == "GET" and not self._absolute
        self._busy.add(connection)
        turn = self._queue(connection)
        try:
            connection.writer.write(_serialized(connection.protocol, request, body))
        except BaseException:
            self._leave(connection, turn, answered=False)
            raise
        return connection, turn

    def _pipeline(self) -> _Connection | None:
        """The busy connection a GET is pipelined on, the one with the shortest queue; None when there is an idle
        connection or one being opened ahead (`warm`), a request waiting for a slot, or no queue with room."""
        if self._idle or self._warming or self._waiting:
            return None
        queues = [c for c in self._busy if c.pipelining and c.queued < DEPTH and c.open()]
        return min(queues, key=lambda c: c.queued, default=None)

    def _queue(self, connection: _Connection) -> _Turn:
        turn = _Turn(connection.last if connection.queued else None, asyncio.get_running_loop().create_future())
        connection.last = turn.done
        connection.queued += 1
        return turn

    async def _answer(self, connection: _Connection, turn: _Turn, request: h11.Request) -> Response:
        """The request's answer, read in its turn. Pipelined, its bytes went out early: the connection's state
        machine only goes through its cycle."""
        if turn.before is None:
            await _drain(connection)
        elif await asyncio.shield(turn.before):  # cancelled, the wait must not cancel the other request's future
            _serialized(connection.protocol, request, None)
        else:
            raise _Behind()
        head = await _head(connection, self.read_timeout)
        answer = b"".join([chunk async for chunk in _chunks(connection, head, self.read_timeout)])
        return Response(head.status_code, head.reason.decode("latin-1"), list(head.headers), answer)

    def _leave(self, connection: _Connection, turn: _Turn, *, answered: bool) -> None:
        """The request is done with its connection: the next in its queue reads its answer, or (the answer of this
        one not read whole: a failure, a cancellation, a queue broken before) is sent elsewhere. The last to leave
        gives the connection back, idle, or closes it when it is out of step, and frees its slot."""
        protocol = connection.protocol
        ready = answered and protocol.our_state is h11.DONE and protocol.their_state is h11.DONE
        if ready:
            protocol.start_next_cycle()
            connection.used = True
        else:
            connection.in_step = connection.pipelining = False
        turn.done.set_result(ready)
        connection.queued -= 1
        if connection.queued:
            return
        self._busy.discard(connection)
        self._slots.release()
        if connection.in_step:
            self._idle.append(connection)
        else:
            self._discard(connection)

    async def _exchange(
        self, connection: _Connection, request: h11.Request, body: bytes | None, read_timeout: float | None
    ) -> h11.Response:
        await _send(connection, request, body)
        return await _head(connection, read_timeout)

    @asynccontextmanager
    async def stream(
        self, target: str, headers: dict[str, str], read_timeout: float | None
    ) -> AsyncIterator[tuple[Response, AsyncIterator[bytes]]]:
        """A GET on a connection of its own, closed after: its answer's head, and its body as it comes (each read
        within `read_timeout`, None: no limit)."""
        request = h11.Request(method="GET", target=self._target(target), headers=[*self.headers, *headers.items()])
        connection, head = await self._streamed(request, read_timeout)
        try:
            response = Response(head.status_code, head.reason.decode("latin-1"), list(head.headers))
            yield response, _chunks(connection, head, read_timeout)
        finally:
            self._streams -= 1
            self._discard(connection)

    async def _streamed(self, request: h11.Request, read_timeout: float | None) -> tuple[_Connection, h11.Response]:
        """A stream's connection, its request sent and the answer's head read: an idle connection of the pool, whose
        handshakes are done (a stream opened mid-step would otherwise add its own to the step's round trips), else a
        new one; the stream keeps it. One the server had closed meanwhile is replaced by a new one, as for a request."""
        connection: _Connection | None = None
        while self._idle and connection is None:
            connection = self._idle.pop()
            if not connection.reusable():
                self._discard(connection)
                connection = None
        self._streams += 1
        try:
            if connection is not None:
                try:
                    return connection, await self._exchange(connection, request, None, read_timeout)
                except Disconnected:
                    self._discard(connection)  # closed by the server since its last answer: once more, below
                    _log.debug("GET %s: sent again on another connection (%s)", request.target.decode(), _STALE)
            connection = await self._connect()
            return connection, await self._exchange(connection, request, None, read_timeout)
        except BaseException:
            self._streams -= 1
            if connection is not None:
                self._discard(connection)
            raise

    async def close(self) -> None:
        for task in self._warming:
            task.cancel()
        self._warming.clear()
        for connection in list(self._open):
            self._discard(connection)
        self._idle.clear()
