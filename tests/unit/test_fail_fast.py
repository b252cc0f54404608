"""The cluster client against servers that cannot answer, or answer with an error: a closed port, a name that does not
resolve, a server that closes every connection, and 5xx answers with and without Retry-After. What nothing can mend
fails on the first attempt, in Go's words; what client-go retries is retried (issue 30, "Fail fast where nothing can
succeed"). The TLS failure is tested in test_transport.py (a server the kubeconfig does not trust)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from kapply.errors import ClusterError
from kapply.resources import cluster as cluster_module
from kapply.resources.cluster import MAX_ATTEMPTS, Cluster
from kapply.resources.kubeconfig import KubeconfigFlags, load


def kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        json.dumps(
            {
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port nothing listens on (bound, never listening, so no other test takes it meanwhile)."""
    with closing(socket.socket()) as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


async def failure(path: Path, method: str = "GET") -> str:
    async with Cluster(load(KubeconfigFlags(path=str(path)))) as cluster:
        with pytest.raises(ClusterError) as failed:
            await cluster.request(
                method, "/api/v1/namespaces/default/configmaps/x", body={} if method != "GET" else None
            )
    return str(failed.value)


def test_a_refused_connection_fails_at_once(tmp_path: Path, closed_port: int) -> None:
    message = asyncio.run(failure(kubeconfig(tmp_path / "k", f"https://127.0.0.1:{closed_port}")))
    assert message == (
        f"Request GET /api/v1/namespaces/default/configmaps/x to https://127.0.0.1:{closed_port} failed: "
        f"dial tcp 127.0.0.1:{closed_port}: connect: connection refused"
    )


def test_an_unknown_host_fails_at_once(tmp_path: Path) -> None:
    message = asyncio.run(failure(kubeconfig(tmp_path / "k", "https://kapply-nowhere.invalid:6443")))
    assert message.endswith("failed: dial tcp: lookup kapply-nowhere.invalid: no such host"), message


@asynccontextmanager
async def closing_every_connection() -> AsyncIterator[tuple[int, list[int]]]:
    """A server that accepts each connection and closes it at once (a reset, as a server that is going away); the
    list counts the connections."""
    accepted: list[int] = []

    async def close(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        writer.close()

    server = await asyncio.start_server(close, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], accepted
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize(("method", "attempts"), [("GET", MAX_ATTEMPTS), ("POST", 1), ("PUT", 1), ("DELETE", 1)])
def test_a_reset_connection_is_retried_for_a_get_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str, attempts: int
) -> None:
    monkeypatch.setattr(cluster_module, "RESET_DELAY", 0.0)  # client-go's second, not waited here

    async def go() -> tuple[str, int]:
        async with closing_every_connection() as (port, accepted):
            message = await failure(kubeconfig(tmp_path / "k", f"http://127.0.0.1:{port}"), method)
            return message, len(accepted)

    message, connections = asyncio.run(go())
    # kapply.transport sends an idempotent request (GET, PUT, DELETE) once more on a kept-alive connection the server
    # closed, as Go's transport does on a reused one: at most one connection more per attempt
    assert attempts <= connections <= (2 * attempts if method != "POST" else 1)
    assert message.startswith(f"Request {method} /api/v1/namespaces/default/configmaps/x to http://127.0.0.1:")
    assert (f"failed (after {attempts} attempts): " if attempts > 1 else "failed: ") in message


@asynccontextmanager
async def answering(answers: list[tuple[int, dict[str, str]]]) -> AsyncIterator[tuple[int, list[str]]]:
    """A server that gives `answers` (status, headers) in turn, then 200; the list has the methods it saw."""
    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(request.method)
        status, headers = answers.pop(0) if answers else (200, {})
        return web.json_response(
            {"message": "etcd leader changed", "reason": "InternalError"}, status=status, headers=headers
        )

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield site._server.sockets[0].getsockname()[1], seen  # type: ignore[union-attr]
    finally:
        await runner.cleanup()


def _run_against(tmp_path: Path, answers: list[tuple[int, dict[str, str]]], method: str) -> tuple[Any, list[str]]:
    async def go() -> tuple[Any, list[str]]:
        async with answering(answers) as (port, seen):
            path = kubeconfig(tmp_path / "k", f"http://127.0.0.1:{port}")
            async with Cluster(load(KubeconfigFlags(path=str(path)))) as cluster:
                try:
                    return await cluster.request(method, "/api/v1/x", body={} if method != "GET" else None), seen
                except ClusterError as e:
                    return e, seen

    return asyncio.run(go())


@pytest.mark.parametrize("method", ["GET", "PUT", "POST"])
def test_a_5xx_without_retry_after_is_not_retried(tmp_path: Path, method: str) -> None:
    answer, seen = _run_against(tmp_path, [(500, {})], method)
    assert isinstance(answer, ClusterError) and answer.status == 500
    assert str(answer) == "API server says: etcd leader changed (reason: InternalError)"
    assert seen == [method]


@pytest.mark.parametrize("status", [429, 503])
def test_an_answer_with_retry_after_is_retried(tmp_path: Path, status: int) -> None:
    answer, seen = _run_against(tmp_path, [(status, {"Retry-After": "0"})] * 2, "POST")
    assert not isinstance(answer, ClusterError), answer
    assert seen == ["POST"] * 3
