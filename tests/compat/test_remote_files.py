"""`-f http(s)://...`: manifests read from a URL (deploy, `tools diff`, `tools inspect`), documents named
`HTTP URL '<url>' doc N`, and kapp's errors for an answer other than 2xx and for a request that fails."""

from __future__ import annotations

import functools
import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.compat.harness import Harness

pytestmark = pytest.mark.compat

CONFIG = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {greeting: hello}\n"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 serving tmp_path; its base URL."""
    (tmp_path / "config.yml").write_text(CONFIG)
    (tmp_path / "other.yml").write_text(CONFIG.replace("settings", "other"))
    (tmp_path / "no-kind.yml").write_text("apiVersion: v1\nmetadata: {name: x}\n")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(tmp_path)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_deploy_from_a_url(both: Harness, server: str):
    pair = both.run("deploy", "-a", "app", "-n", "{ns}", "-f", f"{server}/config.yml", "-y", "-c")
    both.same(pair)
    assert pair.kapply.code == 0
    both.same_objects()


def test_documents_from_a_url_are_named_by_it(both: Harness, server: str):
    both.same(both.run("deploy", "-a", "app", "-n", "{ns}", "-f", f"{server}/no-kind.yml", "--diff-run"))


@pytest.mark.parametrize("path", ["/missing.yml", "!refused"])
def test_failures_name_the_url(both: Harness, server: str, path: str):
    url = f"http://127.0.0.1:{free_port()}/x.yml" if path == "!refused" else server + path
    pair = both.run("deploy", "-a", "app", "-n", "{ns}", "-f", url, "--diff-run")
    both.same(pair)
    assert pair.kapply.code == 1


def test_tools_read_urls_too(both: Harness, server: str):
    both.same(both.run("tools", "diff", "-f", f"{server}/config.yml", "--file2", f"{server}/other.yml", "-c"))
    both.same(both.run("tools", "inspect", "-f", f"{server}/config.yml", "--tty"))
