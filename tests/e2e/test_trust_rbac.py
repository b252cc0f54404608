"""A user whose rights end at one namespace can deploy, redeploy, diff, inspect and delete an app there, even after a
deploy that failed half-way (issue 11, "dead-ends a namespace-only user").

The restricted user is bound to the `admin` ClusterRole in its namespace only: every cluster-wide LIST is forbidden
to it, so kapply lists the app's namespaces one by one, as kapp does. The namespace is shared by every test run
against the cluster, so each test uses names of its own and removes what it made.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import ConfigMap, ResourceQuota, Secret, Service

from tests.e2e.harness import Cluster, KapplyRunner, eventually

pytestmark = pytest.mark.e2e


@pytest.fixture
def restricted(cluster: Cluster) -> tuple[KapplyRunner, str]:
    """kapply as the namespace-only user, and its namespace."""
    if cluster.restricted_kubeconfig is None or cluster.restricted_namespace is None:
        pytest.skip("no restricted kubeconfig for this cluster (set KAPPLY_RESTRICTED_KUBECONFIG)")
    return KapplyRunner(cluster.restricted_kubeconfig), cluster.restricted_namespace


@pytest.fixture
def prefix(kube: Client, cluster: Cluster) -> Iterator[str]:
    """A unique prefix for the app's and its resources' names; whatever is left with it is removed afterwards."""
    prefix = f"rbac-{uuid.uuid4().hex[:6]}"
    yield prefix
    namespace = cluster.restricted_namespace
    for kind in (ConfigMap, Secret, Service, ResourceQuota):
        for obj in kube.list(kind, namespace=namespace):
            if obj.metadata.name.startswith(prefix):
                kube.delete(kind, obj.metadata.name, namespace=namespace)


def summary(output: str) -> str:
    match = re.search(r"^Op:\s+(.*)$", output, re.M)
    assert match, output
    return match.group(1).strip()


def manifest(prefix: str, value: str) -> str:
    return (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {prefix}-config\ndata:\n  v: {value}\n---\n"
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {prefix}-secret\nstringData:\n  v: {value}\n"
    )


def gone(kube: Client, kind: type, namespace: str, name: str) -> bool:
    try:
        kube.get(kind, name, namespace=namespace)
    except ApiError as e:
        return e.status.code == 404
    return False


def test_a_namespace_only_user_has_the_whole_lifecycle(restricted: tuple[KapplyRunner, str], kube: Client, prefix: str):
    kapply, namespace = restricted
    app = prefix
    first = kapply.deploy(namespace, manifest(prefix, "one"), app=app)
    assert summary(first.stdout) == "2 create, 0 delete, 0 update, 0 noop, 0 exists"
    again = kapply.deploy(namespace, manifest(prefix, "one"), app=app)
    assert summary(again.stdout) == "0 create, 0 delete, 0 update, 0 noop, 0 exists"
    diff = kapply.deploy(namespace, manifest(prefix, "two"), "--diff-run", "-c", app=app)
    assert summary(diff.stdout) == "0 create, 0 delete, 2 update, 0 noop, 0 exists"
    changed = kapply.deploy(namespace, manifest(prefix, "two"), app=app)
    assert summary(changed.stdout) == "0 create, 0 delete, 2 update, 0 noop, 0 exists"
    assert kube.get(ConfigMap, f"{prefix}-config", namespace=namespace).data == {"v": "two"}

    inspected = kapply.json("inspect", "-a", app, "-n", namespace)
    assert sorted(inspected.table().column("name")) == [f"{prefix}-config", f"{prefix}-secret"]
    changes = kapply.json("app-change", "list", "-a", app, "-n", namespace)
    assert len(changes.table().rows) == 2
    deleted = kapply("delete", "-a", app, "-n", namespace, "-y", "--wait-check-interval=0.5s")
    assert deleted.returncode == 0, deleted.stdout + deleted.stderr
    for kind, name in ((ConfigMap, f"{prefix}-config"), (Secret, f"{prefix}-secret"), (ConfigMap, app)):
        assert gone(kube, kind, namespace, name), f"{kind.__name__} {name} is still there"
    assert not list(kube.list(ConfigMap, namespace=namespace, labels={"kapp.k14s.io/app-change-app": app}))


def test_a_namespace_only_user_can_delete_an_app_whose_deploy_failed(
    restricted: tuple[KapplyRunner, str], kube: Client, prefix: str
):
    """A quota the admin set refuses the second Service: the deploy fails half-way, and the user can still delete
    what it did create."""
    kapply, namespace = restricted
    quota = ResourceQuota.from_dict({"metadata": {"name": f"{prefix}-quota"}, "spec": {"hard": {"services": "1"}}})
    kube.create(quota, namespace=namespace)
    eventually(
        lambda: (kube.get(ResourceQuota, f"{prefix}-quota", namespace=namespace).status.hard or {}).get("services"),
        what="the quota to be counted",
    )
    services = "".join(
        f"---\napiVersion: v1\nkind: Service\nmetadata:\n  name: {prefix}-svc-{i}\nspec:\n  ports:\n  - port: 80\n"
        for i in range(2)
    )
    failed = kapply.deploy(namespace, manifest(prefix, "one") + services, app=prefix, check=False)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "exceeded quota" in failed.stderr, failed.stderr
    made = [s.metadata.name for s in kube.list(Service, namespace=namespace) if s.metadata.name.startswith(prefix)]
    assert len(made) == 1, made

    deleted = kapply("delete", "-a", prefix, "-n", namespace, "-y", "--wait-check-interval=0.5s")
    assert deleted.returncode == 0, deleted.stdout + deleted.stderr
    for kind, name in ((ConfigMap, f"{prefix}-config"), (Secret, f"{prefix}-secret"), (Service, made[0])):
        assert gone(kube, kind, namespace, name), f"{kind.__name__} {name} is still there"
    assert gone(kube, ConfigMap, namespace, prefix), "the app record is still there"
