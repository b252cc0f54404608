"""`kapply app-change rollback` (issue 34): every app-change keeps what it applied in a Secret beside it, and a
rollback deploys that again through the usual pipeline. The real kapp (`$KAPPLY_KAPP`, else `kapp` on PATH) then
finds nothing to change, and its app-changes, which keep nothing, cannot be rolled back to."""

from __future__ import annotations

import base64
import gzip
import json
import re
import secrets
import subprocess

import pytest
from lightkube import Client
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import ConfigMap, Secret

from tests.e2e.controller_harness import App, inline_app, install_crd
from tests.e2e.harness import WAIT_INTERVAL, Cluster, KapplyRunner, KappRun

pytestmark = pytest.mark.e2e

KEPT_TYPE = "kapply.dev/app-change-applied"


def release(version: int) -> str:
    """A versioned ConfigMap, a Secret and a Deployment that reads the ConfigMap, at `version`."""
    return f"""
apiVersion: v1
kind: ConfigMap
metadata:
  name: config
  annotations:
    kapp.k14s.io/versioned: ""
data:
  release: v{version}
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  password: hunter-v{version}-secret
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
      annotations: {{release: v{version}}}
    spec:
      containers:
      - name: web
        image: nginx
        envFrom:
        - configMapRef: {{name: config}}
"""


def kept(kube: Client, namespace: str) -> dict[str, list[dict]]:
    """The documents each kept change holds, by change name."""
    out = {}
    for secret in kube.list(Secret, namespace=namespace):
        if secret.type == KEPT_TYPE:
            payload = json.loads(gzip.decompress(base64.b64decode(secret.data["applied.json.gz"])))
            out[secret.metadata.name] = payload["documents"]
    return out


def changes(kube: Client, namespace: str) -> set[str]:
    return {
        cm.metadata.name for cm in kube.list(ConfigMap, namespace=namespace, labels={"kapp.k14s.io/is-app-change": ""})
    }


def rollback(
    kapply: KapplyRunner, namespace: str, change: str, *args: str, app: str = "web"
) -> subprocess.CompletedProcess[str]:
    return kapply("app-change", "rollback", "-a", app, "-n", namespace, "--to", change, "-y", WAIT_INTERVAL, *args)


def test_rollback_to_the_first_of_three_releases(kapply: KapplyRunner, kube: Client, namespace: str, kapp: KappRun):
    for version in (1, 2, 3):
        kapply.deploy(namespace, release(version), app="web")
    by_release = {docs[0]["data"]["release"]: name for name, docs in kept(kube, namespace).items()}
    assert set(by_release) == {"v1", "v2", "v3"}
    assert changes(kube, namespace) == set(by_release.values())  # one Secret per change
    first = by_release["v1"]

    result = rollback(kapply, namespace, first, "--diff-changes", "--tty")
    assert result.returncode == 0, result.stdout + result.stderr
    shown = result.stdout + result.stderr
    assert "hunter-v" not in shown and "value not shown" in shown  # the Secret's values are masked in the diff
    assert f"Rolled back to app change '{first}'" in shown

    assert base64.b64decode(kube.get(Secret, "creds", namespace=namespace).data["password"]) == b"hunter-v1-secret"
    web = kube.get(Deployment, "web", namespace=namespace)
    assert web.spec.template.metadata.annotations == {"release": "v1"}
    config = web.spec.template.spec.containers[0].envFrom[0].configMapRef.name
    assert config == "config-ver-4"  # v1's data is a new version of the versioned ConfigMap, as any redeploy makes
    assert kube.get(ConfigMap, config, namespace=namespace).data == {"release": "v1"}

    history = kapply("app-change", "list", "-a", "web", "-n", namespace)
    assert re.search(rf"\trollback to {first}: update: Op: 1 create, 0 delete, 2 update", history.stdout), history
    listed = kapp("app-change", "list", "-a", "web", "-n", namespace)
    assert listed.returncode == 0 and f"rollback to {first}" in listed.stdout, listed.stdout + listed.stderr

    diff = kapp("deploy", "-a", "web", "-n", namespace, "-f", "-", "--diff-run", "--yes", input=release(1))
    assert diff.returncode == 0, diff.stdout + diff.stderr
    assert "Op:      0 create, 0 delete, 0 update, 0 noop, 0 exists" in diff.stdout, diff.stdout

    # the kept Secrets go with their changes: collected (as a deploy collects beyond --app-changes-max-to-keep)...
    gc = kapply("app-change", "gc", "-a", "web", "-n", namespace, "--max", "2", "-y")
    assert gc.returncode == 0, gc.stdout + gc.stderr
    assert len(changes(kube, namespace)) == 2 and set(kept(kube, namespace)) == changes(kube, namespace)
    deleted = kapply("delete", "-a", "web", "-n", namespace, "-y")  # ... or deleted with the app
    assert deleted.returncode == 0, deleted.stdout + deleted.stderr
    assert kept(kube, namespace) == {}


