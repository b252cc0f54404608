"""kapply.dashboard.server with a fake API client: the pages and their assets (package data), the list as JSON and as
server-sent events, one App's page data with its parts the user may not read said so, the actions' patches and the
API server's refusal, a rollback's preview and run, and the checks every request passes first."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import orjson
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from kapply.dashboard.board import Board
from kapply.dashboard.server import Dashboard
from kapply.errors import ClusterError, KapplyError
from kapply.objects import Obj

APP: Obj = {
    "apiVersion": "kapply.dev/v1alpha1",
    "kind": "App",
    "metadata": {"name": "web", "namespace": "prod"},
    "spec": {},
    "status": {"conditions": [{"type": "ReconcileSucceeded", "status": "True"}]},
}
KEY = "App.kapply.dev/prod/web"


class FakeDiscovery:
    """Serves kapply's packaging kinds and kapp-controller's PackageRepository."""

    def find(self, api_version: str, kind: str) -> object | None:
        return object() if api_version.startswith("packaging.kapply.dev/") or kind == "PackageRepository" else None


@dataclass
class FakeCluster:
    patches: list[Any] = field(default_factory=list)
    refuse: bool = False
    requests: list[tuple[str, str, str, str]] = field(default_factory=list)

    async def discovery(self) -> FakeDiscovery:
        return FakeDiscovery()

    async def list(self, rtype: Any, **kwargs: Any) -> list[Obj]:
        assert rtype.kind != "Secret", "a Secret's data is never asked for"
        if rtype.group == "packaging.carvel.dev":
            raise ClusterError(
                'packagerepositories.packaging.carvel.dev is forbidden: User "jo" cannot list', status=403
            )
        if rtype.kind == "PackageInstall":
            return [
                {"kind": "PackageInstall", "apiVersion": "packaging.kapply.dev/v1alpha1", "metadata": {"name": "i"}}
            ]
        return []

    async def get(self, rtype: Any, namespace: str, name: str) -> Obj | None:
        return None

    async def list_metadata(self, rtype: Any, *, namespace: str, label_selector: str, field_selector: str) -> list[Obj]:
        """The metadata of what app-changes kept, as the API server selects it (never their Secrets' data)."""
        self.requests.append((rtype.kind, namespace, label_selector, field_selector))
        return [{"name": "web.app-change-1"}]

    async def patch(self, rtype: Any, namespace: str, name: str, patch: Any) -> Obj:
        if self.refuse:
            raise ClusterError('apps.kapply.dev "web" is forbidden: User "jo" cannot patch', status=403)
        self.patches.append(patch)
        return APP

    async def list_with_version(self, rtype: Any, **kwargs: Any) -> tuple[list[Obj], str]:
        return [{"reason": "Deployed", "message": "ok", "lastTimestamp": "2026-12-05T06:00:00Z"}], "1"


@dataclass
class FakeApi:
    cluster: FakeCluster = field(default_factory=FakeCluster)

    async def inspect(self, app: str, *, namespace: str | None = None) -> list[Obj]:
        raise ClusterError('configmaps is forbidden: User "jo" cannot list', status=403)

    changes: list[Any] = field(default_factory=list)
    deployed: list[Any] = field(default_factory=list)

    async def app_changes(self, app: str, *, namespace: str | None = None) -> list[Any]:
        return self.changes

    async def plan_rollback(self, app: str, change: str, *, namespace: str | None = None) -> Any:
        if change == "forbidden":
            raise ClusterError('secrets "forbidden" is forbidden: User "jo" cannot get', status=403)
        if change != "web.app-change-1":
            raise KapplyError(f"App-change '{change}' of App '{app}' kept nothing to roll back to")
        app_ = SimpleNamespace(name=app, namespace=namespace)
        options = SimpleNamespace(rollback_of=change)
        return SimpleNamespace(app=app_, options=options, changes=(), hunks=lambda: (), pending=False)

    async def check_deploy(self, plan: Any) -> None:
        pass

    async def run_deploy(self, plan: Any, *, progress: Any = None) -> Any:
        self.deployed.append(plan)
        return SimpleNamespace(app_change="web.app-change-2")


Served = tuple[TestClient, Dashboard, FakeApi]


def run(test: Callable[[Served], Awaitable[None]]) -> None:
    """`test` against a dashboard server (no cluster: FakeApi) that knows the App `prod/web`."""

    async def main() -> None:
        api, board = FakeApi(), Board()
        board.event("ADDED", APP)
        dashboard = Dashboard(api, board, token="tok", csrf="csrf")  # type: ignore[arg-type]
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", dashboard.handle)
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            dashboard.port = client.port
            await test((client, dashboard, api))

    asyncio.run(main())


def own(client: TestClient, **more: str) -> dict[str, str]:
    host = f"127.0.0.1:{client.port}"
    return {"Host": host, **more}


def posting(client: TestClient) -> dict[str, str]:
    return own(client, Origin=f"http://127.0.0.1:{client.port}", **{"X-Kapply-CSRF": "csrf"})


def test_the_pages_and_their_assets() -> None:
    run(_test_the_pages_and_their_assets)


async def _test_the_pages_and_their_assets(served: Served) -> None:
    client, _, _ = served
    for path, kind in (
        ("/tok/", "text/html"),
        ("/tok/app", "text/html"),
        ("/tok/static/dashboard.js", "application/javascript"),
        ("/tok/static/dashboard.css", "text/css"),
    ):
        answer = await client.get(path, headers=own(client))
        assert answer.status == 200 and answer.content_type == kind
        assert (
            answer.headers["Cache-Control"] == "no-store"
            and "script-src 'self'" in answer.headers["Content-Security-Policy"]
        )
    assert (await client.get("/tok/static/../view.py", headers=own(client))).status == 404
    assert (await client.get("/tok/", headers=own(client, Host="evil:1"))).status == 403
    assert (await client.get("/nope/", headers=own(client))).status == 403


def test_the_list_as_json_and_events() -> None:
    run(_test_the_list_as_json_and_events)


async def _test_the_list_as_json_and_events(served: Served) -> None:
    client, dashboard, _ = served
    listed = await (await client.get("/tok/api/apps", headers=own(client))).json()
    assert [r["key"] for r in listed["rows"]] == [KEY] and listed["hidden"] == []
    assert (await (await client.get("/tok/api/apps?namespace=dev", headers=own(client))).json())["rows"] == []
    answer = await client.get("/tok/events", headers=own(client))
    assert answer.headers["Content-Type"] == "text/event-stream"
    assert (await answer.content.readuntil(b"\n\n")).startswith(b"event: snapshot\n")
    dashboard.board.event("MODIFIED", {**APP, "spec": {"paused": True}})
    row = await asyncio.wait_for(answer.content.readuntil(b"\n\n"), 5)
    assert row.startswith(b"event: row\n") and b'"state":"Paused"' in row
    dashboard.board.event("DELETED", APP)
    assert (await asyncio.wait_for(answer.content.readuntil(b"\n\n"), 5)).startswith(b"event: gone\n")
    answer.close()


def test_one_apps_page_says_what_the_user_may_not_read() -> None:
    run(_test_one_apps_page_says_what_the_user_may_not_read)


async def _test_one_apps_page_says_what_the_user_may_not_read(served: Served) -> None:
    client, _, _ = served
    page = await (await client.get(f"/tok/api/app?key={KEY}", headers=own(client))).json()
    assert page["row"]["state"] == "ReconcileSucceeded" and page["events"][0]["reason"] == "Deployed"
    assert "forbidden" in page["tree"]["error"] and page["history"] == []
    assert (await client.get("/tok/api/app?key=App.kapply.dev/prod/gone", headers=own(client))).status == 404
    assert (await client.get("/tok/api/app?key=nonsense", headers=own(client))).status == 400


def test_actions_patch_as_kapply_app_does_and_pass_on_a_refusal() -> None:
    run(_test_actions_patch_as_kapply_app_does_and_pass_on_a_refusal)


async def _test_actions_patch_as_kapply_app_does_and_pass_on_a_refusal(served: Served) -> None:
    client, _, api = served
    answer = await client.post(f"/tok/api/action?key={KEY}&action=kick", headers=posting(client))
    assert answer.status == 200 and (await answer.json())["ok"] is True
    assert [p[0]["op"] for p in api.cluster.patches] == ["add", "remove"]
    assert (await client.post(f"/tok/api/action?key={KEY}&action=kick", headers=own(client))).status == 403
    assert (await client.post(f"/tok/api/action?key={KEY}&action=delete", headers=posting(client))).status == 400
    api.cluster.refuse = True
    answer = await client.post(f"/tok/api/action?key={KEY}&action=pause", headers=posting(client))
    assert answer.status == 403 and "cannot patch" in orjson.loads(await answer.read())["message"]


def test_the_packages_page_lists_what_the_user_may_and_says_what_is_hidden() -> None:
    run(_test_the_packages_page_lists_what_the_user_may_and_says_what_is_hidden)


async def _test_the_packages_page_lists_what_the_user_may_and_says_what_is_hidden(served: Served) -> None:
    client, _, _ = served
    assert (await client.get("/tok/packages", headers=own(client))).status == 200
    page = await (await client.get("/tok/api/packages", headers=own(client))).json()
    assert [i["name"] for i in page["installs"]] == ["i"] and page["repositories"] == page["packages"] == []
    assert len(page["hidden"]) == 1 and "packagerepositories.packaging.carvel.dev are hidden" in page["hidden"][0]


def test_the_history_marks_the_kept_changes_from_one_list_of_their_secrets_metadata() -> None:
    run(_test_the_history_marks_the_kept_changes_from_one_list_of_their_secrets_metadata)


async def _test_the_history_marks_the_kept_changes_from_one_list_of_their_secrets_metadata(served: Served) -> None:
    client, _, api = served
    meta = SimpleNamespace(started_at="t0", finished_at="t1", successful=True, description="update")
    api.changes = [SimpleNamespace(name=n, meta=meta, diff="") for n in ("web.app-change-0", "web.app-change-1")]
    page = await (await client.get(f"/tok/api/app?key={KEY}", headers=own(client))).json()
    assert [(h["name"], h["kept"]) for h in page["history"]] == [
        ("web.app-change-1", True),
        ("web.app-change-0", False),
    ]
    selected = ("kapply.dev/app-change", "type=kapply.dev/app-change-applied")
    assert api.cluster.requests == [("Secret", "prod", *selected)]


def test_a_rollback_is_previewed_then_run_and_a_refusal_is_passed_on() -> None:
    run(_test_a_rollback_is_previewed_then_run_and_a_refusal_is_passed_on)


async def _test_a_rollback_is_previewed_then_run_and_a_refusal_is_passed_on(served: Served) -> None:
    client, _, api = served
    meta = SimpleNamespace(started_at="t0", finished_at="t1", successful=True, description="update")
    api.changes = [SimpleNamespace(name=n, meta=meta, diff="") for n in ("web.app-change-0", "web.app-change-1")]
    history = (await (await client.get(f"/tok/api/app?key={KEY}", headers=own(client))).json())["history"]
    assert [(h["name"], h["kept"]) for h in history] == [("web.app-change-1", True), ("web.app-change-0", False)]
    preview = await client.get(f"/tok/api/rollback?key={KEY}&change=web.app-change-1", headers=own(client))
    assert preview.status == 200 and (await preview.json())["ok"] is True and api.deployed == []
    answer = await client.get(f"/tok/api/rollback?key={KEY}&change=web.app-change-0", headers=own(client))
    assert answer.status == 409 and "kept nothing" in (await answer.json())["message"]
    action = f"/tok/api/action?key={KEY}&action=rollback&change="
    assert (await client.post(action + "web.app-change-1", headers=own(client))).status == 403  # no CSRF token
    answer = await client.post(action + "web.app-change-1", headers=posting(client))
    assert answer.status == 200 and len(api.deployed) == 1
    assert (await answer.json())["message"] == (
        "Rolled back to app change 'web.app-change-1', recorded as app change 'web.app-change-2'"
    )
    answer = await client.post(action + "forbidden", headers=posting(client))
    assert answer.status == 403 and "cannot get" in (await answer.json())["message"] and len(api.deployed) == 1
    assert (await client.post(action, headers=posting(client))).status == 400
