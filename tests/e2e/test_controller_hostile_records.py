"""Hostile app records (issue 28, reproduction 1): a PackageRepository is deployed with the controller's own identity,
and its kapp app record `<name>.pkgr` is an ordinary ConfigMap in the tenant's namespace, which the tenant may write.

The tenant here is a ServiceAccount bound to `admin` in its namespace and nowhere else (with the right to write
PackageRepositories there); the controller has exactly config/controller/rbac.yml's rights (`--debug`: its log holds
every request it sends). Another tenant has a ConfigMap deployed by kapply (so kapp-owned: a deploy would prune it) in
a namespace of its own, holding a token; the global namespace has kapply-deployed Packages. The tenant forges the
record of each of its repositories before creating them:

- `evil`: the issue's record (label key `kapp.k14s.io/app!`: the selector became `kapp.k14s.io/app!=none`, which
  matches every object without that value; the victim's namespace in lastChange.namespaces; ConfigMaps and Apps in
  usedGKs). Before the fix the deploy deleted the victim's ConfigMap and wrote it, data included, into an app-change
  in the tenant's namespace.
- `evil-global`: the same key, the global namespace and Packages/PackageMetadatas. Before the fix it deleted the
  global namespace's Packages.
- `evil-victim-value` and `evil-global-value`: records a deploy could have written but for one namespace and one kind,
  with kapp's label key and the victim's (global app's) own label value: no selector trick, only the namespaces and
  kinds the record names. Before the fix they deleted the same objects.

Each must end ReconcileFailed naming the record and the field, having read, deleted and written nothing outside the
tenant's namespace: the victim's ConfigMap and the global Packages unchanged (same resourceVersion), the token in no
ConfigMap, Event or PackageRepository (status included) the tenant can read, and no request of the controller's log
reaching the victim's namespace, deleting in the global one, or listing cluster-wide by a record's label. Deleting the
repositories fails as well (DeleteFailed, naming the record, no foreign object); once the tenant deletes its forged
records, the repositories go.

Run against the code before the fix (record fields taken unchecked, the deploy given the controller's unconfined
client), every repository deploys: the test fails at the victim's ConfigMap, deleted."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.models.authentication_v1 import TokenRequestSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap, Event, Namespace, ServiceAccount
from lightkube.types import PatchType

from kapply.packaging import names
from tests.e2e.controller_harness import create_all, kapply
from tests.e2e.harness import Cluster, client_for, eventually
from tests.e2e.packaging_harness import (
    Package,
    PackageRepository,
    Running,
    get,
    global_namespace,
    install_crds,
    packaging_controller,
    status,
)

pytestmark = pytest.mark.e2e

APP_LABEL = "kapp.k14s.io/app"


def tenant_client(kube: Client, admin_kubeconfig: Path, namespace: str, directory: Path) -> Client:
    """A client acting as a ServiceAccount bound to `admin` in `namespace` only, and allowed to write
    PackageRepositories there (the namespace goes with the test, and the bindings with it)."""
    create_all(
        kube,
        yaml.safe_dump_all(
            [
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "tenant", "namespace": namespace}},
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "RoleBinding",
                    "metadata": {"name": "tenant-admin", "namespace": namespace},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
                    "subjects": [{"kind": "ServiceAccount", "name": "tenant", "namespace": namespace}],
                },
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "Role",
                    "metadata": {"name": "tenant-repositories", "namespace": namespace},
                    "rules": [
                        {
                            "apiGroups": [names.GROUP],
                            "resources": ["packagerepositories"],
                            "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
                        }
                    ],
                },
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "RoleBinding",
                    "metadata": {"name": "tenant-repositories", "namespace": namespace},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "tenant-repositories"},
                    "subjects": [{"kind": "ServiceAccount", "name": "tenant", "namespace": namespace}],
                },
            ]
        ),
    )
    request = ServiceAccount.Token(metadata=ObjectMeta(), spec=TokenRequestSpec(audiences=[], expirationSeconds=3600))
    token = kube.create(request, "tenant", namespace=namespace).status.token
    admin = yaml.safe_load(admin_kubeconfig.read_text())
    path = directory / "tenant.kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "test", "cluster": admin["clusters"][0]["cluster"]}],
                "users": [{"name": "tenant", "user": {"token": token}}],
                "contexts": [
                    {"name": "test", "context": {"cluster": "test", "user": "tenant", "namespace": namespace}}
                ],
                "current-context": "test",
            }
        )
    )
    return client_for(path, namespace)


@pytest.fixture
def victim(kube: Client, cluster: Cluster, tmp_path: Path) -> Iterator[str]:
    """Another tenant's namespace, deleted afterwards."""
    name = f"t-victim-{uuid.uuid4().hex[:6]}"
    kube.create(Namespace.from_dict({"metadata": {"name": name}}))
    try:
        yield name
    finally:
        kube.delete(Namespace, name)


