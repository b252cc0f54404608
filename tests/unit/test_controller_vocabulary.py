"""The controller's two vocabularies (kapply's API groups and kapp-controller's, `--api-groups`), and the install
manifests under kapp-controller's names (`kapply controller manifests --api-groups carvel`). The controller in carvel
mode on a cluster is tests/e2e/test_carvel_mode.py's."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kapply.cli.controller_manifests import stream
from kapply.cli.main import run
from kapply.controller.vocabulary import CARVEL, KAPPLY, VOCABULARIES, ApiGroups
from kapply.packaging import names


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def test_carvel_is_kapp_controllers_names() -> None:
    assert [r.crd_name for r in (CARVEL.app, CARVEL.repository, CARVEL.install, CARVEL.package)] == [
        "apps.kappctrl.k14s.io",
        "packagerepositories.packaging.carvel.dev",
        "packageinstalls.packaging.carvel.dev",
        "packages.data.packaging.carvel.dev",
    ]
    assert CARVEL.package_metadata.api_version == "data.packaging.carvel.dev/v1alpha1"
    assert CARVEL.app_finalizer == "finalizers.kapp-ctrl.k14s.io/delete"
    assert CARVEL.repository_finalizer == "finalizers.packagerepository.packaging.carvel.dev/delete"
    assert CARVEL.install_finalizer == "finalizers.packageinstall.packaging.carvel.dev/delete"
    assert CARVEL.global_namespace == "kapp-controller-packaging-global"
    assert CARVEL.install.rtype.path("ns", "i") == "/apis/packaging.carvel.dev/v1alpha1/namespaces/ns/packageinstalls/i"


def test_kapply_is_what_the_cli_and_the_crd_files_speak() -> None:
    assert KAPPLY.groups == ("kapply.dev", "packaging.kapply.dev", "data.packaging.kapply.dev")
    assert (KAPPLY.install.api_version, KAPPLY.package.api_version) == (names.API_VERSION, names.DATA_API_VERSION)
    assert (
        KAPPLY.repository_finalizer,
        KAPPLY.install_finalizer,
    ) == (names.REPOSITORY_FINALIZER, names.INSTALL_FINALIZER)
    assert names.DEFAULT_GLOBAL_NAMESPACE == KAPPLY.global_namespace == "kapply-packaging-global"
    assert not set(KAPPLY.groups) & set(CARVEL.groups), "the two modes' CRDs never collide"


def test_both_share_kinds_plurals_and_short_names() -> None:
    def shape(vocabulary: Any) -> list[tuple[str, str, str]]:
        kinds = (vocabulary.app, vocabulary.repository, vocabulary.install, vocabulary.package)
        return [(r.kind, r.plural, r.short_name) for r in (*kinds, vocabulary.package_metadata)]

    assert shape(KAPPLY) == shape(CARVEL)
    assert VOCABULARIES == {ApiGroups.KAPPLY: KAPPLY, ApiGroups.CARVEL: CARVEL}


def test_carvel_manifests_install_kapp_controllers_crds_rbac_and_the_flag() -> None:
    kapply, carvel = documents(stream()), documents(stream(vocabulary=CARVEL))
    assert [d["kind"] for d in kapply] == [d["kind"] for d in carvel]
    crds = {d["metadata"]["name"]: d for d in carvel if d["kind"] == "CustomResourceDefinition"}
    assert sorted(crds) == sorted(
        r.crd_name for r in (CARVEL.app, CARVEL.repository, CARVEL.install, CARVEL.package, CARVEL.package_metadata)
    )
    assert crds["apps.kappctrl.k14s.io"]["spec"]["names"]["categories"] == ["carvel"]
    assert crds["packageinstalls.packaging.carvel.dev"]["spec"]["names"]["categories"] == ["carvel"]
    assert "categories" not in crds["packages.data.packaging.carvel.dev"]["spec"]["names"]
    repositories = crds["packagerepositories.packaging.carvel.dev"]
    assert repositories["metadata"]["annotations"][names.GLOBAL_NAMESPACE_ANNOTATION] == CARVEL.global_namespace
    # everything else of the CRDs (versions, schemas, printer columns) is kapply's, unchanged
    kapply_crds = [d for d in kapply if d["kind"] == "CustomResourceDefinition"]
    carvel_crds = [d for d in carvel if d["kind"] == "CustomResourceDefinition"]
    assert [d["spec"]["versions"] for d in kapply_crds] == [d["spec"]["versions"] for d in carvel_crds]
    groups = {g for d in carvel for rule in d.get("rules") or [] for g in rule["apiGroups"]}
    assert set(CARVEL.groups) <= groups and not set(KAPPLY.groups) & groups


def test_the_flag_is_in_the_deployments_args(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["controller", "manifests", "--api-groups", "carvel"]) == 0
    printed = documents(capsys.readouterr().out)
    (deployment,) = [d for d in printed if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["args"][-1] == "--api-groups=carvel"
    assert run(["controller", "manifests", "--api-groups", "carvel", "--crds-only"]) == 0
    assert {d["spec"]["group"] for d in documents(capsys.readouterr().out)} == set(CARVEL.groups)
    assert run(["controller", "manifests", "--api-groups", "kapp"]) != 0
    assert "--api-groups 'kapp': expected kapply, carvel" in capsys.readouterr().err


def test_the_controller_refuses_an_unknown_mode_before_it_connects(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["controller", "--api-groups", "kappctrl", "--kubeconfig", "/nonexistent"]) != 0
    assert "--api-groups 'kappctrl': expected kapply, carvel" in capsys.readouterr().err
