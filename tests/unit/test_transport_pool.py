"""kapply.transport against scripted local servers: the pool's connections kept alive, bodies as the API server
sends them (Content-Length, chunked, gzip), a kept-alive connection the server closed meanwhile (an idempotent
request sent once more, a POST not, and a debug line for each request sent again), a stream's read timeout, and
proxies (CONNECT for https, absolute URLs for http, a refusal). The cluster client on it is tested in
test_transport.py and test_fail_fast.py."""

from __future__ import annotations

import asyncio
import gzip
import logging
import ssl
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kapply.transport import (
    DEPTH,
    Disconnected,
    Endpoint,
    Failure,
    Pool,
    ProxyError,
    ReadTimeout,
    TransportError,
    failure_of,
)

T = TypeVar("T")
Answer = Callable[[str, int], bytes]  # (the request's head, its number on its connection) -> the raw answer


def ok(body: bytes = b"{}", *headers: str) -> bytes:
    head = "".join(f"{h}\r\n" for h in headers)
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{head}\r\n".encode() + body


class Seen:
    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[str] = []  # each request's head


async def _read_request(reader: asyncio.StreamReader) -> str | None:
    try:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    length = next(
        (int(line.split(":")[1]) for line in head.split("\r\n") if line.lower().startswith("content-length")), 0
    )
    await reader.readexactly(length)
    return head


@asynccontextmanager
async def serving(answer: Answer, tls: ssl.SSLContext | None = None) -> AsyncIterator[tuple[int, Seen]]:
    """A server that answers each request with `answer(...)`; an empty answer closes the connection unanswered."""
    seen = Seen()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.connections += 1
        number = 0
        while (head := await _read_request(reader)) is not None:
            seen.requests.append(head)
            number += 1
            raw = answer(head, number)
            if not raw:
                break
            writer.write(raw)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
    try:
        yield server.sockets[0].getsockname()[1], seen
    finally:
        server.close()


def pool(port: int, *, limit: int = 3, tls: ssl.SSLContext | None = None, proxy: str | None = None) -> Pool:
    scheme = "https" if tls else "http"
    endpoint = Endpoint.of(f"{scheme}://127.0.0.1:{port}", tls, server_hostname=None, proxy=proxy)
    return Pool(endpoint, limit=limit, headers={"User-Agent": "kapply"}, connect_timeout=5, read_timeout=5)


