"""Waiting on a resource together with its children (found by association label), and kapp's wait lines."""

from kapply.apply.waiters import (
    ChildState,
    converge,
    failed,
    ok,
    ongoing,
    wait_lines,
    wait_state,
    which_children,
)
from kapply.config.config import parse_config

MINIMUM = "kapp.k14s.io/apps-v1-deployment-wait-minimum-replicas-available"
REVISION = "deployment.kubernetes.io/revision"


def deployment(status, replicas=3, revision="2", annotations=None):
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "ns",
            "generation": 2,
            "annotations": {REVISION: revision, **(annotations or {})},
        },
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"observedGeneration": 2, **status},
    }


def replica_set(name, revision, available, generation=1, observed=1, replicas=3):
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "generation": generation,
            "annotations": {REVISION: revision, "deployment.kubernetes.io/desired-replicas": str(replicas)},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "controller": True}],
        },
        "spec": {"replicas": replicas},
        "status": {
            "replicas": replicas,
            "readyReplicas": available,
            "availableReplicas": available,
            "observedGeneration": observed,
        },
    }


def pod(name, phase="Running", ready="True", waiting=None):
    status = {
        "phase": phase,
        "conditions": [
            {"type": "Initialized", "status": "True"},
            {"type": "Ready", "status": ready},
            {"type": "ContainersReady", "status": ready},
            {"type": "PodScheduled", "status": "True"},
        ],
    }
    if waiting:
        status["containerStatuses"] = [{"name": "web", "ready": False, "state": {"waiting": {"reason": waiting}}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"}, "status": status}


def test_which_children_follows_kapps_table():
    def kind(api_version, kind):
        return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "ns"}}

    assert which_children(kind("apps/v1", "Deployment")) == (("apps", "replicasets"), ("", "pods"))
    assert which_children(kind("apps/v1", "DaemonSet")) == (("apps", "replicasets"), ("", "pods"))
    assert which_children(kind("batch/v1", "Job")) == (("batch", "jobs"), ("", "pods"))
    assert which_children(kind("apps/v1", "StatefulSet")) == (("", "persistentvolumeclaims"), ("", "pods"))
    assert which_children(kind("batch/v1", "CronJob")) == ()
    assert which_children(kind("v1", "Pod")) == ()
    assert which_children(kind("v1", "ConfigMap")) == ()


def test_deleting_deployment_lists_no_children():
    deleting = deployment({})
    deleting["metadata"]["deletionTimestamp"] = "2024-03-28T10:00:00Z"
    assert which_children(deleting) == ()


def test_ongoing_deployment_shows_its_children_in_kapps_order():
    convergence = converge(
        deployment({"replicas": 1, "unavailableReplicas": 1}, replicas=1),
        children=[
            pod("web-7c9d8-x2x7k", "Pending", waiting="ContainerCreating"),
            replica_set("web-7c9d8", "2", available=0, replicas=1),
            replica_set("web-5f6b7", "1", available=0, replicas=0),
        ],
    )
    assert convergence.state == ongoing("Waiting for 1 unavailable replicas")
    assert wait_lines(convergence) == [
        "ongoing: reconcile deployment/web (apps/v1) namespace: ns",
        " ^ Waiting for 1 unavailable replicas",
        " L ongoing: waiting on replicaset/web-7c9d8 (apps/v1) namespace: ns",
        "    ^ Waiting for 1 replicas to be ready",
        " L ok: waiting on replicaset/web-5f6b7 (apps/v1) namespace: ns",
        " L ongoing: waiting on pod/web-7c9d8-x2x7k (v1) namespace: ns",
        "    ^ Pending: ContainerCreating",
    ]


def test_parent_state_wins_over_failed_children():
    convergence = converge(
        deployment({"replicas": 1, "unavailableReplicas": 1}, replicas=1),
        children=[pod("web-7c9d8-x2x7k", "Failed")],
    )
    assert convergence.state == ongoing("Waiting for 1 unavailable replicas")
    assert convergence.children == (ChildState(convergence.children[0].resource, failed("Phase is failed")),)


def test_done_parent_does_not_look_at_its_children():
    convergence = converge(
        deployment({"replicas": 1, "readyReplicas": 1, "availableReplicas": 1}, replicas=1),
        children=[pod("web-old-abcde", "Failed")],
    )
    assert convergence.state == ok()
    assert convergence.children == ()
    assert wait_lines(convergence) == ["ok: reconcile deployment/web (apps/v1) namespace: ns"]


def test_failed_parent_shows_its_message():
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "migrate", "namespace": "ns"},
        "status": {
            "failed": 7,
            "conditions": [
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "BackoffLimitExceeded",
                    "message": "Job has reached the specified backoff limit",
                }
            ],
        },
    }
    assert wait_lines(converge(job, children=[pod("migrate-abcde", "Failed")])) == [
        "fail: reconcile job/migrate (batch/v1) namespace: ns",
        " ^ Failed with reason BackoffLimitExceeded: Job has reached the specified backoff limit",
    ]


def test_parent_listed_among_its_children_is_left_out():
    parent = deployment({"unavailableReplicas": 1})
    convergence = converge(parent, children=[parent, pod("web-7c9d8-x2x7k")])
    assert [child.resource["kind"] for child in convergence.children] == ["Pod"]


def test_disabling_associated_resources_wait_hides_children():
    parent = deployment({"unavailableReplicas": 1}, annotations={"kapp.k14s.io/disable-associated-resources-wait": ""})
    convergence = converge(parent, children=[pod("web-7c9d8-x2x7k", "Failed")])
    assert convergence.state == ongoing("Waiting for 1 unavailable replicas")
    assert convergence.children == ()


