"""A wait's sleep ended by watches (kapply.apply.observe.Wakes): what wakes it, what does not, and what a refused or
ended watch leaves (a look every interval, as kapp's). Against an in-memory double whose watches are queues; the
real API server's watches are exercised by every e2e wait."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kapply.apply.loop import ApplyLoop
from kapply.apply.observe import Wakes
from kapply.apply.options import ApplyOptions, WaitOptions
from kapply.apply.planning import cluster_changes, order
from kapply.diff.change import calculate
from kapply.errors import ClusterError
from kapply.objects import Obj
from kapply.resources.cluster import ResourceType
from tests.unit.fake_cluster import FakeCluster
from tests.unit.test_apply_loop import DISCOVERY, Lines, deployment, resources

DEPLOYMENTS = next(t for t in DISCOVERY.listable() if t.kind == "Deployment")
SELECTOR = "kapp.k14s.io/app=1"


class Watching(FakeCluster):
    """Serves a watch per (type, namespace) from a queue the test fills; None in a queue ends that watch."""

    def __init__(self, refuse: bool = False) -> None:
        super().__init__(DISCOVERY)
        self.refuse = refuse
        self.queues: dict[tuple[str, str | None], asyncio.Queue[tuple[str, Obj] | None]] = {}
        self.listed: list[tuple[str, str | None, str | None, int | None]] = []
        self.watched: list[tuple[str, str | None, str | None, str | None]] = []
        self.watching = asyncio.Event()

    def queue(self, kind: str, namespace: str | None) -> asyncio.Queue[tuple[str, Obj] | None]:
        return self.queues.setdefault((kind, namespace), asyncio.Queue())

    async def list_with_version(self, rtype: ResourceType, **options: Any) -> tuple[list[Obj], str]:
        self.listed.append((rtype.kind, options.get("namespace"), options.get("label_selector"), options.get("limit")))
        if self.refuse:
            raise ClusterError("API server says: forbidden (reason: Forbidden)", status=403)
        return [], "100"

    async def watch(
        self,
        rtype: ResourceType,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int = 300,
    ) -> AsyncIterator[tuple[str, Obj]]:
        self.watched.append((rtype.kind, namespace, label_selector, resource_version))
        self.watching.set()
        queue = self.queue(rtype.kind, namespace)
        while (event := await queue.get()) is not None:
            yield event


def event(kind: str, version: str) -> tuple[str, Obj]:
    return kind, {"metadata": {"name": "web", "resourceVersion": version}}


async def woke(wakes: Wakes, within: float) -> bool:
    """Whether a sleep of up to 60 s ended within `within` seconds."""
    try:
        async with asyncio.timeout(within):
            await wakes.sleep(60)
    except TimeoutError:
        return False
    return True


def test_a_change_wakes_the_sleep_and_a_bookmark_does_not() -> None:
    async def go() -> tuple[bool, bool, list[Any], list[Any]]:
        fake = Watching()
        wakes = Wakes(fake, SELECTOR)  # type: ignore[arg-type]
        wakes.follow([(DEPLOYMENTS, "ns")])
        await fake.watching.wait()
        fake.queue("Deployment", "ns").put_nowait(event("BOOKMARK", "101"))
        bookmark = await woke(wakes, 0.3)
        fake.queue("Deployment", "ns").put_nowait(event("MODIFIED", "102"))
        modified = await woke(wakes, 5)
        await wakes.close()
        return bookmark, modified, fake.listed, fake.watched

    bookmark, modified, listed, watched = asyncio.run(go())
    assert (bookmark, modified) == (False, True)
    # from the version of a one-object LIST by the app's labels, in the place's namespace
    assert listed == [("Deployment", "ns", SELECTOR, 1)]
    assert watched == [("Deployment", "ns", SELECTOR, "100")]


def test_a_woken_sleep_lasts_its_shortest_and_a_cleared_change_wakes_nothing() -> None:
    async def go() -> tuple[float, bool]:
        fake = Watching()
        wakes = Wakes(fake, SELECTOR)  # type: ignore[arg-type]
        wakes.follow([(DEPLOYMENTS, "ns")])
        await fake.watching.wait()
        fake.queue("Deployment", "ns").put_nowait(event("MODIFIED", "101"))
        started = time.monotonic()
        await wakes.sleep(60, 0.2)  # woken at once, but a look a watch woke waits its turn
        slept = time.monotonic() - started
        wakes.clear()  # the look that follows reads that change
        again = await woke(wakes, 0.3)
        await wakes.close()
        return slept, again

    slept, again = asyncio.run(go())
    assert 0.2 <= slept < 30 and not again


def test_a_refused_watch_leaves_a_look_every_interval_and_is_not_asked_again() -> None:
    async def go() -> tuple[bool, list[Any], list[Any]]:
        fake = Watching(refuse=True)
        wakes = Wakes(fake, SELECTOR)  # type: ignore[arg-type]
        wakes.follow([(DEPLOYMENTS, "ns")])
        await asyncio.sleep(0)
        wakes.follow([(DEPLOYMENTS, "ns")])
        started = time.monotonic()
        await wakes.sleep(0.1)
        slept = time.monotonic() - started
        await wakes.close()
        return slept >= 0.1, fake.listed, fake.watched

    full_interval, listed, watched = asyncio.run(go())
    assert full_interval and listed == [("Deployment", "ns", SELECTOR, 1)] and watched == []


@pytest.mark.parametrize(("restart_after", "watches"), [(0.0, 2), (60.0, 1)])
def test_a_watch_the_server_ended_is_started_again_from_its_last_version_only_after_a_while(
    monkeypatch: pytest.MonkeyPatch, restart_after: float, watches: int
) -> None:
    monkeypatch.setattr(Wakes, "RESTART_AFTER", restart_after)

    async def go() -> list[Any]:
        fake = Watching()
        wakes = Wakes(fake, SELECTOR)  # type: ignore[arg-type]
        wakes.follow([(DEPLOYMENTS, "ns")])
        queue = fake.queue("Deployment", "ns")
        queue.put_nowait(event("MODIFIED", "105"))
        queue.put_nowait(None)  # the server ends the watch
        assert await woke(wakes, 5)
        if watches == 2:
            async with asyncio.timeout(5):
                while len(fake.watched) < 2:
                    await asyncio.sleep(0.01)
        else:
            async with asyncio.timeout(5):
                while not queue.empty():
                    await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)  # a restart would be on its way by now (it needs no request first)
        await wakes.close()
        return fake.watched

    watched = asyncio.run(go())
    assert [version for *_, version in watched] == ["100", "105"][:watches]


def test_the_apply_loop_looks_again_when_a_watch_sees_a_change_not_after_its_interval(config: Any) -> None:
    """A Deployment made ready after the first look: with a 60 s interval, only the watch's event can end the wait
    within the test's 10 s."""
    fake = Watching()
    looked, ready = asyncio.Event(), asyncio.Event()

    def evolve(obj: Obj, seen: int) -> None:
        looked.set()
        replicas = 1 if ready.is_set() else 0
        obj["status"] = {"observedGeneration": obj["metadata"]["generation"], "readyReplicas": replicas}

    fake.evolve[("Deployment", "web")] = evolve
    new = resources(config, deployment("web"))
    planned = cluster_changes([calculate(n, None, config) for n in new], config, True)
    lines = Lines()

    async def go() -> None:
        loop = ApplyLoop(fake, DISCOVERY, config, SELECTOR, ApplyOptions(), WaitOptions(check_interval=60), lines)  # type: ignore[arg-type]
        running = asyncio.ensure_future(loop.run(planned, order(planned, config)))
        async with asyncio.timeout(10):
            await fake.watching.wait()
            await looked.wait()
            ready.set()
            fake.queue("Deployment", "ns").put_nowait(event("MODIFIED", "200"))
            await running

    asyncio.run(go())
    # the waited Deployment's place only: its ReplicaSets' and Pods' changes never decide its verdict
    assert fake.watched == [("Deployment", "ns", SELECTOR, "100")]
    assert any(line.startswith("ongoing: reconcile deployment/web") for line in lines.lines)
    assert any(line.startswith("ok: reconcile deployment/web") for line in lines.lines)


