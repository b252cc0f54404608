"""The PackageInstall controller in a real `kapply controller` process (with exactly the rights of
config/controller/rbac.yml): kapp-controller's example PackageInstall, with only its apiVersion changed, runs its
Package as an App named and owned as kapp-controller names and owns it, with its values Secret reaching ytt; versions
are selected with kapp-controller's rules (prereleases, build metadata, the global namespace), upgraded when a higher
one appears, never downgraded without the annotation; the status mirrors the App's; deleting the install deletes
the App and what it deployed (or not, with noopDelete)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap, Namespace, Secret
from lightkube.types import PatchType

from kapply.packaging import names
from tests.e2e.controller_harness import App, config_map_data, deployer
from tests.e2e.controller_harness import create_all as create_objects
from tests.e2e.harness import Cluster, eventually
from tests.e2e.packaging_harness import (
    PackageInstall,
    Running,
    condition,
    config_map_package,
    create,
    get,
    global_namespace,
    install,
    moved,
    packaging_controller,
    status,
)

pytestmark = pytest.mark.e2e
REF = "pkg.test.carvel.dev"

# kapp-controller's examples/packaging-with-repo/package-install.yml, as written there.
PACKAGE_INSTALL = """
---
apiVersion: packaging.carvel.dev/v1alpha1
kind: PackageInstall
metadata:
  name: pkg-demo
spec:
  serviceAccountName: default-ns-sa
  packageRef:
    refName: pkg.test.carvel.dev
    versionSelection:
      constraints: 1.0.0
  values:
  - secretRef:
      name: pkg-demo-values
---
apiVersion: v1
kind: Secret
metadata:
  name: pkg-demo-values
stringData:
  values.yml: |
    hello_msg: "hi"
"""


@pytest.fixture
def running(packaging_crds: None, cluster: Cluster, kube: Client, namespace: str, tmp_path: Path) -> Iterator[Running]:
    create_objects(kube, deployer(namespace))
    with packaging_controller(cluster, kube, namespace, tmp_path) as process:
        yield process


def reconciled(kube: Client, namespace: str, name: str) -> bool:
    """`kubectl wait --for=condition=ReconcileSucceeded pkgi/<name>` would return."""
    return condition(kube, PackageInstall, namespace, name) == "ReconcileSucceeded"


def failed(kube: Client, namespace: str, name: str) -> bool:
    return condition(kube, PackageInstall, namespace, name) == "ReconcileFailed"


def values(secret: str, **data: str) -> dict[str, Any]:
    """A values Secret (key `values.yml`, as kctrl writes them)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret},
        "stringData": {"values.yml": yaml.safe_dump(data)},
    }


def merge(kube: Client, kind: type, namespace: str, name: str, patch: dict[str, Any]) -> None:
    kube.patch(kind, name, patch, namespace=namespace, patch_type=PatchType.MERGE)