def test_disabling_associated_resources_wait_needs_an_empty_value():
    parent = deployment({"unavailableReplicas": 1}, annotations={"kapp.k14s.io/disable-associated-resources-wait": "1"})
    convergence = converge(parent, children=[pod("web-7c9d8-x2x7k")])
    assert convergence.error == (
        "Expected annotation 'kapp.k14s.io/disable-associated-resources-wait' on resource "
        "'deployment/web (apps/v1) namespace: ns' to have value ''"
    )
    assert convergence.state.terminally_failed
    assert wait_lines(convergence) == [
        "error: reconcile deployment/web (apps/v1) namespace: ns",
        " ^ Waiting for 1 unavailable replicas",
    ]


def test_resource_without_waiter_takes_the_first_failed_child_then_the_first_ongoing_one():
    parent = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}}
    children = [pod("w-b", "Pending"), pod("w-a", "Failed"), pod("w-c")]
    assert wait_state(parent, children=children) == failed("Phase is failed")
    assert wait_state(parent, children=children[:1] + children[2:]) == ongoing("Pending")
    assert wait_state(parent, children=[pod("w-c")]) == ok()
    assert wait_lines(converge(parent, children=children[:1])) == [
        "ongoing: reconcile widget/w (example.com/v1) namespace: ns",
        " L ongoing: waiting on pod/w-b (v1) namespace: ns",
        "    ^ Pending",
    ]


def test_children_are_checked_with_wait_rules_too():
    config = parse_config(
        {
            "apiVersion": "kapp.k14s.io/v1alpha1",
            "kind": "Config",
            "waitRules": [
                {
                    "conditionMatchers": [{"type": "Ready", "status": "True", "success": True}],
                    "resourceMatchers": [{"apiVersionKindMatcher": {"apiVersion": "v1", "kind": "Pod"}}],
                }
            ],
        },
        "test",
    )
    convergence = converge(deployment({"unavailableReplicas": 1}), config.wait_rules, [pod("web-1", ready="False")])
    assert convergence.children[0].state == ongoing("No failing or successful conditions found")


# kapp.k14s.io/apps-v1-deployment-wait-minimum-replicas-available


def test_minimum_replicas_is_reached_on_the_latest_replica_set():
    parent = deployment({"unavailableReplicas": 2, "availableReplicas": 1}, annotations={MINIMUM: "1"})
    children = [replica_set("web-7c9d8", "2", available=1), replica_set("web-5f6b7", "1", available=0)]
    assert wait_state(parent, children=children) == ok()


def test_minimum_replicas_waits_on_the_latest_replica_set_not_older_ones():
    parent = deployment({"unavailableReplicas": 3}, replicas=4, annotations={MINIMUM: "2"})
    children = [replica_set("web-7c9d8", "2", available=0, replicas=4), replica_set("web-5f6b7", "1", available=4)]
    state = wait_state(parent, children=children)
    assert state == ongoing("Waiting for at least 2 available replicas (currently 0 available)")


def test_minimum_replicas_as_a_percentage_rounds_down_but_needs_at_least_one():
    children = [replica_set("web-7c9d8", "2", available=1, replicas=10)]
    half = deployment({"unavailableReplicas": 9}, replicas=10, annotations={MINIMUM: "50%"})
    assert wait_state(half, children=children) == ongoing(
        "Waiting for at least 4 available replicas (currently 1 available)"
    )
    tiny = deployment({"unavailableReplicas": 9}, replicas=10, annotations={MINIMUM: "5%"})
    assert wait_state(tiny, children=children) == ok()


def test_minimum_replicas_above_spec_replicas_is_capped():
    parent = deployment({"unavailableReplicas": 1}, replicas=2, annotations={MINIMUM: "5"})
    state = wait_state(parent, children=[replica_set("web-7c9d8", "2", available=1, replicas=2)])
    assert state == ongoing("Waiting for at least 1 available replicas (currently 1 available)")


def test_minimum_replicas_waits_for_the_replica_set_generation():
    parent = deployment({}, annotations={MINIMUM: "1"})
    children = [replica_set("web-7c9d8", "2", available=3, generation=2, observed=1)]
    assert wait_state(parent, children=children) == ongoing("Waiting for generation 2 to be observed")


def test_minimum_replicas_with_a_bad_value_fails():
    parent = deployment({}, annotations={MINIMUM: "half"})
    state = wait_state(parent, children=[replica_set("web-7c9d8", "2", available=3)])
    assert state == failed(f'Error: Failed to parse {MINIMUM}: strconv.Atoi: parsing "half": invalid syntax')


def test_minimum_replicas_without_the_latest_replica_set_fails():
    parent = deployment({}, revision="3", annotations={MINIMUM: "1"})
    state = wait_state(parent, children=[replica_set("web-7c9d8", "2", available=3)])
    assert state == failed(
        "Error: Failed to find latest replicaset: "
        "Expected to find replica set (rev 3) in associated resources but did not"
    )


def test_minimum_replicas_without_a_revision_annotation_fails():
    parent = deployment({}, annotations={MINIMUM: "1"})
    del parent["metadata"]["annotations"][REVISION]
    state = wait_state(parent, children=[replica_set("web-7c9d8", "2", available=3)])
    assert state == failed(f"Error: Failed to find latest replicaset: Expected to find '{REVISION}' but did not")
