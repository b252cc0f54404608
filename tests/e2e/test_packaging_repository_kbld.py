"""A PackageRepository fetched as an `imgpkgBundle`, in a real `kapply controller` process with the real kbld and a
real OCI registry: as kapp-controller's last template pass (`kbld -f - -f .imgpkg/images.yml`), its Packages' image
references become the digests of the repository bundle's ImagesLock, in the bundle's own repository when the bundle
was copied there with its images (`imgpkg copy` semantics: the lock is rewritten on fetch, as `imgpkg pull -b`
does). A repository of another source keeps its references even when it carries a lock; a bundle whose lock is a
symlink out of its tree fails cleanly, its target never shown."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client

from kapply.packaging import names
from tests.e2e.controller_harness import tool_env
from tests.e2e.harness import Cluster, eventually
from tests.e2e.package_cli_harness import PLAIN_HTTP
from tests.e2e.packaging_harness import (
    Package,
    PackageRepository,
    Running,
    condition,
    create,
    get,
    packaging_controller,
    status,
)
from tests.e2e.registry import BUNDLE_LABEL, Registry, images_lock
from tests.e2e.test_controller_oci_http import tarball

pytestmark = pytest.mark.e2e

REF = "pkg.test.carvel.dev"
WRITTEN = "example.com/pkg:1.0.0"  # how the Package names its bundle: no registry is ever asked for it


@pytest.fixture
def running(packaging_crds: None, cluster: Cluster, kube: Client, namespace: str, tmp_path: Path) -> Iterator[Running]:
    tool_env("kbld")  # the controller finds kbld as this does ($KAPPLY_KBLD or PATH); skipped when there is none
    with packaging_controller(cluster, kube, namespace, tmp_path, PLAIN_HTTP) as process:
        yield process


def package_file(version: str, image: str) -> bytes:
    doc = {
        "apiVersion": "data.packaging.carvel.dev/v1alpha1",
        "kind": "Package",
        "metadata": {"name": f"{REF}.{version}"},
        "spec": {
            "refName": REF,
            "version": version,
            "template": {
                "spec": {
                    "fetch": [{"imgpkgBundle": {"image": image}}],
                    "template": [{"ytt": {}}, {"kbld": {"paths": ["-", ".imgpkg/images.yml"]}}],
                    "deploy": [{"kapp": {}}],
                }
            },
        },
    }
    return b"---\n" + yaml.safe_dump(doc).encode()


def pkgr(name: str, fetch: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": names.API_VERSION,
        "kind": "PackageRepository",
        "metadata": {"name": name},
        "spec": {"fetch": fetch},
    }


def fetched_image(kube: Client, namespace: str, version: str) -> str:
    package = get(kube, Package, namespace, names.package_name(REF, version)) or {}
    return str(package["spec"]["template"]["spec"]["fetch"][0]["imgpkgBundle"]["image"])


def settled(kube: Client, namespace: str, name: str) -> str:
    found = condition(kube, PackageRepository, namespace, name)
    return found if found in ("ReconcileSucceeded", "ReconcileFailed") else ""


def test_an_imgpkg_bundle_repositorys_packages_name_the_locked_and_relocated_digests(
    running: Running, kube: Client, namespace: str, oci_registry: Registry, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    base = f"{oci_registry.host}/kapply/e2e/{uuid.uuid4().hex[:8]}"
    # The package's bundle, where its author pushed it; the repository's lock names it by digest under the id the
    # Package writes (`kbld --imgpkg-lock-output`).
    app_digest = oci_registry.push_bundle(f"{base}/original/pkg:1.0.0", {"config/cm.yml": b"a: 1\n"}, [], work)
    locked = [{"image": f"{base}/original/pkg@{app_digest}", "annotations": {"kbld.carvel.dev/id": WRITTEN}}]
    # A pinned reference the lock does not name is kept as written (kbld asks no registry for a digest).
    pinned = f"{base}/original/pkg@{app_digest}"
    files = {
        f"packages/{REF}/1.0.0.yml": package_file("1.0.0", WRITTEN),
        f"packages/{REF}/2.0.0.yml": package_file("2.0.0", pinned),
    }
    oci_registry.push_bundle(f"{base}/repo:v1", files, locked, work)
    # The same repository bundle copied with its images to another repository (`imgpkg copy -b ... --to-repo`): every
    # image of its lock lands beside it, so the fetched lock names them there.
    oci_registry.crane("copy", f"{base}/repo:v1", f"{base}/relocated:v1")
    oci_registry.crane("copy", pinned, f"{base}/relocated:sha256-{app_digest.removeprefix('sha256:')}.imgpkg")
    # An inline repository with the same lock: not a bundle, so no kbld pass (kapp-controller's rule).
    inline = {name: content.decode() for name, content in files.items()} | {
        ".imgpkg/images.yml": images_lock(locked).decode()
    }

    create(kube, namespace, pkgr("bundle", {"imgpkgBundle": {"image": f"{base}/repo:v1"}}))
    eventually(lambda: settled(kube, namespace, "bundle"), timeout=90, what="the bundle repository reconciled")
    reported = status(kube, PackageRepository, namespace, "bundle")
    assert settled(kube, namespace, "bundle") == "ReconcileSucceeded", reported
    assert reported["template"]["exitCode"] == 0 and "usefulErrorMessage" not in reported
    assert fetched_image(kube, namespace, "1.0.0") == f"{base}/original/pkg@{app_digest}"
    assert fetched_image(kube, namespace, "2.0.0") == pinned
    package = get(kube, Package, namespace, names.package_name(REF, "1.0.0")) or {}
    assert f"{base}/original/pkg@{app_digest}" in package["metadata"]["annotations"]["kbld.k14s.io/images"]
    kube.delete(PackageRepository, "bundle", namespace=namespace)
    eventually(lambda: get(kube, PackageRepository, namespace, "bundle") is None, timeout=60, what="bundle gone")

    create(kube, namespace, pkgr("relocated", {"imgpkgBundle": {"image": f"{base}/relocated:v1"}}))
    eventually(lambda: settled(kube, namespace, "relocated"), timeout=90, what="the relocated repository reconciled")
    assert settled(kube, namespace, "relocated") == "ReconcileSucceeded"
    assert fetched_image(kube, namespace, "1.0.0") == f"{base}/relocated@{app_digest}"
    assert fetched_image(kube, namespace, "2.0.0") == pinned, "a reference the lock does not name is kept"
    kube.delete(PackageRepository, "relocated", namespace=namespace)
    eventually(lambda: get(kube, PackageRepository, namespace, "relocated") is None, timeout=60, what="gone")

    create(kube, namespace, pkgr("inline", {"inline": {"paths": inline}}))
    eventually(lambda: settled(kube, namespace, "inline"), timeout=90, what="the inline repository reconciled")
    assert settled(kube, namespace, "inline") == "ReconcileSucceeded"
    assert fetched_image(kube, namespace, "1.0.0") == WRITTEN
    package = get(kube, Package, namespace, names.package_name(REF, "1.0.0")) or {}
    assert "kbld.k14s.io/images" not in package["metadata"]["annotations"]


def test_a_bundle_whose_lock_leads_out_of_its_tree_fails_and_the_canary_stays_unread(
    running: Running, kube: Client, namespace: str, oci_registry: Registry, tmp_path: Path
) -> None:
    token = f"sha256:{uuid.uuid4().hex * 2}"
    canary = tmp_path / "canary.yml"
    canary.write_bytes(
        images_lock([{"image": f"stolen.example/pkg@{token}", "annotations": {"kbld.carvel.dev/id": WRITTEN}}])
    )
    base = f"{oci_registry.host}/kapply/e2e/{uuid.uuid4().hex[:8]}"
    members: dict[str, bytes | str] = {
        f"packages/{REF}/1.0.0.yml": package_file("1.0.0", WRITTEN),
        ".imgpkg/images.yml": str(canary),
    }
    layer = tmp_path / "linked.tar.gz"
    layer.write_bytes(tarball(members))
    oci_registry.push_layers(f"{base}/linked:v1", layer)
    oci_registry.crane("mutate", f"{base}/linked:v1", "--label", f"{BUNDLE_LABEL}=true", "-t", f"{base}/linked:v1")

    create(kube, namespace, pkgr("linked", {"imgpkgBundle": {"image": f"{base}/linked:v1"}}))
    eventually(lambda: settled(kube, namespace, "linked"), timeout=90, what="the repository reconciled")
    reported = status(kube, PackageRepository, namespace, "linked")
    assert settled(kube, namespace, "linked") == "ReconcileFailed"
    assert "'.imgpkg/images.yml' is a symlink" in reported["usefulErrorMessage"]
    assert token not in yaml.safe_dump(reported) and token not in running.log.read_text()
    assert get(kube, Package, namespace, names.package_name(REF, "1.0.0")) is None
