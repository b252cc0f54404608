"""Ignored changes (deletes of objects a controller made: `--apply-ignored`, `--wait-ignored`) and failures that do
not stop the run (`--exit-early-on-apply-error=false`, `--exit-early-on-wait-error=false`), compared with the real
kapp."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.apps_v1 import Deployment, ReplicaSet
from lightkube.resources.core_v1 import ConfigMap, Pod
from lightkube.types import PatchType

from tests.compat.harness import Harness, Namespaces, Pair, established_crd
from tests.e2e.harness import Cluster

pytestmark = pytest.mark.compat
MERGE = PatchType.MERGE

WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: main, image: nginx}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {a: b}
"""


def on_kapps_app(both: Harness, *args: str) -> Pair:
    """The command run by both tools on the app kapp deployed (its ReplicaSet and Pod names, hashes of a template that
    holds the app's label value, differ from kapply's app's), kapply's output relabelled to its own namespace."""
    kapp_ns, kapply_ns = both.ns["kapp"], both.ns["kapply"]
    argv = [a.replace("{ns}", kapp_ns) for a in args]
    kapp, kapply = (both.run_one(tool, argv) for tool in ("kapp", "kapply"))
    relabelled = replace(
        kapply, stdout=kapply.stdout.replace(kapp_ns, kapply_ns), stderr=kapply.stderr.replace(kapp_ns, kapply_ns)
    )
    return Pair(kapp, relabelled)


_TIME = re.compile(r"^\d{1,2}:\d\d:\d\d(AM|PM): ")


def waits_sorted(pair: Pair) -> Pair:
    """Each change's wait lines (`fail: reconcile ...` and its ` ^ ...` details) kept together and the changes put in
    one order, within each section: the tools check concurrently (the harness sorts single lines only)."""

    def ordered(text: str) -> str:
        out: list[str] = []
        groups: list[list[str]] = []

        def flush() -> None:
            out.extend(line for group in sorted(groups, key=lambda g: _TIME.sub("", g[0])) for line in group)
            groups.clear()

        for line in text.split("\n"):
            stamp = _TIME.match(line)
            body = line[stamp.end() :] if stamp else ""
            if stamp and body.startswith(" ") and groups:
                groups[-1].append(line)
            elif stamp and "----" not in body:
                groups.append([line])
            else:
                flush()
                out.append(line)
        flush()
        return "\n".join(out)

    return Pair(*(replace(r, stdout=ordered(r.stdout)) for r in pair))


def errors_sorted(pair: Pair) -> Pair:
    """The errors of a run that reports several (`\n\n  - <error>` each) in one order: kapp lists them in the order
    its concurrent checks finished."""

    def ordered(text: str) -> str:
        head, sep, rest = text.partition("\n\n  - ")
        if not sep:
            return text
        items = rest.rstrip("\n").split("\n\n  - ")
        return head + "".join(f"\n\n  - {item}" for item in sorted(items)) + rest[len(rest.rstrip("\n")) :]

    return Pair(*(replace(r, stderr=ordered(r.stderr)) for r in pair))


def pods(kube: Client, namespace: str) -> list[Pod]:
    return list(kube.list(Pod, namespace=namespace))


def deploy_web(both: Harness, kube: Client) -> Harness:
    """A Deployment (with the ReplicaSet and Pod the controllers make for it) and a ConfigMap, deployed by each tool."""
    for result in both.run_together("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", input=WEB):
        assert result.code == 0, result.output
    deadline = time.monotonic() + 30
    while not all(pods(kube, ns) for ns in both.ns.values()):
        assert time.monotonic() < deadline, "the controllers did not make the Pods"
        time.sleep(0.5)
    return both


@pytest.fixture
def web(both: Harness, kube: Client) -> Harness:
    return deploy_web(both, kube)


@pytest.fixture(scope="module")
def web_once(kapp_binary: Path, cluster: Cluster, kube: Client) -> Iterator[tuple[Harness, dict[str, list[str]]]]:
    """The deployed app and the objects its deploys left (`left`), shared by the tests that only show a plan
    (`--diff-run`): each checks that the objects are those before and after it, so one that changed them fails, and
    so does every test after it."""
    namespaces = Namespaces(kube, "ignored-and-errors-plans")
    try:
        both = deploy_web(Harness(kapp_binary, cluster.kubeconfig, namespaces), kube)
        yield both, left(both, kube)
    finally:
        namespaces.cleanup()


