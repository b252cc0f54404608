"""The dashboard's "Roll back to this revision" of a PackageInstall (kapply.dashboard.server with an in-memory
cluster): the install's page lists its revisions from their Secrets' metadata, the preview says what changes (the
version, the values keys, never a value), the action runs kapply.packaging.rollback with the user's rights, and RBAC's
refusal is the API server's message, with nothing changed."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import SimpleNamespace

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from kapply.controller.vocabulary import CARVEL, KAPPLY, Vocabulary
from kapply.dashboard.board import Board
from kapply.dashboard.server import Dashboard
from kapply.errors import ClusterError
from kapply.packaging.rollback import DOWNGRADABLE
from tests.unit.package_rollback_fakes import SECRET, A, B, RollbackCluster, seeded

Served = tuple[TestClient, RollbackCluster, str]


async def refused(*_: object, **__: object) -> None:
    """What the page's other parts read (the app's resources and app-changes): not this test's."""
    raise ClusterError('configmaps is forbidden: User "jo" cannot list', status=403)


def run(vocabulary: Vocabulary, test: Callable[[Served], Awaitable[None]]) -> None:
    async def main() -> None:
        cluster = await seeded(vocabulary)
        api = SimpleNamespace(cluster=cluster, inspect=refused, app_changes=refused)
        dashboard = Dashboard(api, Board(), token="tok", csrf="csrf")  # type: ignore[arg-type]
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", dashboard.handle)
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            dashboard.port = client.port
            await test((client, cluster, f"PackageInstall.{vocabulary.install.group}/ns/web"))

    asyncio.run(main())


def posting(client: TestClient) -> dict[str, str]:
    origin = f"127.0.0.1:{client.port}"
    return {"Host": origin, "Origin": f"http://{origin}", "X-Kapply-CSRF": "csrf"}


async def _revisions(served: Served) -> None:
    client, cluster, key = served
    answer = await client.get("/tok/api/app", params={"key": key}, headers={"Host": f"127.0.0.1:{client.port}"})
    data = await answer.json()
    assert [(r["revision"], r["version"], r["created"]) for r in data["revisions"]] == [
        (2, "2.0.0", "2026-12-05T10:02:00Z"),
        (1, "1.0.0", "2026-12-05T10:01:00Z"),
    ]
    assert all(r["digest"].startswith("sha256:") for r in data["revisions"])
    assert SECRET not in await answer.text()
    assert not [entry for entry in cluster.log if entry[:2] in (("get", "Secret"), ("list", "Secret"))][1:]


def test_an_installs_page_lists_its_revisions_from_their_metadata() -> None:
    for vocabulary in (KAPPLY, CARVEL):
        run(vocabulary, _revisions)


async def _preview_then_roll_back(served: Served) -> None:
    client, cluster, key = served
    own = {"Host": f"127.0.0.1:{client.port}"}
    preview = await client.get("/tok/api/install-rollback", params={"key": key, "revision": "1"}, headers=own)
    data = await preview.json()
    assert data["ok"] and (data["versionFrom"], data["versionTo"], data["downgrade"]) == ("2.0.0", "1.0.0", True)
    assert data["changedKeys"] == ["hello_msg", "port"] and SECRET not in await preview.text()
    assert cluster.values() == B and not [e for e in cluster.log if e[0] not in ("get", "list")]  # nothing written
    params = {"key": key, "action": "install-rollback", "revision": "1"}
    done = await client.post("/tok/api/action", params=params, headers=posting(client))
    answer = await done.json()
    assert done.status == 200 and answer["ok"], answer
    assert answer["message"].endswith("Rolled back to revision 1") and SECRET not in answer["message"]
    install = cluster.install(KAPPLY if "kapply" in key else CARVEL)
    assert install["spec"]["packageRef"]["versionSelection"]["constraints"] == "1.0.0"
    assert DOWNGRADABLE in install["metadata"]["annotations"] and "paused" not in install["spec"]
    assert cluster.values() == A


def test_a_rollback_is_previewed_then_run_as_the_cli_runs_it() -> None:
    for vocabulary in (KAPPLY, CARVEL):
        run(vocabulary, _preview_then_roll_back)


async def _refused(served: Served) -> None:
    client, cluster, key = served
    cluster.refused = {("update", "Secret")}
    params = {"key": key, "action": "install-rollback", "revision": "1"}
    done = await client.post("/tok/api/action", params=params, headers=posting(client))
    answer = await done.json()
    assert done.status == 403 and not answer["ok"]
    assert 'secrets "x" is forbidden: User "jo" cannot update' in answer["message"]
    assert cluster.values() == B and "paused" not in cluster.install()["spec"]
    cluster.refused = {("get", "Secret")}
    own = {"Host": f"127.0.0.1:{client.port}"}
    preview = await client.get("/tok/api/install-rollback", params={"key": key, "revision": "1"}, headers=own)
    assert preview.status == 403 and "cannot get" in (await preview.json())["message"]
    missing = await client.get("/tok/api/install-rollback", params={"key": key, "revision": "7"}, headers=own)
    assert missing.status == 403  # (the GET of its Secret is refused first)
    cluster.refused = set()
    missing = await client.get("/tok/api/install-rollback", params={"key": key, "revision": "7"}, headers=own)
    assert missing.status == 409 and "Expected revision 7" in (await missing.json())["message"]
    bad = await client.get(
        "/tok/api/install-rollback", params={"key": "App.kapply.dev/ns/web", "revision": "1"}, headers=own
    )
    assert bad.status == 400


def test_a_refusal_is_the_api_servers_and_changes_nothing() -> None:
    run(KAPPLY, _refused)


async def _another_package(served: Served) -> None:
    client, cluster, key = served
    stored = cluster.objects[cluster._key(KAPPLY.install.rtype, "ns", "web")]
    stored["spec"]["packageRef"]["refName"] = "db.example.com"
    cluster.log.clear()
    own = {"Host": f"127.0.0.1:{client.port}"}
    preview = await client.get("/tok/api/install-rollback", params={"key": key, "revision": "1"}, headers=own)
    params = {"key": key, "action": "install-rollback", "revision": "1"}
    done = await client.post("/tok/api/action", params=params, headers=posting(client))
    for answer in (preview, done):
        message = (await answer.json())["message"]
        assert answer.status == 409 and "(Secret 'web.pkgi-v1') to be of the package" in message, message
        assert "'db.example.com', not 'web.example.com'" in message
    assert not [e for e in cluster.log if e[0] not in ("get", "list")] and cluster.values() == B


def test_a_revision_of_another_package_is_refused_with_nothing_changed() -> None:
    run(KAPPLY, _another_package)
