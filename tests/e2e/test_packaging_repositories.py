"""The PackageRepository controller in a real `kapply controller` process (with exactly the rights of
config/controller/rbac.yml): kapp-controller's example repositories, with only their apiVersion changed, bring their
Packages into their namespace with the owner annotation and take them away when deleted; a Package leaving the
repository is pruned; overlapping repositories follow kapp-controller's rules; statuses read as kapp-controller's."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import Secret
from lightkube.types import PatchType

from kapply.packaging import names
from tests.carvel_examples import INLINE_REPOSITORY
from tests.e2e.controller_harness import endpoint, samples
from tests.e2e.harness import Cluster, eventually
from tests.e2e.packaging_harness import (
    Package,
    PackageMetadata,
    PackageRepository,
    Running,
    condition,
    create,
    get,
    moved,
    package_names,
    packaging_controller,
    status,
)

pytestmark = pytest.mark.e2e

REPOSITORY = "probably-tap-or-something.tanzu.carvel.dev"


@pytest.fixture
def running(packaging_crds: None, cluster: Cluster, kube: Client, namespace: str, tmp_path: Path) -> Iterator[Running]:
    with packaging_controller(cluster, kube, namespace, tmp_path) as process:
        yield process


def repository(name: str, files: dict[str, str], **spec: Any) -> dict[str, Any]:
    """A PackageRepository with inline content (kapp-controller's e2e tests' shape)."""
    return {
        "apiVersion": names.API_VERSION,
        "kind": "PackageRepository",
        "metadata": {"name": name},
        "spec": {"fetch": {"inline": {"paths": files}}, **spec},
    }


def package_file(ref_name: str, version: str, **extra: Any) -> str:
    """A repository file holding one Package, as kapp-controller's e2e tests write them (`template: {spec: {}}`)."""
    meta: dict[str, Any] = {"name": f"{ref_name}.{version}"}
    if extra.get("annotations"):
        meta["annotations"] = extra.pop("annotations")
    doc = {
        "apiVersion": "data.packaging.carvel.dev/v1alpha1",
        "kind": "Package",
        "metadata": meta,
        "spec": {"refName": ref_name, "version": version, "template": {"spec": {}}, **extra},
    }
    return "---\n" + yaml.safe_dump(doc)


def succeeded(kube: Client, namespace: str, name: str) -> bool:
    return condition(kube, PackageRepository, namespace, name) == "ReconcileSucceeded"


def failed(kube: Client, namespace: str, name: str) -> bool:
    return condition(kube, PackageRepository, namespace, name) == "ReconcileFailed"


def test_kapp_controllers_inline_repository_brings_its_package_and_takes_it_away(
    running: Running, kube: Client, namespace: str
) -> None:
    create(kube, namespace, *moved(INLINE_REPOSITORY, namespace))
    eventually(lambda: succeeded(kube, namespace, REPOSITORY), timeout=60, what="the repository reconciled")
    reported = status(kube, PackageRepository, namespace, REPOSITORY)
    assert reported["friendlyDescription"] == "Reconcile succeeded"
    assert reported["conditions"] == [{"type": "ReconcileSucceeded", "status": "True"}]
    assert reported["consecutiveReconcileSuccesses"] == 1 and reported["consecutiveReconcileFailures"] == 0
    assert reported["fetch"]["exitCode"] == 0 and "inline: {}" in reported["fetch"]["stdout"]
    assert reported["template"]["exitCode"] == 0 and "stdout" not in reported["template"]
    assert reported["deploy"]["exitCode"] == 0 and reported["deploy"]["finished"] is True
    assert "usefulErrorMessage" not in reported
    # kapp-controller's series of the repository: its attempts (the only count it keeps of one), and its four times
    served = {
        (s.name, s.labels.get("firstReconcile")): s.value
        for s in samples(endpoint(running.log))
        if s.labels.get("controller") == "PackageRepository" and s.labels.get("name") == REPOSITORY
    }
    assert served[("kappctrl_app_reconcile_attempt_total", None)] >= 1
    assert served[("kappctrl_app_reconcile_success_total", None)] == 0
    for stage in ("", "fetch_", "template_", "deploy_"):
        assert served[(f"kappctrl_reconcile_{stage}time_seconds", "true")] > 0
    pkgr = get(kube, PackageRepository, namespace, REPOSITORY) or {}
    assert pkgr["metadata"]["finalizers"] == [names.REPOSITORY_FINALIZER]

    package = get(kube, Package, namespace, "pkg.test.carvel.dev.2.0.0") or {}
    annotations = package["metadata"]["annotations"]
    assert annotations[names.REPOSITORY_REF_ANNOTATION] == f"{namespace}/{REPOSITORY}"
    assert annotations["pkg.test.carvel.dev/real-version-ann"] == "inline-repo-3"
    assert package["apiVersion"] == names.DATA_API_VERSION
    assert package["spec"]["capacityRequirementsDescription"] == "cpu: 1,RAM: 2, Disk: 3"
    assert package["spec"]["valuesSchema"]["openAPIv3"]["properties"]["hello_msg"]["default"] == "stranger"
    assert package["metadata"]["labels"]["kapp.k14s.io/app"], "deployed as the kapp app <name>.pkgr"

    kube.delete(PackageRepository, REPOSITORY, namespace=namespace)
    eventually(lambda: get(kube, PackageRepository, namespace, REPOSITORY) is None, timeout=60, what="the PKGR gone")
    assert package_names(kube, namespace) == []


