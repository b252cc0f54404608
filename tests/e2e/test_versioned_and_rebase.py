"""Versioned resources, template rules and rebase rules, reproducing kapp's docs (seeds 000 and 001)."""

from __future__ import annotations

import re

import pytest
import yaml
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.apps_v1 import Deployment, ReplicaSet
from lightkube.resources.core_v1 import ConfigMap, Secret

from tests.e2e.harness import eventually

pytestmark = pytest.mark.e2e


def ops(output: str) -> str:
    match = re.search(r"^Op:\s+(.*)$", output, re.M)
    assert match, output
    return match.group(1).strip()


def names(kube: Client, kind, namespace: str, prefix: str) -> list[str]:
    return sorted(o.metadata.name for o in kube.list(kind, namespace=namespace) if o.metadata.name.startswith(prefix))


SECRET = """
apiVersion: v1
kind: Secret
metadata:
  name: secret-sa-sample
  annotations:
    kapp.k14s.io/versioned: ""{extra}
stringData:
  token: {value}
"""


def test_a_versioned_secret_is_created_as_ver_1(kapply, kube: Client, namespace):
    result = kapply.deploy(namespace, SECRET.format(extra="", value="a"), app="ver")
    assert re.search(rf"^{namespace}\s+secret-sa-sample-ver-1\s+Secret\s+-\s+create", result.stdout, re.M)
    assert ops(result.stdout) == "1 create, 0 delete, 0 update, 0 noop, 0 exists"
    assert names(kube, Secret, namespace, "secret-sa-sample") == ["secret-sa-sample-ver-1"]
    again = kapply.deploy(namespace, SECRET.format(extra="", value="a"), app="ver")
    assert ops(again.stdout) == "0 create, 0 delete, 0 update, 0 noop, 0 exists"


def test_versioned_keep_original_deploys_both(kapply, kube: Client, namespace):
    keep = '\n    kapp.k14s.io/versioned-keep-original: ""'
    result = kapply.deploy(namespace, SECRET.format(extra=keep, value="a"), app="ver")
    assert ops(result.stdout) == "2 create, 0 delete, 0 update, 0 noop, 0 exists"
    assert names(kube, Secret, namespace, "secret-sa-sample") == ["secret-sa-sample", "secret-sa-sample-ver-1"]


CONFIGS = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: config-1
  annotations:
    kapp.k14s.io/versioned: ""
data:
  foo: {value}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: config-2
  annotations:
    kapp.k14s.io/versioned-explicit-ref: |
      apiVersion: v1
      kind: ConfigMap
      name: config-1
data:
  foo: bar
"""


def test_an_explicit_reference_follows_the_new_version(kapply, kube: Client, namespace):
    kapply.deploy(namespace, CONFIGS.format(value="bar"), app="ver")
    ref = yaml.safe_load(
        kube.get(ConfigMap, "config-2", namespace=namespace).metadata.annotations["kapp.k14s.io/versioned-explicit-ref"]
    )
    assert ref["name"] == "config-1-ver-1"
    changed = kapply.deploy(namespace, CONFIGS.format(value="alpha"), "-c", app="ver")
    assert f"@@ create configmap/config-1-ver-2 (v1) namespace: {namespace} @@" in changed.stdout
    assert re.search(r"^\s*\d+\s+-\s+foo: bar\n\s+\d+ \+\s+foo: alpha$", changed.stdout, re.M), changed.stdout
    assert f"@@ update configmap/config-2 (v1) namespace: {namespace} @@" in changed.stdout
    assert re.search(r"-\s+name: config-1-ver-1\n\s+\d+ \+\s+name: config-1-ver-2", changed.stdout), changed.stdout
    assert ops(changed.stdout) == "1 create, 0 delete, 1 update, 0 noop, 0 exists"


NGINX = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: special-config
  annotations:
    kapp.k14s.io/versioned: ""
    kapp.k14s.io/num-versions: "2"
data:
  special.how: {how}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
spec:
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: registry.invalid/nginx:1.14.2
        env:
        - name: SPECIAL_LEVEL_KEY
          valueFrom:
            configMapKeyRef:
              name: special-config
              key: special.how
"""


