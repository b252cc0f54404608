"""A PackageInstall's revisions (kapply.packaging.revisions): their Secrets' names and content, the cap, when one is
kept, and an install whose service account may not keep them: it succeeds all the same, and says so on its
condition. The account's API server is an in-memory one of Secrets; values never reach a label, an annotation, a
note or the status."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
from types import TracebackType
from typing import Any

import pytest

from kapply.controller.vocabulary import CARVEL, KAPPLY
from kapply.errors import ClusterError, KapplyError
from kapply.objects import Obj
from kapply.packaging import revisions
from kapply.packaging.install import InstallReconciler
from kapply.packaging.revisions import Keeper, Revision, ValuesSecret
from kapply.packaging.settings import PackagingSettings
from kapply.packaging.spec import PackageInstallSpec, parse_package_install
from kapply.resources.cluster import ResourceType
from tests.unit.cluster_fakes import Stored

SECRET = "s3cr3t-value"
VALUES = "#@data/values\n---\nhello_msg: " + SECRET + "\n"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def install_obj(**spec: Any) -> Obj:
    return {
        "apiVersion": KAPPLY.install.api_version,
        "kind": "PackageInstall",
        "metadata": {"name": "web", "namespace": "ns", "uid": "uid-1", "resourceVersion": "1", "generation": 1},
        "spec": {
            "serviceAccountName": "sa",
            "packageRef": {"refName": "web.corp.com", "versionSelection": {"constraints": "1.0.0"}},
            "values": [{"secretRef": {"name": "web-values"}}],
            **spec,
        },
    }


class Secrets:
    """The Secrets of namespace `ns` as the install's account sees them (`refused`: its RBAC says no)."""

    def __init__(self, *, refused: bool = False) -> None:
        self.refused = refused
        self.objects: dict[str, Obj] = {"web-values": {"metadata": {"name": "web-values"}, "data": {"v": b64(VALUES)}}}
        self.calls = 0

    def _asked(self) -> None:
        self.calls += 1
        if self.refused:
            raise ClusterError('secrets is forbidden: User "system:serviceaccount:ns:sa" cannot list', status=403)

    async def list(self, rtype: ResourceType, *, namespace: str, label_selector: str) -> list[Obj]:
        self._asked()
        key, _, value = label_selector.partition("=")
        return [copy.deepcopy(s) for s in self.objects.values() if s["metadata"].get("labels", {}).get(key) == value]

    async def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj | None:
        self._asked()
        return copy.deepcopy(self.objects.get(name))

    async def create(self, rtype: ResourceType, obj: Obj) -> Obj:
        self._asked()
        made = copy.deepcopy(obj)
        made["metadata"]["creationTimestamp"] = "2026-12-05T10:00:00Z"
        self.objects[obj["metadata"]["name"]] = made
        return copy.deepcopy(made)

    async def delete(self, rtype: ResourceType, namespace: str, name: str) -> None:
        self._asked()
        del self.objects[name]

    async def close(self) -> None:
        pass


class Controller:
    """The controller's client: it reads the account and asks for its token; `with_token` is the account's."""

    def __init__(self, secrets: Secrets) -> None:
        self.cluster = self
        self.secrets = secrets

    async def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj:
        assert rtype.kind == "ServiceAccount"
        return {"metadata": {"name": name, "namespace": namespace, "uid": "sa-uid"}}

    async def request_token(self, namespace: str, account: str, seconds: int) -> str:
        return f"token-of-{account}"

    def with_token(self, token: str, namespace: str) -> AsAccount:
        assert token == "token-of-sa" and namespace == "ns"
        return AsAccount(self.secrets)


class AsAccount:
    def __init__(self, secrets: Secrets) -> None:
        self.cluster = secrets

    async def __aenter__(self) -> AsAccount:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        pass


def keep(keeper: Keeper, install: Obj, version: str, before: Obj | None = None) -> str | None:
    spec = parse_package_install(install)
    return asyncio.run(keeper.keep(install, before or {}, spec, version))


def kept(secrets: Secrets) -> list[Revision]:
    return sorted(
        (revisions.parse(s) for n, s in secrets.objects.items() if revisions.SUFFIX in n), key=lambda r: r.number
    )


def test_a_revision_is_a_secret_named_after_the_install_owned_by_it_holding_version_ref_and_values() -> None:
    install = install_obj()
    values = (ValuesSecret("web-values", (("v", b64(VALUES)),)),)
    secret = revisions.revision_secret(install, 3, "1.0.0", values)
    meta = secret["metadata"]
    assert meta["name"] == revisions.secret_name("web", 3) == "web.pkgi-v3" and meta["namespace"] == "ns"
    assert secret["kind"] == "Secret" and meta["labels"] == {revisions.INSTALL_UID_LABEL: "uid-1"}
    assert meta["ownerReferences"] == [
        {"apiVersion": KAPPLY.install.api_version, "kind": "PackageInstall", "name": "web", "uid": "uid-1"}
    ]
    content = json.loads(base64.b64decode(secret["data"][revisions.CONTENT_KEY]))
    assert content == {
        "version": "1.0.0",
        "packageRef": install["spec"]["packageRef"],
        "values": [{"secretName": "web-values", "data": {"v": b64(VALUES)}}],
    }
    assert meta["annotations"] == {
        revisions.REVISION_ANNOTATION: "3",
        revisions.VERSION_ANNOTATION: "1.0.0",
        revisions.DIGEST_ANNOTATION: revisions.values_digest(values),
    }
    assert SECRET not in json.dumps(meta) and revisions.values_digest(values).startswith("sha256:")
    parsed = revisions.parse({**secret, "metadata": {**meta, "creationTimestamp": "t"}})
    assert (parsed.number, parsed.version, parsed.values, parsed.created) == (3, "1.0.0", values, "t")