def test_a_package_leaving_the_repository_is_pruned_and_a_new_one_appears(
    running: Running, kube: Client, namespace: str
) -> None:
    files = {
        "packages/a.yml": package_file("pkg.test.carvel.dev", "1.0.0"),
        "packages/nested/dir/b.yml": package_file("pkg.test.carvel.dev", "1.1.0"),
        "packages/meta.yml": "---\n"
        + yaml.safe_dump(
            {
                "apiVersion": "data.packaging.carvel.dev/v1alpha1",
                "kind": "PackageMetadata",
                "metadata": {"name": "pkg.test.carvel.dev"},
                "spec": {"displayName": "Test", "unknownField": "dropped"},
            }
        ),
        # Other kinds are dropped silently, as kapp-controller drops them.
        "packages/other.yml": "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: not-a-package}\n",
    }
    create(kube, namespace, repository("repo", files, syncPeriod="30s"))
    eventually(lambda: succeeded(kube, namespace, "repo"), timeout=60, what="the repository reconciled")
    assert package_names(kube, namespace) == ["pkg.test.carvel.dev.1.0.0", "pkg.test.carvel.dev.1.1.0"]
    metadata = get(kube, PackageMetadata, namespace, "pkg.test.carvel.dev") or {}
    assert metadata["spec"] == {"displayName": "Test"}

    changed = {"packages/a.yml": None, "packages/c.yml": package_file("pkg.test.carvel.dev", "2.0.0+build.1")}
    kube.patch(  # a merge patch: None removes a.yml
        PackageRepository,
        "repo",
        {"spec": {"fetch": {"inline": {"paths": changed}}}},
        namespace=namespace,
        patch_type=PatchType.MERGE,
    )
    eventually(
        lambda: package_names(kube, namespace) == ["pkg.test.carvel.dev.1.1.0", "pkg.test.carvel.dev.2.0.0.build.1"],
        timeout=60,
        what="1.0.0 pruned, 2.0.0+build.1 added under kapply's name",
    )
    built = get(kube, Package, namespace, "pkg.test.carvel.dev.2.0.0.build.1") or {}
    assert built["spec"]["version"] == "2.0.0+build.1"
    eventually(lambda: succeeded(kube, namespace, "repo"), timeout=30, what="the new generation reconciled")
    assert status(kube, PackageRepository, namespace, "repo")["consecutiveReconcileSuccesses"] == 2


def test_content_without_a_packages_directory_fails_with_kapp_controllers_status(
    running: Running, kube: Client, namespace: str
) -> None:
    create(kube, namespace, repository("repo", {"file.yml": "foo: hi"}))
    eventually(lambda: failed(kube, namespace, "repo"), timeout=60, what="the repository failed")
    reported = status(kube, PackageRepository, namespace, "repo")
    message = "Invalid package repository content: must contain 'packages/' directory but did not"
    assert reported["conditions"] == [{"type": "ReconcileFailed", "status": "True", "message": message}]
    assert reported["friendlyDescription"] == f"Reconcile failed: {message}"
    assert reported["usefulErrorMessage"] == message
    assert reported["fetch"]["exitCode"] == 0
    assert reported["template"]["exitCode"] == -1 and reported["template"]["error"] == message
    assert reported["consecutiveReconcileFailures"] >= 1 and reported["consecutiveReconcileSuccesses"] == 0
    assert "deploy" not in reported


