"""What each app-change keeps for a rollback (kapply.app.history: Applied, keep, kept, their collection), the
documents a deploy keeps (kapply.deploy.split_manifests), and the controller's App paused before a rollback
(kapply.controller.rollback.pause_deployers). Rollbacks on a real cluster: tests/e2e/test_rollback.py."""

from __future__ import annotations

import asyncio
import base64
from typing import Any, cast

import pytest

from kapply.app import history
from kapply.app.meta import AppMeta
from kapply.app.record import App
from kapply.controller.rollback import pause_deployers
from kapply.deploy import DeployOptions, _applied, split_manifests
from kapply.diff.filter import ChangeFilter
from kapply.errors import ClusterError, KapplyError
from kapply.objects import CONFIG_API_VERSION, Document, Obj
from kapply.resources.cluster import Cluster, Discovery, ResourceType
from kapply.resources.filters import ResourceFilter
from kapply.resources.preparation import Placement
from tests.unit.conftest import BUILTIN_TYPES
from tests.unit.fake_cluster import FakeCluster

APP = App("web", "ns", "web", AppMeta("kapp.k14s.io/app", "123"))
SECRET_DOC: Obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}, "stringData": {"p": "x"}}
APPLIED = history.Applied((SECRET_DOC,), "ns", "", {"a": "b"})
CHANGE: Obj = {"metadata": {"name": "web-change-abcde", "namespace": "ns", "uid": "u-1"}}


def fake() -> FakeCluster:
    return FakeCluster(Discovery(BUILTIN_TYPES))


def keep(cluster: FakeCluster, applied: history.Applied = APPLIED) -> tuple[bool, list[str]]:
    warnings: list[str] = []
    done = asyncio.run(history.keep(cast(Cluster, cluster), CHANGE, applied, warnings.append))
    return done, warnings


def test_applied_round_trips_through_its_compressed_form():
    assert history.Applied.from_bytes(APPLIED.to_bytes()) == APPLIED
    assert APPLIED.to_bytes() == APPLIED.to_bytes()  # no timestamp in the gzip header


def test_applied_refuses_what_it_cannot_read():
    import gzip

    with pytest.raises(ValueError, match="not a kept change"):
        history.Applied.from_bytes(gzip.compress(b'{"version": 2}'))


def test_keep_writes_a_secret_of_the_change_owned_by_it_and_without_the_apps_label():
    cluster = fake()
    assert keep(cluster) == (True, [])
    secret = cluster.objects[("", "Secret", "ns", "web-change-abcde")]
    assert secret["type"] == history.KEPT_TYPE
    assert secret["metadata"]["labels"] == {history.KEPT_LABEL: "web-change-abcde"}
    assert secret["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "web-change-abcde", "uid": "u-1"}
    ]
    assert b"stringData" not in base64.b64decode(secret["data"][history.KEPT_KEY])  # compressed, not plain
    assert asyncio.run(history.kept(cast(Cluster, cluster), APP, "web-change-abcde")) == APPLIED


