"""Reading manifests from HTTP(S) URLs (`-f https://...`): kapp's document names and error messages."""

from __future__ import annotations

import functools
import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kapply.errors import ManifestError
from kapply.resources import manifests, remote


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "cm.yml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\nkind: X\n")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(tmp_path)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_only_http_and_https_are_urls():
    assert remote.is_url("http://x/y.yml") and remote.is_url("https://x/y.yml")
    assert not remote.is_url("ftp://x/y.yml") and not remote.is_url("http.yml") and not remote.is_url("-")


def test_documents_of_a_url_are_named_by_it(server: str):
    docs = manifests.read([f"{server}/cm.yml"])
    assert [d.origin for d in docs] == [f"HTTP URL '{server}/cm.yml' doc 1", f"HTTP URL '{server}/cm.yml' doc 3"]


def test_an_answer_other_than_2xx_is_an_error_with_its_status(server: str):
    with pytest.raises(ManifestError, match=r"^Requesting URL 'http://.*/gone.yml': 404 File not found$"):
        manifests.read([f"{server}/gone.yml"])


def test_a_refused_connection_reads_as_gos():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/x.yml"
    with pytest.raises(ManifestError) as failure:
        remote.fetch(url)
    assert str(failure.value) == (
        f"Requesting URL '{url}':\n  Get \"{url}\": dial tcp 127.0.0.1:{port}: connect: connection refused"
    )


def test_an_unknown_host_reads_as_gos():
    assert remote._reason("http://nohost.invalid/x", socket.gaierror(-2, "Name or service not known")) == (
        'Get "http://nohost.invalid/x": dial tcp: lookup nohost.invalid: no such host'
    )
