"""A git source's host is resolved and checked by the controller (kapply.http.Destinations.check_name), then git is
told to connect to the addresses checked (kapply.controller.fetch.Pin): curl's resolve list for http and https with
no redirects, ssh's HostName with the host key checked under the host's name. Real git, against a server of the
test's own on loopback, under a name that does not resolve at all."""

from __future__ import annotations

import asyncio
import functools
import shlex
import subprocess
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kapply.controller.fetch import NO_PIN, Pin, Transport, _ssh_command
from kapply.http import Destinations

NAME = "kapply-pin.invalid"  # .invalid never resolves (RFC 2606)


def test_http_and_https_get_curls_resolve_list_and_no_redirects():
    pin = Pin("git.example.com", 443, ("192.0.2.1", "2001:db8::1"))
    assert pin.git_options(Transport.HTTPS) == (
        "-c",
        "http.curloptResolve=git.example.com:443:192.0.2.1,[2001:db8::1]",
        "-c",
        "http.followRedirects=false",
    )
    assert pin.git_options(Transport.SSH) == ()
    assert NO_PIN.git_options(Transport.HTTPS) == ()


def test_ssh_connects_to_the_first_address_and_checks_the_key_under_the_hosts_name():
    command = shlex.split(_ssh_command(None, None, Pin("git.example.com", 22, ("192.0.2.1", "192.0.2.2"))))
    assert command[:7] == [
        "ssh",
        "-o",
        "HostName=192.0.2.1",
        "-o",
        "HostKeyAlias=git.example.com",
        "-o",
        "CheckHostIP=no",
    ]
    assert "HostName" not in _ssh_command(None, None)


def test_check_name_returns_the_addresses_it_checked_and_none_when_all_may_be_reached():
    assert asyncio.run(Destinations(allow_local=False).check_name("192.0.2.1", 443)) == ("192.0.2.1",)
    assert asyncio.run(Destinations(allow_local=True).check_name("192.0.2.1", 443)) == ()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[int]:
    """A bare repository over git's dumb http protocol on loopback; the port."""
    work, bare = tmp_path / "work", tmp_path / "served" / "repo.git"
    work.mkdir()
    (work / "f").write_text("x")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q", "--initial-branch=main"], ["add", "f"], ["commit", "-q", "-m", "c"]):
        subprocess.run([*git, *args], cwd=work, check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    subprocess.run(["git", "update-server-info"], cwd=bare, check=True)
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(tmp_path / "served"))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def ls_remote(options: tuple[str, ...], port: int) -> subprocess.CompletedProcess[str]:
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin"}
    url = f"http://{NAME}:{port}/repo.git"
    return subprocess.run(["git", *options, "ls-remote", url], capture_output=True, text=True, env=env, timeout=30)


def test_git_connects_to_the_pinned_address_without_resolving_the_name(served: int):
    pinned = ls_remote(Pin(NAME, served, ("127.0.0.1",)).git_options(Transport.HTTP), served)
    assert pinned.returncode == 0 and "refs/heads/main" in pinned.stdout, pinned.stderr
    unpinned = ls_remote((), served)
    assert unpinned.returncode != 0 and "resolve" in unpinned.stderr.lower(), unpinned.stderr