def deployed(cluster: Cluster, tmp_path: Path, app: str, namespace: str, docs: list[dict[str, Any]]) -> None:
    """`docs` deployed by kapply as `app` (so kapp-owned: labeled, with kapp's identity annotation)."""
    manifest = tmp_path / f"{app}.yml"
    manifest.write_text(yaml.safe_dump_all(docs))
    kapply(cluster.kubeconfig, "deploy", "-a", app, "-n", namespace, "-y", "-f", str(manifest))


def label_value(kube: Client, namespace: str, app: str) -> str:
    record = kube.get(ConfigMap, app, namespace=namespace)
    return str(json.loads((record.data or {})["spec"])["labelValue"])


def forged_record(name: str, label_key: str, value: str, namespaces: list[str], kinds: list[tuple[str, str]]) -> Any:
    """The app record of repository `name`, as the tenant writes it (the issue's shape)."""
    spec = {
        "labelKey": label_key,
        "labelValue": value,
        "lastChange": {
            "startedAt": "2026-12-01T22:00:21Z",
            "finishedAt": "2026-12-01T22:00:21Z",
            "successful": True,
            "description": "forged",
            "namespaces": namespaces,
        },
        "usedGVs": sorted({(g, "v1alpha1" if g else "v1") for g, _ in kinds}),
        "usedGKs": [{"Group": g, "Kind": k} for g, k in kinds],
    }
    spec["usedGVs"] = [{"Group": g, "Version": v} for g, v in spec["usedGVs"]]
    return ConfigMap.from_dict(
        {
            "metadata": {"name": names.repository_app_name(name), "labels": {"kapp.k14s.io/is-app": ""}},
            "data": {"spec": json.dumps(spec)},
        }
    )


def repository(name: str, package: str = "") -> Any:
    """The issue's repository (no packages), or one bringing the Package `<package>.1.0.0`."""
    files = {"packages/none.yml": "#! no packages\n"}
    if package:
        doc = {
            "apiVersion": "data.packaging.carvel.dev/v1alpha1",
            "kind": "Package",
            "metadata": {"name": f"{package}.1.0.0"},
            "spec": {"refName": package, "version": "1.0.0", "template": {"spec": {}}},
        }
        files = {"packages/package.yml": yaml.safe_dump(doc)}
    return PackageRepository.from_dict(
        {
            "apiVersion": names.API_VERSION,
            "kind": "PackageRepository",
            "metadata": {"name": name},
            "spec": {"syncPeriod": "30s", "fetch": {"inline": {"paths": files}}},
        }
    )


def condition_of(kube: Client, namespace: str, name: str) -> str:
    conditions = status(kube, PackageRepository, namespace, name).get("conditions") or [{}]
    return str(conditions[0].get("type", ""))


def tenant_texts(kube: Client, namespace: str) -> dict[str, str]:
    """Everything of the tenant's namespace it can read back that the controller writes, by where it is."""
    texts = {f"ConfigMap {c.metadata.name}": json.dumps(c.to_dict()) for c in kube.list(ConfigMap, namespace=namespace)}
    texts |= {f"Event {e.metadata.name}": json.dumps(e.to_dict()) for e in kube.list(Event, namespace=namespace)}
    for repo in kube.list(PackageRepository, namespace=namespace):
        texts[f"PackageRepository {repo.metadata.name}"] = json.dumps(dict(repo))
    return texts


def requests(running: Running) -> list[str]:
    """The requests the controller sent (`--debug`: `METHOD /path?query: status (seconds)`)."""
    return re.findall(r"\b(?:GET|POST|PUT|PATCH|DELETE) /\S+: \d{3}", running.log.read_text())


