"""`/readyz` and the API server (controller/health.py's Contact): ready while the API server answered within the
window, every answer of the controller's requests counting (an answer of 500 or more not); probes of `/version` when a
readiness check finds nothing else answered, which turn /readyz 503 with the reason when they fail and 200 again when
one is answered, and none while nobody checks (issue 33: an idle controller sends no request).
The served endpoints themselves are test_controller_metrics.py's; a real API server cut off is
tests/e2e/test_controller_readiness.py's."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from kapply.controller import health
from kapply.controller.health import Address, Contact, serving
from kapply.controller.main import Controller, ControllerOptions
from kapply.errors import ClusterError


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def never() -> None:
    raise AssertionError("not probed")


def test_ready_while_an_answer_came_within_the_window() -> None:
    clock = Clock()
    contact = Contact(never, window=15, clock=clock)
    assert contact.unready() is None  # counted as in contact from the start
    clock.now += 15
    assert contact.unready() is None
    clock.now += 1
    assert contact.unready() == "the API server has not answered for 16s"
    contact.answered(503)  # there, but not serving: no contact
    assert contact.unready() is not None
    contact.answered(404)
    assert contact.unready() is None


def test_a_failed_probe_names_its_failure_and_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    answers: list[Exception | None] = [ClusterError("Request GET /version to https://x failed: refused")] * 2 + [None]

    async def probe() -> None:
        answer = answers.pop(0)
        if answer:
            raise answer

    contact = Contact(probe, window=10, clock=clock)

    async def scenario() -> list[bool]:
        return [await contact.probe() for _ in range(3)]

    with caplog.at_level(logging.INFO, logger="kapply.controller"):
        clock.now += 11
        results = asyncio.run(scenario())
    assert results == [False, False, True]
    assert contact.unready() is None  # the last probe was answered
    assert [r.message for r in caplog.records] == [
        "the API server does not answer: Request GET /version to https://x failed: refused",
        "the API server answers again",
    ]
    answers.append(ClusterError("refused"))
    clock.now += 11
    assert not asyncio.run(contact.probe())
    assert contact.unready() == "the API server has not answered for 11s: refused"


def test_a_probe_that_hangs_fails_after_its_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health, "PROBE_TIMEOUT", 0.01)
    clock = Clock()

    async def hang() -> None:
        await asyncio.sleep(10)

    contact = Contact(hang, window=10, clock=clock)
    assert not asyncio.run(contact.probe())
    clock.now += 11
    assert contact.unready() == "the API server has not answered for 11s: TimeoutError after 0.01s"


def test_probes_follow_the_checks_and_a_check_after_the_window_waits_for_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """No check, no probe however long the silence; a check within half the window probes nothing, one after half of
    it starts a probe and answers ready without waiting for it, one after the whole window answers with its probe's
    answer; a check while probes run starts no other."""
    monkeypatch.setattr(health, "PROBE_RETRY", 0.01)
    clock = Clock()
    probes: list[float] = []
    reachable = [True]

    async def probe() -> None:
        probes.append(clock.now)
        await asyncio.sleep(0)
        if not reachable[0]:
            raise ClusterError("connection refused")

    async def scenario() -> None:
        contact = Contact(probe, window=10, clock=clock)
        clock.now += 5
        assert await contact.check() is None and probes == []
        clock.now += 1  # 6 s: more than half the window
        assert await contact.check() is None and probes == []  # started, not awaited
        await asyncio.sleep(0.01)
        assert probes == [106.0] and contact.unready() is None
        clock.now += 3600  # an hour without a check: nothing asked the API server meanwhile
        assert probes == [106.0]
        reachable[0] = False
        assert await contact.check() == "the API server has not answered for 3600s: connection refused"
        assert probes == [106.0, 3706.0]
        assert await contact.check() is not None and probes == [106.0, 3706.0]  # one second between two probes
        reachable[0] = True
        clock.now += 1
        await asyncio.sleep(0.1)  # the retry, without a check
        assert probes == [106.0, 3706.0, 3707.0] and await contact.check() is None
        await contact.close()

    asyncio.run(scenario())


def test_readyz_follows_the_probes_while_served(monkeypatch: pytest.MonkeyPatch) -> None:
    """A window of 0.2 s: idle without a probe while nothing checks; the first check after the window waits for a
    probe; probes once a check finds nothing answered for 0.1 s; 503 while they fail, 200 once one succeeds."""
    monkeypatch.setattr(health, "PROBE_RETRY", 0.01)
    reachable = [True]
    probes = [0]

    async def probe() -> None:
        probes[0] += 1
        if not reachable[0]:
            raise ClusterError("connection refused")

    async def readyz(session: aiohttp.ClientSession, url: str) -> tuple[int, str]:
        async with session.get(url + "/readyz") as answer:
            return answer.status, await answer.text()

    async def until(session: aiohttp.ClientSession, url: str, status: int) -> str:
        for _ in range(500):
            code, text = await readyz(session, url)
            if code == status:
                return text
            await asyncio.sleep(0.01)
        raise AssertionError(f"/readyz never answered {status}")

    async def scenario() -> tuple[str, str]:
        contact = Contact(probe, window=0.2)
        async with (
            serving(Address("127.0.0.1", 0), CollectorRegistry(), lambda: None, contact) as urls,
            aiohttp.ClientSession() as session,
        ):
            await asyncio.sleep(0.3)  # idle: nobody checks, nothing is probed
            assert probes[0] == 0
            ready = await readyz(session, urls[0])
            assert ready == (200, "ok\n") and probes[0] == 1  # the check waited for the probe
            reachable[0] = False
            unready = await until(session, urls[0], 503)
            reachable[0] = True
            again = await until(session, urls[0], 200)
            return unready, again

    unready, again = asyncio.run(scenario())
    assert unready.startswith("the API server has not answered for 0s: connection refused")
    assert again == "ok\n"


def test_the_controller_counts_every_answer_as_contact_and_probes_its_own_client() -> None:
    versions: list[str] = []

    async def server_version() -> dict[str, Any]:
        versions.append("GET /version")
        return {"gitVersion": "v1.34.4"}

    api: Any = SimpleNamespace(cluster=SimpleNamespace(server_version=server_version))
    c = Controller(api, ControllerOptions())
    clock = Clock()
    c.contact = Contact(c.contact._probe, window=15, clock=clock)
    clock.now += 16
    assert c.contact.unready() is not None
    app_client: Any = SimpleNamespace()  # an App's client: the same API server
    c._answered(app_client, "GET", 200)
    assert c.contact.unready() is None
    clock.now += 16
    assert asyncio.run(c.contact.probe()) and versions == ["GET /version"]
    assert c.contact.unready() is None
