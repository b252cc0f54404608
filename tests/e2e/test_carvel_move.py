"""The in-place move from kapp-controller (issue 31): on a cluster where kapp-controller ran, its Apps, their status
and finalizer, and the app records its kapp wrote stay; kapply's controller in carvel mode takes the Apps over. The
records are written by the REAL kapp run as kapp-controller 0.53 runs it (pkg/deploy/kapp.go: `kapp deploy --prev-app
<name>-ctrl -f - --app-changes-max-to-keep=5 --apply-timeout=5m --diff-anchored=true --app <name>.app --namespace
<ns> --yes`), and, for an App last deployed by an older kapp-controller, as `<name>-ctrl`. The first sync
changes nothing: no resource written, no app-change recorded (kapp records none for a deploy without changes), the
legacy record renamed as `--prev-app` renames it, and the real kapp still lists each app's history. A PackageInstall
and the App kapp-controller made for it move the same way, and so does a PackageRepository: kapp-controller 0.53
deploys its Packages as the kapp app `<name>.pkgr` with `--prev-app <name>-ctrl` (pkg/deploy's
NewKappPrivilegedForPackageRepository and Kapp.Deploy), and the first sync of an unchanged repository changes nothing
either."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap, Namespace
from lightkube.types import PatchType

from kapply.controller.vocabulary import CARVEL
from kapply.packaging.repository_content import repository_objects
from kapply.packaging.repository_deploy import DEPLOY_RAW_OPTIONS
from tests.e2e.controller_harness import (
    app_syncs,
    config_map_data,
    controller,
    controller_identity,
    deployer,
    endpoint,
    tool_env,
    wait_syncs,
)
from tests.e2e.harness import Cluster, eventually, external_tool
from tests.e2e.packaging_harness import carvel_crds, carvel_manifests
from tests.e2e.test_carvel_mode import (
    App,
    Package,
    PackageInstall,
    PackageRepository,
    create,
    delete_all,
    get,
)

pytestmark = pytest.mark.e2e

SUFFIX = uuid.uuid4().hex[:6]
# kapp-controller 0.53's defaults before an App's rawOptions (pkg/config: kappDeployRawOptions)
CONTROLLER_FLAGS = ("--app-changes-max-to-keep=5", "--apply-timeout=5m", "--diff-anchored=true")
RAW_OPTIONS = ("--wait-check-interval=0.5s",)


def cm(name: str, **data: str) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})


def app(name: str, files: dict[str, str]) -> dict[str, Any]:
    """An App as kapp-controller left it: its finalizer, and (written next) the status of a successful reconcile."""
    return {
        "apiVersion": "kappctrl.k14s.io/v1alpha1",
        "kind": "App",
        "metadata": {"name": name, "finalizers": [CARVEL.app_finalizer]},
        "spec": {
            "serviceAccountName": "deployer",
            "syncPeriod": "2s",
            "fetch": [{"inline": {"paths": files}}],
            "template": [{"ytt": {}}],
            "deploy": [{"kapp": {"rawOptions": list(RAW_OPTIONS)}}],
        },
    }


def kapp_controller_status(stdout: str, associated: dict[str, Any] | None = None) -> dict[str, Any]:
    """The status kapp-controller 0.53 writes after a successful reconcile (its fields, shortened outputs), with
    `deploy.kapp.associatedResources` as it writes it from the app's metadata (an older kapp-controller: None)."""
    at = "2026-01-01T00:00:00Z"
    deploy: dict[str, Any] = {"exitCode": 0, "finished": True, "startedAt": at, "updatedAt": at, "stdout": stdout}
    if associated is not None:
        deploy["kapp"] = {"associatedResources": associated}
    return {
        "conditions": [{"type": "ReconcileSucceeded", "status": "True"}],
        "consecutiveReconcileSuccesses": 3,
        "observedGeneration": 1,
        "friendlyDescription": "Reconcile succeeded",
        "fetch": {"exitCode": 0, "startedAt": at, "updatedAt": at, "stdout": "apiVersion: vendir.k14s.io/v1alpha1\n"},
        "template": {"exitCode": 0, "updatedAt": at},
        "deploy": deploy,
        "inspect": {"exitCode": 0, "updatedAt": at, "stdout": ""},
    }


