"""kapply.cli.logs: one container's tailing (_Tailing) reads the log of a running container once (not following),
with the options given, and says it is waiting, and skips it, when the container does not run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from kapply.cli.logs import TailOptions, _tail, _Tailing
from kapply.objects import Obj
from kapply.resources.cluster import ResourceType

PODS = ResourceType("", "v1", "Pod", "pods", True, frozenset({"get", "list"}))


def pod(state: str) -> Obj:
    status = {"containerStatuses": [{"name": "web", "state": {state: {}}}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "status": status}


class FakeCluster:
    def __init__(self, live: Obj) -> None:
        self.live = live
        self.read: list[tuple[Any, ...]] = []

    async def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj:
        return self.live

    @asynccontextmanager
    async def log_lines(self, *args: Any, **kwargs: Any) -> AsyncIterator[AsyncIterator[bytes]]:
        self.read.append((*args, kwargs))

        async def lines() -> AsyncIterator[bytes]:
            yield b"one"
            yield b"two"

        yield lines()


class View:
    def __init__(self) -> None:
        self.said: list[str] = []

    def __getattr__(self, what: str) -> Any:
        return lambda tag, *text: self.said.append(" ".join((what, tag, *text)))


OPTIONS = TailOptions(follow=False, lines=10, pod="", containers=())


def test_a_running_containers_log_is_read_once_with_the_options_given() -> None:
    cluster, view = FakeCluster(pod("running")), View()
    asyncio.run(_tail(_Tailing(cluster, PODS, pod("running"), "web", OPTIONS, view)))  # type: ignore[arg-type]
    assert view.said == ["starting p > web", "line p > web one\n", "line p > web two\n", "ending p > web"]
    assert cluster.read == [(PODS, "ns", "p", "web", {"follow": False, "tail": 10})]


def test_a_container_that_does_not_run_is_waited_for_then_skipped_when_not_following() -> None:
    cluster, view = FakeCluster(pod("waiting")), View()
    asyncio.run(_tail(_Tailing(cluster, PODS, pod("waiting"), "web", OPTIONS, view)))  # type: ignore[arg-type]
    assert view.said == ["waiting p > web"]
    assert cluster.read == []
