"""Which Pods `kapply logs -f` and `deploy --logs` follow, found by the one list-then-watch loop
(kapply.resources.cluster.list_then_watch) against a scripted API server: `logs -f` gives each Pod once, those listed
then those added (a list again after 410 repeats none), in the app's namespace where Pods may not be listed
cluster-wide, and kapp's note where not there either; `deploy --logs` stops tailing a Pod that went while no watch
ran."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest

from kapply.cli import deploy_logs
from kapply.cli.logs import TailOptions, _pods, watching_forbidden
from kapply.objects import Obj
from kapply.resources.cluster import ResourceType
from tests.unit.cluster_fakes import Scripted, event

PODS = ResourceType("", "v1", "Pod", "pods", True, frozenset({"get", "list", "watch"}))
FOLLOW = TailOptions(follow=True, lines=None, pod="", containers=())
GONE = orjson.dumps({"type": "ERROR", "object": {"code": 410, "message": "too old resource version"}})


def pod(name: str, version: str = "1") -> Obj:
    status = {"containerStatuses": [{"name": "web", "state": {"running": {}}}]}
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name, "resourceVersion": version},
        "spec": {"containers": [{"name": "web"}]},
        "status": status,
    }


class Notices:
    def __init__(self) -> None:
        self.said: list[str] = []

    def notice(self, text: str) -> None:
        self.said.append(text)


def followed(cluster: Scripted, count: int) -> tuple[list[str], list[str]]:
    """The names of the first `count` Pods `logs -f` follows (fewer if it stops), and its notices."""
    out = Notices()

    async def run() -> list[str]:
        names: list[str] = []
        found = _pods(cluster, PODS, "app=a", "ns", FOLLOW, out)  # type: ignore[arg-type]
        try:
            async for p in found:
                names.append(p["metadata"]["name"])
                if len(names) == count:
                    break
        finally:
            await found.aclose()
        return names

    return asyncio.run(asyncio.wait_for(run(), 5)), out.said


def test_logs_follow_the_listed_pods_then_those_added_each_once() -> None:
    cluster = Scripted(
        [([pod("a")], "10"), ([pod("a"), pod("b"), pod("c")], "40")],
        [([event("ADDED", pod("b", "11")), event("MODIFIED", pod("a", "12")), GONE], None)],
    )
    assert followed(cluster, 3) == (["a", "b", "c"], [])
    assert cluster.sent == ["LIST app=a", "WATCH from 10", "LIST app=a"] + ["WATCH from 40"] * (len(cluster.sent) - 3)
    assert set(cluster.paths) == {"/api/v1/pods"}


def test_where_pods_may_not_be_listed_cluster_wide_those_of_the_apps_namespace_are_followed() -> None:
    cluster = Scripted([403, ([pod("a")], "10")], [])
    assert followed(cluster, 1) == (["a"], [])
    assert cluster.paths[:2] == ["/api/v1/pods", "/api/v1/namespaces/ns/pods"]


def test_where_pods_may_not_be_listed_at_all_none_are_followed_with_kapps_note() -> None:
    cluster = Scripted([403, 403], [])
    assert followed(cluster, 1) == ([], [watching_forbidden(["ns"])])


class Logs(Scripted):
    """A scripted API server whose container logs say one line, then end once `idle` is set (the watch script done)."""

    def __init__(self, read: asyncio.Event, *args: Any) -> None:
        super().__init__(*args)
        self.opened = 0
        self.read = read  # set once a log's line has been read

    @asynccontextmanager
    async def log_lines(self, *args: Any, **kwargs: Any) -> AsyncIterator[AsyncIterator[bytes]]:
        self.opened += 1

        async def lines() -> AsyncIterator[bytes]:
            yield b"one"
            self.read.set()
            await self.idle.wait()

        yield lines()


class View:
    def __init__(self) -> None:
        self.said: list[str] = []

    def __getattr__(self, what: str) -> Any:
        return lambda tag, *text: self.said.append(" ".join((what, tag, *text)).strip())


def test_deploy_logs_stop_tailing_a_pod_that_went_while_no_watch_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deploy_logs, "RESTART", 0)
    read = asyncio.Event()
    # The Pod is listed; once its log is read the watch is too old, and the list after it finds the Pod no more.
    cluster, view = Logs(read, [([pod("p")], "10"), ([], "40")], [([read, GONE], None)]), View()

    async def run() -> None:
        following = asyncio.create_task(
            deploy_logs._follow(cluster, PODS, "app=a", [None], set(), view, logs_all=True)  # type: ignore[arg-type]
        )
        while "stopped p > web" not in view.said:
            await asyncio.sleep(0.01)
        for _ in range(50):  # turns of the loop in which a Pod still there would have its log opened again
            await asyncio.sleep(0)
        following.cancel()
        await asyncio.gather(following, return_exceptions=True)

    asyncio.run(asyncio.wait_for(run(), 5))
    assert view.said == ["starting p > web", "line p > web one", "stopped p > web"]
    assert cluster.opened == 1