def associated_resources(kube: Client, namespace: str, record: str) -> dict[str, Any]:
    """What kapp-controller 0.53 writes as `deploy.kapp.associatedResources` of an App whose kapp app deployed one
    ConfigMap, from the app's record."""
    label = yaml.safe_load((config_map_data(kube, namespace, record) or {})["spec"])["labelValue"]
    kinds = [{"group": "", "kind": "ConfigMap"}]
    return {"label": f"kapp.k14s.io/app={label}", "namespaces": [namespace], "groupKinds": kinds}


def real_kapp(*args: str, stdin: str = "") -> str:
    """The real kapp (`$KAPPLY_KAPP`, else kapp on PATH); its stdout."""
    done = subprocess.run(
        [str(external_tool("kapp", "KAPPLY_KAPP")), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "KAPP_FQ_CONFIGMAP_NAMES": "false"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def deployed_by_kapp_controller(kubeconfig: Path, namespace: str, kapp_app: str, manifests: str, legacy: bool) -> str:
    """`manifests` deployed by the real kapp with kapp-controller's arguments (`legacy`: an older kapp-controller,
    which named the app `<name>-ctrl` and passed no `--prev-app`)."""
    name = kapp_app.removesuffix(".app")
    named = ("--app", f"{name}-ctrl") if legacy else ("--prev-app", f"{name}-ctrl", "--app", kapp_app)
    args = ("deploy", "-f", "-", *CONTROLLER_FLAGS, *RAW_OPTIONS, *named, "--namespace", namespace, "--yes")
    return real_kapp(*args, "--kubeconfig", str(kubeconfig), stdin=manifests)


def history(kubeconfig: Path, namespace: str, kapp_app: str) -> list[str]:
    """The app-changes the real kapp lists for an app: their names and descriptions."""
    out = real_kapp("app-change", "list", "-a", kapp_app, "-n", namespace, "--json", "--kubeconfig", str(kubeconfig))
    rows = yaml.safe_load(out)["Tables"][0]["Rows"]
    return sorted(f"{row['name']} {row['description']}" for row in rows)


def versions(kube: Client, namespace: str, names: list[str]) -> dict[str, str]:
    return {name: str(kube.get(ConfigMap, name, namespace=namespace).metadata.resourceVersion) for name in names}


REF = "moved.carvel.test"
INSTALLED = cm("installed-cm", hello="package")
TEMPLATE = {
    "fetch": [{"inline": {"paths": {"cm.yml": INSTALLED}}}],
    "template": [{"ytt": {}}],
    "deploy": [{"kapp": {"rawOptions": list(RAW_OPTIONS)}}],
}
PACKAGE = {
    "apiVersion": "data.packaging.carvel.dev/v1alpha1",
    "kind": "Package",
    "metadata": {"name": f"{REF}.1.0.0"},
    "spec": {"refName": REF, "version": "1.0.0", "template": {"spec": TEMPLATE}},
}
INSTALL = {
    "apiVersion": "packaging.carvel.dev/v1alpha1",
    "kind": "PackageInstall",
    "metadata": {"name": "installed", "finalizers": [CARVEL.install_finalizer]},
    "spec": {
        "serviceAccountName": "deployer",
        "syncPeriod": "2s",
        "packageRef": {"refName": REF, "versionSelection": {"constraints": "1.0.0"}},
    },
}
INSTALL_STATUS = {
    "conditions": [{"type": "ReconcileSucceeded", "status": "True"}],
    "observedGeneration": 1,
    "friendlyDescription": "Reconcile succeeded",
    "version": "1.0.0",
    "lastAttemptedVersion": "1.0.0",
}


def installed_app(install_uid: str) -> dict[str, Any]:
    """The App kapp-controller 0.53 made for the PackageInstall (packageinstall/app.go, NewApp): the Package's template
    spec with the install's account and sync period, its annotations, controlled by the install."""
    owner = {"apiVersion": INSTALL["apiVersion"], "kind": "PackageInstall", "name": "installed", "uid": install_uid}
    annotations = {"packaging.carvel.dev/package-ref-name": REF, "packaging.carvel.dev/package-version": "1.0.0"}
    return {
        "apiVersion": "kappctrl.k14s.io/v1alpha1",
        "kind": "App",
        "metadata": {
            "name": "installed",
            "annotations": annotations,
            "ownerReferences": [{**owner, "controller": True, "blockOwnerDeletion": True}],
            "finalizers": [CARVEL.app_finalizer],
        },
        "spec": {**TEMPLATE, "serviceAccountName": "deployer", "syncPeriod": "2s"},
    }


# Repositories kapp-controller deployed: `moved-repo` as `moved-repo.pkgr`, `legacy-repo` as `legacy-repo-ctrl` (an
# older kapp-controller), each bringing a Package of its own
REPOSITORIES = {"moved-repo": False, "legacy-repo": True}


def repository_package(name: str) -> dict[str, Any]:
    ref = f"{name}.carvel.test"
    return {**PACKAGE, "metadata": {"name": f"{ref}.1.0.0"}, "spec": {**PACKAGE["spec"], "refName": ref}}


def repository(name: str) -> dict[str, Any]:
    """A PackageRepository as kapp-controller left it: inline content, its finalizer."""
    return {
        "apiVersion": "packaging.carvel.dev/v1alpha1",
        "kind": "PackageRepository",
        "metadata": {"name": name, "finalizers": [CARVEL.repository_finalizer]},
        "spec": {"fetch": {"inline": {"paths": {"packages/pkg.yml": yaml.safe_dump(repository_package(name))}}}},
    }


def repository_deployed_by_kapp_controller(kubeconfig: Path, namespace: str, name: str, legacy: bool) -> None:
    """The repository's Packages (as its template stage makes them) deployed by the real kapp with kapp-controller
    0.53's arguments for a repository (its global options, then the repository's: pkgrepository/app.go); `legacy`: an
    older kapp-controller's `--app <name>-ctrl`."""
    documents = repository_objects([repository_package(name)], namespace, name, CARVEL.package.api_version)
    named = ("--app", f"{name}-ctrl") if legacy else ("--prev-app", f"{name}-ctrl", "--app", f"{name}.pkgr")
    args = ("deploy", "-f", "-", *CONTROLLER_FLAGS, *DEPLOY_RAW_OPTIONS, *named, "--namespace", namespace, "--yes")
    real_kapp(*args, "--kubeconfig", str(kubeconfig), stdin=yaml.safe_dump_all(documents))


FILES = {
    "moved": {"cm.yml": cm("moved-cm", hello="world")},
    "legacy": {"cm.yml": cm("legacy-cm", hello="old")},
}
APPS = (*FILES, "installed")
CONFIG_MAPS = ["moved-cm", "legacy-cm", "installed-cm"]


@pytest.fixture(scope="module")
def moved(cluster: Cluster, kube: Client, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Apps kapp-controller deployed (`moved` twice, as `moved.app`; `legacy` as `legacy-ctrl`), their records and
    objects, then a carvel-mode controller started on their namespace; what was there before it started."""
    directory = tmp_path_factory.mktemp("move")
    namespace = f"t-move-{SUFFIX}"
    log = directory / "controller.log"
    with ExitStack() as stack:
        stack.enter_context(carvel_crds(cluster, kube, directory))
        kube.create(Namespace.from_dict({"metadata": {"name": namespace}}))
        stack.callback(kube.delete, Namespace, namespace)
        create(kube, namespace, deployer(namespace))
        deployed_by_kapp_controller(cluster.kubeconfig, namespace, "moved.app", cm("moved-cm", hello="v0"), False)
        stdouts, associated = {}, {}
        for name, files in FILES.items():
            legacy = name == "legacy"
            stdout = deployed_by_kapp_controller(cluster.kubeconfig, namespace, f"{name}.app", files["cm.yml"], legacy)
            kube.create(App(**app(name, files)), namespace=namespace)
            stdouts[name] = stdout
            associated[name] = associated_resources(kube, namespace, f"{name}-ctrl" if legacy else f"{name}.app")
            status = {"status": kapp_controller_status(stdout, None if legacy else associated[name])}
            kube.patch(App.Status, name, status, namespace=namespace, patch_type=PatchType.MERGE)
        kube.create(Package(**PACKAGE), namespace=namespace)
        stdout = deployed_by_kapp_controller(cluster.kubeconfig, namespace, "installed.app", INSTALLED, False)
        install = kube.create(PackageInstall(**INSTALL), namespace=namespace)
        kube.patch(
            PackageInstall.Status,
            "installed",
            {"status": INSTALL_STATUS},
            namespace=namespace,
            patch_type=PatchType.MERGE,
        )
        kube.create(App(**installed_app(str(install.metadata.uid))), namespace=namespace)
        status = {"status": kapp_controller_status(stdout)}
        kube.patch(App.Status, "installed", status, namespace=namespace, patch_type=PatchType.MERGE)
        for name, legacy in REPOSITORIES.items():
            repository_deployed_by_kapp_controller(cluster.kubeconfig, namespace, name, legacy)
            kube.create(PackageRepository(**repository(name)), namespace=namespace)
        before = {
            "versions": versions(kube, namespace, CONFIG_MAPS),
            "installed": history(cluster.kubeconfig, namespace, "installed.app"),
            "moved": history(cluster.kubeconfig, namespace, "moved.app"),
            "legacy": history(cluster.kubeconfig, namespace, "legacy-ctrl"),
            "legacy label": (config_map_data(kube, namespace, "legacy-ctrl") or {})["spec"],
            "moved-repo": history(cluster.kubeconfig, namespace, "moved-repo.pkgr"),
            "legacy-repo": history(cluster.kubeconfig, namespace, "legacy-repo-ctrl"),
            "legacy-repo record": (config_map_data(kube, namespace, "legacy-repo-ctrl") or {})["spec"],
            "packages": {p.metadata.name: p.metadata.resourceVersion for p in kube.list(Package, namespace=namespace)},
        }
        identity = stack.enter_context(controller_identity(kube, cluster.kubeconfig, directory, carvel_manifests()))
        flags = ("-n", namespace, "--leader-elect=false", "--api-groups=carvel")
        stack.enter_context(controller(identity.kubeconfig, log, *flags, env=tool_env("ytt")))
        try:
            url = endpoint(log)
            eventually(
                lambda: all(app_syncs(url, namespace).get(n, (0, 0))[1] >= 1 for n in APPS),
                timeout=60,
                interval=0.2,
                what="a first sync of each App",
            )
            wait_syncs(url, namespace, "installed")  # one more: after any change the install made to its App
            eventually(
                lambda: all(f"PackageRepository {namespace}/{n}: " in log.read_text() for n in REPOSITORIES),
                timeout=60,
                interval=0.2,
                what="a first sync of each PackageRepository",
            )
            yield {"namespace": namespace, "log": log, "stdout": stdouts, "associated": associated, **before}
            delete_all(kube, PackageInstall, namespace)
            delete_all(kube, App, namespace)
            delete_all(kube, PackageRepository, namespace)
        finally:
            print(f"--- controller ---\n{log.read_text() if log.exists() else ''}")
    assert "Traceback" not in log.read_text(), "the controller crashed (its log is above)"


def test_the_first_sync_of_a_moved_app_changes_nothing(moved: dict[str, Any], kube: Client) -> None:
    namespace = moved["namespace"]
    assert versions(kube, namespace, CONFIG_MAPS) == moved["versions"], "no resource written"
    for name in FILES:
        obj = get(kube, App, namespace, name) or {}
        assert obj["metadata"]["finalizers"] == [CARVEL.app_finalizer]
        # nothing deployed for a spec kapp-controller reconciled: its status stays, untouched (an older
        # kapp-controller's gains the associatedResources 0.53 writes)
        assert obj["status"] == kapp_controller_status(moved["stdout"][name], moved["associated"][name])
        assert f"{namespace}/{name}: no changes" in moved["log"].read_text()


def test_the_history_continues_under_kapp_controller_s_name(moved: dict[str, Any], cluster: Cluster) -> None:
    namespace, kubeconfig = moved["namespace"], cluster.kubeconfig
    assert history(kubeconfig, namespace, "moved.app") == moved["moved"]
    assert len(moved["moved"]) == 2
    # the legacy record renamed as kapp's --prev-app renames it: the same label, the same app-changes
    assert history(kubeconfig, namespace, "legacy.app") == moved["legacy"]
    assert len(moved["legacy"]) == 1


def test_a_moved_package_install_keeps_its_app_record_and_finalizers(
    moved: dict[str, Any], kube: Client, cluster: Cluster
) -> None:
    namespace = moved["namespace"]
    install = get(kube, PackageInstall, namespace, "installed") or {}
    assert install["metadata"]["finalizers"] == [CARVEL.install_finalizer]
    assert install["status"]["friendlyDescription"] == "Reconcile succeeded"
    obj = get(kube, App, namespace, "installed") or {}
    assert obj["metadata"]["finalizers"] == [CARVEL.app_finalizer]
    assert [r["uid"] for r in obj["metadata"]["ownerReferences"]] == [install["metadata"]["uid"]]
    assert obj["metadata"]["generation"] == 1, "the install wants the App kapp-controller made: no spec written"
    assert history(cluster.kubeconfig, namespace, "installed.app") == moved["installed"]
    assert f"{namespace}/installed: no changes" in moved["log"].read_text()


def test_a_legacy_record_takes_kapp_controller_s_new_name(moved: dict[str, Any], kube: Client) -> None:
    namespace = moved["namespace"]
    assert config_map_data(kube, namespace, "legacy-ctrl") is None
    assert (config_map_data(kube, namespace, "legacy.app") or {})["spec"] == moved["legacy label"]


def test_a_moved_repository_keeps_its_packages_and_its_record_under_kapp_controller_s_name(
    moved: dict[str, Any], kube: Client, cluster: Cluster
) -> None:
    namespace, kubeconfig = moved["namespace"], cluster.kubeconfig
    log = moved["log"].read_text()
    for name in REPOSITORIES:
        assert f"PackageRepository {namespace}/{name}: no changes" in log
        repo = get(kube, PackageRepository, namespace, name) or {}
        assert repo["metadata"]["finalizers"] == [CARVEL.repository_finalizer]
    packages = {p.metadata.name: p.metadata.resourceVersion for p in kube.list(Package, namespace=namespace)}
    assert packages == moved["packages"], "no Package written"
    assert history(kubeconfig, namespace, "moved-repo.pkgr") == moved["moved-repo"]
    assert len(moved["moved-repo"]) == 1
    # `--prev-app legacy-repo-ctrl`: the older record renamed, with its label and app-changes
    assert config_map_data(kube, namespace, "legacy-repo-ctrl") is None
    assert (config_map_data(kube, namespace, "legacy-repo.pkgr") or {})["spec"] == moved["legacy-repo record"]
    assert history(kubeconfig, namespace, "legacy-repo.pkgr") == moved["legacy-repo"]
    assert len(moved["legacy-repo"]) == 1
