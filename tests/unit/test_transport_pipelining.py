"""kapply.transport's pipelined GETs against a local HTTP/1.1 server that reads each connection's requests as they
come and answers them in order, as Go's net/http does: every answer is its own request's under load, the GETs of a
burst really go out together on the connections already open, a connection closed or silent mid-pipeline has its
unanswered requests sent once more elsewhere, a cancelled request leaves nobody another's answer, and nothing but a
GET is pipelined or has a GET queued behind it."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest

from kapply.transport import DEPTH, Disconnected, Endpoint, Pool, ReadTimeout, Response
from tests.unit.test_transport_pool import _read_request

T = TypeVar("T")
ANSWER, CLOSE, HANG = "answer", "close", "hang"


@dataclass
class Seen:
    """One request as the server saw it: its connection, its number there (from 1), and how many requests of the
    connection had been read and not answered (itself included) when it was read and when it was answered."""

    method: str
    path: str
    connection: int
    number: int
    pending_when_read: int
    pending_when_answered: int = 0


@dataclass
class Server:
    """Answers each request with its method and path as the body (a HEAD: none), after `delay(path)` seconds;
    `fate(connection, number)` may close the connection instead (CLOSE) or stop answering on it (HANG)."""

    delay: Callable[[str], float] = lambda path: 0.0
    fate: Callable[[int, int], str] = lambda connection, number: ANSWER
    seen: list[Seen] = field(default_factory=list)
    connections: int = 0
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)
    _handlers: set[asyncio.Future[Any]] = field(default_factory=set)
    _stopped: asyncio.Event = field(default_factory=asyncio.Event)

    def paths(self) -> Counter[str]:
        return Counter(s.path for s in self.seen)

    def most_pending(self) -> int:
        return max(s.pending_when_answered for s in self.seen)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        index = self.connections
        self.connections += 1
        queue: asyncio.Queue[Seen | None] = asyncio.Queue()
        counts = {"read": 0, "answered": 0}

        async def read() -> None:
            while (head := await _read_request(reader)) is not None:
                method, path = head.split(" ")[:2]
                counts["read"] += 1
                seen = Seen(method, path, index, counts["read"], counts["read"] - counts["answered"])
                self.seen.append(seen)
                queue.put_nowait(seen)
            queue.put_nowait(None)

        reading = asyncio.create_task(read())
        self._writers.add(writer)
        self._handlers.add(asyncio.current_task() or reading)
        try:
            while (request := await queue.get()) is not None:
                fate = self.fate(index, request.number)
                if fate == CLOSE:
                    break
                if fate == HANG:
                    await self._stopped.wait()
                    break
                await asyncio.sleep(self.delay(request.path))
                request.pending_when_answered = counts["read"] - counts["answered"]
                body = b"" if request.method == "HEAD" else f"{request.method} {request.path}".encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
                counts["answered"] += 1
        except ConnectionError:
            pass
        finally:
            writer.close()
            await asyncio.gather(reading, return_exceptions=True)


@asynccontextmanager
async def serving(server: Server) -> AsyncIterator[int]:
    listening = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    try:
        yield listening.sockets[0].getsockname()[1]
    finally:
        listening.close()
        server._stopped.set()
        for writer in server._writers:
            writer.close()
        await asyncio.gather(*server._handlers, return_exceptions=True)


def pool(port: int, *, limit: int, read_timeout: float = 5) -> Pool:
    endpoint = Endpoint.of(f"http://127.0.0.1:{port}", None, server_hostname=None, proxy=None)
    return Pool(endpoint, limit=limit, headers={}, connect_timeout=5, read_timeout=read_timeout)


def run(body: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(body())


async def get(client: Pool, path: str) -> str:
    """The body of the answer to GET `path`, checked to be that request's."""
    answer = await client.request("GET", path, {}, None)
    assert answer.status == 200
    return answer.body.decode()


async def opened(client: Pool, count: int) -> None:
    """`count` idle connections in the pool (requests of their own, none pipelined: the pool has none busy)."""
    await asyncio.gather(*(client.request("PUT", f"/open/{i}", {}, b"") for i in range(count)))


def test_every_answer_is_its_own_requests_under_load() -> None:
    shuffle = random.Random(33)
    delays = {f"/item/{i}": shuffle.choice([0, 0, 0.001, 0.003]) for i in range(200)}
    server = Server(delay=lambda path: delays.get(path.split("?")[0], 0))

    async def go() -> tuple[list[str], list[str]]:
        async with serving(server) as port:
            client = pool(port, limit=4)
            await opened(client, 4)
            paths = [f"/item/{i}?labelSelector=n%3D{i}" for i in range(200)]
            bodies = await asyncio.gather(*(get(client, path) for path in paths))
            await client.close()
            return paths, bodies

    paths, bodies = run(go)
    assert bodies == [f"GET {path}" for path in paths]
    assert server.connections == 4
    assert all(server.paths()[path] == 1 for path in paths)  # each sent once
    assert server.most_pending() == DEPTH  # pipelined as deep as the pool allows


