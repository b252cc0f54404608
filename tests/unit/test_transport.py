"""The cluster client's transport against a local HTTPS server: TLS trust and client certificates as the kubeconfig
says (certificate data, files, tls-server-name, insecure-skip-tls-verify), credentials renewed on a 401, Retry-After
honoured, and streamed lines longer than any buffer. The server is aiohttp's, with the PKI hack/cluster.py makes for
the local control plane; what the real API server does with these requests is tested in tests/e2e."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from kapply.errors import ClusterError, KapplyError
from kapply.resources.cluster import Cluster
from kapply.resources.kubeconfig import KubeconfigFlags, load


class Server:
    """What the server saw, and what it answers: `tokens` accepted (None: any), `busy` 429s before answering."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str | None, str | None]] = []  # method, path_qs, Authorization, client CN
        self.tokens: set[str] | None = None
        self.busy = 0
        self.event_size = 0


def _subject(request: web.Request) -> str | None:
    transport = request.transport
    peer = transport.get_extra_info("peercert") if transport else None
    if not peer:
        return None
    return next((value for rdn in peer["subject"] for key, value in rdn if key == "commonName"), None)


@asynccontextmanager
async def serving(pki: Path, state: Server) -> AsyncIterator[int]:
    async def handle(request: web.Request) -> web.StreamResponse:
        authorization = request.headers.get("Authorization")
        state.seen.append((request.method, request.path_qs, authorization, _subject(request)))
        if state.tokens is not None and (authorization or "").removeprefix("Bearer ") not in state.tokens:
            return web.json_response(
                {"kind": "Status", "message": "Unauthorized", "reason": "Unauthorized"}, status=401
            )
        if state.busy:
            state.busy -= 1
            return web.json_response({"reason": "TooManyRequests"}, status=429, headers={"Retry-After": "0"})
        if request.query.get("watch"):
            response = web.StreamResponse()
            await response.prepare(request)
            event = json.dumps(
                {"type": "ADDED", "object": {"metadata": {"name": "big"}, "data": "x" * state.event_size}}
            )
            payload = (event + "\n").encode() * 2 + b'{"type": "ADDED"'  # a last line without its end is dropped
            for start in range(0, len(payload), 7000):
                await response.write(payload[start : start + 7000])
            return response
        return web.json_response({"path": request.raw_path.split("?")[0], "query": dict(request.query)})

    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki / "ca.crt"))
    tls.load_cert_chain(pki / "apiserver.crt", pki / "apiserver.key")
    tls.verify_mode = ssl.CERT_OPTIONAL  # a client certificate is read when given; tokens are tested without one
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield port
    finally:
        await runner.cleanup()


def kubeconfig(path: Path, port: int, cluster: dict[str, Any], user: dict[str, Any]) -> Path:
    doc = {
        "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}", **cluster}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "ns"}}],
        "current-context": "x",
    }
    path.write_text(json.dumps(doc))
    return path


def admin_kubeconfig(path: Path, port: int, pki: Path) -> Path:
    """Trusting the local CA inline, as the admin by client certificate (the local control plane's own way)."""
    return kubeconfig(
        path,
        port,
        {"certificate-authority-data": b64(pki / "ca.crt")},
        {"client-certificate-data": b64(pki / "admin.crt"), "client-key-data": b64(pki / "admin.key")},
    )


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


@pytest.fixture
def state() -> Iterator[Server]:
    yield Server()


def test_the_cluster_ca_is_trusted_and_the_client_certificate_presented(pki: Path, state: Server, tmp_path: Path):
    async def go() -> None:
        async with serving(pki, state) as port:
            inline = admin_kubeconfig(tmp_path / "inline", port, pki)
            (tmp_path / "sub").mkdir()
            for name in ("ca.crt", "admin.crt", "admin.key"):
                (tmp_path / "sub" / name).write_bytes((pki / name).read_bytes())
            files = kubeconfig(  # relative to the kubeconfig file
                tmp_path / "files",
                port,
                {"certificate-authority": "sub/ca.crt"},
                {"client-certificate": "sub/admin.crt", "client-key": "sub/admin.key"},
            )
            for path in (inline, files):
                async with Cluster(load(KubeconfigFlags(path=str(path)))) as cluster:
                    # a path comes escaped (ResourceType.path) and is sent as it is; the query is escaped here
                    answer = await cluster.request("GET", "/api/v1/namespaces/a%3Ab/x", params={"l": "x=1,y!=2"})
                    assert answer == {"path": "/api/v1/namespaces/a%3Ab/x", "query": {"l": "x=1,y!=2"}}
        assert [(s[0], s[3]) for s in state.seen] == [("GET", "kapply-admin")] * 2

    run(go())