def test_a_change_too_large_to_keep_is_a_warning(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(history, "MAX_KEPT_BYTES", 10)
    cluster = fake()
    done, warnings = keep(cluster)
    assert not done and cluster.objects == {}
    assert len(warnings) == 1 and "App-change 'web-change-abcde' applies" in warnings[0]
    assert "more than a Secret holds (10): what it applied is not kept" in warnings[0]


@pytest.mark.parametrize(
    ("error", "warned"),
    [
        (ClusterError("secrets is forbidden (reason: Forbidden)", status=403), False),  # kapp's output, as kapp's
        (ClusterError("etcdserver: request is too large", status=500), True),
    ],
)
def test_a_secret_that_cannot_be_created_is_a_warning_unless_forbidden(error: ClusterError, warned: bool):
    cluster = fake()

    async def failing(rtype: ResourceType, obj: Obj, *, dry_run: bool = False) -> Obj:
        raise error

    cluster.create = failing  # type: ignore[method-assign]
    done, warnings = keep(cluster)
    expected = f"What app-change 'web-change-abcde' applies is not kept (it cannot be rolled back to): {error}"
    assert not done and warnings == ([expected] if warned else [])


def test_kept_is_none_without_a_kept_secret_and_fails_on_a_damaged_one():
    cluster = fake()
    secrets = history.SECRETS
    asyncio.run(cluster.create(secrets, {"metadata": {"name": "other", "namespace": "ns"}, "type": "Opaque"}))
    damaged = {"metadata": {"name": "bad", "namespace": "ns"}, "type": history.KEPT_TYPE, "data": {}}
    asyncio.run(cluster.create(secrets, damaged))
    assert asyncio.run(history.kept(cast(Cluster, cluster), APP, "missing")) is None
    assert asyncio.run(history.kept(cast(Cluster, cluster), APP, "other")) is None
    with pytest.raises(KapplyError, match="Secret 'bad' \\(namespace: ns\\) does not hold a kept app-change"):
        asyncio.run(history.kept(cast(Cluster, cluster), APP, "bad"))


def test_collecting_a_change_deletes_what_it_kept_but_not_a_secret_of_its_name_made_otherwise():
    cluster = fake()
    for name, created in (("web-change-aaaaa", "2026-01-01T00:00:00Z"), ("web-change-bbbbb", "2026-01-02T00:00:00Z")):
        labels = {"kapp.k14s.io/is-app-change": "", "kapp.k14s.io/app-change-app-label": "123"}
        change = {"metadata": {"name": name, "namespace": "ns", "labels": labels, "creationTimestamp": created}}
        asyncio.run(cluster.create(history.CONFIGMAPS, change))
    keep(cluster)  # a kept Secret of no listed change: left alone
    plain = {"metadata": {"name": "web-change-bbbbb", "namespace": "ns"}, "type": "Opaque"}
    asyncio.run(cluster.create(history.SECRETS, plain))
    aaaaa = {"metadata": {"name": "web-change-aaaaa", "namespace": "ns", "uid": "u-a"}}
    asyncio.run(history.keep(cast(Cluster, cluster), aaaaa, APPLIED, lambda _: None))

    assert asyncio.run(history.gc(cast(Cluster, cluster), APP, 1)) == 1
    assert ("", "Secret", "ns", "web-change-aaaaa") not in cluster.objects
    asyncio.run(history.delete_all(cast(Cluster, cluster), APP))
    secrets = sorted(k[3] for k in cluster.objects if k[1] == "Secret")
    assert secrets == ["web-change-abcde", "web-change-bbbbb"]


def test_a_deploy_keeps_every_document_as_read_configs_included():
    config = {"apiVersion": CONFIG_API_VERSION, "kind": "Config", "rebaseRules": []}
    docs = [Document(SECRET_DOC, "resource 1"), Document(config, "resource 2")]
    manifests = split_manifests(docs)
    assert manifests.source == (SECRET_DOC, config)
    assert [d.obj for d in manifests.docs] == [SECRET_DOC]


def test_a_partial_deploy_keeps_nothing():
    manifests = split_manifests([Document(SECRET_DOC, "resource 1")])
    placement = Placement("ns", "into", {})
    assert _applied(manifests, placement, DeployOptions()) == history.Applied((SECRET_DOC,), "ns", "into", {})
    for partial in (
        DeployOptions(patch=True),
        DeployOptions(resource_filter=cast(ResourceFilter, object())),
        DeployOptions(change_filter=cast(ChangeFilter, object())),
    ):
        assert _applied(manifests, placement, partial) is None


class Recorder:
    """A client whose cluster serves some objects (by group and name; any other group is not served) and records
    patches."""

    def __init__(self, objs: dict[tuple[str, str], Obj]) -> None:
        self.objs, self.patched = objs, []
        self.cluster = self

    async def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj | None:
        if not any(group == rtype.group for group, _ in self.objs):
            raise ClusterError("the server could not find the requested resource", status=404)
        return self.objs.get((rtype.group, name))

    async def patch(self, rtype: ResourceType, namespace: str, name: str, patch: Any) -> Obj:
        self.patched.append((rtype.kind, rtype.group, namespace, name, patch))
        return {}


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def line(self, text: str) -> None:
        self.lines.append(text)


PAUSE = [{"op": "add", "path": "/spec/paused", "value": True}]


def app_obj(paused: bool = False, owners: list[Obj] | None = None) -> Obj:
    meta = {"name": "web", "namespace": "ns", "ownerReferences": owners or []}
    return {"metadata": meta, "spec": {"paused": True} if paused else {}}


@pytest.mark.parametrize("group", ["kapply.dev", "kappctrl.k14s.io"])
def test_a_rollback_pauses_the_app_a_controller_deploys_it_with(group: str):
    api, out = Recorder({(group, "web"): app_obj()}), Lines()
    asyncio.run(pause_deployers(cast(Any, api), "web.app", "ns", out.line))
    assert api.patched == [("App", group, "ns", "web", PAUSE)]
    assert out.lines == [
        f"Paused App 'web' ({group}, namespace: ns), so that it does not deploy its own spec over the rollback "
        "(spec.paused: true; resume with `kapply app kick -a web`)"
    ]


def test_a_rollback_pauses_the_package_install_that_made_the_app():
    owner = {"apiVersion": "packaging.kapply.dev/v1alpha1", "kind": "PackageInstall", "name": "pkgi"}
    install = {"metadata": {"name": "pkgi", "namespace": "ns"}, "spec": {}}
    objs = {("kapply.dev", "web"): app_obj(owners=[owner]), ("packaging.kapply.dev", "pkgi"): install}
    api, out = Recorder(objs), Lines()
    asyncio.run(pause_deployers(cast(Any, api), "web.app", "ns", out.line))
    assert api.patched == [
        ("PackageInstall", "packaging.kapply.dev", "ns", "pkgi", PAUSE),
        ("App", "kapply.dev", "ns", "web", PAUSE),
    ]
    assert out.lines[0].startswith("Paused the App's PackageInstall 'pkgi' (packaging.kapply.dev, namespace: ns)")
    assert out.lines[0].endswith("resume with `kapply package installed kick -i pkgi`)")


@pytest.mark.parametrize(("app", "paused"), [("web", False), ("other.app", False), ("web.app", True)])
def test_no_app_is_paused_when_no_controller_deploys_the_app_or_it_is_paused(app: str, paused: bool):
    api, out = Recorder({("kapply.dev", "web"): app_obj(paused)}), Lines()
    asyncio.run(pause_deployers(cast(Any, api), app, "ns", out.line))
    assert api.patched == [] and out.lines == []
