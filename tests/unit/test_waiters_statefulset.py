"""The StatefulSet waiter."""

from kapply.apply.waiters import failed, ok, ongoing, wait_state
from tests.unit.waiter_objects import obj


def stateful_set(replicas=3, partition=None, **status):
    spec = {"replicas": replicas, "serviceName": "db", "updateStrategy": {"type": "RollingUpdate"}}
    if partition is not None:
        spec["updateStrategy"]["rollingUpdate"] = {"partition": partition}
    base = {
        "observedGeneration": 1,
        "replicas": replicas,
        "readyReplicas": replicas,
        "currentReplicas": replicas,
        "updatedReplicas": replicas,
        "availableReplicas": replicas,
    }
    return obj("apps/v1", "StatefulSet", "db", spec=spec, status=base | status)


def test_rolled_out_stateful_set_is_ok():
    assert wait_state(stateful_set()) == ok()


def test_stateful_set_waits_for_updates_then_readiness_then_deletions():
    assert wait_state(stateful_set(updatedReplicas=1)) == ongoing("Waiting for 2 replicas to be updated")
    assert wait_state(stateful_set(readyReplicas=2)) == ongoing("Waiting for 1 replicas to be ready")


def test_stateful_set_scaling_down_waits_for_deletions():
    scaling_down = stateful_set(replicas=1)
    scaling_down["status"]["replicas"] = 3
    assert wait_state(scaling_down) == ongoing("Waiting for 2 replicas to be deleted")


def test_stateful_set_partition_only_waits_for_the_replicas_it_updates():
    assert wait_state(stateful_set(replicas=5, partition=3, updatedReplicas=2)) == ok()
    state = wait_state(stateful_set(replicas=5, partition=3, updatedReplicas=1))
    assert state == ongoing("Waiting for 1 replicas to be updated (updating only 2 of 5 total)")


def test_stateful_set_without_replicas_fails():
    broken = stateful_set()
    del broken["spec"]["replicas"]
    assert wait_state(broken) == failed("Error: Failed to find spec.replicas")
