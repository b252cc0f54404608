"""The local control plane is a real one: defaulting, managedFields, controllers,
scheduling onto kwok nodes, and RBAC all behave as on any cluster."""

from __future__ import annotations

import pytest
from lightkube import Client
from lightkube.codecs import from_dict
from lightkube.core.exceptions import ApiError
from lightkube.resources.apps_v1 import DaemonSet, Deployment, ReplicaSet, StatefulSet
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import ConfigMap, Node, Pod

from tests.e2e.harness import Cluster, client_for, eventually

pytestmark = pytest.mark.e2e

POD_SPEC = {"containers": [{"name": "app", "image": "registry.invalid/app:1"}]}


def pod_template(app: str) -> dict:
    return {"metadata": {"labels": {"app": app}}, "spec": POD_SPEC}


def deployment(name: str, replicas: int = 2) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": pod_template(name)},
    }


def test_a_kwok_node_is_ready(kube: Client):
    nodes = list(kube.list(Node))
    assert nodes, "the cluster has no node"
    ready = [n for n in nodes if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)]
    assert ready, "no node is Ready"


def test_deployment_gets_server_defaults_and_managed_fields(kube: Client, namespace: str):
    created = kube.create(from_dict(deployment("defaults")), namespace=namespace).to_dict()
    spec = created["spec"]
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert spec["revisionHistoryLimit"] == 10
    container = spec["template"]["spec"]["containers"][0]
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert container["imagePullPolicy"] == "IfNotPresent"
    managers = [m["manager"] for m in created["metadata"]["managedFields"]]
    assert managers == ["kapply-tests"]


def test_deployment_controllers_create_pods_that_become_ready_on_a_kwok_node(kube: Client, namespace: str):
    kube.create(from_dict(deployment("web", replicas=2)), namespace=namespace)

    def rollout_done():
        d = kube.get(Deployment, "web", namespace=namespace)
        return d.status and d.status.readyReplicas == 2 and d.status.availableReplicas == 2

    eventually(rollout_done, what="deployment web to have 2 available replicas")
    replicasets = list(kube.list(ReplicaSet, namespace=namespace))
    assert [rs.metadata.ownerReferences[0].name for rs in replicasets] == ["web"]
    pods = list(kube.list(Pod, namespace=namespace, labels={"app": "web"}))
    assert len(pods) == 2
    for pod in pods:
        assert pod.spec.nodeName, f"pod {pod.metadata.name} was not scheduled"
        assert pod.status.phase == "Running"
        assert any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions)
        assert pod.metadata.ownerReferences[0].kind == "ReplicaSet"


def test_statefulset_daemonset_and_job_progress(kube: Client, namespace: str):
    kube.create(
        from_dict(
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": {"name": "db"},
                "spec": {
                    "replicas": 2,
                    "serviceName": "db",
                    "selector": {"matchLabels": {"app": "db"}},
                    "template": pod_template("db"),
                },
            }
        ),
        namespace=namespace,
    )
    kube.create(
        from_dict(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": "agent"},
                "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": pod_template("agent")},
            }
        ),
        namespace=namespace,
    )
    kube.create(
        from_dict(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "once"},
                "spec": {"template": {"spec": {**POD_SPEC, "restartPolicy": "Never"}}},
            }
        ),
        namespace=namespace,
    )

    eventually(
        lambda: kube.get(StatefulSet, "db", namespace=namespace).status.readyReplicas == 2,
        what="statefulset db to have 2 ready replicas",
    )
    nodes = len(list(kube.list(Node)))
    eventually(
        lambda: kube.get(DaemonSet, "agent", namespace=namespace).status.numberReady == nodes,
        what="daemonset agent ready on every node",
    )

    def job_complete():
        job = kube.get(Job, "once", namespace=namespace)
        return any(c.type == "Complete" and c.status == "True" for c in (job.status.conditions or []))

    eventually(job_complete, what="job once to complete")


def test_restricted_user_works_in_its_namespace_only(cluster: Cluster, namespace: str):
    if cluster.restricted_kubeconfig is None:
        pytest.skip("no restricted kubeconfig for this cluster (set KAPPLY_RESTRICTED_KUBECONFIG)")
    restricted = client_for(cluster.restricted_kubeconfig)
    own = cluster.restricted_namespace
    cm = ConfigMap.from_dict({"metadata": {"name": "allowed"}, "data": {"k": "v"}})
    restricted.create(cm, namespace=own)
    restricted.delete(ConfigMap, "allowed", namespace=own)

    with pytest.raises(ApiError) as refused:
        restricted.create(cm, namespace=namespace)
    assert refused.value.status.code == 403
    with pytest.raises(ApiError) as refused_list:
        list(restricted.list(ConfigMap, namespace=namespace))
    assert refused_list.value.status.code == 403
    with pytest.raises(ApiError) as refused_nodes:
        list(restricted.list(Node))
    assert refused_nodes.value.status.code == 403


def test_cluster_up_on_a_running_cluster_reuses_it(cluster_script, cluster: Cluster):
    if cluster.kubeconfig != cluster_script.DATA_DIR / "kubeconfig":
        pytest.skip("the cluster under test is not the local control plane")
    before = cluster_script.read_state()
    cluster_script.up()
    assert cluster_script.read_state() == before
    assert cluster_script.healthy(before)


@pytest.mark.parametrize(
    ("image", "reason"),
    [
        ("registry.invalid/kapply-test:image-pull-backoff", "ImagePullBackOff"),
        ("registry.invalid/kapply-test:crash-loop-backoff", "CrashLoopBackOff"),
    ],
)
def test_kwok_gives_pods_of_failing_test_images_real_waiting_reasons(kube: Client, namespace: str, image, reason):
    kube.create(
        from_dict(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "broken"},
                "spec": {"containers": [{"name": "app", "image": image}]},
            }
        ),
        namespace=namespace,
    )

    def waiting_reason():
        statuses = kube.get(Pod, "broken", namespace=namespace).status.containerStatuses or []
        return statuses and statuses[0].state.waiting and statuses[0].state.waiting.reason

    assert eventually(waiting_reason, what=f"pod waiting with {reason}") == reason


def test_a_job_whose_pods_exit_1_fails(kube: Client, namespace: str):
    kube.create(
        from_dict(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "failing"},
                "spec": {
                    "backoffLimit": 0,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "app", "image": "registry.invalid/kapply-test:exit-1"}],
                        }
                    },
                },
            }
        ),
        namespace=namespace,
    )

    def failed():
        job = kube.get(Job, "failing", namespace=namespace)
        return any(c.type == "Failed" and c.status == "True" for c in (job.status.conditions or []))

    eventually(failed, what="job failing to fail")