def test_a_change_too_large_to_keep_is_warned_about(kapply: KapplyRunner, kube: Client, namespace: str):
    big = "".join(
        f"""---
apiVersion: v1
kind: ConfigMap
metadata:
  name: big-{i}
  annotations:
    kapp.k14s.io/disable-original: ""
data:
  noise: {secrets.token_urlsafe(450_000)}
"""
        for i in range(3)
    )
    result = kapply.deploy(namespace, big, app="web")
    (change,) = changes(kube, namespace)
    assert f"Warning: App-change '{change}' applies" in result.stderr, result.stderr
    assert "more than a Secret holds" in result.stderr
    assert kept(kube, namespace) == {}

    refused = rollback(kapply, namespace, change)
    assert refused.returncode != 0
    assert f"App-change '{change}' of App 'web' (namespace: {namespace}) kept nothing to roll back to" in refused.stderr


def test_a_change_kapp_made_cannot_be_rolled_back_to(kapply: KapplyRunner, kube: Client, namespace: str, kapp: KappRun):
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  v: '1'\n"
    deployed = kapp("deploy", "-a", "web", "-n", namespace, "-f", "-", "--yes", input=manifest)
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    (change,) = changes(kube, namespace)
    refused = rollback(kapply, namespace, change)
    assert refused.returncode != 0
    assert f"App-change '{change}' of App 'web' (namespace: {namespace}) kept nothing" in refused.stderr

    patched = kapply.deploy(namespace, manifest.replace("'1'", "'2'"), "--patch", app="web")  # a partial deploy
    assert patched.returncode == 0
    (partial,) = changes(kube, namespace) - {change}
    refused = rollback(kapply, namespace, partial)
    assert refused.returncode != 0 and f"App-change '{partial}' of App 'web'" in refused.stderr
    assert "by a partial deploy (--patch, --filter, --diff-filter)" in refused.stderr

    missing = rollback(kapply, namespace, "web-change-nope0")
    assert missing.returncode != 0
    assert "App-change 'web-change-nope0' of App 'web'" in missing.stderr and "does not exist" in missing.stderr


def test_a_rollback_pauses_the_app_that_deploys_the_app_first(
    kapply: KapplyRunner, kube: Client, namespace: str, cluster: Cluster
):
    install_crd(cluster.kubeconfig, kube)  # no controller runs: the App only tells whose app `web.app` is
    kube.create(App(**inline_app("web", namespace, {"c.yml": ""})))
    for version in (1, 2):
        manifest = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  v: '{version}'\n"
        kapply.deploy(namespace, manifest, app="web.app")
    first = {docs[0]["data"]["v"]: name for name, docs in kept(kube, namespace).items()}["1"]

    result = rollback(kapply, namespace, first, "--tty", app="web.app")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Paused App 'web' (kapply.dev, namespace: {namespace}), so that it does not deploy" in result.stdout
    assert kube.get(App, "web", namespace=namespace).spec["paused"] is True
    assert kube.get(ConfigMap, "c", namespace=namespace).data == {"v": "1"}