def left(both: Harness, kube: Client) -> dict[str, list[str]]:
    """The objects in each tool's namespace, by kind and name."""
    return {
        tool: sorted(
            f"{kind.__name__}/{obj.metadata.name}"
            for kind in (ConfigMap, Deployment, ReplicaSet, Pod)
            for obj in kube.list(kind, namespace=namespace)
            if obj.metadata and obj.metadata.name
        )
        for tool, namespace in both.ns.items()
    }


@pytest.mark.parametrize(
    "flags",
    [
        (),
        ("--wait-ignored=false",),
        ("--apply-ignored",),
        ("--filter-kind", "Pod,ReplicaSet"),  # only ignored changes: the app stays
        ("--filter-kind", "Pod", "--apply-ignored", "--diff-changes-yaml", "-c"),
        ("--diff-filter", '{"ops":["delete"]}'),  # an ignored change is a delete too
        ("--diff-filter", '{"existingResource":{"kinds":["Deployment"]}}'),
    ],
)
def test_delete_plans_the_controller_made_objects_as_ignored_changes(
    web_once: tuple[Harness, dict[str, list[str]]], kube: Client, flags: tuple[str, ...]
):
    web, deployed = web_once
    assert left(web, kube) == deployed
    web.same(on_kapps_app(web, "delete", "-a", "app", "-n", "{ns}", "--diff-run", "--tty", *flags), exact=False)
    assert left(web, kube) == deployed


def test_delete_waits_until_the_controller_made_objects_are_gone(web: Harness, kube: Client):
    pair = web.run_together("delete", "-a", "app", "-n", "{ns}", "-y")
    assert pair.kapp.code == pair.kapply.code == 0, pair.kapply.output
    for line in ("ok: delete pod/", "ok: delete replicaset/", "ok: delete deployment/web"):
        assert line in pair.kapp.stdout and line in pair.kapply.stdout
    assert not pods(kube, web.ns["kapply"])
    web.same_objects((ConfigMap, Deployment, Pod))


@pytest.mark.parametrize(
    "flags",
    [
        ("--wait-ignored",),
        ("--apply-ignored", "-c", "--diff-changes-yaml"),
        ("--apply-ignored", "--logs=false"),  # without logs kapp does not list the app's Pods: nothing to ignore
    ],
)
def test_deploy_shows_ignored_changes_only_when_asked(
    web_once: tuple[Harness, dict[str, list[str]]], kube: Client, flags: tuple[str, ...]
):
    web, deployed = web_once
    assert left(web, kube) == deployed
    web.same(
        web.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "--diff-run", "--tty", *flags, input=WEB), exact=False
    )
    assert left(web, kube) == deployed


OWNED = WEB.replace(
    "metadata: {labels: {app: web}}",
    'metadata: {labels: {app: web}, annotations: {kapp.k14s.io/owned-for-deletion: ""}}',
)


def test_owned_for_deletion_makes_delete_delete_a_controller_made_object(both: Harness, kube: Client):
    for result in both.run_together("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", input=OWNED):
        assert result.code == 0, result.output
    deadline = time.monotonic() + 30
    while not all(pods(kube, ns) for ns in both.ns.values()):
        assert time.monotonic() < deadline, "the controllers did not make the Pods"
        time.sleep(0.5)
    both.same(on_kapps_app(both, "delete", "-a", "app", "-n", "{ns}", "--diff-run", "--tty"), exact=False)


# ---------------------------------------------------------------------------------------------------- failures

WIDGETS = "widgets.compat.kapply.dev"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": WIDGETS},
    "spec": {
        "group": "compat.kapply.dev",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,  # no status subresource: a status can be written like any field
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}
Widget = create_namespaced_resource("compat.kapply.dev", "v1", "Widget", "widgets")


@pytest.fixture(scope="module")
def widgets(kube: Client) -> Iterator[None]:
    """A kind whose status anyone may write: failures on demand."""
    with established_crd(kube, CRD):
        yield