def test_forged_app_records_reach_nothing_outside_the_tenants_namespace(
    cluster: Cluster, kube: Client, namespace: str, victim: str, tmp_path: Path
) -> None:
    install_crds(cluster, kube)
    token = f"VICTIM-{uuid.uuid4()}"
    deployed(
        cluster,
        tmp_path,
        "victim",
        victim,
        [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "victim-data"}, "data": {"secret": token}}],
    )
    with global_namespace(kube) as shared:
        packages = [
            {
                "apiVersion": names.DATA_API_VERSION,
                "kind": "Package",
                "metadata": {"name": f"shared.example.com.1.0.{i}"},
                "spec": {"refName": "shared.example.com", "version": f"1.0.{i}", "template": {"spec": {}}},
            }
            for i in range(2)
        ]
        deployed(cluster, tmp_path, "shared-packages", shared, packages)
        before = {
            "victim": kube.get(ConfigMap, "victim-data", namespace=victim).metadata.resourceVersion,
            **{p.metadata.name: p.metadata.resourceVersion for p in kube.list(Package, namespace=shared)},
        }
        assert len(before) == 3
        victim_value, shared_value = label_value(kube, victim, "victim"), label_value(kube, shared, "shared-packages")

        tenant = tenant_client(kube, cluster.kubeconfig, namespace, tmp_path)
        config_maps = [("", "ConfigMap"), ("kapply.dev", "App")]
        package_kinds = [(names.DATA_GROUP, "Package"), (names.DATA_GROUP, "PackageMetadata")]
        attacks = {
            # name: (record, the field its refusal names)
            "evil": (
                forged_record("evil", f"{APP_LABEL}!", "none", [victim], config_maps),
                "'labelKey' 'kapp.k14s.io/app!' is not a label key",
            ),
            "evil-global": (
                forged_record("evil-global", f"{APP_LABEL}!", "none", [shared], package_kinds),
                "'labelKey' 'kapp.k14s.io/app!' is not a label key",
            ),
            "evil-victim-value": (
                forged_record("evil-victim-value", APP_LABEL, victim_value, [victim], [("", "ConfigMap")]),
                "'usedGKs' names ConfigMap (a repository deploys Packages and PackageMetadatas); 'usedGVs' names v1 "
                f"(a repository deploys {names.DATA_API_VERSION} only); 'lastChange.namespaces' names {victim} (a "
                f"repository deploys to {namespace})",
            ),
            "evil-global-value": (
                forged_record("evil-global-value", APP_LABEL, shared_value, [shared], package_kinds),
                f"'lastChange.namespaces' names {shared} (a repository deploys to {namespace})",
            ),
        }
        for name, (record, _) in attacks.items():
            tenant.create(record)
            tenant.create(repository(name))
        # repositories whose records the controller writes first (their finalizer on), forged afterwards: the
        # delete's path (before the fix it listed cluster-wide by the forged selector and named what it found)
        later = {
            "evil-later": forged_record("evil-later", f"{APP_LABEL}!", "none", [victim], config_maps),
            "evil-later-global": forged_record("evil-later-global", APP_LABEL, shared_value, [shared], package_kinds),
        }
        for name in later:
            tenant.create(repository(name, f"{name}.example.com"))

        with packaging_controller(cluster, kube, namespace, tmp_path, "--debug", global_namespace=shared) as running:
            for name in later:
                eventually(
                    lambda name=name: condition_of(kube, namespace, name) == "ReconcileSucceeded",
                    timeout=60,
                    what=f"{name} deployed",
                )
            for name in attacks:
                eventually(
                    lambda name=name: condition_of(kube, namespace, name) in ("ReconcileSucceeded", "ReconcileFailed"),
                    timeout=60,
                    what=f"a reconcile of {name} to end",
                )

            # the damage first: what the old code did
            assert_untouched(kube, victim, shared, before)
            leaks = [where for where, text in tenant_texts(kube, namespace).items() if token in text]
            assert not leaks, f"the victim's data leaked into {leaks}"
            sent = requests(running)
            assert sent, "the controller's --debug log names no request"
            assert_confined(sent, victim, shared)
            assert not [r for r in sent if r.startswith("DELETE") and f"/namespaces/{shared}/" in r]

            for name, (_, message) in attacks.items():
                reported = status(kube, PackageRepository, namespace, name)
                assert condition_of(kube, namespace, name) == "ReconcileFailed", reported
                record = f"ConfigMap '{name}.pkgr'"
                assert record in reported["friendlyDescription"] and message in reported["usefulErrorMessage"], reported

            # deleting a repository whose record is forged: refused, naming the record and no foreign object
            sent_before_delete = len(requests(running))
            for name, record in later.items():
                tenant.patch(
                    ConfigMap, names.repository_app_name(name), {"data": record.data}, patch_type=PatchType.MERGE
                )
                tenant.delete(PackageRepository, name)
            for name in later:
                eventually(
                    lambda name=name: condition_of(kube, namespace, name) == "DeleteFailed",
                    timeout=60,
                    what=f"the delete of {name} to fail",
                )
                said = json.dumps(status(kube, PackageRepository, namespace, name))
                assert f"ConfigMap '{name}.pkgr'" in said, said
                assert "victim-data" not in said and "shared.example.com" not in said, said
            after_delete = requests(running)[sent_before_delete:]
            assert_confined(after_delete, victim, shared)
            assert_untouched(kube, victim, shared, before)

            # the tenant deletes its forged records (and touches the repositories, for a reconcile now rather than
            # after the failures' back-off): the repositories go, and still nothing else did
            for name in [*attacks, *later]:
                tenant.delete(ConfigMap, names.repository_app_name(name))
            for name in later:
                touch = {"metadata": {"annotations": {"touched": "1"}}}
                tenant.patch(PackageRepository, name, touch, patch_type=PatchType.MERGE)
            for name in attacks:  # never deployed, so without the finalizer: they go at once
                tenant.delete(PackageRepository, name)
            eventually(
                lambda: not list(kube.list(PackageRepository, namespace=namespace)),
                timeout=90,
                what="the repositories gone",
            )
            assert_untouched(kube, victim, shared, before)
            assert_confined(requests(running), victim, shared)