def test_a_revision_is_owned_by_the_install_under_the_groups_it_speaks() -> None:
    carvel = {**install_obj(), "apiVersion": CARVEL.install.api_version}
    owner = revisions.revision_secret(carvel, 1, "1.0.0", ())["metadata"]["ownerReferences"][0]
    assert owner["apiVersion"] == "packaging.carvel.dev/v1alpha1" and owner["uid"] == "uid-1"


def test_a_secret_that_is_not_a_revision_is_refused_by_name() -> None:
    with pytest.raises(KapplyError, match="Reading revision Secret 'web.pkgi-v1': not a revision"):
        revisions.parse({"metadata": {"name": "web.pkgi-v1"}, "data": {}})


def test_the_newest_ten_are_kept() -> None:
    assert revisions.KEEP == 10
    assert revisions.expired(range(1, 11)) == []
    assert revisions.expired([12, 3, 4, 5, 6, 7, 8, 9, 10, 11, 2, 1]) == [1, 2]


def test_a_revision_is_kept_for_each_new_version_or_values_and_the_oldest_go() -> None:
    secrets = Secrets()
    keeper = Keeper(Controller(secrets))  # type: ignore[arg-type]
    install = install_obj()
    assert keep(keeper, install, "1.0.0") is None
    assert [(r.number, r.version) for r in kept(secrets)] == [(1, "1.0.0")]

    calls = secrets.calls
    succeeded = {"conditions": [{"type": "ReconcileSucceeded", "status": "True"}]}
    assert keep(keeper, install, "1.0.0", succeeded) is None
    assert secrets.calls == calls, "a periodic sync of an unchanged install asks nothing"
    assert keep(keeper, install, "1.0.0") is None  # a success after a pass that was not: looked at, nothing new
    assert len(kept(secrets)) == 1

    secrets.objects["web-values"]["data"] = {"v": b64(VALUES + "more: 1\n")}
    keep(keeper, install, "1.0.0")
    assert [(r.number, r.version) for r in kept(secrets)] == [(1, "1.0.0"), (2, "1.0.0")]
    assert kept(secrets)[0].digest != kept(secrets)[1].digest

    keep(keeper, install_obj(paused=True), "2.0.0")
    assert len(kept(secrets)) == 2, "paused, the App still runs what it ran"

    for minor in range(10):
        keep(keeper, install, f"2.{minor}.0")
    assert [r.number for r in kept(secrets)] == list(range(3, 13))
    assert kept(secrets)[-1].version == "2.9.0"


def test_an_account_that_may_not_keep_revisions_leaves_the_install_succeeded_with_a_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    install = install_obj()
    secrets = Secrets(refused=True)
    api = _Api(Stored(install))
    keeper = Keeper(Controller(secrets))  # type: ignore[arg-type]
    reconciler = InstallReconciler(api, PackagingSettings(), KAPPLY, keeper)  # type: ignore[arg-type]

    async def selected(self: InstallReconciler, install: Obj, spec: PackageInstallSpec) -> Any:
        return _Package()

    async def ran(self: InstallReconciler, install: Obj, spec: PackageInstallSpec, package: Any) -> tuple[Obj, bool]:
        status = {"observedGeneration": 1, "conditions": [{"type": "ReconcileSucceeded", "status": "True"}]}
        return {"metadata": {"name": "web", "namespace": "ns", "generation": 1}, "status": status}, False

    async def no_finalizer(*args: object) -> None:
        pass

    monkeypatch.setattr(InstallReconciler, "_select", selected)
    monkeypatch.setattr(InstallReconciler, "_run_as_app", ran)
    monkeypatch.setattr(api.cluster, "add_finalizer", no_finalizer)
    asyncio.run(reconciler.reconcile("ns", "web"))
    status = api.cluster.stored[("ns", "web")]["status"]
    assert status["friendlyDescription"] == "Reconcile succeeded" and "usefulErrorMessage" not in status
    assert status["conditions"] == [
        {
            "type": "ReconcileSucceeded",
            "status": "True",
            "message": "No revision kept for rollback: service account 'sa' may not read and write Secrets in "
            "namespace 'ns'",
        }
    ]
    assert SECRET not in json.dumps(status)


def test_an_install_without_an_account_keeps_none_and_says_why() -> None:
    keeper = Keeper(Controller(Secrets()))  # type: ignore[arg-type]
    assert keep(keeper, install_obj(serviceAccountName=None), "1.0.0") == (
        "No revision kept for rollback: the install names no service account (spec.serviceAccountName)"
    )


class _Api:
    def __init__(self, cluster: Stored) -> None:
        self.cluster = cluster


class _Package:
    version = "1.0.0"
    ref_name = "web.corp.com"
