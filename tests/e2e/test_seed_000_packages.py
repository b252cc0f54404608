"""Seed 000 ("Identify ghost diff during kapp Controller reconciliation"), command for command with `kapply package`
in place of kctrl, against the real cluster, the real packaging controller and a real OCI registry: a repository
bundle `my-pkg-repo:1.0.0` added, its package listed and installed, an HPA-like actor scaling the Deployment after
each sync, the ghost diff named on the PackageInstall and by `installed get` (`spec.replicas` and its writer), the
suggested overlay added with `installed update --ytt-overlay-file` (kctrl's overlay mechanism) ending the app-changes
without copying the package; then a copied Package 2.0.0 (the blog's way to see the diff) in the repository's next
version, listed, and the install upgraded to it."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Secret, Service, ServiceAccount
from lightkube.types import PatchType

from kapply.packaging import names
from tests.e2e.controller_harness import App, endpoint, wait_syncs
from tests.e2e.harness import Cluster, KapplyRunner, eventually
from tests.e2e.package_cli_harness import (
    REF,
    Pushed,
    app_changes,
    keeps_scaling,
    package_cli_controller,
    package_document,
    push_simple_app,
    replicas,
)
from tests.e2e.packaging_harness import PackageInstall, Running, get, status
from tests.e2e.registry import Registry

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
INSTALL = "pkg-demo"


@pytest.fixture
def pushed(oci_registry: Registry, tmp_path: Path) -> Pushed:
    return push_simple_app(oci_registry, tmp_path / "work")


@pytest.fixture
def running(cluster: Cluster, kube: Client, namespace: str, tmp_path: Path) -> Iterator[Running]:
    with package_cli_controller(cluster, kube, namespace, tmp_path) as process:
        yield process


def succeeded(result: object) -> str:
    """The command's stdout; it must have exited 0 and said `Succeeded`."""
    stdout, stderr = getattr(result, "stdout", ""), getattr(result, "stderr", "")
    assert getattr(result, "returncode", None) == 0, stdout + stderr
    assert stdout.rstrip().endswith("Succeeded"), stdout
    return str(stdout)


def scale_up_once(kube: Client, namespace: str) -> None:
    """The HPA scales the Deployment up once, as `kubectl scale` (the actor brings it back down): writes the drift
    watch sees, each calling for a sync of the App (its own period is 30 s)."""
    kube.patch(
        Deployment.Scale,
        "simple-app",
        {"spec": {"replicas": 3}},
        namespace=namespace,
        patch_type=PatchType.MERGE,
        field_manager="kubectl",
    )


