"""When `deploy --logs` lists the app's Pods (kapply.cli.deploy_logs), against a scripted API server: an app that
exists has the Pods there before the deploy listed before the deploy starts (a Pod listed later could be one the deploy
made), and those are not "new"; a new app (no record when its plan looked) has none, so nothing is sent before the
deploy starts (issue 33: a round trip less), every Pod it sees is new, and kapp's note where Pods may not be listed is
still given before the deploy's end."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from kapply.cli.deploy_logs import deploy_logs
from kapply.cli.logs import watching_forbidden
from kapply.objects import Obj
from kapply.resources.cluster import ResourceType
from tests.unit.cluster_fakes import Listed, Scripted, Watched, event

PODS = ResourceType("", "v1", "Pod", "pods", True, frozenset({"get", "list", "watch"}))


def pod(name: str) -> Obj:
    """A running Pod of the app whose logs are shown when it is new (kapp's default `deploy-logs` annotation)."""
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": name,
            "resourceVersion": "1",
            "annotations": {"kapp.k14s.io/deploy-logs": ""},
        },
        "spec": {"containers": [{"name": "web"}]},
        "status": {"containerStatuses": [{"name": "web", "state": {"running": {}}}]},
    }


class Discovered:
    def preferred(self, group: str, kind: str) -> ResourceType | None:
        assert (group, kind) == ("", "Pod")
        return PODS


class Pods(Scripted):
    """The scripted API server with discovery, and container logs of one line each."""

    def __init__(self, lists: list[Listed], watches: list[Watched]) -> None:
        super().__init__(lists, watches)
        self.tailed = asyncio.Event()

    async def discovery(self, refresh: bool = False) -> Any:
        return Discovered()

    @asynccontextmanager
    async def log_lines(self, pods: ResourceType, namespace: str, name: str, *_: Any, **__: Any) -> AsyncIterator[Any]:
        async def lines() -> AsyncIterator[bytes]:
            yield f"{name} says hi".encode()
            self.tailed.set()
            await asyncio.Event().wait()

        yield lines()


class Out:
    def __init__(self) -> None:
        self.said: list[str] = []

    def begin_line(self, text: str) -> None:
        self.said.append(text.rstrip("\n"))

    def block(self, text: str, *, raw: bool = False) -> None:
        self.said.append(text.rstrip("\n"))

    def notice(self, text: str) -> None:
        self.said.append(text)


def deployed(cluster: Pods, *, new_app: bool, tails: bool = True) -> tuple[list[str], list[str]]:
    """What was asked before the deploy's body started, and what was shown; the body waits for a log line when
    `tails`, else ends at once."""
    out = Out()
    before: list[str] = []

    async def run() -> None:
        async with deploy_logs(cluster, out, "app=a", ["ns"], logs_all=False, new_app=new_app):  # type: ignore[arg-type]
            before.extend(cluster.sent)
            if tails:
                await cluster.tailed.wait()

    asyncio.run(asyncio.wait_for(run(), 5))
    return before, out.said


def test_an_existing_apps_pods_are_listed_before_the_deploy_and_are_not_new() -> None:
    # "old" is there before the deploy (listed first, then by the follow's own list); "new" is added meanwhile.
    cluster = Pods([([pod("old")], "10"), ([pod("old")], "10")], [([event("ADDED", pod("new"))], None)])
    before, said = deployed(cluster, new_app=False)
    assert before == ["LIST app=a"]
    assert said == ["logs | # starting tailing 'new > web' logs", "logs | new > web | new says hi"]


def test_a_new_apps_pods_are_not_listed_before_the_deploy_and_every_one_is_new() -> None:
    # The deploy made "first" by the time its Pods are listed: it is new all the same.
    cluster = Pods([([pod("first")], "10"), ([pod("first")], "10")], [])
    before, said = deployed(cluster, new_app=True)
    assert before == []
    assert said == ["logs | # starting tailing 'first > web' logs", "logs | first > web | first says hi"]


def test_a_new_app_where_pods_may_not_be_listed_is_told_before_the_deploy_ends() -> None:
    cluster = Pods([403, 403], [])
    before, said = deployed(cluster, new_app=True, tails=False)
    assert before == []
    assert said == [watching_forbidden(["ns"])]
    assert cluster.sent == ["LIST app=a", "LIST app=a"]  # cluster-wide, then the app's namespace: no watch