# Widgets fail or succeed by their status conditions, which an update keeps
CONFIG = """
apiVersion: kapp.k14s.io/v1alpha1
kind: Config
waitRules:
- resourceMatchers:
  - apiVersionKindMatcher: {apiVersion: compat.kapply.dev/v1, kind: Widget}
  conditionMatchers:
  - {type: Broken, status: "True", failure: true}
  - {type: Ready, status: "True", success: true}
rebaseRules:
- path: [status]
  type: copy
  sources: [existing]
  resourceMatchers:
  - apiVersionKindMatcher: {apiVersion: compat.kapply.dev/v1, kind: Widget}
"""


def widget(name: str, version: int, extra: str = "") -> str:
    return (
        f"---\napiVersion: compat.kapply.dev/v1\nkind: Widget\nmetadata: {{name: {name}{extra}}}\n"
        f"spec: {{version: {version}}}\n"
    )


BAD = ", annotations: {kapp.k14s.io/change-group: bad}"
AFTER_BAD = (
    "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: after-bad, annotations: "
    "{kapp.k14s.io/change-rule: upsert after upserting bad}}\n"
    "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: independent}\n"
)


def widgets_with_status(both: Harness, kube: Client, statuses: dict[str, str]) -> str:
    """The widgets deployed (not waited on), then given a condition each (`name: type`); the manifest that
    updates them."""
    first = CONFIG + "".join(widget(name, 1, BAD if name.startswith("bad") else "") for name in statuses)
    for result in both.run("deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", "--wait=false", input=first):
        assert result.code == 0, result.output
    for namespace in both.ns.values():
        for name, condition in statuses.items():
            conditions = [{"type": condition, "status": "True", "reason": "Test", "message": "made so"}]
            kube.patch(Widget, name, {"status": {"conditions": conditions}}, namespace=namespace, patch_type=MERGE)
    return CONFIG + "".join(widget(name, 2, BAD if name.startswith("bad") else "") for name in statuses)


@pytest.mark.usefixtures("widgets")
def test_without_exit_early_on_wait_error_every_failure_is_reported_at_the_end(both: Harness, kube: Client):
    """Both failures reported, the change that does not depend on them applied, the one that does never applied."""
    manifest = widgets_with_status(both, kube, {"bad-1": "Broken", "bad-2": "Broken", "good": "Ready"}) + AFTER_BAD
    pair = both.run(
        "deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", "--exit-early-on-wait-error=false", input=manifest
    )
    both.same(waits_sorted(errors_sorted(pair)), exact=False)
    assert pair.kapply.code == 1 and pair.kapply.stderr.count("Finished unsuccessfully") == 2
    both.same_objects()


@pytest.mark.usefixtures("widgets")
def test_one_wait_failure_without_exit_early_is_the_error(both: Harness, kube: Client):
    manifest = widgets_with_status(both, kube, {"bad-1": "Broken", "good": "Ready"})
    pair = both.run(
        "deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", "--exit-early-on-wait-error=false", input=manifest
    )
    both.same(waits_sorted(pair), exact=False)  # the error laid out on several lines, as kapp's
    assert pair.kapply.stderr.startswith("kapply: Error: waiting on reconcile widget/bad-1")
    both.same_objects()


GONE = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {{ns}}-gone}}\n"
APPLY_FAILING = (
    GONE.format(name="lost-1")
    + GONE.format(name="lost-2")
    + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine}\n"
    + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: later, annotations: "
    "{kapp.k14s.io/change-rule: upsert after upserting first}}\n"
    + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: first, annotations: {kapp.k14s.io/change-group: first}}\n"
)


def test_without_exit_early_on_apply_error_the_rest_is_applied(both: Harness):
    """Creates in a namespace that does not exist fail; the others are applied and waited on, in order."""
    pair = both.run(
        "deploy", "-a", "app", "-n", "{ns}", "-f", "-", "-y", "--exit-early-on-apply-error=false", input=APPLY_FAILING
    )
    both.same(errors_sorted(pair), exact=False)
    assert pair.kapply.code == 1 and pair.kapply.stderr.count("not found") == 2
    both.same_objects()
