"""The ReplicaSet waiter (beyond kapp)."""

from kapply.apply.waiters import ok, ongoing, wait_state
from tests.unit.waiter_objects import obj


def test_standalone_replicaset_waits_for_its_replicas():
    """Beyond kapp (which has no ReplicaSet waiter)."""
    rs = obj("apps/v1", "ReplicaSet", status={"replicas": 2, "availableReplicas": 0, "observedGeneration": 1})
    rs["spec"] = {"replicas": 2}
    assert wait_state(rs) == ongoing("Waiting for 2 replicas to be ready")
    rs["status"] |= {"readyReplicas": 2, "availableReplicas": 2}
    assert wait_state(rs) == ok()
