"""The App a PackageInstall runs, as kapp-controller's NewApp makes it (pkg/packageinstall/app.go and its tests)."""

from __future__ import annotations

from typing import Any

import pytest

from kapply.controller.vocabulary import CARVEL, KAPPLY
from kapply.packaging import names
from kapply.packaging.install_app import (
    OwnedByOtherError,
    deleting_app,
    desired_app,
    go_duration,
    manually_controlled,
    owned_by,
)
from kapply.packaging.spec import PackageSpec, parse_package, parse_package_install

UID = "9d4f5d0c-0000-4000-8000-000000000001"


def install(annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": names.API_VERSION,
        "kind": "PackageInstall",
        "metadata": {"name": "inst", "namespace": "ns", "uid": UID, "annotations": annotations or {}},
        "spec": {
            "serviceAccountName": "sa",
            "packageRef": {"refName": "pkg.test.carvel.dev", "versionSelection": {"constraints": "1.0.0"}},
            **spec,
        },
    }


def package(template: dict[str, Any] | None = None) -> PackageSpec:
    body = template or {
        "fetch": [{"inline": {}}],
        "template": [{"ytt": {}}],
        "deploy": [{"kapp": {}}],
        "syncPeriod": "1s",
        "serviceAccountName": "packages-own",
    }
    return parse_package({"spec": {"refName": "pkg.test.carvel.dev", "version": "1.0.0", "template": {"spec": body}}})


def app_of(pkgi: dict[str, Any], pkg: PackageSpec | None = None, existing: dict[str, Any] | None = None) -> Any:
    return desired_app(existing, pkgi, parse_package_install(pkgi), pkg or package(), 600.0, KAPPLY)


def test_in_carvel_mode_the_app_and_its_owner_are_kapp_controllers() -> None:
    pkgi = {**install(), "apiVersion": "packaging.carvel.dev/v1alpha1"}
    app = desired_app(None, pkgi, parse_package_install(pkgi), package(), 600.0, CARVEL)
    assert (app["apiVersion"], app["kind"]) == ("kappctrl.k14s.io/v1alpha1", "App")
    (owner,) = app["metadata"]["ownerReferences"]
    assert (owner["apiVersion"], owner["kind"], owner["uid"]) == (
        "packaging.carvel.dev/v1alpha1",
        "PackageInstall",
        UID,
    )