def test_the_client_certificate_files_are_read_once_while_connected_and_again_after_close(
    pki: Path, state: Server, tmp_path: Path
):
    def renew(to: str) -> None:  # the user's certificate and key files, as a rotation rewrites them
        for suffix in ("crt", "key"):
            (tmp_path / f"user.{suffix}").write_bytes((pki / f"{to}.{suffix}").read_bytes())

    async def go() -> None:
        async with serving(pki, state) as port:
            renew("admin")
            path = kubeconfig(
                tmp_path / "k",
                port,
                {"certificate-authority-data": b64(pki / "ca.crt")},
                {"client-certificate": str(tmp_path / "user.crt"), "client-key": str(tmp_path / "user.key")},
            )
            async with Cluster(load(KubeconfigFlags(path=str(path)))) as cluster:
                await cluster.request("GET", "/one")
                renew("restricted")
                async with cluster.stream_lines("/two", {"watch": "1"}, read_timeout=10) as lines:
                    assert [line async for line in lines]  # the watch's own connection, with the same context
                await cluster.close()
                await cluster.request("GET", "/three")
        assert [(s[1].split("?")[0], s[3]) for s in state.seen] == [
            ("/one", "kapply-admin"),
            ("/two", "kapply-admin"),
            ("/three", "kapply-restricted"),
        ]

    run(go())


def test_a_server_the_kubeconfig_does_not_trust_is_refused_at_once(pki: Path, state: Server, tmp_path: Path):
    other = tmp_path / "other-ca.crt"
    other.write_bytes((pki / "admin.crt").read_bytes())  # a certificate, but not the one that signed the server's

    async def go() -> None:
        async with serving(pki, state) as port:
            path = kubeconfig(tmp_path / "k", port, {"certificate-authority-data": b64(other)}, {"token": "t"})
            async with Cluster(load(KubeconfigFlags(path=str(path)))) as cluster:
                started = time.monotonic()
                with pytest.raises(ClusterError, match="tls: failed to verify certificate: x509: ") as failed:
                    await cluster.request("GET", "/version")
                assert time.monotonic() - started < 2  # not retried: a certificate does not get trusted by waiting
                assert "after" not in str(failed.value)
        assert state.seen == []

    run(go())


def test_tls_server_name_and_insecure_skip_tls_verify(pki: Path, state: Server, tmp_path: Path):
    async def go() -> None:
        async with serving(pki, state) as port:
            ca = {"certificate-authority-data": b64(pki / "ca.crt")}
            named = kubeconfig(tmp_path / "named", port, {**ca, "tls-server-name": "kubernetes.default"}, {})
            wrong = kubeconfig(tmp_path / "wrong", port, {**ca, "tls-server-name": "elsewhere"}, {})
            insecure = kubeconfig(tmp_path / "insecure", port, {"insecure-skip-tls-verify": True}, {})
            for path in (named, insecure):
                async with Cluster(load(KubeconfigFlags(path=str(path)))) as cluster:
                    assert (await cluster.request("GET", "/version"))["path"] == "/version"
            async with Cluster(load(KubeconfigFlags(path=str(wrong)))) as cluster:
                with pytest.raises(ClusterError, match="elsewhere"):
                    await cluster.request("GET", "/version")

    run(go())


def test_a_rejected_token_file_is_read_again_once(pki: Path, state: Server, tmp_path: Path):
    token = tmp_path / "token"
    token.write_text("old\n")

    async def go() -> None:
        async with serving(pki, state) as port:
            ca = {"certificate-authority-data": b64(pki / "ca.crt")}
            path = kubeconfig(tmp_path / "k", port, ca, {"tokenFile": str(token)})
            async with Cluster(load(KubeconfigFlags(path=str(path)))) as cluster:
                state.tokens = {"old"}
                await cluster.request("GET", "/one")
                token.write_text("new\n")  # rotated, and the server no longer takes the old one
                state.tokens = {"new"}
                await cluster.request("GET", "/two")
                await cluster.request("GET", "/three")
                state.tokens = {"newer"}  # rejected whatever the file says: the 401 is the answer
                with pytest.raises(ClusterError, match="Unauthorized") as failed:
                    await cluster.request("GET", "/four")
                assert failed.value.status == 401

    run(go())
    assert [(path, auth) for _, path, auth, _ in state.seen] == [
        ("/one", "Bearer old"),
        ("/two", "Bearer old"),
        ("/two", "Bearer new"),
        ("/three", "Bearer new"),
        ("/four", "Bearer new"),  # not sent again: the file holds the token just rejected
    ]