def test_a_ytt_error_in_the_repository_points_at_the_useful_error_message(
    running: Running, kube: Client, namespace: str
) -> None:
    """kapp-controller's Test_TemplateError_DisplayedInStatus_UsefulErrorMessageProperty."""
    create(kube, namespace, repository("repo", {"packages/file.yml": "foo: #@ data.values.nothere"}))
    eventually(lambda: failed(kube, namespace, "repo"), timeout=60, what="the repository failed")
    reported = status(kube, PackageRepository, namespace, "repo")
    message = "Templating dir: Error (see .status.usefulErrorMessage for details)"
    assert reported["conditions"][0]["message"] == message
    assert reported["friendlyDescription"] == f"Reconcile failed: {message}"
    assert reported["template"] == {**reported["template"], "exitCode": 1, "error": message}
    assert "undefined: data" in reported["usefulErrorMessage"], reported["usefulErrorMessage"]
    assert "file.yml:1" in reported["usefulErrorMessage"]


def test_a_secret_source_needs_rights_the_controller_does_not_have_by_default(
    running: Running, kube: Client, namespace: str
) -> None:
    kube.create(
        Secret.from_dict(
            {
                "metadata": {"name": "content", "namespace": namespace},
                "stringData": {"a.yml": package_file("pkg.test.carvel.dev", "1.0.0")},
            }
        )
    )
    pkgr = repository("repo", {})
    pkgr["spec"]["fetch"]["inline"] = {"pathsFrom": [{"secretRef": {"name": "content", "directoryPath": "packages"}}]}
    create(kube, namespace, pkgr)
    eventually(lambda: failed(kube, namespace, "repo"), timeout=60, what="the repository failed")
    reported = status(kube, PackageRepository, namespace, "repo")
    assert reported["friendlyDescription"].startswith("Reconcile failed: Fetching resources: "), reported
    assert 'secrets "content" is forbidden' in reported["usefulErrorMessage"], reported


def test_a_paused_repository_is_left_alone(running: Running, kube: Client, namespace: str) -> None:
    create(kube, namespace, repository("repo", {"packages/a.yml": package_file("pkg.test.carvel.dev", "1.0.0")}))
    eventually(lambda: succeeded(kube, namespace, "repo"), timeout=60, what="the repository reconciled")
    files = {"packages/a.yml": None, "packages/b.yml": package_file("pkg.test.carvel.dev", "2.0.0")}
    kube.patch(
        PackageRepository,
        "repo",
        {"spec": {"paused": True, "fetch": {"inline": {"paths": files}}}},
        namespace=namespace,
        patch_type=PatchType.MERGE,
    )
    eventually(
        lambda: status(kube, PackageRepository, namespace, "repo").get("friendlyDescription") == "Paused",
        timeout=30,
        what="Paused",
    )
    pkgr = get(kube, PackageRepository, namespace, "repo") or {}
    assert pkgr["status"]["observedGeneration"] == pkgr["metadata"]["generation"]
    assert pkgr["status"]["conditions"][0]["type"] == "ReconcileSucceeded", "the condition is left as it was"
    assert package_names(kube, namespace) == ["pkg.test.carvel.dev.1.0.0"]
    kube.patch(PackageRepository, "repo", {"spec": {"paused": False}}, namespace=namespace, patch_type=PatchType.MERGE)
    eventually(
        lambda: package_names(kube, namespace) == ["pkg.test.carvel.dev.2.0.0"], timeout=60, what="unpaused, synced"
    )