def test_the_app_is_named_annotated_and_controlled_as_kapp_controller_makes_it() -> None:
    app = app_of(install())
    assert app["apiVersion"] == "kapply.dev/v1alpha1" and app["kind"] == "App"
    assert app["metadata"] == {
        "name": "inst",
        "namespace": "ns",
        "annotations": {
            "packaging.carvel.dev/package-ref-name": "pkg.test.carvel.dev",
            "packaging.carvel.dev/package-version": "1.0.0",
        },
        "ownerReferences": [
            {
                "apiVersion": "packaging.kapply.dev/v1alpha1",
                "kind": "PackageInstall",
                "name": "inst",
                "uid": UID,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    assert owned_by(app, install())


def test_the_spec_is_the_packages_with_the_installs_overrides() -> None:
    spec = app_of(install())["spec"]
    assert spec == {
        "fetch": [{"inline": {}}],
        "template": [{"ytt": {}}],
        "deploy": [{"kapp": {}}],
        "syncPeriod": "10m0s",
        "serviceAccountName": "sa",
    }, "the Package's sync period and service account are replaced (kapp-controller#710)"
    spec = app_of(
        install(
            syncPeriod="30s", noopDelete=True, paused=True, canceled=True, defaultNamespace="d", serviceAccountName=""
        )
    )["spec"]
    assert spec["syncPeriod"] == "30s" and spec["noopDelete"] and spec["paused"] and spec["canceled"]
    assert spec["defaultNamespace"] == "d"
    assert "serviceAccountName" not in spec, "an empty one is left out, and the App says what is missing"


def test_the_installs_drift_policy_reaches_the_app_over_the_packages() -> None:
    """The package consumer's choice; without one the Package's own stays, and without that the App sets none (the
    controller's --default-drift-policy decides)."""
    assert "driftPolicy" not in app_of(install())["spec"]
    assert app_of(install(driftPolicy="preserve"))["spec"]["driftPolicy"] == "preserve"
    own = package({"deploy": [{"kapp": {}}], "driftPolicy": "warn"})
    assert app_of(install(), own)["spec"]["driftPolicy"] == "warn"
    assert app_of(install(driftPolicy="enforce"), own)["spec"]["driftPolicy"] == "enforce"


def test_a_cluster_is_copied_for_the_app_controller_to_refuse() -> None:
    cluster = {"namespace": "x", "kubeconfigSecretRef": {"name": "k"}}
    assert app_of(install(cluster=cluster))["spec"]["cluster"] == cluster


@pytest.mark.parametrize(
    ("seconds", "text"), [(600.0, "10m0s"), (30.0, "30s"), (3600.0, "1h0m0s"), (90.5, "1m30.5s"), (0.0, "0s")]
)
def test_durations_are_written_as_go_writes_them(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


def test_values_go_to_the_first_ytt_step_as_data_values_after_the_packages_own() -> None:
    template = {
        "fetch": [{"inline": {}}],
        "template": [{"ytt": {"valuesFrom": [{"configMapRef": {"name": "own"}}]}}, {"ytt": {}}],
        "deploy": [{"kapp": {}}],
    }
    pkgi = install(values=[{"secretRef": {"name": "v1"}}, {"secretRef": {"name": "v2", "key": "ignored"}}])
    steps = app_of(pkgi, package(template))["spec"]["template"]
    assert steps == [
        {
            "ytt": {
                "valuesFrom": [
                    {"configMapRef": {"name": "own"}},
                    {"secretRef": {"name": "v1"}},
                    {"secretRef": {"name": "v2"}},
                ]
            }
        },
        {"ytt": {}},
    ]


def test_ytt_paths_and_data_values_overlays_are_ytt_files_of_the_first_ytt_step() -> None:
    annotations = {
        "ext.packaging.carvel.dev/ytt-paths-from-secret-name.2": "second",
        "ext.packaging.carvel.dev/ytt-paths-from-secret-name.10": "tenth",
        "ext.packaging.carvel.dev/ytt-paths-from-secret-name": "bare",
        "ext.packaging.carvel.dev/ytt-data-values-overlays": "",
    }
    pkgi = install(annotations, values=[{"secretRef": {"name": "v"}}])
    ytt = app_of(pkgi)["spec"]["template"][0]["ytt"]
    assert ytt == {
        "inline": {
            "pathsFrom": [
                {"secretRef": {"name": "bare"}},
                {"secretRef": {"name": "tenth"}},
                {"secretRef": {"name": "second"}},
                {"secretRef": {"name": "v"}},
            ]
        }
    }, "suffixes sorted as strings, then the values"


def test_kapplys_prefix_wins_for_the_same_suffix() -> None:
    annotations = {
        "ext.packaging.carvel.dev/ytt-paths-from-secret-name.x": "carvel",
        "ext.packaging.kapply.dev/ytt-paths-from-secret-name.x": "kapply",
    }
    ytt = app_of(install(annotations))["spec"]["template"][0]["ytt"]
    assert ytt["inline"]["pathsFrom"] == [{"secretRef": {"name": "kapply"}}]


def test_a_helm_step_first_takes_the_values_and_the_helm_extensions() -> None:
    template = {
        "fetch": [
            {"helmChart": {"name": "c", "repository": {"url": "https://x"}}},
            {"inline": {}},
            {"git": {"url": "u"}},
        ],
        "template": [{"helmTemplate": {}}, {"ytt": {}}],
        "deploy": [{"kapp": {}}],
    }
    annotations = {
        "ext.packaging.carvel.dev/helm-template-name": "rel",
        "ext.packaging.carvel.dev/helm-template-namespace": "relns",
        "ext.packaging.carvel.dev/helm-template-values-from-secret-name": "hv",
        "ext.packaging.carvel.dev/fetch-0-secret-name": "repo-secret",
        "ext.packaging.carvel.dev/fetch-1-secret-name": "ignored-for-inline",
        "ext.packaging.carvel.dev/fetch-2-secret-name": "git-secret",
        "ext.packaging.carvel.dev/fetch-9-secret-name": "no-such-step",
    }
    spec = app_of(install(annotations, values=[{"secretRef": {"name": "v"}}]), package(template))["spec"]
    assert spec["template"] == [
        {
            "helmTemplate": {
                "name": "rel",
                "namespace": "relns",
                "valuesFrom": [{"secretRef": {"name": "hv"}}, {"secretRef": {"name": "v"}}],
            }
        },
        {"ytt": {}},
    ], "the values went to helm: the ytt step after it gets none"
    assert spec["fetch"] == [
        {"helmChart": {"name": "c", "repository": {"url": "https://x", "secretRef": {"name": "repo-secret"}}}},
        {"inline": {}},
        {"git": {"url": "u", "secretRef": {"name": "git-secret"}}},
    ]


def test_an_existing_app_keeps_its_other_metadata_and_a_manually_controlled_one_is_left_alone() -> None:
    existing = {
        "apiVersion": "kapply.dev/v1alpha1",
        "kind": "App",
        "metadata": {
            "name": "inst",
            "namespace": "ns",
            "labels": {"kept": "yes"},
            "annotations": {"other": "x"},
            "finalizers": ["finalizers.kapply.dev/delete"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u"}],
        },
        "spec": {"paused": True},
        "status": {"friendlyDescription": "Reconcile succeeded"},
    }
    app = app_of(install(), existing=existing)
    assert (
        app["metadata"]["labels"] == {"kept": "yes"}
        and app["metadata"]["finalizers"] == existing["metadata"]["finalizers"]
    )
    assert app["metadata"]["annotations"]["other"] == "x"
    assert [r["kind"] for r in app["metadata"]["ownerReferences"]] == ["ConfigMap", "PackageInstall"]
    assert app["status"] == existing["status"] and existing["spec"] == {"paused": True}, (
        "the existing App is not changed"
    )
    manual = {
        **existing,
        "metadata": {
            **existing["metadata"],
            "annotations": {names.extension_keys(names.Extension.MANUALLY_CONTROLLED)[1]: ""},
        },
    }
    assert manually_controlled(manual)
    assert app_of(install(), existing=manual) is manual


def test_an_app_controlled_by_another_object_is_refused_with_controller_runtimes_message() -> None:
    existing = {
        "metadata": {
            "name": "inst",
            "namespace": "ns",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u", "controller": True}
            ],
        }
    }
    with pytest.raises(OwnedByOtherError, match="^Object ns/inst is already owned by another ConfigMap controller cm$"):
        app_of(install(), existing=existing)


def test_an_app_of_an_earlier_install_of_the_same_name_is_taken_back() -> None:
    earlier = app_of({**install(), "metadata": {**install()["metadata"], "uid": "old"}})
    app = app_of(install(), existing=earlier)
    assert [r["uid"] for r in app["metadata"]["ownerReferences"]] == [UID]
    assert not owned_by(earlier, install())


def test_a_deleting_install_gives_its_app_the_settings_it_is_deleted_with() -> None:
    app = app_of(install())
    pkgi = install(noopDelete=True, paused=True, serviceAccountName="other")
    deleting = deleting_app(app, pkgi, parse_package_install(pkgi))
    assert deleting["spec"]["noopDelete"] is True and deleting["spec"]["paused"] is True
    assert deleting["spec"]["serviceAccountName"] == "other"
    assert "noopDelete" not in app["spec"]
