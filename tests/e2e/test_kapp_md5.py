"""kapp and kapply take turns on one app: each reads the other's last-applied annotations.

After every write both record `kapp.k14s.io/original` and `kapp.k14s.io/original-diff-md5` (see
`kapply.diff.ops_diff`). A redeploy by either tool diffs against the recorded copy only if it recomputes the same
MD5 over the live object; otherwise every server default (clusterIPs, ipFamilies, progressDeadlineSeconds, ...)
shows as a change. These tests use the real kapp (`$KAPPLY_KAPP`, else `kapp` on PATH).
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

from kapply.config.default import default_config
from kapply.diff.change import last_applied
from kapply.objects import ORIGINAL, ORIGINAL_DIFF_MD5, Obj
from kapply.resources.cluster import Cluster as KapplyCluster
from kapply.resources.kubeconfig import KubeconfigFlags, load
from tests.e2e.defaulted_kinds import JOB, SECRET, SERVICES, role_and_binding
from tests.e2e.harness import Cluster, KapplyRunner, KappRun

pytestmark = pytest.mark.e2e
WAIT = "--wait-check-interval=0.2s"  # both tools poll what they wait on 5 times a second (kapp's default: 1 s)

# Kinds whose stored form differs from the manifest in many ways: defaults, allocated IPs and ports, stringData
# merged into data, quantities normalised (0.5 to 500m, 1000000 to 1M), CRD defaults, keys with "/".
MANIFEST = (
    """
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels:
    app.kubernetes.io/name: md5
  annotations:
    example.com/owner: team-a
data:
  a: "1"
  b: |
    multi
    line
---"""
    + SECRET
    + """---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: robot
---"""
    + SERVICES
    + """---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app.kubernetes.io/part-of: md5
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: app
        image: registry.invalid/app:1
        resources:
          limits:
            cpu: 0.5
            memory: 1000000
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 1
  selector:
    matchLabels:
      app: db
  template:
    metadata:
      labels:
        app: db
    spec:
      containers:
      - name: db
        image: registry.invalid/db:1
---"""
    + JOB
    + "---"
    + role_and_binding("robot")
    + """---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.{group}
spec:
  group: {group}
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size:
                type: integer
                default: 3
              ratio:
                type: number
              tags:
                type: array
                items:
                  type: string
---
apiVersion: {group}/v1
kind: Widget
metadata:
  name: gadget
  annotations:
    widgets.example.com/note: "a/b: c"
spec:
  ratio: 1.5
  tags: [a, b]
"""
)


@pytest.fixture
def manifest(namespace: str, kube: Client) -> Iterator[str]:
    """The manifest, with a CRD group of this test's own; the CRD (cluster-scoped) is deleted afterwards."""
    group = f"{namespace}.kapply.test"
    yield MANIFEST.format(group=group)
    try:
        kube.delete(CustomResourceDefinition, f"widgets.{group}")
    except ApiError as e:
        if e.status.code != 404:
            raise


@pytest.fixture
def app(manifest: str, namespace: str, kapp: KappRun) -> Iterator[str]:
    """The app's name (unlike any ConfigMap in the namespace); the app is deleted afterwards."""
    name = "md5-interop"
    yield name
    kapp("delete", "-a", name, "-n", namespace, "--yes", WAIT)


def _live_objects(kubeconfig: Path, namespace: str, manifest: str) -> list[Obj]:
    """Every object of the manifest as the API server returns it (what kapply reads on a deploy)."""
    docs = [doc for doc in yaml.safe_load_all(manifest) if doc]

    async def fetch() -> list[Obj]:
        async with KapplyCluster(load(KubeconfigFlags(str(kubeconfig)))) as client:
            discovery = await client.discovery(refresh=True)
            found = []
            for doc in docs:
                rtype = discovery.find(doc["apiVersion"], doc["kind"])
                assert rtype is not None, f"{doc['apiVersion']} {doc['kind']} is not served"
                live = await client.get(rtype, namespace if rtype.namespaced else None, doc["metadata"]["name"])
                assert live is not None, f"{doc['kind']}/{doc['metadata']['name']} was not created"
                found.append(live)
            return found

    return asyncio.run(fetch())


