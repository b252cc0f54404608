"""The cluster client's connections resume the TLS session of an earlier one (kapply.resources.auth.ResumingContext):
against a local HTTPS server with the PKI hack/cluster.py makes, connections opened after a first answer resume its
session, still as the client certificate's user; the first ones, opened before any ticket came, make full
handshakes. What the real API server does is measured in bench/why.md."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from kapply.resources.auth import ResumingContext, _Tickets, ssl_context
from kapply.resources.cluster import Cluster
from kapply.resources.kubeconfig import KubeconfigFlags, load

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


@asynccontextmanager
async def serving(
    pki: Path, seen: list[tuple[bool, str | None]], port: int = 0, tickets: int = 2
) -> AsyncIterator[int]:
    """An HTTPS server answering `{}` to every request of a kept-alive connection; `seen` gets, per connection,
    whether its session was resumed and the client certificate's common name. Each server has ticket keys of its
    own; `tickets`: how many it hands out after a handshake (OpenSSL's default, 2; 0: none)."""
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki / "ca.crt"))
    tls.load_cert_chain(pki / "apiserver.crt", pki / "apiserver.key")
    tls.verify_mode = ssl.CERT_REQUIRED
    tls.num_tickets = tickets

    open_connections: set[asyncio.StreamWriter] = set()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        open_connections.add(writer)
        ssl_object = writer.get_extra_info("ssl_object")
        peer = ssl_object.getpeercert() or {}
        name = next((value for rdn in peer.get("subject", ()) for key, value in rdn if key == "commonName"), None)
        seen.append((ssl_object.session_reused, name))
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                writer.write(ANSWER)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            open_connections.discard(writer)
            writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", port, ssl=tls)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for writer in list(open_connections):  # as a restarted server: its clients' kept-alive connections end
            writer.close()
        await server.wait_closed()


def kubeconfig(path: Path, port: int, pki: Path) -> Path:
    def b64(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    doc = {
        "clusters": [
            {
                "name": "c",
                "cluster": {"server": f"https://127.0.0.1:{port}", "certificate-authority-data": b64("ca.crt")},
            }
        ],
        "users": [
            {"name": "u", "user": {"client-certificate-data": b64("admin.crt"), "client-key-data": b64("admin.key")}}
        ],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(json.dumps(doc))
    return path


def test_later_connections_resume_the_first_ones_session(pki: Path, tmp_path: Path) -> None:
    seen: list[tuple[bool, str | None]] = []

    async def main() -> None:
        async with serving(pki, seen) as port:
            path = kubeconfig(tmp_path / "config", port, pki)
            async with Cluster(load(KubeconfigFlags(path=str(path)))) as cluster:
                # two at once: two connections, both before any ticket came (PUTs: GETs would be pipelined on the
                # connections the pool has rather than open new ones)
                await asyncio.gather(*(cluster.request("PUT", f"/first/{i}") for i in range(2)))
                # four at once: the two kept alive and two new ones, which resume
                await asyncio.gather(*(cluster.request("PUT", f"/then/{i}") for i in range(4)))

    asyncio.run(main())
    assert seen[:2] == [(False, "kapply-admin")] * 2
    assert seen[2:] == [(True, "kapply-admin")] * 2


def test_a_ticket_the_server_no_longer_takes_is_replaced(pki: Path, tmp_path: Path) -> None:
    """A server restarted with new ticket keys: the first connection to it makes a full handshake, the ones after
    it resume the session of that one."""
    before: list[tuple[bool, str | None]] = []
    after: list[tuple[bool, str | None]] = []

    async def main() -> None:
        async with serving(pki, before) as port:
            path = kubeconfig(tmp_path / "config", port, pki)
            cluster = Cluster(load(KubeconfigFlags(path=str(path))))
            await cluster.request("GET", "/first")
            await asyncio.gather(*(cluster.request("PUT", f"/then/{i}") for i in range(2)))  # PUTs: not pipelined
        async with serving(pki, after, port), cluster:
            await cluster.request("GET", "/refused")
            await asyncio.gather(*(cluster.request("PUT", f"/again/{i}") for i in range(3)))

    asyncio.run(main())
    assert before == [(False, "kapply-admin"), (True, "kapply-admin")]
    assert after == [(False, "kapply-admin"), (True, "kapply-admin"), (True, "kapply-admin")]


def test_a_server_without_tickets_costs_at_most_a_few_reads(
    pki: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading a session costs ~0.6 ms: with no ticket to find, at most MISSES connections are read."""
    seen: list[tuple[bool, str | None]] = []
    reads: list[ssl.SSLObject] = []
    session = ssl.SSLObject.session

    def counted(self: ssl.SSLObject) -> ssl.SSLSession | None:
        reads.append(self)
        return session.fget(self)  # type: ignore[attr-defined,no-any-return]

    monkeypatch.setattr(ssl.SSLObject, "session", property(counted))

    async def main() -> None:
        async with serving(pki, seen, tickets=0) as port:
            path = kubeconfig(tmp_path / "config", port, pki)
            async with Cluster(load(KubeconfigFlags(path=str(path)))) as cluster:
                for wave in range(6):  # each wave one connection more than the pool has (PUTs: not pipelined)
                    await asyncio.gather(*(cluster.request("PUT", f"/{wave}/{i}") for i in range(wave + 1)))

    asyncio.run(main())
    assert len(seen) == 6 and not any(resumed for resumed, _ in seen)
    assert len(reads) == _Tickets.MISSES


def test_the_context_is_the_kubeconfigs(pki: Path, tmp_path: Path) -> None:
    """Trust, hostname check and client certificate as before; only the class is the resuming one."""
    context = load(KubeconfigFlags(path=str(kubeconfig(tmp_path / "config", 1, pki))))
    tls = ssl_context(context)
    assert isinstance(tls, ResumingContext)
    assert tls.verify_mode is ssl.CERT_REQUIRED and tls.check_hostname
    assert [c["subject"] for c in tls.get_ca_certs()] == [
        c["subject"] for c in ssl.create_default_context(cafile=str(pki / "ca.crt")).get_ca_certs()
    ]