def test_seed_000_the_ghost_diff_story_told_with_kapply_package(
    running: Running, kube: Client, kapply: KapplyRunner, namespace: str, pushed: Pushed, tmp_path: Path
) -> None:
    n = ("-n", namespace)
    repository = pushed.repository("1.0.0", package_document("1.0.0", pushed.app_image))

    # $ kctrl package repository add -r demo-pkg-repo --url docker.io/rohitagg2020/my-pkg-repo:1.0.0
    out = succeeded(kapply("package", "repository", "add", "-r", "demo-pkg-repo", "--url", repository, *n))
    assert "Waiting for package repository to be added" in out
    # kctrl 0.53 tails the reconcile's stages and prints no condition line (tests/compat/test_kctrl_package.py)
    assert "Deploy succeeded" in out and "ReconcileSucceeded" not in out, out

    # $ kctrl package available list --summary=false
    listed = kapply.json("package", "available", "list", "--summary=false", *n).table()
    assert listed.rows == [{"name": REF, "version": "1.0.0", "released_at": "2022-04-21 00:00:00 +0000 UTC"}]

    # $ kctrl package install -i pkg-demo -p simple-app.corp.com --version 1.0.0
    out = succeeded(kapply("package", "install", "-i", INSTALL, "-p", REF, "--version", "1.0.0", *n))
    account = f"{INSTALL}-{namespace}-sa"
    for line in (
        f"Creating service account '{account}'",
        f"Creating cluster admin role '{INSTALL}-{namespace}-cluster-role'",
        f"Creating cluster role binding '{INSTALL}-{namespace}-cluster-rolebinding'",
        "Creating package install resource",
        f"Waiting for PackageInstall reconciliation for '{INSTALL}'",
        "Fetch succeeded",
        "Template succeeded",
        "Deploy succeeded",
    ):
        assert line in out, out
    assert kube.get(ServiceAccount, account, namespace=namespace)
    assert status(kube, PackageInstall, namespace, INSTALL)["version"] == "1.0.0"
    assert replicas(kube, namespace) == 2
    assert kube.get(Service, "simple-app", namespace=namespace)

    # The HPA scales the Deployment down after every sync: the first sets it back (the ghost diff), and as the same
    # writer sets it again, the field is held (issue 30): no app-change per sync.
    with keeps_scaling(kube, namespace, 1) as scaled:
        eventually(
            lambda: (status(kube, PackageInstall, namespace, INSTALL).get("ghostDiffs") or {}).get("suggestedOverlay"),
            timeout=90,
            what="the install's ghost diff",
        )
        reported = status(kube, PackageInstall, namespace, INSTALL)["ghostDiffs"]
        diff = next(d for d in reported["diffs"] if d["path"] == "spec.replicas")
        assert diff["resource"] == f"deployment/simple-app (apps/v1) namespace: {namespace}"
        assert (diff["desired"], diff.get("live", "1")) == ("2", "1")  # none once resolved (held, below)
        assert diff["writtenBy"].startswith("kubectl (Update, scale)"), diff

        # `kapply package installed get` names the field, the values and the writer, and offers the overlay
        shown = kapply.json("package", "installed", "get", "-i", INSTALL, *n)
        row = next(r for r in shown.table("ghost diffs").rows if r["field"] == "spec.replicas")
        assert row["resource"] == diff["resource"] and row["desired"] == "2"
        assert row["live"] == "1" or row["live"].startswith("not seen since"), row
        assert row["written_by"].startswith("kubectl (Update, scale)")
        assert reported["suggestedOverlay"] in shown.blocks
        text = succeeded(kapply("package", "installed", "get", "-i", INSTALL, *n, "--tty"))
        assert "spec.replicas" in text and "kapp.k14s.io/v1alpha1" in text and "--ytt-overlay-file" in text

        eventually(
            lambda: ((get(kube, App, namespace, INSTALL) or {}).get("status", {}).get("fieldOwners") or {}).get("held"),
            timeout=30,
            what=f"the field held (the actor: {scaled})",
        )
        before = app_changes(kube, namespace, INSTALL)
        scale_up_once(kube, namespace)
        wait_syncs(endpoint(running.log), namespace, INSTALL)
        assert app_changes(kube, namespace, INSTALL) == before, "held: no app-change"

        # the overlay, saved and added as kctrl adds overlays: no copy of the package
        rule = tmp_path / "ghost-diffs.yml"
        saved = kapply(
            "package", "installed", "get", "-i", INSTALL, *n, "--tty", "--ghost-diffs-overlay-output", str(rule)
        )
        assert f"Saved the ytt overlay that ends the ghost diffs to {rule}" in succeeded(saved)
        assert rule.read_text() == reported["suggestedOverlay"]
        out = succeeded(kapply("package", "installed", "update", "-i", INSTALL, "--ytt-overlay-file", str(rule), *n))
        assert "Pausing reconciliation for package installation" in out and "Resuming reconciliation" in out
        install = get(kube, PackageInstall, namespace, INSTALL) or {}
        overlays = f"{INSTALL}-{namespace}-overlays"
        assert (
            install["metadata"]["annotations"]["ext.packaging.carvel.dev/ytt-paths-from-secret-name.kctrl-ytt-overlays"]
            == overlays
        )
        secret = kube.get(Secret, overlays, namespace=namespace)
        assert base64.b64decode(secret.data["0000-ghost-diffs.yml"]).decode() == reported["suggestedOverlay"]
        app = get(kube, App, namespace, INSTALL) or {}
        assert {"secretRef": {"name": overlays}} in app["spec"]["template"][0]["ytt"]["inline"]["pathsFrom"]

        # The sync with the overlay ended (the install's status says so): the syncs the actor's writes call for now
        # deploy nothing.
        url = endpoint(running.log)
        settled = app_changes(kube, namespace, INSTALL)
        scale_up_once(kube, namespace)
        wait_syncs(url, namespace, INSTALL)
        assert app_changes(kube, namespace, INSTALL) == settled, "no new app-change once the overlay is in place"
        assert replicas(kube, namespace) == 1, "the cluster's value is kept"

        # the blog's copied Package 2.0.0, in the repository's next version
        copied = package_document("2.0.0", pushed.app_image, ("--diff-changes=true",))
        repository = pushed.repository("2.0.0", package_document("1.0.0", pushed.app_image), copied)
        succeeded(kapply("package", "repository", "update", "-r", "demo-pkg-repo", "--url", repository, *n))
        listed = kapply.json("package", "available", "list", "--summary=false", *n).table()
        assert listed.column("version") == ["1.0.0", "2.0.0"]

        # $ kctrl package installed update -i pkg-demo -p simple-app.corp.com --version 2.0.0
        succeeded(kapply("package", "installed", "update", "-i", INSTALL, "-p", REF, "--version", "2.0.0", *n))
        assert status(kube, PackageInstall, namespace, INSTALL)["version"] == "2.0.0"
        app = get(kube, App, namespace, INSTALL) or {}
        assert app["metadata"]["annotations"][names.PACKAGE_VERSION_ANNOTATION] == "2.0.0"
        settled = app_changes(kube, namespace, INSTALL)
        scale_up_once(kube, namespace)
        wait_syncs(url, namespace, INSTALL)
        assert app_changes(kube, namespace, INSTALL) == settled, "the upgrade keeps the overlay: still no ghost diff"
        assert replicas(kube, namespace) == 1

    out = succeeded(kapply("package", "installed", "delete", "-i", INSTALL, *n, "-y"))
    assert "DeletionSucceeded" in out
    eventually(
        lambda: not list(kube.list(Deployment, namespace=namespace)), timeout=60, what="the app's resources gone"
    )