def test_a_burst_of_gets_goes_out_at_once_on_the_connections_open() -> None:
    server = Server(delay=lambda path: 0.02)

    async def go() -> list[str]:
        async with serving(server) as port:
            client = pool(port, limit=16)
            await opened(client, 2)
            bodies = await asyncio.gather(*(get(client, f"/list/{i}") for i in range(16)))
            await client.close()
            return bodies

    assert run(go) == [f"GET /list/{i}" for i in range(16)]
    assert server.connections == 2  # no connection opened for the burst
    lists = [s for s in server.seen if s.path.startswith("/list/")]
    # each connection had its 8 requests before answering the first of them: one wave, not 8
    assert sorted(s.pending_when_answered for s in lists if s.number == 2) == [8, 8]


def test_a_burst_deeper_than_the_pipelines_opens_connections_for_the_rest() -> None:
    server = Server(delay=lambda path: 0.02)

    async def go() -> list[str]:
        async with serving(server) as port:
            client = pool(port, limit=16)
            await opened(client, 2)
            bodies = await asyncio.gather(*(get(client, f"/list/{i}") for i in range(2 * DEPTH + 3)))
            await client.close()
            return bodies

    assert run(go) == [f"GET /list/{i}" for i in range(2 * DEPTH + 3)]
    assert server.connections == 5 and server.most_pending() == DEPTH


def test_a_connection_closed_mid_pipeline_has_its_unanswered_requests_sent_once_more() -> None:
    # the first connection answers its first 3 requests (the one that opened it, /0 and /1) and closes while
    # reading the 4th's answer: /2 (being read) and /3 .. /7 (queued behind it) go again, on other connections
    server = Server(
        delay=lambda path: 0.01, fate=lambda connection, number: CLOSE if (connection, number) == (0, 4) else ANSWER
    )

    async def go() -> list[str]:
        async with serving(server) as port:
            client = pool(port, limit=2)
            await opened(client, 1)
            bodies = await asyncio.gather(*(get(client, f"/{i}") for i in range(8)))
            await client.close()
            return bodies

    assert run(go) == [f"GET /{i}" for i in range(8)]
    first = [s.path for s in server.seen if s.connection == 0]
    assert first == ["/open/0", *(f"/{i}" for i in range(8))]  # all 8 pipelined on it
    assert server.paths() == Counter({"/open/0": 1, "/0": 1, "/1": 1, **{f"/{i}": 2 for i in range(2, 8)}})


def test_a_request_is_sent_again_once_at_most() -> None:
    # every connection closes after its first answer: a pipelined request is answered, sent again, or fails
    server = Server(fate=lambda connection, number: ANSWER if number == 1 else CLOSE)

    async def go() -> list[str | BaseException]:
        async with serving(server) as port:
            client = pool(port, limit=2)
            await opened(client, 2)
            outcomes = await asyncio.gather(*(get(client, f"/{i}") for i in range(10)), return_exceptions=True)
            await client.close()
            return outcomes

    outcomes = run(go)
    for i, outcome in enumerate(outcomes):
        assert outcome == f"GET /{i}" or isinstance(outcome, Disconnected), outcome
    assert any(isinstance(outcome, Disconnected) for outcome in outcomes)
    assert max(server.paths().values()) <= 2


def test_a_silent_connection_times_its_request_out_and_sends_the_ones_behind_again() -> None:
    server = Server(fate=lambda connection, number: HANG if (connection, number) == (0, 3) else ANSWER)

    async def go() -> list[str | BaseException]:
        async with serving(server) as port:
            client = pool(port, limit=1, read_timeout=0.3)
            await opened(client, 1)
            outcomes = await asyncio.gather(*(get(client, f"/{i}") for i in range(5)), return_exceptions=True)
            await client.close()
            return outcomes

    outcomes = run(go)
    assert outcomes[0] == "GET /0" and isinstance(outcomes[1], ReadTimeout)
    assert outcomes[2:] == ["GET /2", "GET /3", "GET /4"]
    assert server.paths() == Counter({"/open/0": 1, "/0": 1, "/1": 1, "/2": 2, "/3": 2, "/4": 2})
    assert [s.path for s in server.seen if s.connection == 1] == ["/2", "/3", "/4"]