def test_a_wait_that_never_sleeps_opens_no_watch(config: Any) -> None:
    """Done at the first look: no watch, so none of the connections the step warmed is taken."""
    fake = Watching()

    def ready(obj: Obj, seen: int) -> None:
        obj["status"] = {"observedGeneration": obj["metadata"]["generation"], "readyReplicas": 1}

    fake.evolve[("Deployment", "web")] = ready
    new = resources(config, deployment("web"))
    planned = cluster_changes([calculate(n, None, config) for n in new], config, True)
    lines = Lines()
    loop = ApplyLoop(fake, DISCOVERY, config, SELECTOR, ApplyOptions(), WaitOptions(check_interval=60), lines)  # type: ignore[arg-type]
    asyncio.run(loop.run(planned, order(planned, config)))
    assert any(line.startswith("ok: reconcile deployment/web") for line in lines.lines)
    assert fake.listed == [] and fake.watched == []


def test_at_most_limit_places_are_watched() -> None:
    async def go() -> list[Any]:
        fake = Watching()
        wakes = Wakes(fake, SELECTOR)  # type: ignore[arg-type]
        wakes.follow([(DEPLOYMENTS, f"ns-{i}") for i in range(Wakes.LIMIT + 3)])
        async with asyncio.timeout(5):
            while len(fake.watched) < Wakes.LIMIT:
                await asyncio.sleep(0.01)
        wakes.follow([(DEPLOYMENTS, "one-more")])
        await asyncio.sleep(0)  # a ninth watch's task would list on this turn of the loop (the fake answers at once)
        await wakes.close()
        return fake.listed

    listed = asyncio.run(go())
    assert [namespace for _, namespace, _, _ in listed] == [f"ns-{i}" for i in range(Wakes.LIMIT)]
