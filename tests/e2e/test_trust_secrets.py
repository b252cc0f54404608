"""A known secret value, and its base64, appears in 0 bytes of everything kapply prints, logs and stores, for Secrets
created, adopted, changed and deleted (issue 11, "stores a secret value in its history").

The adopted Secret is first created with `kubectl apply`, so that it carries kubectl's last-applied annotation with
the value in it; kapply's own `kapp.k14s.io/original` copy holds it too, and so does a ConfigMap key covered by a
user's diffMaskRule.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import logging
import shutil
import subprocess
import uuid

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import ConfigMap, Secret

import kapply
from tests.e2e.harness import Cluster, KapplyRunner

pytestmark = pytest.mark.e2e

APP = "secrets"
KUBECTL_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def b64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


def kubectl_apply(cluster: Cluster, kube: Client, namespace: str, obj: dict) -> None:
    """`kubectl apply` the object; without kubectl on PATH, create it with the annotation kubectl apply writes."""
    kubectl = shutil.which("kubectl")
    if kubectl:
        subprocess.run(
            [kubectl, "--kubeconfig", str(cluster.kubeconfig), "apply", "-n", namespace, "-f", "-"],
            input=json.dumps(obj),
            text=True,
            check=True,
            capture_output=True,
        )
        return
    annotated = {**obj, "metadata": {**obj["metadata"], "annotations": {KUBECTL_LAST_APPLIED: json.dumps(obj)}}}
    kube.create(Secret.from_dict(annotated), namespace=namespace)


def manifest(namespace: str, value: str, settings: bool = True) -> str:
    """The app: the adopted Secret (data), a Secret kapply creates from stringData, and (with `settings`) a ConfigMap
    whose data a user's diffMaskRule covers."""
    rule = {
        "path": ["data"],
        "resourceMatchers": [
            {"kindNamespaceNameMatcher": {"kind": "ConfigMap", "namespace": namespace, "name": "settings"}}
        ],
    }
    docs = [
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "adopted"}, "data": {"password": b64(value)}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "made"}, "stringData": {"password": value}},
        {"apiVersion": "kapp.k14s.io/v1alpha1", "kind": "Config", "diffMaskRules": [rule]},
    ]
    if settings:
        docs.append(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"token": value}}
        )
    return "---\n".join(json.dumps(d) + "\n" for d in docs)


