"""A resource being deleted, whatever its kind."""

from kapply.apply.waiters import ongoing, wait_state
from tests.unit.waiter_objects import obj


def test_resource_being_deleted_waits_on_its_finalizers():
    secret = obj("v1", "Secret")
    secret["metadata"] |= {"deletionTimestamp": "2024-03-28T10:00:00Z", "finalizers": ["a.io/x", "b.io/y"]}
    assert wait_state(secret) == ongoing("Waiting on finalizers: a.io/x, b.io/y")


def test_resource_being_deleted_without_finalizers_is_deleting():
    deployment = obj("apps/v1", "Deployment", status={"observedGeneration": 1})
    deployment["metadata"]["deletionTimestamp"] = "2024-03-28T10:00:00Z"
    assert wait_state(deployment) == ongoing("Deleting")