def test_kapp_controllers_example_install_runs_its_package_as_an_owned_app_and_goes_with_it(
    running: Running, kube: Client, namespace: str
) -> None:
    create_objects(kube, deployer(namespace, "default-ns-sa"))
    create(kube, namespace, config_map_package(REF, "1.0.0"), config_map_package(REF, "1.1.0"))
    create(kube, namespace, *moved(PACKAGE_INSTALL, namespace))
    eventually(lambda: reconciled(kube, namespace, "pkg-demo"), timeout=90, what="the install reconciled")

    reported = status(kube, PackageInstall, namespace, "pkg-demo")
    assert reported["conditions"] == [{"type": "ReconcileSucceeded", "status": "True"}]
    assert reported["friendlyDescription"] == "Reconcile succeeded"
    assert reported["version"] == "1.0.0" and reported["lastAttemptedVersion"] == "1.0.0"
    pkgi = get(kube, PackageInstall, namespace, "pkg-demo") or {}
    assert pkgi["metadata"]["finalizers"] == [names.INSTALL_FINALIZER]

    app = get(kube, App, namespace, "pkg-demo") or {}
    assert app["metadata"]["ownerReferences"] == [
        {
            "apiVersion": names.API_VERSION,
            "kind": "PackageInstall",
            "name": "pkg-demo",
            "uid": pkgi["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    annotations = app["metadata"]["annotations"]
    assert annotations[names.PACKAGE_REF_NAME_ANNOTATION] == REF
    assert annotations[names.PACKAGE_VERSION_ANNOTATION] == "1.0.0"
    assert app["spec"]["serviceAccountName"] == "default-ns-sa"
    assert app["spec"]["syncPeriod"] == "10m0s", "the controller's default, as kapp-controller's"
    assert app["spec"]["template"][0]["ytt"]["valuesFrom"] == [{"secretRef": {"name": "pkg-demo-values"}}]
    assert config_map_data(kube, namespace, "pkg-cm") == {"version": "1.0.0", "hello_msg": "hi"}
    assert config_map_data(kube, namespace, "pkg-demo.app") is not None, "the kapp app is <name>.app"

    kube.delete(PackageInstall, "pkg-demo", namespace=namespace)
    eventually(lambda: get(kube, PackageInstall, namespace, "pkg-demo") is None, timeout=60, what="the install gone")
    assert get(kube, App, namespace, "pkg-demo") is None
    assert config_map_data(kube, namespace, "pkg-cm") is None, "the App's resources go with it"


def test_versions_are_selected_as_kapp_controller_selects_them_and_upgraded_when_a_higher_one_appears(
    running: Running, kube: Client, namespace: str
) -> None:
    create(
        kube,
        namespace,
        config_map_package(REF, "1.0.0"),
        config_map_package(REF, "1.5.0-rc.1"),
        config_map_package(REF, "2.0.0+build.1"),
    )
    cases = {
        "range": ({"constraints": ">=1.0.0"}, "2.0.0+build.1"),
        "prerelease": ({"constraints": "1.5.0-rc.1"}, "1.5.0-rc.1"),
        "identifiers": ({"constraints": "<2.0.0", "prereleases": {"identifiers": ["rc"]}}, "1.5.0-rc.1"),
        "build": ({"constraints": "2.0.0+build.1"}, "2.0.0+build.1"),
    }
    for name, (selection, _) in cases.items():
        create(kube, namespace, values(f"{name}-values", name=f"{name}-cm"))
        pkgi = install(name, REF, "", values=[{"secretRef": {"name": f"{name}-values"}}])
        pkgi["spec"]["packageRef"]["versionSelection"] = selection
        create(kube, namespace, pkgi)
    create(kube, namespace, values("exact-values", name="exact-cm"))
    create(kube, namespace, install("exact", REF, "2.0.0", values=[{"secretRef": {"name": "exact-values"}}]))
    for name, (_, version) in cases.items():
        eventually(lambda name=name: reconciled(kube, namespace, name), timeout=90, what=f"{name} reconciled")
        assert status(kube, PackageInstall, namespace, name)["version"] == version, name
        assert (config_map_data(kube, namespace, f"{name}-cm") or {}).get("version") == version, name

    # `2.0.0` does not select `2.0.0+build.1` (kapp-controller#1338).
    eventually(lambda: failed(kube, namespace, "exact"), timeout=60, what="exact failed")
    reported = status(kube, PackageInstall, namespace, "exact")
    message = (
        "Expected to find at least one version, but did not (details: all=3 -> after-prereleases-filter=2 -> "
        "after-kapp-controller-version-check=2 -> after-constraints-filter=0)"
    )
    assert reported["conditions"] == [{"type": "ReconcileFailed", "status": "True", "message": message}]
    assert reported["friendlyDescription"] == f"Reconcile failed: {message[:80]}..."
    assert get(kube, App, namespace, "exact") is None

    # A higher version appears: the installs that admit it move to it; the one that does not stays.
    create(kube, namespace, config_map_package(REF, "2.1.0"), config_map_package(REF, "2.0.0"))
    eventually(
        lambda: (config_map_data(kube, namespace, "range-cm") or {}).get("version") == "2.1.0",
        timeout=60,
        what="range upgraded to 2.1.0",
    )
    eventually(lambda: reconciled(kube, namespace, "exact"), timeout=60, what="exact reconciled once 2.0.0 exists")
    assert status(kube, PackageInstall, namespace, "exact")["version"] == "2.0.0"
    eventually(lambda: reconciled(kube, namespace, "range"), timeout=60, what="range reconciled")
    app = get(kube, App, namespace, "range") or {}
    assert app["metadata"]["annotations"][names.PACKAGE_VERSION_ANNOTATION] == "2.1.0"
    assert status(kube, PackageInstall, namespace, "range")["lastAttemptedVersion"] == "2.1.0"
    assert status(kube, PackageInstall, namespace, "identifiers")["version"] == "1.5.0-rc.1"


def test_a_downgrade_is_refused_until_the_install_allows_it(running: Running, kube: Client, namespace: str) -> None:
    create(kube, namespace, config_map_package(REF, "1.0.0"), config_map_package(REF, "2.0.0"))
    create(kube, namespace, install("pkgi", REF, ">=1.0.0"))
    eventually(lambda: reconciled(kube, namespace, "pkgi"), timeout=90, what="2.0.0 installed")
    merge(
        kube,
        PackageInstall,
        namespace,
        "pkgi",
        {"spec": {"packageRef": {"versionSelection": {"constraints": "1.0.0"}}}},
    )
    eventually(lambda: failed(kube, namespace, "pkgi"), timeout=60, what="the downgrade refused")
    reported = status(kube, PackageInstall, namespace, "pkgi")
    see = "Error (see .status.usefulErrorMessage for details)"
    assert reported["conditions"] == [{"type": "ReconcileFailed", "status": "True", "message": see}]
    assert reported["friendlyDescription"] == f"Reconcile failed: {see}"
    assert reported["usefulErrorMessage"] == (
        "Stopped installing matched version '1.0.0' since last attempted version '2.0.0' is higher.\n"
        'hint: Add annotation packaging.carvel.dev/downgradable: "" to PackageInstall to proceed with downgrade'
    )
    assert reported["version"] == "1.0.0" and reported["lastAttemptedVersion"] == "2.0.0"
    assert (config_map_data(kube, namespace, "pkg-cm") or {}).get("version") == "2.0.0", "the App is left as it is"

    merge(
        kube, PackageInstall, namespace, "pkgi", {"metadata": {"annotations": {names.DOWNGRADABLE_ANNOTATIONS[0]: ""}}}
    )
    eventually(
        lambda: (config_map_data(kube, namespace, "pkg-cm") or {}).get("version") == "1.0.0",
        timeout=60,
        what="downgraded once annotated",
    )
    eventually(lambda: reconciled(kube, namespace, "pkgi"), timeout=60, what="reconciled at 1.0.0")
    assert status(kube, PackageInstall, namespace, "pkgi")["lastAttemptedVersion"] == "1.0.0"


def test_packages_of_the_global_namespace_are_seen_unless_the_namespace_opts_out(
    packaging_crds: None, cluster: Cluster, kube: Client, namespace: str, tmp_path: Path
) -> None:
    create_objects(kube, deployer(namespace))
    with global_namespace(kube) as shared:
        create(kube, shared, config_map_package(REF, "1.0.0"), config_map_package(REF, "3.0.0"))
        # The namespace's own 1.0.0 wins over the global one of the same identity.
        own = config_map_package(REF, "1.0.0", data_key="own")
        create(kube, namespace, own)
        with packaging_controller(cluster, kube, namespace, tmp_path, global_namespace=shared):
            create(kube, namespace, install("latest", REF, ">=0.0.0"))
            eventually(lambda: reconciled(kube, namespace, "latest"), timeout=90, what="the global 3.0.0 installed")
            assert status(kube, PackageInstall, namespace, "latest")["version"] == "3.0.0"
            create(kube, namespace, values("first-values", name="first-cm"))
            pinned = install("first", REF, "1.0.0", values=[{"secretRef": {"name": "first-values"}}])
            create(kube, namespace, pinned)
            eventually(lambda: reconciled(kube, namespace, "first"), timeout=90, what="1.0.0 installed")
            assert (config_map_data(kube, namespace, "first-cm") or {}).get("own") == "1.0.0", "the namespace's own"
            # A new global version concerns this namespace's installs.
            create(kube, shared, config_map_package(REF, "3.1.0"))
            eventually(
                lambda: status(kube, PackageInstall, namespace, "latest").get("version") == "3.1.0",
                timeout=60,
                what="upgraded to the new global version",
            )
            exclude = {"metadata": {"annotations": {names.EXCLUDE_GLOBAL_PACKAGES_ANNOTATIONS[0]: ""}}}
            kube.patch(Namespace, namespace, exclude, patch_type=PatchType.MERGE)
            create(kube, namespace, install("excluded", REF, ">=2.0.0"))
            eventually(lambda: failed(kube, namespace, "excluded"), timeout=60, what="no global package seen")
            assert (
                "after-constraints-filter=0"
                in status(kube, PackageInstall, namespace, "excluded")["conditions"][0]["message"]
            )


def test_an_install_of_a_package_that_does_not_exist(running: Running, kube: Client, namespace: str) -> None:
    create(kube, namespace, install("nothing", "missing.test.carvel.dev", ">=0.0.0"))
    eventually(lambda: failed(kube, namespace, "nothing"), timeout=60, what="failed")
    reported = status(kube, PackageInstall, namespace, "nothing")
    assert reported["conditions"][0]["message"] == "Package missing.test.carvel.dev not found"
    assert reported["friendlyDescription"] == "Reconcile failed: Package missing.test.carvel.dev not found"
    create(kube, namespace, config_map_package("missing.test.carvel.dev", "0.1.0"))
    eventually(lambda: reconciled(kube, namespace, "nothing"), timeout=90, what="installed once the Package exists")


def test_values_secrets_overlays_and_data_values_overlays_reach_the_first_ytt_step(
    running: Running, kube: Client, namespace: str
) -> None:
    overlay = (
        '#@ load("@ytt:overlay", "overlay")\n'
        '#@overlay/match by=overlay.subset({"kind": "ConfigMap"})\n'
        "---\n"
        "data:\n"
        "  #@overlay/match missing_ok=True\n"
        '  overlaid: "yes"\n'
    )
    create(
        kube,
        namespace,
        config_map_package(REF, "1.0.0"),
        values("pkgi-values", hello_msg="from values"),
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "overlay"}, "stringData": {"overlay.yml": overlay}},
    )
    pkgi = install("pkgi", REF, "1.0.0", values=[{"secretRef": {"name": "pkgi-values"}}])
    pkgi["metadata"]["annotations"] = {"ext.packaging.carvel.dev/ytt-paths-from-secret-name.0": "overlay"}
    create(kube, namespace, pkgi)
    eventually(lambda: reconciled(kube, namespace, "pkgi"), timeout=90, what="installed")
    data = config_map_data(kube, namespace, "pkg-cm") or {}
    assert data == {"version": "1.0.0", "hello_msg": "from values", "overlaid": "yes"}, data
    app = get(kube, App, namespace, "pkgi") or {}
    assert app["spec"]["template"][0]["ytt"]["inline"] == {"pathsFrom": [{"secretRef": {"name": "overlay"}}]}

    # With ytt-data-values-overlays the values Secret is a ytt file: a data values overlay.
    kube.patch(
        Secret,
        "pkgi-values",
        {"stringData": {"values.yml": '#@data/values\n---\nhello_msg: "as an overlay"\n'}},
        namespace=namespace,
        patch_type=PatchType.MERGE,
    )
    merge(
        kube,
        PackageInstall,
        namespace,
        "pkgi",
        {"metadata": {"annotations": {"ext.packaging.carvel.dev/ytt-data-values-overlays": ""}}},
    )
    eventually(
        lambda: (config_map_data(kube, namespace, "pkg-cm") or {}).get("hello_msg") == "as an overlay",
        timeout=60,
        what="the values Secret as a ytt file",
    )
    app = get(kube, App, namespace, "pkgi") or {}
    assert app["spec"]["template"][0]["ytt"]["inline"]["pathsFrom"] == [
        {"secretRef": {"name": "overlay"}},
        {"secretRef": {"name": "pkgi-values"}},
    ]
    assert "valuesFrom" not in app["spec"]["template"][0]["ytt"]


def test_paused_and_noop_delete_reach_the_app(running: Running, kube: Client, namespace: str) -> None:
    create(kube, namespace, config_map_package(REF, "1.0.0"), config_map_package(REF, "2.0.0"))
    create(kube, namespace, install("pkgi", REF, "1.0.0"))
    eventually(lambda: reconciled(kube, namespace, "pkgi"), timeout=90, what="installed")
    merge(
        kube,
        PackageInstall,
        namespace,
        "pkgi",
        {"spec": {"paused": True, "packageRef": {"versionSelection": {"constraints": "2.0.0"}}}},
    )
    eventually(
        lambda: (
            (get(kube, App, namespace, "pkgi") or {}).get("status", {}).get("friendlyDescription") == "Canceled/paused"
        ),
        timeout=60,
        what="the App paused",
    )
    app = get(kube, App, namespace, "pkgi") or {}
    assert app["spec"]["paused"] is True
    assert app["metadata"]["annotations"][names.PACKAGE_VERSION_ANNOTATION] == "2.0.0", "selection goes on"
    assert (config_map_data(kube, namespace, "pkg-cm") or {}).get("version") == "1.0.0", (
        "the paused App deploys nothing"
    )
    merge(kube, PackageInstall, namespace, "pkgi", {"spec": {"paused": False, "noopDelete": True}})
    eventually(
        lambda: (config_map_data(kube, namespace, "pkg-cm") or {}).get("version") == "2.0.0",
        timeout=60,
        what="unpaused, 2.0.0 deployed",
    )
    assert (get(kube, App, namespace, "pkgi") or {})["spec"]["noopDelete"] is True
    kube.delete(PackageInstall, "pkgi", namespace=namespace)
    eventually(lambda: get(kube, PackageInstall, namespace, "pkgi") is None, timeout=60, what="the install gone")
    assert get(kube, App, namespace, "pkgi") is None
    assert config_map_data(kube, namespace, "pkg-cm") is not None, "noopDelete keeps what the App deployed"


def test_an_unowned_app_is_adopted_and_one_owned_by_another_is_refused(
    running: Running, kube: Client, namespace: str
) -> None:
    create(kube, namespace, config_map_package(REF, "1.0.0"))
    unowned = {
        "apiVersion": "kapply.dev/v1alpha1",
        "kind": "App",
        "metadata": {"name": "adopted", "labels": {"kept": "yes"}},
        "spec": {
            "paused": True,
            "serviceAccountName": "deployer",
            "fetch": [{"inline": {}}],
            "template": [{"ytt": {}}],
            "deploy": [{"kapp": {}}],
        },
    }
    someone = kube.create(ConfigMap.from_dict({"metadata": {"name": "someone", "namespace": namespace}}))
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "someone", "uid": someone.metadata.uid}
    foreign = {**unowned, "metadata": {"name": "taken", "ownerReferences": [{**reference, "controller": True}]}}
    create(kube, namespace, unowned, foreign)
    create(kube, namespace, install("adopted", REF, "1.0.0"), install("taken", REF, "1.0.0"))
    eventually(lambda: reconciled(kube, namespace, "adopted"), timeout=90, what="the unowned App adopted")
    app = get(kube, App, namespace, "adopted") or {}
    assert app["metadata"]["labels"] == {"kept": "yes"}
    assert app["metadata"]["ownerReferences"][0]["name"] == "adopted"
    eventually(lambda: failed(kube, namespace, "taken"), timeout=60, what="the owned App refused")
    assert status(kube, PackageInstall, namespace, "taken")["conditions"][0]["message"] == (
        f"Object {namespace}/taken is already owned by another ConfigMap controller someone"
    )
    kube.delete(PackageInstall, "taken", namespace=namespace)
    eventually(lambda: get(kube, PackageInstall, namespace, "taken") is None, timeout=60, what="deleted")
    assert get(kube, App, namespace, "taken") is not None, "someone else's App is not deleted"
    kube.delete(App, "taken", namespace=namespace)