class Evidence:
    """Everything kapply printed, logged or stored, by where it came from."""

    def __init__(self, kube: Client, namespace: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.texts: dict[str, str] = {}

    def add(self, where: str, text: str) -> None:
        self.texts[f"{len(self.texts):02d} {where}"] = text

    def run(self, kapply: KapplyRunner, *args: str, input: str | None = None) -> str:
        result = kapply(*args, input=input)
        assert result.returncode in (0, 3), f"kapply {' '.join(args)}: {result.stdout}{result.stderr}"
        self.add(f"kapply {' '.join(args)}", result.stdout + result.stderr)
        return result.stdout

    def stored(self, after: str) -> None:
        """The app record and app-change ConfigMaps, whole."""
        for label in ("kapp.k14s.io/is-app", "kapp.k14s.io/is-app-change"):
            for cm in self.kube.list(ConfigMap, namespace=self.namespace, labels={label: ""}):
                self.add(f"ConfigMap {cm.metadata.name} after {after}", json.dumps(cm.to_dict()))

    def leaks(self, secrets: list[str]) -> list[str]:
        """Where a secret shows, with the text around it."""
        found = []
        for where, text in self.texts.items():
            for secret in secrets:
                if (at := text.find(secret)) >= 0:
                    found.append(f"{where}: ...{text[max(0, at - 200) : at + len(secret) + 50]}...")
        return found


def test_secret_values_appear_nowhere_kapply_writes(
    cluster: Cluster, kapply: KapplyRunner, kube: Client, namespace: str, caplog: pytest.LogCaptureFixture
):
    first, second = f"hunter2-{uuid.uuid4().hex}", f"swordfish-{uuid.uuid4().hex}"
    secrets = [first, b64(first), second, b64(second)]
    kubectl_apply(
        cluster,
        kube,
        namespace,
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "adopted"}, "stringData": {"password": first}},
    )
    adopted = kube.get(Secret, "adopted", namespace=namespace)
    assert first in adopted.metadata.annotations[KUBECTL_LAST_APPLIED], "the setup must hide the value in a copy"

    evidence = Evidence(kube, namespace)
    deploy = ("deploy", "-a", APP, "-n", namespace, "-f", "-", "--wait-check-interval=0.5s")
    v1, v2 = manifest(namespace, first), manifest(namespace, second)
    evidence.run(kapply, *deploy, "--diff-run", "-c", input=v1)
    evidence.run(kapply, *deploy, "--diff-run", "-c", "--json", input=v1)
    created = evidence.run(kapply, *deploy, "-c", "-y", input=v1)
    assert "update secret/adopted" in created and "create secret/made" in created, created
    evidence.stored("adopting and creating")
    evidence.run(kapply, *deploy, "-c", "-y", input=v1)
    changed = evidence.run(kapply, *deploy, "-c", "--json", "-y", input=v2)
    assert "update secret/made" in changed and "update configmap/settings" in changed, changed
    evidence.run(kapply, *deploy, "--diff-run", "-c", input=v1)
    evidence.run(kapply, *deploy, "--diff-run", "-c", "--diff-against-last-applied=false", input=v1)
    evidence.stored("changing")
    for listing in (("--diff",), ("--diff", "--json")):
        evidence.run(kapply, "app-change", "list", "-a", APP, "-n", namespace, *listing)
    for how in ((), ("--status",), ("--tree",), ("--json",), ("--status", "--json")):
        evidence.run(kapply, "inspect", "-a", APP, "-n", namespace, *how)

    caplog.set_level(logging.DEBUG, logger="kapply")
    evidence.add("API plan and run, changing back", api_change(cluster, namespace, v1))
    evidence.add("API conflict error", api_conflict(cluster, kube, namespace, v2, f"intruder-{uuid.uuid4().hex}"))
    evidence.add("kapply logger", caplog.text)
    assert "update secret/made" in caplog.text, caplog.text  # the logger did see the run
    evidence.stored("the API runs")

    # A user's diffMaskRules reach kapply with the manifests: the ConfigMap they cover is deleted by a deploy that
    # has them (`kapply delete` knows only the default rules, as kapp's; see docs/reliability.md).
    evidence.run(kapply, *deploy, "-c", "-y", input=manifest(namespace, first, settings=False))
    evidence.stored("deleting the ConfigMap")
    evidence.run(kapply, "delete", "-a", APP, "-n", namespace, "-c", "-y", "--wait-check-interval=0.5s")
    assert not list(kube.list(Secret, namespace=namespace, labels={"kapp.k14s.io/app": None}))
    assert evidence.leaks(secrets) == []
    assert len(evidence.texts) > 20 and sum(map(len, evidence.texts.values())) > 10_000  # it looked at something


def api_change(cluster: Cluster, namespace: str, source: str) -> str:
    """A plan's line diffs, what the run says it did, and the history, through the Python API with its default
    (logged) progress. (The plan and result also hold the objects themselves, for the program to use.)"""

    async def scenario() -> str:
        async with kapply.AsyncClient(cluster.kubeconfig, namespace=namespace) as api:
            plan = await api.plan_deploy(APP, files=["-"], stdin=io.StringIO(source))
            result = await api.run_deploy(plan)
            changes = await api.app_changes(APP)
            described = "".join(c.describe() + "\n" for c in result.changes)
            return plan.line_diffs() + described + "".join(c.diff + repr(c.meta) for c in changes)

    return asyncio.run(scenario())


def api_conflict(cluster: Cluster, kube: Client, namespace: str, source: str, intruder: str) -> str:
    """The error of an update whose approved diff no longer holds: another actor changed the Secret after the plan.
    Its recalculated diff shows the Secret (masked)."""

    async def scenario() -> str:
        async with kapply.AsyncClient(cluster.kubeconfig, namespace=namespace) as api:
            plan = await api.plan_deploy(APP, files=["-"], stdin=io.StringIO(source))
            kube.patch(
                Secret, "made", {"data": {"password": b64(intruder), "extra": b64(intruder)}}, namespace=namespace
            )
            with pytest.raises(kapply.ApplyError, match="approved diff no longer matches") as failed:
                await api.run_deploy(plan)
            return str(failed.value)

    error = asyncio.run(scenario())
    assert intruder not in error and b64(intruder) not in error, error
    return error