def overlapping(name: str, annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    extra: dict[str, Any] = {"annotations": annotations} if annotations else {}
    return repository(name, {"packages/a.yml": package_file("contooor.co.uk", "0.22.0", **extra, **spec)})


def owner(kube: Client, namespace: str) -> str:
    package = get(kube, Package, namespace, "contooor.co.uk.0.22.0") or {}
    return str(package["metadata"]["annotations"][names.REPOSITORY_REF_ANNOTATION])


def test_overlapping_repositories_follow_kapp_controllers_rules(running: Running, kube: Client, namespace: str) -> None:
    create(kube, namespace, overlapping("first"))
    eventually(lambda: succeeded(kube, namespace, "first"), timeout=60, what="first reconciled")
    # An identical copy: the second repository succeeds and changes nothing; the first keeps the Package.
    create(kube, namespace, overlapping("second"))
    eventually(lambda: succeeded(kube, namespace, "second"), timeout=60, what="second reconciled")
    assert owner(kube, namespace) == f"{namespace}/first"
    # A different copy of the same revision: kapp-controller's conflict message.
    create(kube, namespace, overlapping("third", releaseNotes="different"))
    eventually(lambda: failed(kube, namespace, "third"), timeout=60, what="third failed")
    reported = status(kube, PackageRepository, namespace, "third")
    assert (
        "Error: Conflicting resources: Package/contooor.co.uk.0.22.0 is already present but not identical "
        "(adding spec.releaseNotes)"
    ) in reported["usefulErrorMessage"], reported
    create(kube, namespace, overlapping("fourth", annotations={"some.co.internal.ann": "value"}))
    eventually(lambda: failed(kube, namespace, "fourth"), timeout=60, what="fourth failed")
    assert (
        "(mismatch in metadata.annotations)"
        in status(kube, PackageRepository, namespace, "fourth")["usefulErrorMessage"]
    )
    # A higher revision takes the Package over; a lower one then leaves it alone.
    create(kube, namespace, overlapping("fifth", {names.REVISION_ANNOTATION: "1.1"}, releaseNotes="newer"))
    eventually(lambda: succeeded(kube, namespace, "fifth"), timeout=60, what="fifth reconciled")
    eventually(lambda: owner(kube, namespace) == f"{namespace}/fifth", timeout=10, what="fifth owns the Package")
    assert (get(kube, Package, namespace, "contooor.co.uk.0.22.0") or {})["spec"]["releaseNotes"] == "newer"
    create(kube, namespace, overlapping("sixth", {names.REVISION_ANNOTATION: "1.0.5"}, releaseNotes="older"))
    eventually(lambda: succeeded(kube, namespace, "sixth"), timeout=60, what="sixth reconciled (left alone)")
    assert owner(kube, namespace) == f"{namespace}/fifth"
    # The owner going takes the Package with it (fifth's finalizer ends after the delete). Another repository that
    # also provides it may create it again at its next sync, as kapp-controller's do: here third, whose conflict is
    # gone with fifth's copy, retries within seconds; so the Package is either gone or no longer fifth's.
    kube.delete(PackageRepository, "fifth", namespace=namespace)
    eventually(lambda: get(kube, PackageRepository, namespace, "fifth") is None, timeout=60, what="fifth gone")
    package = get(kube, Package, namespace, "contooor.co.uk.0.22.0")
    if package is not None:
        assert package["spec"].get("releaseNotes") != "newer", package
        others = {f"{namespace}/{name}" for name in ("second", "third", "fourth", "sixth")}
        assert package["metadata"]["annotations"][names.REPOSITORY_REF_ANNOTATION] in others, package


def git(directory: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=directory, check=True, capture_output=True)


def test_a_git_repository_on_the_controllers_disk(
    running: Running, kube: Client, namespace: str, tmp_path: Path
) -> None:
    source = tmp_path / "repo"
    (source / "packages").mkdir(parents=True)
    (source / "packages" / "a.yml").write_text(package_file("pkg.test.carvel.dev", "1.0.0"))
    git(source, "init", "-q", "-b", "main")
    git(source, "add", ".")
    git(source, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "one")
    pkgr = {
        "apiVersion": names.API_VERSION,
        "kind": "PackageRepository",
        "metadata": {"name": "from-git"},
        "spec": {"fetch": {"git": {"url": f"file://{source}", "ref": "origin/main"}}},
    }
    create(kube, namespace, pkgr)
    eventually(lambda: succeeded(kube, namespace, "from-git"), timeout=60, what="the git repository reconciled")
    assert package_names(kube, namespace) == ["pkg.test.carvel.dev.1.0.0"]
    assert "sha:" in status(kube, PackageRepository, namespace, "from-git")["fetch"]["stdout"]

    kube.patch(
        PackageRepository,
        "from-git",
        {"spec": {"fetch": {"git": {"url": f"file://{source}", "ref": "origin/nothere"}}}},
        namespace=namespace,
        patch_type=PatchType.MERGE,
    )
    eventually(lambda: failed(kube, namespace, "from-git"), timeout=60, what="a ref that does not exist fails")
    reported = status(kube, PackageRepository, namespace, "from-git")
    assert reported["fetch"]["exitCode"] == 1
    assert "git found no commit for ref 'nothere'" in reported["usefulErrorMessage"], reported