def test_a_failing_app_is_mirrored_with_kapp_controllers_texts(running: Running, kube: Client, namespace: str) -> None:
    create(kube, namespace, config_map_package(REF, "1.0.0"))
    create(kube, namespace, install("pkgi", REF, "1.0.0", serviceAccountName="nobody"))
    eventually(lambda: failed(kube, namespace, "pkgi"), timeout=60, what="the App's failure mirrored")
    reported = status(kube, PackageInstall, namespace, "pkgi")
    see = "Error (see .status.usefulErrorMessage for details)"
    assert reported["conditions"] == [{"type": "ReconcileFailed", "status": "True", "message": see}]
    assert reported["friendlyDescription"] == f"Reconcile failed: {see}"
    assert 'serviceaccounts "nobody" not found' in reported["usefulErrorMessage"], reported
    merge(kube, PackageInstall, namespace, "pkgi", {"spec": {"serviceAccountName": "deployer"}})
    eventually(lambda: reconciled(kube, namespace, "pkgi"), timeout=90, what="fixed")
    assert "usefulErrorMessage" not in status(kube, PackageInstall, namespace, "pkgi")


def test_an_install_of_a_cluster_is_refused_as_the_app_refuses_it(
    running: Running, kube: Client, namespace: str
) -> None:
    create(kube, namespace, config_map_package(REF, "1.0.0"))
    pkgi = install("pkgi", REF, "1.0.0", cluster={"namespace": "x", "kubeconfigSecretRef": {"name": "k"}})
    create(kube, namespace, pkgi)
    eventually(lambda: failed(kube, namespace, "pkgi"), timeout=60, what="refused")
    assert "spec.cluster is not supported" in status(kube, PackageInstall, namespace, "pkgi")["usefulErrorMessage"]