@pytest.mark.parametrize("cancelled", [0, 2, 5])  # the one being read, one queued, the last queued
def test_a_cancelled_request_leaves_every_other_its_own_answer(cancelled: int) -> None:
    server = Server(delay=lambda path: 0.03)

    async def go() -> tuple[list[str | BaseException], list[str]]:
        async with serving(server) as port:
            client = pool(port, limit=2)
            await opened(client, 1)
            tasks = [asyncio.create_task(get(client, f"/{i}")) for i in range(6)]
            await asyncio.sleep(0.01)  # all written; /0 being answered
            tasks[cancelled].cancel()
            outcomes = await asyncio.gather(*tasks, return_exceptions=True)
            after = await asyncio.gather(*(get(client, f"/after/{i}") for i in range(12)))
            await client.close()
            return outcomes, after

    outcomes, after = run(go)
    assert isinstance(outcomes[cancelled], asyncio.CancelledError)
    assert [o for i, o in enumerate(outcomes) if i != cancelled] == [f"GET /{i}" for i in range(6) if i != cancelled]
    assert after == [f"GET /after/{i}" for i in range(12)]
    resent = [f"/{i}" for i in range(cancelled + 1, 6)]  # those behind it, whose connection went out of step
    assert all(server.paths()[path] == (2 if path in resent else 1) for path in (f"/{i}" for i in range(6)))


def test_failures_and_cancellations_at_random_never_give_a_request_another_ones_answer() -> None:
    chance = random.Random(5)
    # a connection's first request is answered (the ones that open the pool); any later one may close or stall it
    fates = {(c, n): chance.choice([ANSWER] * 12 + [CLOSE, HANG]) for c in range(400) for n in range(2, 40)}
    server = Server(delay=lambda path: chance.choice([0, 0, 0.002, 0.01]), fate=lambda c, n: fates.get((c, n), ANSWER))

    async def go() -> list[str | BaseException]:
        async with serving(server) as port:
            client = pool(port, limit=6, read_timeout=0.2)
            await opened(client, 6)
            tasks = [asyncio.create_task(get(client, f"/{i}")) for i in range(300)]
            for _ in range(30):
                await asyncio.sleep(0.003)
                chance.choice(tasks).cancel()
            outcomes = await asyncio.gather(*tasks, return_exceptions=True)
            await client.close()
            return outcomes

    outcomes = run(go)
    answered = [i for i, o in enumerate(outcomes) if isinstance(o, str)]
    for i, outcome in enumerate(outcomes):
        assert outcome == f"GET /{i}" or isinstance(outcome, Disconnected | ReadTimeout | asyncio.CancelledError)
    assert len(answered) > 200
    assert max(server.paths().values()) <= 2


def test_only_gets_are_pipelined_and_only_behind_gets() -> None:
    server = Server(delay=lambda path: 0.02)
    methods = ["GET", "PUT", "GET", "POST", "GET", "DELETE", "GET", "GET", "PATCH", "GET", "HEAD"] * 3

    async def go() -> list[Response]:
        async with serving(server) as port:
            client = pool(port, limit=16)
            await opened(client, 2)
            answers = await asyncio.gather(
                *(
                    client.request(m, f"/{m.lower()}/{i}", {}, b"{}" if m in ("PUT", "POST", "PATCH") else None)
                    for i, m in enumerate(methods)
                )
            )
            await client.close()
            return answers

    answers = run(go)
    assert [a.body for a in answers] == [
        b"" if m == "HEAD" else f"{m} /{m.lower()}/{i}".encode() for i, m in enumerate(methods)
    ]
    assert server.most_pending() > 1  # the GETs were pipelined
    others = [s for s in server.seen if s.method != "GET"]
    assert len(others) == len(methods) - methods.count("GET") + 2  # the 2 PUTs that opened the connections
    # nothing was queued ahead of a non-GET, nor behind it, on its connection
    assert all(s.pending_when_read == 1 and s.pending_when_answered == 1 for s in others)
    first_of_pipelines = {(s.connection, s.number - 1) for s in server.seen if s.pending_when_read > 1}
    behind = {(s.connection, s.number): s.method for s in server.seen}
    assert all(behind[key] == "GET" for key in first_of_pipelines)  # what a GET was queued behind was a GET


def test_no_get_joins_a_queue_while_a_request_waits_for_a_connection() -> None:
    server = Server(delay=lambda path: 0.05 if path == "/slow" else 0)

    async def go() -> list[str]:
        async with serving(server) as port:
            client = pool(port, limit=1)
            await opened(client, 1)
            slow = asyncio.create_task(get(client, "/slow"))
            await asyncio.sleep(0.01)
            put = asyncio.create_task(client.request("PUT", "/put", {}, b"{}"))
            await asyncio.sleep(0.01)
            after = asyncio.create_task(get(client, "/after"))
            await asyncio.gather(slow, put, after)
            await client.close()
            return [s.path for s in server.seen]

    order = run(go)
    assert order == ["/open/0", "/slow", "/put", "/after"]  # the GET waited behind the PUT, not behind /slow
    assert server.most_pending() == 1