def assert_untouched(kube: Client, victim: str, shared: str, before: dict[str, str]) -> None:
    """The victim's ConfigMap and the global Packages as they were (same resourceVersions)."""
    victim_cm = get(kube, ConfigMap, victim, "victim-data")
    assert victim_cm is not None, "the victim's ConfigMap was deleted"
    after = {
        "victim": victim_cm["metadata"]["resourceVersion"],
        **{p.metadata.name: p.metadata.resourceVersion for p in kube.list(Package, namespace=shared)},
    }
    assert after == before, "the victim's ConfigMap or the global Packages were changed"


def assert_confined(sent: list[str], victim: str, shared: str) -> None:
    """No request reached the victim's namespace, none wrote to the global one, none carried a forged selector, and
    none listed cluster-wide by an app's label."""
    assert not [r for r in sent if f"/namespaces/{victim}/" in r], "the controller reached the victim"
    writes = [r for r in sent if not r.startswith("GET") and f"/namespaces/{shared}/" in r]
    assert not writes, f"the controller wrote to the global namespace: {writes}"
    assert not [r for r in sent if "app%21" in r or "app!" in r], "a forged selector was sent"
    wide = [r for r in sent if "/namespaces/" not in r and "labelSelector=kapp.k14s.io%2Fapp" in r]
    assert not wide, f"listed cluster-wide by a record's label: {wide}"


def test_a_repository_whose_record_is_the_controllers_own_deploys_and_deletes_in_its_namespace_only(
    cluster: Cluster, kube: Client, namespace: str, tmp_path: Path
) -> None:
    """The confined client and the record checks let the repository's own work through: its Packages come, the record
    it wrote passes on the next syncs, and its delete takes them away."""
    install_crds(cluster, kube)
    package = (
        "---\napiVersion: data.packaging.carvel.dev/v1alpha1\nkind: Package\nmetadata:\n  name: own.example.com.1.0.0\n"
        "spec:\n  refName: own.example.com\n  version: 1.0.0\n  template:\n    spec: {}\n"
    )
    with packaging_controller(cluster, kube, namespace, tmp_path, "--debug") as running:
        kube.create(
            PackageRepository.from_dict(
                {
                    "apiVersion": names.API_VERSION,
                    "kind": "PackageRepository",
                    "metadata": {"name": "own", "namespace": namespace},
                    "spec": {"fetch": {"inline": {"paths": {"packages/own.yml": package}}}},
                }
            )
        )
        eventually(lambda: condition_of(kube, namespace, "own") == "ReconcileSucceeded", timeout=60, what="deployed")
        assert [p.metadata.name for p in kube.list(Package, namespace=namespace)] == ["own.example.com.1.0.0"]
        record = json.loads((kube.get(ConfigMap, "own.pkgr", namespace=namespace).data or {})["spec"])
        assert record["labelKey"] == APP_LABEL and record["lastChange"]["namespaces"] == [namespace]
        kube.delete(PackageRepository, "own", namespace=namespace)
        eventually(lambda: get(kube, PackageRepository, namespace, "own") is None, timeout=60, what="deleted")
        assert list(kube.list(Package, namespace=namespace)) == []
        try:
            kube.get(ConfigMap, "own.pkgr", namespace=namespace)
            raise AssertionError("the record outlived its repository")
        except ApiError as e:
            assert e.status.code == 404
        outside = [r for r in requests(running) if "/namespaces/" not in r and APP_LABEL + "%3D" in r]
        assert not outside, f"listed cluster-wide by the app's label: {outside}"