def test_an_exec_plugin_runs_once_for_many_requests_and_again_after_a_401(pki: Path, state: Server, tmp_path: Path):
    runs = tmp_path / "runs"
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "import json, pathlib, sys\n"
        f"runs = pathlib.Path({str(runs)!r})\n"
        "n = len(runs.read_text()) if runs.exists() else 0\n"
        "runs.write_text('x' * (n + 1))\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential',"
        " 'status': {'token': f'token-{n}'}}))\n"
    )
    exec_plugin = {"apiVersion": "client.authentication.k8s.io/v1", "command": "python3", "args": [str(plugin)]}

    async def go() -> None:
        async with serving(pki, state) as port:
            ca = {"certificate-authority-data": b64(pki / "ca.crt")}
            path = kubeconfig(tmp_path / "k", port, ca, {"exec": exec_plugin})
            async with Cluster(load(KubeconfigFlags(path=str(path)))) as cluster:
                state.tokens = {"token-0"}
                await asyncio.gather(*(cluster.request("GET", f"/{i}") for i in range(10)))
                state.tokens = {"token-1"}  # token-0 expired: every request in flight gets a 401
                await asyncio.gather(*(cluster.request("GET", f"/again-{i}") for i in range(10)))

    run(go())
    assert runs.read_text() == "xx"  # once at first, once for the ten 401s
    assert sum(1 for _, _, auth, _ in state.seen if auth == "Bearer token-1") == 10


def test_retry_after_is_honoured_and_a_watch_streams_lines_longer_than_any_buffer(
    pki: Path, state: Server, tmp_path: Path
):
    from kapply.resources.cluster import ResourceType

    state.busy = 2
    state.event_size = 300_000
    configmaps = ResourceType("", "v1", "ConfigMap", "configmaps", True, frozenset({"watch"}))

    async def go() -> list[tuple[str, Any]]:
        async with serving(pki, state) as port:
            ca = {"certificate-authority-data": b64(pki / "ca.crt")}
            path = kubeconfig(tmp_path / "k", port, ca, {"token": "t"})
            async with Cluster(load(KubeconfigFlags(path=str(path)))) as cluster:
                assert (await cluster.request("POST", "/create", body={}))["path"] == "/create"
                return [(kind, obj) async for kind, obj in cluster.watch(configmaps, namespace="ns")]

    events = run(go())
    assert [m for m, *_ in state.seen] == ["POST"] * 3 + ["GET"]
    assert [(kind, obj["metadata"]["name"], len(obj["data"]), obj["kind"]) for kind, obj in events] == [
        ("ADDED", "big", 300_000, "ConfigMap")
    ] * 2


def test_an_unreadable_certificate_names_the_context(pki: Path, tmp_path: Path):
    path = kubeconfig(tmp_path / "k", 1, {"certificate-authority": "missing.crt"}, {})

    async def go() -> None:
        async with Cluster(load(KubeconfigFlags(path=str(path)))) as cluster:
            await cluster.request("GET", "/version")

    with pytest.raises(KapplyError, match="context 'x': the cluster's certificate authority cannot be used"):
        run(go())


def test_a_netrc_password_is_never_sent_and_the_environment_proxy_is_honoured(
    pki: Path, state: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from kapply.resources.cluster import _request_options

    netrc = tmp_path / "netrc"
    netrc.write_text("default login someone password do-not-send\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)

    async def go() -> None:
        async with serving(pki, state) as port:
            path = admin_kubeconfig(tmp_path / "k", port, pki)
            async with Cluster(load(KubeconfigFlags(path=str(path)))) as cluster:
                await cluster.request("GET", "/version")

    run(go())
    assert [(auth, subject) for _, _, auth, subject in state.seen] == [(None, "kapply-admin")]

    context = load(KubeconfigFlags(path=str(kubeconfig(tmp_path / "p", 6443, {}, {}))))
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert _request_options(context) == {"proxy": "http://proxy.example:3128"}
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert _request_options(context) == {}
    named = kubeconfig(tmp_path / "n", 6443, {"proxy-url": "http://mine:8080", "tls-server-name": "api"}, {})
    assert _request_options(load(KubeconfigFlags(path=str(named)))) == {
        "proxy": "http://mine:8080",
        "server_hostname": "api",
    }