def test_a_changed_versioned_configmap_rolls_the_deployment_and_old_versions_are_pruned(
    kapply, kube: Client, namespace
):
    kapply.deploy(namespace, NGINX.format(how="very-good"), app="ver")
    for i in range(2, 6):
        result = kapply.deploy(namespace, NGINX.format(how=f"better-{i}"), app="ver")
        assert ops(result.stdout).startswith("1 create,") and " 1 update," in ops(result.stdout), result.stdout
        env = kube.get(Deployment, "nginx-deployment", namespace=namespace).spec.template.spec.containers[0].env
        assert env[0].valueFrom.configMapKeyRef.name == f"special-config-ver-{i}"
    # as kapp counts: the two newest of the versions before the deploy, and the new one
    assert names(kube, ConfigMap, namespace, "special-config") == [f"special-config-ver-{n}" for n in (3, 4, 5)]
    assert len(list(kube.list(ReplicaSet, namespace=namespace))) == 5  # one per rollout
    again = kapply.deploy(namespace, NGINX.format(how="better-5"), app="ver")
    assert ops(again.stdout) == "0 create, 1 delete, 0 update, 0 noop, 0 exists"  # the unchanged deploy trims ver-3
    assert names(kube, ConfigMap, namespace, "special-config") == ["special-config-ver-4", "special-config-ver-5"]


def test_a_versioned_resource_removed_from_the_manifests_is_deleted_with_its_versions(kapply, kube, namespace):
    kapply.deploy(namespace, NGINX.format(how="a"), app="ver")
    kapply.deploy(namespace, NGINX.format(how="b"), app="ver")
    other = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n"
    result = kapply.deploy(namespace, other, app="ver")
    assert ops(result.stdout) == "1 create, 3 delete, 0 update, 0 noop, 0 exists"
    assert names(kube, ConfigMap, namespace, "special-config") == []


SCALED = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: frontend
spec:
  replicas: 2
  selector:
    matchLabels:
      app: frontend
  template:
    metadata:
      labels:
        app: frontend
    spec:
      containers:
      - name: frontend
        image: registry.invalid/frontend:1
"""

HPA_REBASE = """
---
apiVersion: kapp.k14s.io/v1alpha1
kind: Config
rebaseRules:
- path: [spec, replicas]
  type: copy
  sources: [existing, new]
  resourceMatchers:
  - apiVersionKindMatcher: {apiVersion: apps/v1, kind: Deployment}
"""


def test_replicas_changed_by_another_actor_show_as_a_ghost_diff_until_a_rebase_rule_keeps_them(kapply, kube, namespace):
    """Seed 000: an HPA (here, a scale by hand) changes spec.replicas; every redeploy would revert it."""
    kapply.deploy(namespace, SCALED, app="ver")
    kube.patch(Deployment, "frontend", {"spec": {"replicas": 5}}, namespace=namespace)
    eventually(lambda: kube.get(Deployment, "frontend", namespace=namespace).spec.replicas == 5, what="scale")

    ghost = kapply("deploy", "-a", "ver", "-n", namespace, "-f", "-", "-c", "--diff-run", input=SCALED)
    assert ghost.returncode == 0, ghost.stderr
    assert ops(ghost.stdout) == "0 create, 0 delete, 1 update, 0 noop, 0 exists"
    assert re.search(r"-\s+replicas: 5\n\s+\d+ \+\s+replicas: 2", ghost.stdout), ghost.stdout

    rebased = kapply("deploy", "-a", "ver", "-n", namespace, "-f", "-", "--diff-run", input=SCALED + HPA_REBASE)
    assert rebased.returncode == 0, rebased.stderr
    assert ops(rebased.stdout) == "0 create, 0 delete, 0 update, 0 noop, 0 exists"
    applied = kapply.deploy(namespace, SCALED + HPA_REBASE, app="ver")
    assert ops(applied.stdout) == "0 create, 0 delete, 0 update, 0 noop, 0 exists"
    assert kube.get(Deployment, "frontend", namespace=namespace).spec.replicas == 5


def test_into_ns_and_map_ns_place_resources(kapply, kube: Client, namespace):
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: placed\n  namespace: elsewhere\n"
    kapply.deploy(namespace, manifest, "--into-ns", namespace, app="into")
    kube.get(ConfigMap, "placed", namespace=namespace)
    mapped = kapply(
        "deploy",
        "-a",
        "map-app",
        "-n",
        namespace,
        "-f",
        "-",
        "-y",
        f"--map-ns=elsewhere={namespace}",
        input=manifest.replace("placed", "mapped"),
    )
    assert mapped.returncode == 0, mapped.stderr
    kube.get(ConfigMap, "mapped", namespace=namespace)
    unmapped = kapply(
        "deploy", "-a", "unmapped-app", "-n", namespace, "-f", "-", "-y", "--map-ns=other=x", input=manifest
    )
    assert unmapped.returncode == 1 and "Expected to find mapped namespace for 'elsewhere'" in unmapped.stderr
    with pytest.raises(ApiError):
        kube.get(ConfigMap, "placed", namespace="x")