def run(body: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(body())


def test_connections_are_kept_alive_and_at_most_the_limit_are_open() -> None:
    async def go() -> tuple[list[int], Seen]:
        async with serving(lambda head, n: ok()) as (port, seen):
            client = pool(port, limit=3)
            statuses = [(await client.request("GET", "/api", {}, None)).status]
            many = await asyncio.gather(*(client.request("GET", "/x", {}, None) for _ in range(20)))
            statuses += [r.status for r in many]
            await client.close()
            return statuses, seen

    statuses, seen = run(go)
    assert statuses == [200] * 21
    assert seen.connections == 3
    assert len(seen.requests) == 21
    assert seen.requests[0].startswith("GET /api HTTP/1.1\r\n")
    assert "host: 127.0.0.1:" in seen.requests[0].lower() and "user-agent: kapply" in seen.requests[0].lower()


def test_chunked_gzipped_and_sized_bodies_are_read_whole() -> None:
    payload = b'{"items": ["' + b"x" * 300_000 + b'"]}'
    zipped = gzip.compress(payload)
    chunked = b"".join(
        b"%x\r\n%s\r\n" % (len(zipped[i : i + 5000]), zipped[i : i + 5000]) for i in range(0, len(zipped), 5000)
    )
    answers = {
        "/sized": ok(payload),
        "/chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n"
        + chunked
        + b"0\r\n\r\n",
    }

    async def go() -> list[bytes]:
        async with serving(lambda head, n: answers[head.split()[1]]) as (port, _):
            client = pool(port)
            bodies = [(await client.request("GET", path, {}, None)).body for path in answers]
            posted = await client.request("POST", "/sized", {"Content-Type": "application/json"}, b"{}")
            await client.close()
            return [*bodies, posted.body]

    assert run(go) == [payload] * 3


def test_a_kept_alive_connection_the_server_closed_is_retried_once_for_an_idempotent_request_only() -> None:
    def answer(head: str, number: int) -> bytes:
        return ok() if number == 1 else b""  # the second request on a connection: closed unanswered

    async def go(method: str) -> tuple[object, int]:
        async with serving(answer) as (port, seen):
            client = pool(port, limit=1)
            await client.request("GET", "/first", {}, None)
            try:
                outcome: object = (await client.request(method, "/second", {}, b"{}")).status
            except Disconnected as e:
                outcome = failure_of(e)
            await client.close()
            return outcome, len(seen.requests)

    assert asyncio.run(go("PUT")) == (200, 3)  # sent on the kept-alive one, then on a new one
    assert asyncio.run(go("POST")) == (Failure.RESET, 2)  # may have been processed: not sent again


def test_a_request_sent_again_says_so_and_why_in_a_debug_line(caplog: pytest.LogCaptureFixture) -> None:
    closing = {"/stale", "/a", "/watch", "/post"}

    def answer(head: str, number: int) -> bytes:  # the first time one of `closing` comes: closed unanswered
        path = head.split()[1]
        if path in closing:
            closing.remove(path)
            return b""
        return ok(b"line\n")

    async def go() -> list[object]:
        async with serving(answer) as (port, _):
            client = pool(port, limit=1)
            outcomes: list[object] = [(await client.request("GET", "/open", {}, None)).status]
            outcomes.append((await client.request("PUT", "/stale", {}, b"{}")).status)  # kept alive, then closed
            # /a on the kept-alive connection, /b pipelined behind it: both sent again
            answers = await asyncio.gather(*(client.request("GET", path, {}, None) for path in ("/a", "/b")))
            outcomes += [a.status for a in answers]
            async with client.stream("/watch", {}, read_timeout=1) as (response, body):
                outcomes.append(b"".join([chunk async for chunk in body]))
            await client.request("GET", "/open", {}, None)
            with pytest.raises(Disconnected):
                await client.request("POST", "/post", {}, b"{}")  # may have been processed: not sent again
            await client.close()
            return outcomes

    caplog.set_level(logging.DEBUG, logger="kapply")
    assert run(go) == [200, 200, 200, 200, b"line\n"]
    stale = "the server had closed the kept-alive connection it was sent on"
    kapplys = [(r.name, r.levelno, r.getMessage()) for r in caplog.records if r.name.startswith("kapply")]
    assert kapplys == [
        ("kapply.transport", logging.DEBUG, f"PUT /stale: sent again on another connection ({stale})"),
        ("kapply.transport", logging.DEBUG, f"GET /a: sent again on another connection ({stale})"),
        (
            "kapply.transport",
            logging.DEBUG,
            "GET /b: sent again on another connection (a request before it on its connection got no answer there)",
        ),
        ("kapply.transport", logging.DEBUG, f"GET /watch: sent again on another connection ({stale})"),
    ]


def test_a_silent_stream_times_out_and_its_connection_is_its_own() -> None:
    def answer(head: str, number: int) -> bytes:
        if "/watch" in head:
            return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nline\n\r\n"  # then nothing
        return ok()

    async def go() -> tuple[list[bytes], Seen]:
        async with serving(answer) as (port, seen):
            client = pool(port, limit=1)
            await client.request("GET", "/first", {}, None)
            chunks: list[bytes] = []
            async with client.stream("/watch", {}, read_timeout=0.2) as (response, body):
                assert response.status == 200
                with pytest.raises(ReadTimeout):
                    async for chunk in body:
                        chunks.append(chunk)
            assert (await client.request("GET", "/after", {}, None)).status == 200
            await client.close()
            return chunks, seen

    chunks, seen = run(go)
    assert chunks == [b"line\n"]
    assert seen.connections == 2  # the pool's idle one, which the stream took and closed, and the one after it


def test_a_stream_takes_an_idle_connection_and_one_the_server_closed_is_replaced() -> None:
    def answer(head: str, number: int) -> bytes:
        return ok(b"line\n") if "/watch" in head else ok()

    def closing(head: str, number: int) -> bytes:  # a connection's second request: closed unanswered
        return answer(head, number) if number == 1 else b""

    async def go(server: Answer) -> tuple[list[bytes], Seen]:
        async with serving(server) as (port, seen):
            client = pool(port, limit=1)
            await client.request("GET", "/first", {}, None)
            async with client.stream("/watch", {}, read_timeout=1) as (response, body):
                chunks = [chunk async for chunk in body]
            await client.close()
            return chunks, seen

    chunks, seen = run(lambda: go(answer))
    assert chunks == [b"line\n"] and seen.connections == 1  # the pool's, its handshakes done
    chunks, seen = run(lambda: go(closing))
    assert chunks == [b"line\n"]  # the idle one closed unanswered: the stream sent once more on a new one
    assert seen.connections == 2 and len(seen.requests) == 3


def test_warmed_connections_are_opened_ahead_up_to_the_limit_and_taken_by_requests() -> None:
    async def go() -> tuple[int, int, int]:
        async with serving(lambda head, n: ok()) as (port, seen):
            client = pool(port, limit=4)
            client.warm(1)
            await client.request("GET", "/first", {}, None)  # takes the one being opened, opens none
            alone = seen.connections
            client.warm(3)
            await asyncio.sleep(0.2)
            warmed = seen.connections
            await asyncio.gather(*(client.request("GET", "/x", {}, None) for _ in range(3)))
            client.warm(10)  # at most the limit
            await asyncio.sleep(0.2)
            await client.close()
            return alone, warmed, seen.connections

    assert run(go) == (1, 3, 4)


def test_warmed_gets_take_a_connection_for_every_depth_of_them() -> None:
    """A write needs a connection of its own; GETs pipeline DEPTH to one (the delete's end warms for both)."""

    async def opened(seen: Seen, count: int) -> int:
        async with asyncio.timeout(5):
            while seen.connections < count:
                await asyncio.sleep(0.01)
        return seen.connections

    async def go() -> tuple[int, int]:
        async with serving(lambda head, n: ok()) as (port, seen):
            client = pool(port, limit=8)
            client.warm(1, gets=DEPTH + 1)
            first = await opened(seen, 3)
            client.warm(1, gets=2 * DEPTH)  # three in all: the pool has them
            client.warm(2, gets=2 * DEPTH)  # four
            second = await opened(seen, 4)
            await client.close()
            return first, second

    assert run(go) == (3, 4)


def test_a_warmed_connection_that_fails_leaves_the_request_its_own_error() -> None:
    async def go() -> object:
        async with serving(lambda head, n: ok()) as (port, _):
            pass  # nothing listens there any more
        client = pool(port)
        client.warm(2)
        await asyncio.sleep(0.1)
        try:
            return await client.request("GET", "/x", {}, None)
        except TransportError as e:
            return failure_of(e)
        finally:
            await client.close()

    assert run(go) is Failure.REFUSED


@asynccontextmanager
async def proxying(answer: str | None = None) -> AsyncIterator[tuple[int, list[str]]]:
    """An HTTP proxy: CONNECT tunnels (or `answer` instead), and plain requests forwarded to the port of their
    absolute URL; the list has each request line it saw."""
    lines: list[str] = []

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        method, target, _ = head.split("\r\n")[0].split(" ")
        lines.append(f"{method} {target}")
        if answer is not None:
            writer.write(f"HTTP/1.1 {answer}\r\nContent-Length: 0\r\n\r\n".encode())
            writer.close()
            return
        port = int(target.rsplit(":", 1)[1]) if method == "CONNECT" else int(target.split("/")[2].split(":")[1])
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", port)
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            upstream_writer.write(head.encode())
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], lines
    finally:
        server.close()