def _kapp_deploy(kapp: KappRun, app: str, namespace: str, path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return kapp("deploy", "-a", app, "-n", namespace, "-f", str(path), "--yes", WAIT, *args)


def test_kapply_recomputes_the_md5_kapp_recorded(
    cluster: Cluster, namespace: str, app: str, manifest: str, kapp: KappRun, tmp_path: Path
) -> None:
    path = tmp_path / "app.yml"
    path.write_text(manifest)
    deployed = _kapp_deploy(kapp, app, namespace, path)
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr

    config = default_config()
    unmatched = []
    for live in _live_objects(cluster.kubeconfig, namespace, manifest):
        annotations = live["metadata"]["annotations"]
        assert ORIGINAL in annotations and ORIGINAL_DIFF_MD5 in annotations, live["metadata"]
        if last_applied(live, config) is None:
            unmatched.append(f"{live['kind']}/{live['metadata']['name']} (kapp: {annotations[ORIGINAL_DIFF_MD5]})")
    assert not unmatched, f"kapply does not accept kapp's last-applied copy of: {', '.join(unmatched)}"


def test_kapp_sees_no_changes_after_kapply_deployed(
    namespace: str, app: str, manifest: str, kapp: KappRun, kapply: KapplyRunner, tmp_path: Path
) -> None:
    path = tmp_path / "app.yml"
    path.write_text(manifest)
    deployed = kapply("deploy", "-a", app, "-f", str(path), "-n", namespace, "-y", WAIT)
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr

    diff = kapp("deploy", "-a", app, "-n", namespace, "-f", str(path), "--diff-run", "--diff-exit-status", "-c")
    assert diff.returncode == 2, f"kapp found changes (exit {diff.returncode}):\n{diff.stdout}{diff.stderr}"


def test_kapply_sees_no_changes_after_kapp_deployed_without_asking_the_server(
    namespace: str, app: str, manifest: str, kapp: KappRun, kapply: KapplyRunner, tmp_path: Path
) -> None:
    """With the server check off, an update found against the live object stays an update: exit 2 means every
    resource took the last-applied path."""
    path = tmp_path / "app.yml"
    path.write_text(manifest)
    deployed = _kapp_deploy(kapp, app, namespace, path)
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr

    diff = kapply(
        "deploy", "-a", app, "-f", str(path), "-n", namespace,
        "--diff-run", "--diff-exit-status", "--diff-server-side=false", "-c",
    )  # fmt: skip
    assert diff.returncode == 2, f"kapply found changes (exit {diff.returncode}):\n{diff.stdout}{diff.stderr}"


def test_kapply_records_a_valid_last_applied_copy_in_one_or_two_writes(
    cluster: Cluster, namespace: str, app: str, manifest: str, kapply: KapplyRunner, tmp_path: Path
) -> None:
    """kapply sends the record with the create or update, computed as if the server keeps the object as sent, and
    corrects it when the server did not (defaults, allocated IPs, normalised quantities): either way the record on
    every object must be one kapp's check accepts (the MD5 above is kapp's), after a create and after an update."""
    path = tmp_path / "app.yml"
    config = default_config()
    for step, text in (("create", manifest), ("update", manifest.replace('a: "1"', 'a: "2"').replace("1.5", "2.5"))):
        path.write_text(text)
        deployed = kapply("deploy", "-a", app, "-f", str(path), "-n", namespace, "-y", WAIT)
        assert deployed.returncode == 0, deployed.stdout + deployed.stderr
        invalid = [
            f"{live['kind']}/{live['metadata']['name']}"
            for live in _live_objects(cluster.kubeconfig, namespace, text)
            if last_applied(live, config) is None
        ]
        assert not invalid, f"after the {step}, kapp would not accept kapply's record of: {', '.join(invalid)}"
