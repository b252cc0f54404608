"""Which Package a PackageInstall installs: the namespace's and the global namespace's Packages merged, then
kapp-controller's PackageFinder (version constraints, Kubernetes and kapp-controller version checks, messages)."""

from __future__ import annotations

from typing import Any

import pytest

from kapply.packaging import names
from kapply.packaging.selection import choose, excluded, identity, needs_kubernetes_version, release, visible
from kapply.packaging.spec import InstallExtensions
from kapply.versions import (
    Prereleases,
    SelectionError,
    VersionSelection,
    parse_version,
    with_single_prerelease_rule,
)

REF = "pkg.test.carvel.dev"
K8S = parse_version("1.34.4")


def package(version: str, ref: str = REF, namespace: str = "ns", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": names.package_name(ref, version), "namespace": namespace},
        "spec": {"refName": ref, "version": version, "template": {"spec": {}}, **spec},
    }


def chosen(packages: list[dict[str, Any]], constraints: str = "", **options: Any) -> str:
    extensions = options.pop("extensions", InstallExtensions())
    # as spec.package_selection gives it: with the single-prerelease rule
    selection = with_single_prerelease_rule(VersionSelection(constraints, options.pop("prereleases", None)))
    return str(choose(packages, REF, selection, extensions, options.pop("kubernetes", K8S))["spec"]["version"])


def test_the_namespaces_own_package_wins_over_the_global_one_of_the_same_identity() -> None:
    own = package("1.0.0", namespace="ns")
    shared = [package("1.0.0", namespace="global"), package("2.0.0", namespace="global")]
    merged = visible([own], shared)
    assert sorted(identity(p) for p in merged) == [f"{REF}.1.0.0", f"{REF}.2.0.0"]
    assert next(p for p in merged if identity(p) == f"{REF}.1.0.0") is own
    # Identity is kapp-controller's `<refName>.<version>` as written: case and `+` count.
    assert len(visible([package("1.0.0+b")], [package("1.0.0+B", namespace="global")])) == 2


def test_a_namespace_opts_out_with_either_annotation() -> None:
    for key in names.EXCLUDE_GLOBAL_PACKAGES_ANNOTATIONS:
        assert excluded({"metadata": {"annotations": {key: ""}}})
    assert not excluded({"metadata": {"annotations": {"other": ""}}})
    assert not excluded(None)


def test_no_package_at_all_is_kapp_controllers_not_found() -> None:
    with pytest.raises(SelectionError, match=f"^Package {REF} not found$"):
        chosen([])


def test_packages_of_other_names_only_give_the_counting_message() -> None:
    with pytest.raises(SelectionError) as e:
        chosen([package("1.0.0", ref="other.test.carvel.dev")], ">=0.0.0")
    assert str(e.value) == (
        "Expected to find at least one version, but did not (details: all=0 -> after-prereleases-filter=0 -> "
        "after-kapp-controller-version-check=0 -> after-constraints-filter=0)"
    )


def test_the_highest_admitted_version_with_build_metadata_counting() -> None:
    packages = [package("1.0.0"), package("1.0.0+build.2"), package("1.0.0+build.10"), package("2.0.0-rc.1")]
    assert chosen(packages) == "1.0.0+build.10"
    assert chosen(packages, "2.0.0-rc.1") == "2.0.0-rc.1", "a single prerelease version admits prereleases"
    assert chosen(packages, ">=1.0.0", prereleases=Prereleases(("rc",))) == "2.0.0-rc.1"
    with pytest.raises(SelectionError, match="after-constraints-filter=0"):
        chosen(packages, "0.0.0")


def test_the_kubernetes_check_appears_when_a_candidate_has_a_constraint() -> None:
    packages = [
        package("1.0.0", kubernetesVersionSelection={"constraints": ">=1.25.0"}),
        package("2.0.0", kubernetesVersionSelection={"constraints": ">1.40.0"}),
    ]
    assert needs_kubernetes_version(packages, REF)
    assert not needs_kubernetes_version([package("1.0.0")], REF)
    assert chosen(packages) == "1.0.0"
    ignoring = InstallExtensions(ignore_kubernetes_version_selection=True)
    assert chosen(packages, extensions=ignoring) == "2.0.0"
    with pytest.raises(SelectionError) as e:
        chosen(packages, ">=3.0.0")
    assert "-> after-kubernetes-version-check=1 -> after-kapp-controller-version-check=1 ->" in str(e.value)
    assert chosen(packages, kubernetes=parse_version("1.41.0-rc.1+k3s1")) == "2.0.0", "the cluster's release counts"


def test_the_kapp_controller_check_uses_the_release_kapply_follows() -> None:
    packages = [
        package("1.0.0", kappControllerVersionSelection={"constraints": ">=0.40.0"}),
        package("2.0.0", kappControllerVersionSelection={"constraints": ">=0.60.0"}),
    ]
    assert chosen(packages) == "1.0.0"
    assert chosen(packages, extensions=InstallExtensions(ignore_kapp_controller_version_selection=True)) == "2.0.0"


def test_a_constraint_that_is_not_a_range_is_reported_when_checked() -> None:
    packages = [package("1.0.0", kubernetesVersionSelection={"constraints": ">v1"})]
    with pytest.raises(SelectionError) as e:
        chosen(packages)
    assert str(e.value).startswith(
        "Expected spec.kubernetesVersionSelection.constraints of Package version '1.0.0' to be a version range: "
        'Could not parse Range ">v1"'
    )


def test_release_drops_prerelease_and_build_metadata() -> None:
    assert release(parse_version("1.2.3-rc.1+b")) == parse_version("1.2.3")
