"""Waiting on a resource together with its children (found by association label), and kapp's wait lines."""

from kapply.apply.waiters import ChildState, converge, failed, ok, ongoing, wait_lines, wait_state
from kapply.config.config import parse_config
from tests.unit.waiter_objects import POD_READY_RULE, child_pod, replica_set, revisioned_deployment


def test_ongoing_deployment_shows_its_children_in_kapps_order():
    convergence = converge(
        revisioned_deployment({"replicas": 1, "unavailableReplicas": 1}, replicas=1),
        children=[
            child_pod("web-7c9d8-x2x7k", "Pending", waiting="ContainerCreating"),
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
        revisioned_deployment({"replicas": 1, "unavailableReplicas": 1}, replicas=1),
        children=[child_pod("web-7c9d8-x2x7k", "Failed")],
    )
    assert convergence.state == ongoing("Waiting for 1 unavailable replicas")
    assert convergence.children == (ChildState(convergence.children[0].resource, failed("Phase is failed")),)


def test_done_parent_does_not_look_at_its_children():
    convergence = converge(
        revisioned_deployment({"replicas": 1, "readyReplicas": 1, "availableReplicas": 1}, replicas=1),
        children=[child_pod("web-old-abcde", "Failed")],
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
    assert wait_lines(converge(job, children=[child_pod("migrate-abcde", "Failed")])) == [
        "fail: reconcile job/migrate (batch/v1) namespace: ns",
        " ^ Failed with reason BackoffLimitExceeded: Job has reached the specified backoff limit",
    ]


def test_parent_listed_among_its_children_is_left_out():
    parent = revisioned_deployment({"unavailableReplicas": 1})
    convergence = converge(parent, children=[parent, child_pod("web-7c9d8-x2x7k")])
    assert [child.resource["kind"] for child in convergence.children] == ["Pod"]


def test_disabling_associated_resources_wait_hides_children():
    parent = revisioned_deployment(
        {"unavailableReplicas": 1}, annotations={"kapp.k14s.io/disable-associated-resources-wait": ""}
    )
    convergence = converge(parent, children=[child_pod("web-7c9d8-x2x7k", "Failed")])
    assert convergence.state == ongoing("Waiting for 1 unavailable replicas")
    assert convergence.children == ()


def test_disabling_associated_resources_wait_needs_an_empty_value():
    parent = revisioned_deployment(
        {"unavailableReplicas": 1}, annotations={"kapp.k14s.io/disable-associated-resources-wait": "1"}
    )
    convergence = converge(parent, children=[child_pod("web-7c9d8-x2x7k")])
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
    children = [child_pod("w-b", "Pending"), child_pod("w-a", "Failed"), child_pod("w-c")]
    assert wait_state(parent, children=children) == failed("Phase is failed")
    assert wait_state(parent, children=children[:1] + children[2:]) == ongoing("Pending")
    assert wait_state(parent, children=[child_pod("w-c")]) == ok()
    assert wait_lines(converge(parent, children=children[:1])) == [
        "ongoing: reconcile widget/w (example.com/v1) namespace: ns",
        " L ongoing: waiting on pod/w-b (v1) namespace: ns",
        "    ^ Pending",
    ]


def test_children_are_checked_with_wait_rules_too():
    config = parse_config(POD_READY_RULE, "test")
    convergence = converge(
        revisioned_deployment({"unavailableReplicas": 1}), config.wait_rules, [child_pod("web-1", ready="False")]
    )
    assert convergence.children[0].state == ongoing("No failing or successful conditions found")
