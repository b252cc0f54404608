"""`kapply app pause|kick|delete` against a stand-in cluster: kctrl's lines (the question begun and not ended, so
that with `-y` the next line is glued to it; the note before changing an App a PackageInstall made), its patches
(pause: `spec.paused`; kick: paused then unpaused; delete --noop: `spec.noopDelete` before the delete), and its
errors (a missing App, an App already paused)."""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any

import pytest

from kapply.cli import app_kctrl
from kapply.cli.app_kctrl import Connected
from kapply.cli.command import resolve
from kapply.cli.tree import PROGRAM, global_flags, tree
from kapply.controller.vocabulary import KAPPLY
from kapply.errors import KapplyError
from kapply.objects import Obj
from kapply.resources.cluster import ResourceType
from kapply.ui.output import Output


class Cluster:
    def __init__(self, app: Obj | None) -> None:
        self.app = app
        self.requests: list[tuple[str, Any]] = []

    async def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj | None:
        return self.app

    async def list_with_version(self, rtype: ResourceType, **kwargs: Any) -> tuple[list[Obj], str]:
        return ([self.app] if self.app else []), "1"

    async def patch(self, rtype: ResourceType, namespace: str, name: str, patch: Any) -> Obj:
        self.requests.append(("patch", patch))
        return {}

    async def delete(self, rtype: ResourceType, namespace: str, name: str) -> None:
        self.requests.append(("delete", name))
        self.app = None


def app(**spec: Any) -> Obj:
    return {"metadata": {"name": "x", "namespace": "ns", "generation": 1, "resourceVersion": "1"}, "spec": spec}


def owned(obj: Obj) -> Obj:
    reference = {"apiVersion": KAPPLY.install.api_version, "kind": "PackageInstall", "name": "pi"}
    obj["metadata"]["ownerReferences"] = [reference]
    return obj


def run(monkeypatch: pytest.MonkeyPatch, cluster: Cluster, *argv: str) -> str:
    @asynccontextmanager
    async def connected(args: Any, out: Output) -> AsyncIterator[Connected]:
        yield Connected(SimpleNamespace(cluster=cluster), "ns", KAPPLY)  # type: ignore[arg-type]

    monkeypatch.setattr(app_kctrl, "connected_apps", connected)
    args = resolve(tree(), ["app", *argv, "-n", "ns", "-y"], global_flags(), PROGRAM)
    assert args is not None
    text = io.StringIO()
    out = Output(tty=True, out=text)
    handler = {"pause": app_kctrl.pause, "kick": app_kctrl.kick, "delete": app_kctrl.delete}[argv[0]]
    handler(args, out)
    return re.sub(r"\d+:\d\d:\d\d[AP]M", "TIME", text.getvalue())


def test_pause_asks_and_patches(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = Cluster(owned(app()))
    said = run(monkeypatch, cluster, "pause", "-a", "x")
    assert said == (
        "App 'x' is owned by 'PackageInstall/pi'\n"
        "(The App will be unpaused when the package installation reconciles)\n"
        "Pausing reconciliation for App 'x' in namespace 'ns'\n"
        "Pausing reconciliation for App 'x' in namespace 'ns'\n"
        "\nSucceeded\n"
    )
    assert cluster.requests == [("patch", [{"op": "add", "path": "/spec/paused", "value": True}])]


def test_an_app_already_paused_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = Cluster(app(paused=True))
    assert run(monkeypatch, cluster, "pause", "-a", "x") == (
        "App 'x' in namespace 'ns' is already paused\n\nSucceeded\n"
    )
    assert cluster.requests == []


def test_kick_pauses_and_unpauses_without_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = Cluster(owned(app()))
    said = run(monkeypatch, cluster, "kick", "-a", "x", "--wait=false")
    assert said == (
        "App 'x' is owned by 'PackageInstall/pi'\n"
        "Triggering reconciliation for app 'x' in namespace 'ns'"
        "TIME: Triggering reconciliation for app 'x' in namespace 'ns'\n"
        "\nSucceeded\n"
    )
    assert [patch for _, patch in cluster.requests] == [
        [{"op": "add", "path": "/spec/paused", "value": True}],
        [{"op": "remove", "path": "/spec/paused"}],
    ]


def test_delete_noop_sets_noop_delete_first_and_says_an_app_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = Cluster(app())
    said = run(monkeypatch, cluster, "delete", "-a", "x", "--noop")
    assert said.splitlines() == [
        "Deleting app 'x' in namespace 'ns'TIME: Ignoring associated resources for app 'x' in namespace 'ns'",
        "TIME: Waiting for app deletion for 'x'",
        "TIME: App 'x' in namespace 'ns' deleted",
        "",
        "Succeeded",
    ]
    assert cluster.requests == [
        ("patch", [{"op": "add", "path": "/spec/noopDelete", "value": True}]),
        ("delete", "x"),
    ]


@pytest.mark.parametrize("command", ["pause", "kick", "delete"])
def test_a_missing_app_is_kctrls_error(monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    with pytest.raises(KapplyError, match="^App 'x' does not exist in namespace 'ns'$"):
        run(monkeypatch, Cluster(None), command, "-a", "x")


def test_the_app_name_is_required_before_connecting() -> None:
    args = resolve(tree(), ["app", "get"], global_flags(), PROGRAM)
    assert args is not None
    with pytest.raises(KapplyError, match="^Expected app name to be non empty$"):
        asyncio.run(app_kctrl._get(args, Output(tty=True, out=io.StringIO())))
