"""Where an App's fetchers may connect (kapply.http.Destinations): never the controller's own machine, a link-local
address (a cloud's metadata service) or the API server, unless the controller allows local sources; checked on the
addresses a connection is made to (names resolved through GuardedResolver) and on IP literals before each request.
The servers here are the test's own, on loopback; each test checks that they were never reached."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yarl

from kapply.controller.fetch import FetchError, FetchPolicy, Transport, git_host, http_get
from kapply.http import ANYWHERE, Destinations, GuardedResolver
from kapply.oci import OciError, RegistryClient, parse_reference

LOCAL = Destinations(allow_local=False, refused=("10.96.0.1",))


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "an address of the controller's own machine"),
        ("127.8.9.10", "an address of the controller's own machine"),
        ("::1", "an address of the controller's own machine"),
        ("::ffff:127.0.0.1", "an address of the controller's own machine"),
        ("0.0.0.0", "an address of the controller's own machine"),
        ("::", "an address of the controller's own machine"),
        ("169.254.169.254", "a link-local address"),
        ("fe80::1%eth0", "a link-local address"),
        ("10.96.0.1", "the API server's address"),
        ("10.0.0.7", None),
        ("192.168.1.1", None),
        ("2001:db8::1", None),
    ],
)
def test_local_link_local_and_api_server_addresses_are_refused(address: str, why: str | None):
    assert LOCAL.refusal(address) == why
    assert ANYWHERE.refusal(address) is None


def test_an_ip_literal_is_checked_a_name_is_left_to_its_resolution():
    with pytest.raises(OSError, match=r"\[::1\] is an address of the controller's own machine"):
        LOCAL.check_literal("[::1]")
    LOCAL.check_literal("registry.example")  # checked when resolved


def test_a_name_that_resolves_to_loopback_is_refused():
    with pytest.raises(OSError, match=r"localhost resolves to .*, an address of the controller's own machine"):
        asyncio.run(LOCAL.check_name("localhost", 443))

    async def resolve() -> None:
        resolver = GuardedResolver(LOCAL)
        try:
            await resolver.resolve("localhost", 443)
        finally:
            await resolver.close()

    with pytest.raises(OSError, match=r"localhost resolves to"):
        asyncio.run(resolve())


@pytest.mark.parametrize(
    ("url", "transport", "expected"),
    [
        ("https://git.example/org/repo.git", Transport.HTTPS, ("git.example", 443)),
        ("http://user:pw@127.0.0.1:8080/r", Transport.HTTP, ("127.0.0.1", 8080)),
        ("ssh://git@[::1]:2222/r", Transport.SSH, ("::1", 2222)),
        ("git@github.example:org/repo.git", Transport.SSH, ("github.example", 22)),
        ("[::1]:org/repo.git", Transport.SSH, ("::1", 22)),
    ],
)
def test_the_host_git_connects_to(url: str, transport: Transport, expected: tuple[str, int]):
    assert git_host(url, transport) == expected


@pytest.fixture
def server():
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"served")

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1], hits
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_an_http_source_on_loopback_is_refused_without_a_request(server, tmp_path: Path, host: str):
    port, hits = server
    url = yarl.URL(f"http://{host}:{port}/x")
    with pytest.raises(FetchError, match=r"Initiating URL download: .*(127\.0\.0\.1|localhost).* own machine"):
        asyncio.run(http_get(url, None, tmp_path / "x", FetchPolicy(destinations=LOCAL)))
    assert hits == []
    assert asyncio.run(http_get(url, None, tmp_path / "y", FetchPolicy())) and hits == ["/x"]  # allowed: served


def test_a_registry_on_loopback_is_refused_without_a_request(server):
    port, hits = server

    async def pull() -> None:
        async with RegistryClient(plain_http=True, destinations=LOCAL) as client:
            await client.tags(parse_reference(f"127.0.0.1:{port}/repo"))

    with pytest.raises(OciError, match=r"127\.0\.0\.1 is an address of the controller's own machine"):
        asyncio.run(pull())
    assert hits == []
