"""What reconciles a PackageInstall besides its own changes: Packages it could select, and its App."""

from __future__ import annotations

from typing import Any

from kapply.controller.vocabulary import CARVEL, KAPPLY
from kapply.packaging import names
from kapply.packaging.triggers import APP_DEBOUNCE, InstallIndex, app_trigger, owning_install, package_trigger

REF = "pkg.test.carvel.dev"
GLOBAL = "global"


def install(name: str, namespace: str = "ns", ref: str = REF, **selection: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"packageRef": {"refName": ref, "versionSelection": selection or {"constraints": ">=1.0.0"}}},
    }


def package(version: str, namespace: str = "ns", ref: str = REF) -> dict[str, Any]:
    return {"metadata": {"name": "x", "namespace": namespace}, "spec": {"refName": ref, "version": version}}


def index(*installs: dict[str, Any]) -> InstallIndex:
    made = InstallIndex()
    for item in installs:
        made.observe("ADDED", item)
    return made


def test_a_package_concerns_the_installs_of_its_package_in_its_namespace_that_admit_it() -> None:
    made = index(
        install("range"),
        install("pinned", constraints="1.0.0"),
        install("other-package", ref="other.test.carvel.dev"),
        install("elsewhere", namespace="other"),
        install("prereleases", constraints=">=1.0.0", prereleases={}),
    )
    assert made.admitting(package("2.0.0"), GLOBAL) == [("ns", "prereleases"), ("ns", "range")]
    assert made.admitting(package("2.0.0-rc.1"), GLOBAL) == [("ns", "prereleases")]
    assert made.admitting(package("1.0.0"), GLOBAL) == [("ns", "pinned"), ("ns", "prereleases"), ("ns", "range")]


def test_a_global_package_concerns_every_namespace() -> None:
    made = index(install("a"), install("b", namespace="other"))
    assert made.admitting(package("2.0.0", namespace=GLOBAL), GLOBAL) == [("ns", "a"), ("other", "b")]
    requests = package_trigger(made, GLOBAL)("ADDED", package("2.0.0", namespace=GLOBAL))
    assert list(requests) == [("PackageInstall", ("ns", "a"), 0.0), ("PackageInstall", ("other", "b"), 0.0)]


def test_installs_without_a_selection_and_deleted_ones_are_not_concerned() -> None:
    made = index(install("a"), {"metadata": {"name": "b", "namespace": "ns"}, "spec": {}})
    bad = {"metadata": {"name": "c", "namespace": "ns"}, "spec": {"packageRef": "not a map"}}
    made.observe("ADDED", bad)
    assert made.admitting(package("2.0.0"), GLOBAL) == [("ns", "a")]
    made.observe("MODIFIED", install("a", ref="other.test.carvel.dev"))
    assert made.admitting(package("2.0.0"), GLOBAL) == []
    made.observe("MODIFIED", install("a"))
    made.observe("DELETED", install("a"))
    assert made.admitting(package("2.0.0"), GLOBAL) == []
    made.observe("ADDED", install("a"))
    made.forget(("ns", "a"))
    assert made.wanted == {}
    assert made.admitting({"metadata": {"namespace": "ns"}, "spec": {"refName": REF, "version": 1}}, GLOBAL) == []


def app(*owners: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "inst", "namespace": "ns", "ownerReferences": list(owners)}}


INSTALL_OWNER = {"apiVersion": names.API_VERSION, "kind": "PackageInstall", "name": "inst", "controller": True}


def test_an_apps_events_concern_the_install_that_controls_it() -> None:
    trigger = app_trigger(KAPPLY)
    assert owning_install(app(INSTALL_OWNER), KAPPLY) == ("ns", "inst")
    assert list(trigger("MODIFIED", app(INSTALL_OWNER))) == [("PackageInstall", ("ns", "inst"), APP_DEBOUNCE)]
    assert list(trigger("DELETED", app(INSTALL_OWNER))) == [("PackageInstall", ("ns", "inst"), APP_DEBOUNCE)]
    assert owning_install(app({**INSTALL_OWNER, "controller": False}), KAPPLY) is None
    assert owning_install(app({**INSTALL_OWNER, "apiVersion": "packaging.carvel.dev/v1alpha1"}), KAPPLY) is None, (
        "kapp-controller's installs are kapp-controller's"
    )
    assert list(trigger("MODIFIED", app())) == []


def test_in_carvel_mode_kapp_controllers_installs_are_the_controllers() -> None:
    carvel_owner = {**INSTALL_OWNER, "apiVersion": "packaging.carvel.dev/v1alpha1"}
    assert owning_install(app(carvel_owner), CARVEL) == ("ns", "inst")
    assert list(app_trigger(CARVEL)("MODIFIED", app(carvel_owner))) == [
        ("PackageInstall", ("ns", "inst"), APP_DEBOUNCE)
    ]
    assert owning_install(app(INSTALL_OWNER), CARVEL) is None
