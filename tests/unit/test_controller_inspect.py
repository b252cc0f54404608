"""`deploy[].kapp.inspect` into `status.inspect`, and `status.deploy.kapp.associatedResources`, as kapp-controller
writes them: the inspect listing through the App's client (PodMetrics left out, rawOptions on kapp-controller's
allow-list, those kapply does not show refused by name), the associated resources from the deploy's plan."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from kapply.controller import reconciler as reconciler_module
from kapply.controller.cache import Cache
from kapply.controller.deploy import Deployed, associated_resources
from kapply.controller.inspect import inspect
from kapply.controller.reconciler import Done, Failed, Reconciler
from kapply.controller.spec import parse_spec
from kapply.controller.status import with_associated
from kapply.errors import KapplyError
from kapply.objects import Obj


def obj(kind: str, name: str, namespace: str = "demo", api_version: str = "v1") -> Obj:
    meta: Obj = {"name": name, "uid": f"uid-{name}", "creationTimestamp": "2026-01-01T00:00:00Z"}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


class Client:
    def __init__(self, found: list[Obj] | None = None, error: str = "") -> None:
        self.found = found or []
        self.error = error
        self.asked: list[tuple[str, str | None]] = []

    async def inspect(self, app: str, *, namespace: str | None = None) -> list[Obj]:
        self.asked.append((app, namespace))
        if self.error:
            raise KapplyError(self.error)
        return self.found


RESOURCES = [
    obj("ConfigMap", "settings"),
    obj("PodMetrics", "web-1", api_version="metrics.k8s.io/v1beta1"),
    obj("Deployment", "web", api_version="apps/v1"),
]


def run(client: Client, raw: tuple[str, ...] = ()) -> Obj:
    return asyncio.run(inspect(client, "hello.app", "demo", raw))  # type: ignore[arg-type]


def test_inspect_lists_the_apps_resources_without_pod_metrics():
    client = Client(RESOURCES)
    status = run(client)
    assert client.asked == [("hello.app", "demo")]
    assert status["exitCode"] == 0 and "updatedAt" in status and "error" not in status
    text = status["stdout"]
    assert text.startswith("Resources in app 'hello.app'")
    assert "settings" in text and "web" in text and "PodMetrics" not in text and "web-1" not in text


def test_inspect_raw_options_choose_the_view_and_filter():
    raw = run(Client(RESOURCES), ("--raw=true",))["stdout"]
    assert "kind: ConfigMap" in raw and "kind: PodMetrics" not in raw
    assert "Deployment" not in run(Client(RESOURCES), ("--filter-kind=ConfigMap",))["stdout"]
    assert run(Client(RESOURCES), ("--status=true",))["exitCode"] == 0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("--wait=true", "Inspecting: Unexpected flag 'wait' specified (either forbidden or unknown)"),
        ("--app=other", "Inspecting: Unexpected flag 'app' specified (either forbidden or unknown)"),
        ("--tree", "Inspecting: Expected flag '--tree' to be in '--name=val' format"),
        ("--json=true", "Inspecting: Unsupported flag 'json' for inspect"),
        ("--filter=not json", "Inspecting: "),
    ],
)
def test_inspect_refuses_what_kapp_controller_refuses_and_what_kapply_does_not_show(raw: str, message: str):
    client = Client(RESOURCES)
    status = run(client, (raw,))
    assert status["exitCode"] == 1 and status["error"].startswith(message)
    assert status["stderr"].startswith("kapply: Error: ")


def test_an_inspect_that_fails_says_so():
    status = run(Client(error="App 'hello.app' (namespace: demo) does not exist"))
    assert status["error"] == "Inspecting: App 'hello.app' (namespace: demo) does not exist"


def plan(used: set[tuple[str, str, str]], namespaces: tuple[str, ...]) -> Any:
    meta = SimpleNamespace(label_selector="kapp.k14s.io/app=1700000000000000000")
    return SimpleNamespace(used=frozenset(used), namespaces=namespaces, app=SimpleNamespace(meta=meta))


def test_associated_resources_are_the_apps_label_namespaces_and_kinds_sorted_as_kapp_sorts_them():
    used = {
        ("", "v1", "ConfigMap"),
        ("apps", "v1", "Deployment"),
        ("", "v1", "Namespace"),
        ("apps", "v1", "Deployment"),
    }
    assert associated_resources(plan(used, ("(cluster)", "demo"))) == {
        "label": "kapp.k14s.io/app=1700000000000000000",
        "namespaces": ["(cluster)", "demo"],
        "groupKinds": [
            {"group": "", "kind": "ConfigMap"},
            {"group": "apps", "kind": "Deployment"},
            {"group": "", "kind": "Namespace"},
        ],
    }
    assert associated_resources(plan(set(), ())) == {"label": "kapp.k14s.io/app=1700000000000000000"}


def test_associated_resources_go_under_the_deploy_entry_only():
    associated = {"label": "kapp.k14s.io/app=1"}
    assert with_associated({"deploy": {"exitCode": 0}}, associated) == {
        "deploy": {"exitCode": 0, "kapp": {"associatedResources": associated}}
    }
    assert with_associated({"conditions": []}, associated) == {"conditions": []}
    assert with_associated({"deploy": {"exitCode": 0}}, {}) == {"deploy": {"exitCode": 0}}


# --- when the reconciler inspects -----------------------------------------------------------------------------------


APP: Obj = {
    "apiVersion": "kapply.dev/v1alpha1",
    "kind": "App",
    "metadata": {"name": "a", "namespace": "n", "generation": 2},
    "spec": {
        "serviceAccountName": "sa",
        "fetch": [{"inline": {}}],
        "template": [{"ytt": {}}],
        "deploy": [{"kapp": {"inspect": {"rawOptions": ["--tree=true"]}}}],
    },
}


def test_the_reconciler_inspects_after_a_pass_that_did_something_and_an_idle_sync_keeps_the_last(
    monkeypatch: pytest.MonkeyPatch,
):
    calls: list[tuple[str, str, tuple[str, ...]]] = []

    async def fake(client: object, app: str, namespace: str, raw: tuple[str, ...]) -> Obj:
        calls.append((app, namespace, raw))
        return {"exitCode": 0, "stdout": "new"}

    monkeypatch.setattr(reconciler_module, "inspect", fake)
    r = Reconciler(SimpleNamespace(cluster=None), cache=Cache())  # type: ignore[arg-type]
    spec = parse_spec(APP)
    old = {"exitCode": 0, "stdout": "old"}
    previous = {"observedGeneration": 2, "friendlyDescription": "Reconcile succeeded", "inspect": old}
    status = {**previous}

    def inspected(deployed: Any, spec: Any = spec, previous: Obj = previous) -> Obj:
        return asyncio.run(r._inspected(APP, spec, None, status, previous, deployed))  # type: ignore[arg-type]

    idle = Done(Deployed(0, False, "", "digest", (), ()), "t")
    assert inspected(idle)["inspect"] == old and calls == []
    changed = Done(Deployed(1, True, "", "digest", (), ()), "t")
    assert inspected(changed)["inspect"] == {"exitCode": 0, "stdout": "new"}
    assert inspected(Failed("Deploying: x", "x"))["inspect"]["stdout"] == "new"
    assert inspected(idle, previous={**previous, "observedGeneration": 1})["inspect"]["stdout"] == "new"
    assert calls == [("a.app", "n", ("--tree=true",))] * 3
    off = parse_spec({**APP, "spec": {**APP["spec"], "deploy": [{"kapp": {}}]}})
    assert "inspect" not in inspected(changed, spec=off)