def test_https_goes_through_a_connect_tunnel_and_http_by_absolute_url(pki: Path) -> None:
    serving_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving_tls.load_cert_chain(pki / "apiserver.crt", pki / "apiserver.key")
    client_tls = ssl.create_default_context(cafile=str(pki / "ca.crt"))

    async def go() -> tuple[list[str], list[str], tuple[int, int]]:
        async with proxying() as (proxy, lines), serving(lambda head, n: ok()) as (http_port, http_seen):
            async with serving(lambda head, n: ok(), serving_tls) as (https_port, _):
                tunnelled = pool(https_port, limit=1, tls=client_tls, proxy=f"http://user:pw@127.0.0.1:{proxy}")
                assert (await tunnelled.request("GET", "/api", {}, None)).status == 200
                await tunnelled.close()
            plain = pool(http_port, limit=1, proxy=f"http://127.0.0.1:{proxy}")
            assert (await plain.request("GET", "/api?x=1", {}, None)).status == 200
            await plain.close()
            return lines, http_seen.requests, (https_port, http_port)

    lines, http_requests, (https_port, http_port) = run(go)
    assert lines == [f"CONNECT 127.0.0.1:{https_port}", f"GET http://127.0.0.1:{http_port}/api?x=1"]
    assert http_requests[0].startswith(f"GET http://127.0.0.1:{http_port}/api?x=1 HTTP/1.1\r\n")


def test_a_proxy_that_refuses_the_tunnel_fails_the_request(pki: Path) -> None:
    client_tls = ssl.create_default_context(cafile=str(pki / "ca.crt"))

    async def go() -> str:
        async with proxying("407 Proxy Authentication Required") as (proxy, _):
            client = pool(6443, limit=1, tls=client_tls, proxy=f"http://127.0.0.1:{proxy}")
            with pytest.raises(ProxyError) as refused:
                await client.request("GET", "/api", {}, None)
            await client.close()
            return str(refused.value)

    assert run(go) == "the proxy answered 407 to CONNECT 127.0.0.1:6443"
