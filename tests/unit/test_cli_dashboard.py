"""`kapply dashboard` (kapply.cli.dashboard) without a cluster: `--open` hands the URL with its token to the browser
(a recorder in place of webbrowser.open: no browser starts), and SIGTERM or Ctrl-C stops it with `Dashboard stopped`."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from kapply.cli.main import run

URL = "http://127.0.0.1:40613/Hq1m0X5Qp1r2/"


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The URLs handed to the browser; the client is a stand-in (no kubeconfig is read)."""
    urls: list[str] = []
    monkeypatch.setattr("webbrowser.open", urls.append)

    @asynccontextmanager
    async def client(*args: Any) -> AsyncIterator[object]:
        yield object()

    monkeypatch.setattr("kapply.cli.common.client", client)
    return urls


def serving(monkeypatch: pytest.MonkeyPatch, then: Callable[[], None]) -> None:
    """A dashboard that starts at URL, then does `then` and serves until cancelled."""

    async def serve(api: object, port: int, started: Callable[[str], None]) -> None:
        started(URL)
        then()
        await asyncio.Event().wait()

    monkeypatch.setattr("kapply.dashboard.server.serve", serve)


def terminate() -> None:
    os.kill(os.getpid(), signal.SIGTERM)


def interrupt() -> None:  # Ctrl-C
    os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.parametrize("stop", [terminate, interrupt])
def test_open_hands_the_url_with_its_token_to_the_browser_and_a_stop_says_so(
    stop: Callable[[], None], opened: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    serving(monkeypatch, stop)
    assert run(["dashboard", "--open"]) == 0
    assert opened == [URL]
    assert capsys.readouterr() == (f"Dashboard: {URL}\nDashboard stopped\n", "")


def test_without_open_no_browser_starts(
    opened: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    serving(monkeypatch, terminate)
    assert run(["dashboard"]) == 0
    assert opened == []
    assert capsys.readouterr().out == f"Dashboard: {URL}\nDashboard stopped\n"
