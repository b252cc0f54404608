"""`kapply app` has kctrl 0.53's app commands (`kctrl app --help`): each under its aliases, with exactly kctrl's flags,
shorthands, types and defaults, plus kapply's `--api-groups`; `version` takes kctrl's `--controller`. And what the
commands show of an App, as kctrl shows it: `list`'s and `get`'s tables, the owner notes, the failing stage."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kapply.cli.app_kctrl import app_table, apps_table, failing_stage, owned_by_install, owner
from kapply.cli.app_status import kapply_reports
from kapply.cli.app_version import carvel_controller, image_version, kapply_controller
from kapply.cli.tree import tree
from kapply.controller.vocabulary import CARVEL, KAPPLY
from kapply.flags import Kind
from kapply.objects import Obj

BOOL, STR, DUR = Kind.BOOL, Kind.STRING, Kind.DURATION
NAMESPACE = {"namespace": ("n", STR, "")}
APP = {"app": ("a", STR, "")}
WAIT = {"wait": ("", BOOL, True), "wait-check-interval": ("", DUR, 1.0), "wait-timeout": ("", DUR, 300.0)}
OURS = {"api-groups": ("", STR, "")}


def tty(default: bool) -> dict[str, tuple[str, Kind, Any]]:
    return {"tty": ("", BOOL, default)}


COMMANDS = {
    "list": (("l", "ls"), {**NAMESPACE, "all-namespaces": ("A", BOOL, False), **tty(False)}),
    "get": (("g",), {**NAMESPACE, **APP, **tty(False)}),
    "status": (("s",), {**NAMESPACE, **APP, "ignore-not-exists": ("", BOOL, False), **tty(True)}),
    "pause": (("p",), {**NAMESPACE, **APP, **tty(True)}),
    "kick": ((), {**NAMESPACE, **APP, **WAIT, **tty(True)}),
    "delete": ((), {**NAMESPACE, **APP, "noop": ("", BOOL, False), **WAIT, **tty(True)}),
}


@pytest.mark.parametrize("name", COMMANDS)
def test_each_app_command_has_kctrls_aliases_and_flags(name: str) -> None:
    group = tree().child("a")
    assert group is not None and group.name == "app"
    command = group.child(name)
    assert command is not None and command.handler
    aliases, flags = COMMANDS[name]
    assert command.aliases == aliases
    for alias in aliases:
        assert group.child(alias) is command
    found = {f.name: (f.short, f.kind, f.default) for f in command.flags}
    assert found == {**flags, **OURS}


def test_version_takes_kctrls_controller_flag() -> None:
    version = tree().child("version")
    assert version is not None
    assert {f.name: (f.kind, f.default) for f in version.flags} == {"controller": (BOOL, False), "tty": (BOOL, False)}


NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)


def app(name: str, namespace: str = "ns", **status: Any) -> Obj:
    return {
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"serviceAccountName": "deployer"},
        "status": status,
    }


def owned(obj: Obj, api_version: str) -> Obj:
    obj["metadata"]["ownerReferences"] = [{"apiVersion": api_version, "kind": "PackageInstall", "name": "pi"}]
    return obj


def test_list_rows_are_kctrls_by_namespace_and_name() -> None:
    succeeded = app("b", conditions=[{"type": "ReconcileSucceeded", "status": "True"}])
    succeeded["status"]["deploy"] = {"updatedAt": "2026-01-01T00:09:30Z"}
    paused = app("a", conditions=[{"type": "ReconcileSucceeded", "status": "True"}])
    paused["spec"]["paused"] = True
    new = owned(app("c", "other"), KAPPLY.install.api_version)
    table = apps_table([succeeded, new, paused], "Available apps in all namespaces", show_namespace=True, now=NOW)
    assert table.keys == ("namespace", "name", "status", "since_deploy", "owner", "age")
    assert table.rows == (
        ("ns", "a", "Paused", "", "", "10m"),
        ("ns", "b", "Reconcile succeeded", "30s", "", "10m"),
        ("other", "c", "", "", "PackageInstall/pi", "10m"),
    )
    assert apps_table([], "t", show_namespace=False).columns[0].hidden


def test_get_shows_the_failing_stage_and_error_only_when_there_is_an_error() -> None:
    fine = owned(app("x", conditions=[{"type": "ReconcileSucceeded", "status": "True"}]), CARVEL.install.api_version)
    shown = app_table(fine)
    assert [c.title for c in shown.columns if not c.hidden] == [
        "Namespace",
        "Name",
        "Service Account",
        "Status",
        "Owner References",
        "Conditions",
    ]
    row = dict(zip(shown.keys, shown.rows[0], strict=True))
    assert row["owner_references"] == "- packaging.carvel.dev/v1alpha1/PackageInstall/pi"
    assert row["conditions"] == '- type: ReconcileSucceeded\n  status: "True"\n  reason: ""\n  message: ""'
    failing = app("y", usefulErrorMessage="boom", fetch={"exitCode": 0}, template={"exitCode": 1})
    shown = app_table(failing)
    assert not any(c.hidden for c in shown.columns)
    assert shown.rows[0][-2:] == ("template", "boom")


def test_failing_stage_is_the_first_with_an_exit_code() -> None:
    assert failing_stage({}) == ""
    assert failing_stage({"fetch": {"exitCode": 0}, "deploy": {"exitCode": 1}}) == "deploy"


def test_an_install_owns_an_app_in_the_vocabularys_packaging_group() -> None:
    ours = owned(app("x"), KAPPLY.install.api_version)
    assert owned_by_install(ours, KAPPLY) and not owned_by_install(ours, CARVEL)
    assert owner(ours) == "PackageInstall/pi" and owner(app("y")) == ""


def test_kapply_reports_follow_only_when_there_is_something_to_report() -> None:
    assert not kapply_reports({"drift": {"policy": "enforce", "fields": []}, "ghostDiffs": {"diffs": []}})
    assert kapply_reports({"ghostDiffs": {"diffs": [{"path": "spec.replicas"}]}})
    assert kapply_reports({"fieldOwners": {"held": [{"path": "data.a"}]}})


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("ghcr.io/kapply/kapply:0.1.0", "0.1.0"),
        ("localhost:5000/kapply:1.2.3", "1.2.3"),
        ("localhost:5000/kapply", "localhost:5000/kapply"),
        ("registry.example/kapply@sha256:abc", "registry.example/kapply@sha256:abc"),
    ],
)
def test_the_controller_version_is_its_images_tag(image: str, version: str) -> None:
    assert image_version(image) == version


def test_the_controllers_are_read_from_their_deployments() -> None:
    containers = [{"name": "sidecar", "image": "x:9"}, {"name": "controller", "image": "ghcr.io/kapply/kapply:0.1.0"}]
    ours = {"spec": {"template": {"spec": {"containers": containers}}}}
    assert kapply_controller(ours).text == "kapply-controller version 0.1.0\n"
    theirs = {"metadata": {"annotations": {"kapp-controller.carvel.dev/version": "v0.53.1"}}}
    assert carvel_controller(theirs).text == "kapp-controller version v0.53.1\n"
